"""The ``type_promotion:`` line: written after type_constraints, lowered away, read back and checked."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from migrate.check.torchgen import parse_native_yaml
from migrate.errors import InputError
from migrate.model.declared import declared_promotion
from migrate.model.dtypes import named
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import OverloadPlan, Plan, Variable
from migrate.model.promotion import Promotion
from migrate.write.native_functions import KEPT, NOT_PLANNED, UNCHANGED, WRITTEN, apply_plan, lower
from tests.conftest import FIXTURES, FLOATS, REAL_NATIVE_FUNCTIONS, lint_round_trip, run_cli

NUMBERS = named("int64", "float32", "float64")


def _apply(path: Path, plan: Plan, overwrite: bool = False):
    native = NativeFunctions.load(path)
    return apply_plan(native, GlobalSetsFile.load(sibling_constraints_path(path)), plan, overwrite=overwrite)


def _fixture(tmp_path: Path) -> Path:
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "promotion.yaml", path)
    return path


def _promoting(kind: str, *args: str) -> Promotion:
    return Promotion(kind, args)


FIXTURE_PLAN = Plan(
    (),
    (
        OverloadPlan("add.Tensor", (Variable("T", NUMBERS, ("self", "other", "return.0")),), promotion=_promoting("default", "self", "other")),
        OverloadPlan("sqrt", (), promotion=_promoting("int_to_float", "self")),
        OverloadPlan("eq.Tensor", (Variable("T", named("float32", "int64"), ("self", "other")),), promotion=_promoting("always_bool", "self", "other")),
        OverloadPlan(
            "where.self",
            (Variable("C", named("bool"), ("condition",)), Variable("T", FLOATS, ("self", "other", "return.0"))),
            autocast=(("CPU", "fp32"),),
            promotion=_promoting("default", "self", "other"),
        ),
        OverloadPlan("clamp", (Variable("T", NUMBERS, ("self", "return.0")),), promotion=_promoting("default", "self", "min", "max")),
        OverloadPlan("mm", (Variable("T", FLOATS, ("self", "mat2", "return.0")),)),
        OverloadPlan("cat", (Variable("T", FLOATS, ("tensors", "return.0")),), promotion=_promoting("default", "tensors")),
    ),
)


def test_promotion_lines_before_and_after(tmp_path):
    path = _fixture(tmp_path)
    result = _apply(path, FIXTURE_PLAN)
    assert result.native_functions == (FIXTURES / "promotion.expected.yaml").read_bytes()
    statuses = {o.name: (o.status, o.promotion, o.autocast) for o in result.outcomes}
    assert statuses["sqrt"] == (NOT_PLANNED, WRITTEN, UNCHANGED)  # no variable changed, the line is written all the same
    assert statuses["eq.Tensor"] == (UNCHANGED, WRITTEN, UNCHANGED)  # between the kept constraints and autocast lines
    assert statuses["mm"] == (WRITTEN, UNCHANGED, UNCHANGED)
    path.write_bytes(result.native_functions)
    assert lower(NativeFunctions.load(path)) == lower(NativeFunctions.load(FIXTURES / "promotion.yaml"))  # eq.Tensor's lines were there before
    assert {o.promotion for o in _apply(path, FIXTURE_PLAN).outcomes} == {UNCHANGED}
    text = result.native_functions.decode()
    assert lint_round_trip(text) == text + "\n"  # the fixture's missing final newline is all the lint adds
    written = NativeFunctions.load(path)
    assert declared_promotion(written, written.by_name["clamp"]) == _promoting("default", "self", "min", "max")
    assert declared_promotion(written, written.by_name["mm"]) is None


def _annotated(tmp_path: Path) -> Path:
    path = _fixture(tmp_path)
    path.write_bytes(_apply(path, FIXTURE_PLAN).native_functions)
    return path


def test_a_hand_written_promotion_is_kept_and_reported_unless_overwrite(tmp_path):
    path = _annotated(tmp_path)
    before = path.read_bytes()
    other = Plan((), (OverloadPlan("add.Tensor", (Variable("T", NUMBERS, ("self", "other", "return.0")),), promotion=_promoting("int_to_float", "self", "other")),))
    kept = _apply(path, other)
    assert kept.native_functions == before
    (outcome,) = kept.outcomes
    assert outcome.promotion == KEPT and outcome.conflicts[-1].kind == "hand-written-promotion-kept"
    assert "kind: int_to_float" in outcome.conflicts[-1].message and "--overwrite" in outcome.conflicts[-1].message
    replaced = _apply(path, other, overwrite=True).native_functions.decode()
    assert "  type_promotion: {kind: int_to_float, args: [self, other]}\n" in replaced
    assert replaced.count("type_promotion:") == before.decode().count("type_promotion:")


def test_no_promotion_removes_the_line_only_with_overwrite_and_only_when_the_plan_states_variables(tmp_path):
    path = _annotated(tmp_path)
    before = path.read_bytes()
    variables = (Variable("T", NUMBERS, ("self", "other", "return.0")),)
    unpromoted = Plan((), (OverloadPlan("add.Tensor", variables),))
    assert _apply(path, unpromoted).native_functions == before
    removed = _apply(path, unpromoted, overwrite=True)
    assert removed.outcomes[0].promotion == WRITTEN
    assert "type_promotion: {kind: default, args: [self, other]}" not in removed.native_functions.decode().split("- func: sqrt")[0]
    autocast_only = Plan((), (OverloadPlan("where.self", (), autocast=(("CPU", "lower_precision_fp"),)),))
    kept = _apply(path, autocast_only, overwrite=True)
    assert kept.outcomes[0].promotion == UNCHANGED
    assert "  type_promotion: {kind: default, args: [self, other]}\n  autocast: {CPU: lower_precision_fp}\n" in kept.native_functions.decode()


def test_a_promotion_that_hand_written_variables_split_is_not_written(tmp_path):
    path = _fixture(tmp_path)
    text = path.read_text().replace("- func: mm(Tensor self, Tensor mat2) -> Tensor", "- func: mm(T self, U mat2) -> Tensor\n  type_constraints: {T: [torch.float32], U: [torch.float64]}")
    path.write_text(text)
    plan = Plan((), (OverloadPlan("mm", (Variable("T", FLOATS, ("self", "mat2")),), promotion=_promoting("default", "self", "mat2")),))
    result = _apply(path, plan)
    assert result.native_functions == text.encode()
    (outcome,) = result.outcomes
    assert (outcome.status, outcome.promotion) == (KEPT, KEPT)
    assert outcome.conflicts[-1].kind == "promotion-unfit" and "self is T, mat2 is U" in outcome.conflicts[-1].message


@pytest.mark.parametrize(
    "promotion, message",
    [
        (_promoting("default", "tensors", "out"), "names out, which is not an argument of the schema"),
        (_promoting("default", "dim"), "names dim, of type int, not a tensor or Scalar"),
    ],
)
def test_a_plan_whose_promotion_does_not_fit_the_schema_is_refused(tmp_path, promotion, message):
    path = _fixture(tmp_path)
    plan = Plan((), (OverloadPlan("cat", (Variable("T", FLOATS, ("tensors", "return.0")),), promotion=promotion),))
    with pytest.raises(InputError, match=message) as caught:
        _apply(path, plan)
    assert caught.value.op == "cat" and caught.value.line == 25


def test_a_plan_whose_promoted_tensors_have_two_variables_is_refused(tmp_path):
    plan = Plan((), (OverloadPlan("mm", (Variable("T", FLOATS, ("self",)), Variable("U", FLOATS, ("mat2",))), promotion=_promoting("default", "self", "mat2")),))
    with pytest.raises(InputError, match="the promoted tensors must share one type variable, but self is T, mat2 is U"):
        _apply(_fixture(tmp_path), plan)


MALFORMED = [
    ("{kind: widest, args: [self, other]}", "unknown type promotion kind 'widest'"),
    ("{kind: default, args: [self, result]}", "names result, which is not an argument of the schema"),
    ("{kind: default, args: [other, self]}", "args must be in schema order (self, other)"),
    ("{kind: default, args: [self, alpha, alpha]}", "names an argument twice"),
    ("{kind: default}", "must be a mapping with 'kind' and 'args'"),
    ("[default, self]", "must be a mapping with 'kind' and 'args'"),
    ("{kind: default, args: self}", "args must be a list of argument names"),
]


@pytest.mark.parametrize("line, message", MALFORMED)
def test_a_malformed_line_is_a_one_line_error_naming_file_line_and_op(tmp_path, line, message):
    path = _annotated(tmp_path)
    text = path.read_text().replace("type_promotion: {kind: default, args: [self, other]}", f"type_promotion: {line}", 1)
    path.write_text(text)
    at = next(n for n, row in enumerate(text.splitlines(), 1) if row.startswith(f"  type_promotion: {line}"))
    native = NativeFunctions.load(path)
    with pytest.raises(InputError) as caught:
        declared_promotion(native, native.by_name["add.Tensor"])
    assert str(caught.value) == f"{path}:{at}: add.Tensor: {caught.value.message}" and message in caught.value.message
    with pytest.raises(InputError, match=re.escape(message)):
        parse_native_yaml(path)  # compat reads it too


def test_promoted_tensors_that_do_not_share_one_variable_are_an_error(tmp_path):
    path = _annotated(tmp_path)
    text = path.read_text().replace("- func: add.Tensor(T self, T other,", "- func: add.Tensor(T self, U other,").replace(
        "  type_constraints: {T: [torch.int64, torch.float32, torch.float64]}\n  type_promotion: {kind: default, args: [self, other]}",
        "  type_constraints: {T: [torch.int64, torch.float32, torch.float64], U: [torch.int64, torch.float32, torch.float64]}\n  type_promotion: {kind: default, args: [self, other]}",
    )
    path.write_text(text)
    native = NativeFunctions.load(path)
    with pytest.raises(InputError, match="share one type variable, but self is T, other is U"):
        declared_promotion(native, native.by_name["add.Tensor"])


def _real_promotions(native: NativeFunctions) -> Plan:
    """Every overload whose tensors ``self`` and ``other`` are both plain: one shared variable and a default promotion."""
    overloads = []
    for entry in native.entries:
        slots = {s.name: s for s in entry.schema.slots}
        if all(name in slots and slots[name].is_tensor and slots[name].mods == "" for name in ("self", "other")):
            binds = tuple(s.name for s in entry.schema.tensor_slots if s.name in ("self", "other") or s.name == "return.0" and s.alias == "")
            overloads.append(OverloadPlan(entry.name, (Variable("T", FLOATS, binds),), promotion=_promoting("default", "self", "other")))
    return Plan((), tuple(overloads))


@pytest.fixture(scope="module")
def real_written(tmp_path_factory):
    path = tmp_path_factory.mktemp("real") / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, path)
    native = NativeFunctions.load(path)
    plan = _real_promotions(native)
    result = _apply(path, plan)
    path.write_bytes(result.native_functions)
    return path, plan, result


def test_real_file_gains_one_promotion_line_per_planned_overload_and_lowers_back(real_written):
    path, plan, result = real_written
    original = REAL_NATIVE_FUNCTIONS.read_bytes()
    text = result.native_functions.decode()
    assert len(plan.overloads) > 100  # add, sub, mul, div, the comparisons, ...
    assert text.count("\n  type_promotion: {kind: default, args: [self, other]}\n") == len(plan.overloads)
    assert "- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T\n  type_constraints: {T: [torch.float16, torch.bfloat16, torch.float32, torch.float64]}\n  type_promotion: {kind: default, args: [self, other]}\n" in text
    assert len(text.splitlines()) == len(original.decode().splitlines()) + 2 * len(plan.overloads)
    written = NativeFunctions.load(path)
    assert lower(written).encode() == original
    assert all(declared_promotion(written, written.by_name[o.name]) == o.promotion for o in plan.overloads)
    parse_native_yaml(path, REAL_NATIVE_FUNCTIONS.with_name("tags.yaml"))  # torchgen reads the lowered model as before


def test_the_command_line_writes_checks_and_lowers_promotions_with_op_dry_run_and_check(tmp_path, capfd, monkeypatch):
    path = _fixture(tmp_path)
    FIXTURE_PLAN.write(tmp_path / "plan.json")
    monkeypatch.chdir(tmp_path)
    args = ("--native-functions", "native_functions.yaml", "--plan", "plan.json", "--yaml-only")
    code, diff, _ = run_cli(capfd, *args, "--dry-run")
    assert code == 0 and path.read_bytes() == (FIXTURES / "promotion.yaml").read_bytes()
    assert "+  type_promotion: {kind: always_bool, args: [self, other]}\n" in diff
    assert run_cli(capfd, *args, "--check")[0] == 1
    code, _, err = run_cli(capfd, *args, "--op", "clamp")
    assert code == 0 and path.read_text().count("type_promotion:") == 1 and "type_promotion: {kind: default, args: [self, min, max]}" in path.read_text()
    code, _, err = run_cli(capfd, *args)
    assert code == 0 and path.read_bytes() == (FIXTURES / "promotion.expected.yaml").read_bytes()
    assert "type_promotion: 6 lines (default 4, int_to_float 1, always_bool 1); 5 written, 0 hand-written kept" in err
    assert run_cli(capfd, *args, "--check")[0] == 0
    assert run_cli(capfd, "lower", "native_functions.yaml", "-o", "plain.yaml")[0] == 0
    assert (tmp_path / "plain.yaml").read_text() == lower(NativeFunctions.load(FIXTURES / "promotion.yaml"))


def test_show_prints_the_declared_promotion_line(tmp_path):
    from migrate.pipeline import Session
    from migrate.pipeline.session import Options
    from migrate.show import ShowContext, declared_section

    path = _annotated(tmp_path)
    context = ShowContext(Session(Options(native_functions=path, cache_dir=tmp_path / "cache")), verbose=True)
    lines = declared_section(context, "where.self")
    assert lines[0].startswith("declared (native_functions.yaml:") and "  condition: C [torch.bool] (1 of 21: bool)" in lines
    assert lines[-2:] == ["  type_promotion: {kind: default, args: [self, other]} (the promoted tensors' variable is the call's computation dtype)", "  autocast: {CPU: fp32}"]
    assert declared_section(context, "sqrt")[1:] == ["  type_promotion: {kind: int_to_float, args: [self]} (the promoted tensors' variable is the call's computation dtype)"]
