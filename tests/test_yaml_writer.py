"""The yaml writer on the real torch file and on the hard-case fixtures: byte-exact edits, lowering, comments."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from migrate.model.dtypes import named
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import GlobalSet, OverloadPlan, Plan, Variable
from migrate.write.native_functions import KEPT, UNCHANGED, WRITTEN, apply_plan, lower
from tests.conftest import FIXTURES, FLOATS, REAL_NATIVE_FUNCTIONS, all_slots_plan, lint_round_trip


def _apply(path: Path, plan: Plan, overwrite: bool = False):
    native = NativeFunctions.load(path)
    return apply_plan(native, GlobalSetsFile.load(sibling_constraints_path(path)), plan, overwrite=overwrite)


def _write(path: Path, result) -> None:
    path.write_bytes(result.native_functions)
    if result.type_constraints is not None:
        sibling_constraints_path(path).write_bytes(result.type_constraints)


@pytest.fixture(scope="module")
def all_slots(tmp_path_factory):
    """The all-slots plan applied to a copy of the installed yaml, once for the tests that read what it gives (a
    second of work each): the plan and the result."""
    path = tmp_path_factory.mktemp("all-slots") / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, path)
    plan = all_slots_plan(NativeFunctions.load(path))
    return plan, _apply(path, plan)


def test_all_slots_plan_then_lower_gives_the_input_back(real_copy, all_slots):
    original = real_copy.read_bytes()
    native = NativeFunctions.load(real_copy)
    result = all_slots[1]
    assert result.native_functions != original
    assert {o.status for o in result.outcomes} == {WRITTEN, UNCHANGED}
    _write(real_copy, result)
    written = NativeFunctions.load(real_copy)
    typed = sum(len(e.schema.variables()) for e in written.entries)
    assert typed == sum(len(e.schema.tensor_slots) for e in native.entries)
    assert lower(written).encode() == original


def test_applying_twice_equals_applying_once(real_copy, all_slots):
    plan, first = all_slots
    _write(real_copy, first)
    second = _apply(real_copy, plan)
    assert second.native_functions == first.native_functions
    assert second.type_constraints == first.type_constraints
    assert {o.status for o in second.outcomes} == {UNCHANGED}


def test_a_plan_that_changes_nothing_changes_no_byte(real_copy):
    original = real_copy.read_bytes()
    native = NativeFunctions.load(real_copy)
    untyped = Plan((), tuple(OverloadPlan(e.name, ()) for e in native.entries))
    result = _apply(real_copy, untyped)
    assert result.native_functions == original
    assert result.type_constraints is None


def test_only_func_lines_change_and_only_constraint_lines_are_added(all_slots):
    """True/False case, end-of-line comment columns, blank lines: every other line is the same line."""
    original = REAL_NATIVE_FUNCTIONS.read_text().splitlines()
    written = all_slots[1].native_functions.decode().splitlines()
    kept = [line for line in written if not line.startswith("  type_constraints: {")]
    assert len(kept) == len(original)
    for before, after in zip(original, kept):
        if before != after:
            assert before.startswith("- func: ") and after.startswith("- func: ")
            assert re.sub(r"\bT\d+\b", "Tensor", after) == before


def _comment_owners(lines: list[str]) -> list[tuple[int, str | None]]:
    """Each comment line's index among comment lines, with the operator of the next '- func:' below it."""
    owners, pending = [], []
    for line in lines:
        if line.lstrip().startswith("#"):
            pending.append(len(owners) + len(pending))
        match = re.match(r"- func: ([\w.]+)\(", line)
        if match:
            owners += [(i, match.group(1)) for i in pending]
            pending = []
    return owners + [(i, None) for i in pending]


def test_every_comment_stays_above_the_same_operator(all_slots):
    original = REAL_NATIVE_FUNCTIONS.read_text().splitlines()
    comment_lines = sum(1 for line in original if line.lstrip().startswith("#"))
    written = all_slots[1].native_functions.decode().splitlines()
    before, after = _comment_owners(original), _comment_owners(written)
    assert len(before) == comment_lines > 0
    assert after == before


@pytest.mark.slow  # PyTorch's lint round trip of the whole real yaml
def test_written_file_survives_thelint_round_trip(all_slots):
    result = all_slots[1]
    text = result.native_functions.decode()
    assert lint_round_trip(text) == text
    sets = result.type_constraints.decode()
    assert lint_round_trip(sets) == sets


def test_hard_cases_before_and_after(tmp_path):
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "hard_cases.yaml", path)
    result = _apply(path, Plan.read(FIXTURES / "hard_cases.plan.json"))
    assert result.native_functions == (FIXTURES / "hard_cases.expected.yaml").read_bytes()
    assert result.type_constraints == (FIXTURES / "hard_cases.expected_type_constraints.yaml").read_bytes()
    _write(path, result)
    assert lower(NativeFunctions.load(path)).encode() == (FIXTURES / "hard_cases.yaml").read_bytes()
    # The fixture ends without a final newline, which the lint's dump adds; nothing else moves.
    assert lint_round_trip(result.native_functions.decode()) == result.native_functions.decode() + "\n"


def _hand_written(tmp_path: Path) -> Path:
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "hard_cases.yaml", path)
    hand = Plan((), (OverloadPlan("where.self", (Variable("C", named("bool"), ("condition",)),)),))
    _write(path, _apply(path, hand))
    return path


def test_hand_written_constraints_are_kept_and_reported_unless_overwrite(tmp_path):
    path = _hand_written(tmp_path)
    before = path.read_bytes()
    evidence = Plan((), (OverloadPlan("where.self", (Variable("C", named("bool", "uint8"), ("condition",)),)),))
    kept = _apply(path, evidence)
    assert kept.native_functions == before
    (outcome,) = kept.outcomes
    assert outcome.status == KEPT
    assert "torch.uint8" in outcome.conflicts[0].message and "--overwrite" in outcome.conflicts[0].message
    replaced = _apply(path, evidence, overwrite=True)
    assert "type_constraints: {C: [torch.bool, torch.uint8]}" in replaced.native_functions.decode()
    assert replaced.native_functions.decode().count("type_constraints:") == 1


def test_overwrite_to_no_constraints_removes_the_annotation(tmp_path):
    path = _hand_written(tmp_path)
    result = _apply(path, Plan((), (OverloadPlan("where.self", ()),)), overwrite=True)
    assert result.native_functions == (FIXTURES / "hard_cases.yaml").read_bytes()


def test_existing_type_constraints_file_keeps_its_bytes_and_gains_new_sets(tmp_path):
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "hard_cases.yaml", path)
    sets_path = sibling_constraints_path(path)
    sets_path.write_text("# hand-kept header\n- name: TFloat\n  dtypes: [torch.float32]  # narrowed on purpose\n  desc: Floats.\n")
    original_sets = sets_path.read_bytes()
    plan = Plan((GlobalSet("TFloat", FLOATS), GlobalSet("TBool", named("bool")), GlobalSet("TInt", named("int64"))), ())
    result = _apply(path, plan)
    header, kept = original_sets.split(b"\n", 1)
    # New sets go before the first existing item whose name sorts after theirs; existing bytes stay, in order.
    assert result.type_constraints == (
        header + b"\n- name: TBool\n  dtypes: [torch.bool]\n  desc: Dtypes of TBool.\n"
        + kept + b"- name: TInt\n  dtypes: [torch.int64]\n  desc: Dtypes of TInt.\n"
    )
    overwritten = _apply(path, plan, overwrite=True)
    assert GlobalSetsFile.load(sets_path).by_name["TFloat"].dtypes == named("float32")
    sets_path.write_bytes(overwritten.type_constraints)
    assert GlobalSetsFile.load(sets_path).by_name["TFloat"].dtypes == FLOATS
    assert overwritten.type_constraints.startswith(b"# hand-kept header\n")


def test_a_variable_equal_to_a_global_set_is_spelled_with_its_name(tmp_path):
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "hard_cases.yaml", path)
    plan = Plan((GlobalSet("TFloat", FLOATS),), (OverloadPlan("abs", (Variable("T", FLOATS, ("self", "return.0")),)),))
    text = _apply(path, plan).native_functions.decode()
    assert "- func: abs(T self) -> T\n  type_constraints: {T: TFloat}\n" in text
    own_name = replace(plan, overloads=(OverloadPlan("abs", (Variable("TFloat", FLOATS, ("self", "return.0")),)),))
    assert "- func: abs(TFloat self) -> TFloat\n  device_check" in _apply(path, own_name).native_functions.decode()
