"""The truth suite (tests/truth) and its scorer (bench/bench_truth.py) on a hand-made yaml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bench.bench_truth as bench_truth
from bench.bench_truth import ISSUE_ROWS, declared_dtypes, report, score, truth_verdicts
from migrate.cache import StageCache
from migrate.model.declared import declared_variables
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions
from tests.conftest import REAL_NATIVE_FUNCTIONS
from tests.truth.cases import CASES, STATED, Case, kept_scalars, t
from tests.truth.runner import DTYPES, CaseError, Verdict, verdict

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def truth_cache() -> Path:
    """The user's cache: the ``truth`` stage there is made once for this module and test_run's score alike."""
    return StageCache.at().root


@pytest.fixture(scope="module")
def verdicts(truth_cache) -> dict[str, dict[str, Verdict]]:
    """The suite's verdicts, kept in the cache's ``truth`` stage."""
    found = truth_verdicts(StageCache.at(truth_cache))
    assert any((truth_cache / "truth").rglob("*.pickle"))
    return found


def test_suite_covers_the_common_overloads_with_real_tensor_slots():
    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    assert len(DTYPES) == 21
    assert len({case.overload for case in CASES}) >= 100
    for case in CASES:
        entry = native.by_name.get(case.overload)
        assert entry is not None, case.key
        dtype_argument = next((s for s in case.slots if s in entry.schema.dtype_arguments), None)
        for slot in case.slots + tuple(slot for slot, _ in case.given):
            found = entry.schema.slot(slot)
            if slot == dtype_argument or slot.startswith("return."):  # the dtype under test passed as dtype=, or wanted back (``_cast_Byte``)
                assert found is not None and (slot == dtype_argument or found.is_tensor), f"{case.key}: {slot}"
                continue
            assert found is not None and found.is_tensor and not found.is_return, f"{case.key}: {slot}"
        for slot in case.scalars:
            found = entry.schema.slot(slot)
            assert found is not None and found.word == "Scalar", f"{case.key}: {slot}"


def test_every_case_accepts_some_dtype_and_rejects_with_a_message(verdicts):
    for case in CASES:
        found = verdicts[case.key]
        assert any(v.accepted for v in found.values()), case.key
        assert all(v.message for v in found.values() if not v.accepted), case.key


def test_the_issue_table_as_aten_answers_it(verdicts):
    accepted = {key: {d for d, v in found.items() if v.accepted} for key, found in verdicts.items()}
    assert "bool" not in accepted["mm[self mat2]"]
    assert accepted["mm[mat2 | self=float32]"] == {"float32"}
    assert "int64" in accepted["clamp[self]"]
    assert "float32" in accepted["remainder.Scalar[self]"]
    assert accepted["gather[index | self=float32]"] == {"int32", "int64"}
    assert "int64" in accepted["mean[self]"]
    assert "bool" not in accepted["relu[self]"]
    sdpa = "scaled_dot_product_attention[attn_mask | "
    assert accepted[sdpa + "key=float32, query=float32, value=float32]"] == {"bool", "float32"}
    assert "float16" in accepted[sdpa + "key=float16, query=float16, value=float16]"]


# Overloads whose promotion takes a Python scalar (issue 33): le(uint16 tensor, 0.5) runs in float32, le(uint16, 1) has no kernel.
_SCALAR_FALSE_ALARMS = (  # the written sets of main's full run (a25d86c) held these; ATen refuses them
    ("add.Scalar", "uint16"), ("clamp_max", "bool"), ("clamp_min", "uint64"), ("ge.Scalar", "uint32"), ("le.Scalar", "uint16"),
    ("gt.Scalar", "uint64"), ("fmod.Scalar", "bool"), ("remainder.Scalar", "bool"), ("remainder.Scalar_Tensor", "bool"),
)


def test_scalar_cases_state_what_aten_does(verdicts):
    scalar_cases = [case for case in CASES if case.scalars]
    assert len(scalar_cases) >= 30
    assert {overload for overload, _ in _SCALAR_FALSE_ALARMS} <= {case.overload for case in scalar_cases}
    for case in scalar_cases:
        assert case.accepts is not None, case.key
        accepted = {d for d in STATED if verdicts[case.key][d].accepted}
        assert accepted == case.accepts, f"{case.key}: ATen accepts {sorted(accepted)}, the case states {sorted(case.accepts)}"
    rejected = {(case.overload, d) for case in scalar_cases for d in STATED if d not in case.accepts}
    assert set(_SCALAR_FALSE_ALARMS) <= rejected
    # the old calls with a float scalar run in float32, so they accept what the scalar cases refuse
    assert verdicts["le.Scalar[self]"]["uint16"].accepted and not verdicts["le.Scalar[self | other=scalar]"]["uint16"].accepted


def test_a_scalar_that_moves_the_computation_is_an_error():
    case = next(c for c in CASES if c.key == "le.Scalar[self | other=scalar]")
    assert kept_scalars(torch.uint16) == (1,) and kept_scalars(torch.complex32) == (1j, 1.5, 1)
    floating = Case(case.overload, case.slots, (lambda d: ((t(d, 2), 0.5), {}),), case.given, (), case.scalars)
    assert verdict(floating, "float32").accepted
    with pytest.raises(CaseError, match="other is 0.5, which does not keep the computation at torch.uint16"):
        verdict(floating, "uint16")


def test_verdicts_are_read_from_the_cache(truth_cache, verdicts, monkeypatch):
    def refuse():
        raise AssertionError("the verdicts were computed again")

    monkeypatch.setattr(bench_truth, "run_cases", refuse)
    assert truth_verdicts(StageCache.at(truth_cache)) == verdicts


def test_a_case_that_casts_a_tensor_it_does_not_name_is_an_error():
    case = next(c for c in CASES if c.key == "mm[mat2 | self=float32]")
    unnamed = Case(case.overload, case.slots, case.calls, ())
    with pytest.raises(CaseError, match="self is neither cast nor given"):
        verdict(unnamed, "float32")


def test_the_suite_runs_without_the_inference_code():
    code = (
        "import sys, tests.truth.runner\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('migrate.evidence', 'migrate.infer')))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# The scorer on a tiny yaml and hand-made verdicts: every figure below is worked out by hand.
_NATIVE = """\
- func: mm(T self, T mat2) -> T
  type_constraints: {T: [torch.float32, torch.float64]}

- func: gather(Tensor self, int dim, I index, *, bool sparse_grad=False) -> Tensor
  type_constraints: {I: [torch.uint8, torch.int64]}

- func: clamp(TFloat self, Scalar? min=None, Scalar? max=None) -> TFloat
"""
_SETS = """\
- name: TFloat
  dtypes: [torch.float16, torch.bfloat16, torch.float32, torch.float64]
  desc: Floating-point tensors.
"""
_ACCEPTED = {
    "mm[self mat2]": {"int64", "float32", "float64"},
    "mm[mat2 | self=float32]": {"float32"},
    "gather[self | index=int64]": set(DTYPES),
    "gather[index | self=float32]": {"int32", "int64"},
    "clamp[self]": {"int64", "float32"},
    "relu[self]": {"float32"},
}


def _tiny(tmp_path: Path, native: str) -> tuple[Path, tuple, dict]:
    (tmp_path / "native_functions.yaml").write_text(native)
    (tmp_path / "type_constraints.yaml").write_text(_SETS)
    cases = tuple(c for c in CASES if c.key in _ACCEPTED)
    assert len(cases) == len(_ACCEPTED)
    verdicts = {key: {d: Verdict(d in ok, "" if d in ok else "refused") for d in DTYPES} for key, ok in _ACCEPTED.items()}
    return tmp_path / "native_functions.yaml", cases, verdicts


def test_score_of_a_tiny_yaml(tmp_path):
    path, cases, verdicts = _tiny(tmp_path, _NATIVE)
    result = score(path, verdicts, cases)
    assert result.absent == ("relu",)
    assert len(result.rows) == 5 * 21
    assert {(r.case.key, r.dtype) for r in result.false_claims} == {
        ("gather[index | self=float32]", "uint8"),
        ("clamp[self]", "float16"),
        ("clamp[self]", "bfloat16"),
        ("clamp[self]", "float64"),
    }
    assert {(r.case.key, r.dtype) for r in result.misses} == {
        ("mm[self mat2]", "int64"),
        ("gather[index | self=float32]", "int32"),
        ("clamp[self]", "int64"),
    }
    assert result.agreement == pytest.approx(98 / 105)
    assert result.worst(2) == [("clamp", 4), ("gather", 2)]


def test_independent_variables_claim_mixed_calls(tmp_path):
    path, cases, verdicts = _tiny(tmp_path, _NATIVE.replace("mm(T self, T mat2) -> T", "mm(T self, U mat2) -> T").replace(
        "{T: [torch.float32, torch.float64]}", "{T: [torch.float32, torch.float64], U: [torch.float32, torch.float64]}"
    ))
    result = score(path, verdicts, cases)
    assert [(r.case.key, r.dtype) for r in result.false_claims if r.case.overload == "mm"] == [("mm[mat2 | self=float32]", "float64")]


def test_a_given_dtype_the_yaml_does_not_declare_declares_nothing(tmp_path):
    path, cases, _ = _tiny(tmp_path, _NATIVE)
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(tmp_path / "type_constraints.yaml").by_name
    variables = declared_variables(native, native.by_name["gather"], sets)
    index_case = next(c for c in cases if c.key == "gather[index | self=float32]")
    assert declared_dtypes(index_case, variables) == {"uint8", "int64"}
    self_case = next(c for c in cases if c.key == "gather[self | index=int64]")
    assert declared_dtypes(self_case, variables) == set(DTYPES)
    index_at_int32 = Case("gather", ("self",), self_case.calls, (("index", "int32"),))
    assert declared_dtypes(index_at_int32, variables) == frozenset()


def test_the_original_yaml_claims_every_dtype(verdicts, tmp_path):
    """Plain ``Tensor`` slots declare every dtype: no miss, and every rejection is a false claim."""
    (tmp_path / "native_functions.yaml").write_bytes(REAL_NATIVE_FUNCTIONS.read_bytes())
    result = score(tmp_path / "native_functions.yaml", verdicts)
    assert result.absent == ()
    assert result.misses == ()
    assert len(result.false_claims) == sum(not v.accepted for found in verdicts.values() for v in found.values()) > 0
    text = report(result, 5)
    for key, dtype in ISSUE_ROWS:
        assert f"{key} {dtype}: declared yes" in text


# Mixed calls (issue 31): judged by the computation dtype the entry's type_promotion gives them.
_PROMOTING = """\
- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T
  type_constraints: {T: [torch.int64, torch.float32]}
  type_promotion: {kind: default, args: [self, other]}

- func: mm(T self, T mat2) -> T
  type_constraints: {T: [torch.float32, torch.float64]}

- func: add.out(T self, T other, *, Scalar alpha=1, T(a!) out) -> T(a!)
  type_constraints: {T: [torch.int64, torch.float32]}
  type_promotion: {kind: default, args: [self, other]}
"""


def test_a_scalar_case_is_declared_by_its_computation_dtype(tmp_path):
    """``le.Scalar[self]`` calls ``le(x, 2.0)`` too, which an entry declares through float32; the scalar case declares
    uint16 only when the promoted variable holds uint16."""
    cases = tuple(c for c in CASES if c.overload == "le.Scalar")
    assert {c.key for c in cases} == {"le.Scalar[self]", "le.Scalar[self | other=scalar]"}
    ok = {"le.Scalar[self]": {"uint16", "float32"}, "le.Scalar[self | other=scalar]": {"float32"}}  # ATen's answer at these two
    verdicts = {key: {d: Verdict(d in found, "" if d in found else "refused") for d in DTYPES} for key, found in ok.items()}
    (tmp_path / "type_constraints.yaml").write_text(_SETS)
    for written, scalar_case_agrees in (("torch.uint16, torch.float32", False), ("torch.float32", True)):
        (tmp_path / "native_functions.yaml").write_text(
            "- func: le.Scalar(T self, Scalar other) -> Tensor\n"
            f"  type_constraints: {{T: [{written}]}}\n"
            "  type_promotion: {kind: always_bool, args: [self, other]}\n"
        )
        result = score(tmp_path / "native_functions.yaml", verdicts, cases)
        assert result.row("le.Scalar[self]", "uint16").agrees  # declared through le(uint16, 2.0)'s float32
        assert result.row("le.Scalar[self | other=scalar]", "uint16").agrees == scalar_case_agrees
        assert result.row("le.Scalar[self | other=scalar]", "float32").agrees


def test_mixed_calls_cover_the_issue(verdicts):
    from tests.truth.cases import MIXED
    from tests.truth.runner import run_mixed

    found = run_mixed()
    assert len(MIXED) >= 60 and len({m.overload for m in MIXED}) >= 25
    for key in ("add.Tensor(int64, float32)", "where.self(int32, float64)", "eq.Tensor(int8, float32)", "div.Tensor(int64, int64)", "cat(float32, int64)"):
        assert found[key].accepted, key
    assert found["add.out(int64, int64, float32)"].accepted
    assert found["add.out(float32, float32, int64)"].message == "result type Float can't be cast to the desired output type Long"
    for key in ("add.Tensor(uint16, uint16:0)", "mm(float32, float64)", "addcdiv(int64, int64, int64)"):
        assert not found[key].accepted, key


def test_a_mixed_call_is_declared_by_its_computation_dtype(tmp_path):
    from bench.bench_truth import declared_mixed
    from migrate.model.promotion import Promotion
    from tests.truth.cases import MIXED

    (tmp_path / "native_functions.yaml").write_text(_PROMOTING)
    (tmp_path / "type_constraints.yaml").write_text(_SETS)
    native = NativeFunctions.load(tmp_path / "native_functions.yaml")
    sets = GlobalSetsFile.load(tmp_path / "type_constraints.yaml").by_name
    by_key = {m.key: m for m in MIXED}
    add = declared_variables(native, native.by_name["add.Tensor"], sets)
    promotion = Promotion("default", ("self", "other"))
    assert declared_mixed(by_key["add.Tensor(int64, float32)"], add, promotion)  # computes in float32
    assert declared_mixed(by_key["add.Tensor(int64, int64)"], add, promotion)
    assert not declared_mixed(by_key["add.Tensor(uint16, uint16:0)"], add, promotion)  # computes in uint16
    assert not declared_mixed(by_key["add.Tensor(int64, float32)"], add, None)  # without the line, T binds one dtype
    add_out = declared_variables(native, native.by_name["add.out"], sets)
    assert not declared_mixed(by_key["add.out(float32, float32, int64)"], add_out, promotion)  # torch cannot cast float32 into int64
    assert declared_mixed(by_key["add.out(int64, int64, float32)"], add_out, promotion)  # it casts int64 into float32
    mm = declared_variables(native, native.by_name["mm"], sets)
    assert not declared_mixed(by_key["mm(float32, float64)"], mm, None)


_AUTOCAST = """\
- func: linear(T input, T weight, T? bias=None) -> T
  type_constraints: {T: [torch.float16, torch.bfloat16, torch.float32, torch.float64]}
  autocast: {CPU: lower_precision_fp}

- func: bmm(T self, T mat2) -> T
  type_constraints: {T: [torch.float16, torch.bfloat16, torch.float32, torch.float64]}
  autocast: {CPU: lower_precision_fp}

- func: stack(T[] tensors, int dim=0) -> T
  type_constraints: {T: [torch.float16, torch.bfloat16, torch.float32, torch.float64]}
  autocast: {CPU: promote}
"""


def test_autocast_calls_cover_the_issue():
    from tests.truth.cases import AUTOCAST
    from tests.truth.runner import run_autocast

    found = run_autocast()
    assert len({a.overload for a in AUTOCAST}) >= 10 and {a.dtype for a in AUTOCAST} == {"bfloat16", "float16"}
    assert found["linear(float32, float32, float32) under autocast bfloat16"].returned == ("bfloat16",)
    assert found["linear(float64, float64, float64) under autocast float16"].returned == ("float64",)  # float64 is never cast
    assert found["prod(bfloat16) under autocast bfloat16"].returned == ("float32",)  # CPU: fp32
    assert found["stack(bfloat16, float32) under autocast bfloat16"].returned == ("float32",)  # CPU: promote
    assert found["stack(bfloat16, bfloat16) under autocast float16"].message == "Unexpected floating ScalarType in at::autocast::prioritize"
    assert not found["mm(float32, float64) under autocast bfloat16"].accepted


@pytest.mark.parametrize(
    ("policy", "agrees", "differs"),
    [
        ("{CPU: lower_precision_fp}", True, ""),
        ("{CPU: fp32}", False, "return.0 is bfloat16, the policy hands T float32"),
        ("{CUDA: lower_precision_fp}", False, "return.0 is bfloat16, the policy hands T float32"),  # no CPU policy: as given
    ],
)
def test_an_autocast_call_is_declared_as_its_policy_hands_it_on(tmp_path, policy, agrees, differs):
    from tests.truth.cases import AUTOCAST
    from tests.truth.runner import run_autocast

    path, cases, verdicts = _tiny(tmp_path, _NATIVE + "\n" + _AUTOCAST.replace("{CPU: lower_precision_fp}", policy, 1))  # linear's line
    calls = tuple(a for a in AUTOCAST if a.overload in ("linear", "bmm", "stack"))
    result = score(path, verdicts, cases, autocast=run_autocast(calls), autocast_calls=calls)
    rows = {r.call.key: r for r in result.autocast}
    linear = rows["linear(float32, float32, float32) under autocast bfloat16"]
    assert (linear.agrees, linear.policy_differs) == (agrees, differs)
    assert rows["linear(float64, float64, float64) under autocast bfloat16"].agrees  # float64 reaches the kernel as given
    assert rows["bmm(float16, float32) under autocast bfloat16"].agrees  # both reach the kernel at bfloat16
    assert all(r.agrees for r in result.autocast if r.call.overload == "stack")  # promote refuses bfloat16 under float16 autocast
    assert result.agreement == pytest.approx(98 / 105)  # the tiny yaml's diagonal figure: autocast calls are scored apart
    assert f"misses {0 if agrees else 2}, of them the policy's {2 if differs else 0}" in report(result, 1)


def test_training_step_and_value_calls_cover_the_issue():
    from tests.truth.cases import BACKWARD, VALUES
    from tests.truth.runner import run_backward, run_values

    backward, values = run_backward(), run_values()
    assert len(BACKWARD) + len(VALUES) >= 60 and len({m.overload for m in BACKWARD}) >= 20
    # ATen computes norms' statistics in float32 beside half activations, and the weight may stay float32
    assert backward["native_layer_norm_backward(bfloat16, bfloat16, float32, float32, float32, float32)"].accepted
    assert backward["native_batch_norm_backward(float16, float16, float32, float32, float32, float32, float32)"].accepted
    assert backward["_scaled_dot_product_flash_attention_for_cpu_backward(bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, float32)"].accepted
    assert backward["native_layer_norm_backward(float16, float16, float32, float32, float16, float16)"].message == "expected scalar type Half but found Float"
    assert not backward["mm(bfloat16, float32)"].accepted
    # the same overload and dtype, another value: refused
    assert values["div.Tensor_mode(complex64, rounding_mode=None)"].accepted
    assert values["div.Tensor_mode(complex64, rounding_mode='floor')"].message == "\"div_floor_cpu\" not implemented for 'ComplexFloat'"
    assert values["scatter_reduce.two(complex64, reduce='sum')"].accepted and not values["scatter_reduce.two(complex64, reduce='amax')"].accepted
