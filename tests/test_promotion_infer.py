"""Promotion evidence (issue 31, inference side): the refs' declarations, the calls that check them, and the
promoted tensors' one variable of diagonal dtypes."""

from __future__ import annotations

import pytest

from migrate.evidence.promotion.calls import consistent_kinds, promotion_reports
from migrate.infer.promotion_findings import CONFLICT, PromotionFinding, finding_of, findings
from migrate.infer.promotion_sets import one_tensor_return, sibling_promotions, with_promotion
from migrate.infer.verdicts import with_verdicts
from migrate.model.dtypes import DType, named
from migrate.model.plan import DECLARED, OPINFO, Evidence, OverloadPlan, Variable
from migrate.model.promotion import Promotion, computation_dtype
from migrate.model.verdict import ACCEPTED as ACCEPTED_VERDICT
from migrate.model.verdict import REJECTED as REJECTED_VERDICT
from migrate.model.verdict import UNKNOWN
from tests.conftest import diagonal as diagonal_calls, probed

pytestmark = pytest.mark.live  # calls made here, in this process, as the stage's workers make them


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    names = ("aten::add.Tensor", "aten::lerp.Tensor", "aten::mm", "aten::addcdiv", "aten::div.Tensor", "aten::eq.Tensor", "aten::abs", "aten::bitwise_left_shift.Tensor_Scalar")
    return {r["report"]["overload"]: r["report"] for r in promotion_reports(names) if "report" in r}


def test_refs_and_calls_agree_on_add(reports):
    finding = finding_of(reports["aten::add.Tensor"])
    assert finding.promotion == Promotion("default", ("self", "other"))
    assert not finding.conflicts
    accepted = next(e for e in finding.diagonal if e.outcome == ACCEPTED_VERDICT)
    assert DType("int64") in accepted.dtypes and DType("uint16") not in accepted.dtypes  # add_stub has no UInt16 kernel


def test_lerp_declared_but_refused_is_a_conflict_without_a_line(reports):
    finding = finding_of(reports["aten::lerp.Tensor"])
    assert finding.promotion is None
    (conflict,) = finding.conflicts
    assert conflict.kind == CONFLICT and "expected dtype" in conflict.message


def test_a_shift_with_no_float_kernel_is_seen_promoting_by_an_int_beside_a_bool_tensor(reports):
    report = reports["aten::bitwise_left_shift.Tensor_Scalar"]
    mixed = {text: (returned, message) for text, returned, message, _ in report["tried"][0]["mixed"]}
    assert mixed["a Python int beside bool [self]"] == ("int64", "")
    assert mixed["a Python float beside int64 [self]"][0] is None  # "lshift_cpu" not implemented for 'Float'
    finding = finding_of(report)
    assert finding.promotion == Promotion("default", ("self", "other")) and not finding.conflicts
    accepted = next(e for e in finding.diagonal if e.outcome == ACCEPTED_VERDICT).dtypes
    assert DType("int64") in accepted and DType("bool") not in accepted  # bool << True computes in bool: refused


def test_mm_does_not_promote(reports):
    finding = finding_of(reports["aten::mm"])
    assert finding.promotion is None and not finding.conflicts
    assert "mm" not in findings([reports["aten::mm"]])


def test_observation_settles_the_kind(reports):
    # the refs say int_to_float, but ATen refuses addcdiv of integers: integers are not computed in float
    addcdiv = finding_of(reports["aten::addcdiv"])
    assert addcdiv.promotion == Promotion("default", ("self", "tensor1", "tensor2"))
    assert addcdiv.conflicts and "int_to_float" in addcdiv.conflicts[0].message
    # no ref declares div; its calls alone give int_to_float, and its set is floating and complex
    div = finding_of(reports["aten::div.Tensor"])
    assert div.promotion == Promotion("int_to_float", ("self", "other")) and not div.conflicts
    assert DType("int64") in next(e for e in div.diagonal if e.outcome == ACCEPTED_VERDICT).dtypes  # it ran, in float32
    plan = with_promotion(OverloadPlan("div.Tensor", (Variable("P0", named("float32"), ("self", "other", "return.0")),)), div)
    assert DType("int64") not in plan.variables[0].dtypes and DType("float32") in plan.variables[0].dtypes
    assert finding_of(reports["aten::eq.Tensor"]).promotion.kind == "always_bool"
    assert finding_of(reports["aten::abs"]).promotion == Promotion("complex_to_float", ("self",))


def _same(computation: str) -> dict:
    """Predictions where every kind computes and returns ``computation`` (enough for these synthetic calls)."""
    return {kind: [computation, computation] for kind in ("default", "int_to_float", "always_bool", "complex_to_float", "bool_to_long", "no_opmath")}


def _tried(mixed: list) -> dict:
    diagonal = [[d, d, "", _same(d)] for d in ("float16", "float32")] + [["bool", None, "no bool kernel", _same("bool")]]
    return {"args": ["a", "b"], "tensors": ["a", "b"], "mixed": mixed, "diagonal": diagonal}


def test_which_refused_mixed_calls_rule_promotion_out():
    ran = [["float16 with float32 [a]", "float32", "", _same("float32")], ["float16 with float32 [b]", "float32", "", _same("float32")]]
    assert "default" in consistent_kinds(_tried(ran))
    # refused though the kernel runs on both the promoted argument's dtype and the computation dtype: lerp
    lerp = ran + [["0-dim float64 beside float32 [a]", None, "expected dtype float", _same("float32")]]
    assert consistent_kinds(_tried(lerp)) == []
    # refused for the promoted argument's own dtype, which no diagonal call takes either: sub(bool, float16)
    sub = ran + [["bool with float16 [a]", None, "Subtraction with a bool tensor", _same("float16")]]
    assert "default" in consistent_kinds(_tried(sub))
    # an argument never the promoted one in a call that ran (masked_select's self beside a bool mask)
    assert consistent_kinds(_tried(ran[:1])) == []


def test_computation_dtype():
    assert computation_dtype("int_to_float", "int64") == "float32"
    assert computation_dtype("bool_to_long", "bool") == "int64"
    assert computation_dtype("default", "uint16") == "uint16"


@pytest.mark.parametrize("dtype", ["bool", "uint8", "uint16", "int64", "float16", "bfloat16", "float32", "float64", "complex32", "complex128", "float8_e4m3fn"])
@pytest.mark.parametrize("number", [True, 1, 1.5, 1j])
def test_a_python_number_moves_the_computation_as_torch_result_type_does(dtype, number):
    import torch

    tensor = torch.ones(2, dtype=getattr(torch, dtype))
    try:
        expected = str(torch.result_type(tensor, number)).removeprefix("torch.")
    except RuntimeError:  # a float8 with a complex: torch refuses to promote
        expected = None
    assert computation_dtype("default", dtype, [type(number).__name__]) == expected


def test_a_call_whose_python_float_moved_an_unsigned_tensor_to_float32_settles_nothing_of_uint16():
    """le(uint16 tensor, 0.5) runs in float32; le(uint16 tensor, 1) is refused: the set is judged at the Scalar of
    the tensor's own kind, and the float call proves float32 only."""
    float32, uint16, int64 = DType("float32"), DType("uint16"), DType("int64")
    refusal = "NotImplementedError: \"le_cpu\" not implemented for 'UInt16'"
    plan = OverloadPlan("le.Scalar", (
        Variable("P0", named("int64", "uint16", "float32"), ("self",), (
            probed(("self",), named("int64", "uint16", "float32"), numbers=(("other", "float"),), made_by="OpInfo xlogy (1 call)"),
            probed(("self",), named("int64", "float32"), numbers=(("other", "int"),), made_by="OpInfo le (1 call)"),
            probed(("self",), named("uint16"), refused=refusal, numbers=(("other", "int"),), made_by="OpInfo le (1 call)"),
        )),
        Variable("P1", named("bool"), ("return.0",)),
    ))
    finding = PromotionFinding("le.Scalar", Promotion("always_bool", ("self", "other")), ("self",))
    variable = with_verdicts(with_promotion(plan, finding)).variables[0]
    assert variable.dtypes == named("int64", "float32")
    assert variable.verdicts.of(uint16) == REJECTED_VERDICT and dict(variable.verdicts.rejected)[uint16] == refusal
    assert variable.verdicts.of(int64) == ACCEPTED_VERDICT and variable.verdicts.of(float32) == ACCEPTED_VERDICT
    assert not variable.verdicts.promoted  # a float scalar moved int64 and uint16, not the kind: nothing promoted away


def test_the_diagonal_calls_pass_each_dtype_a_scalar_of_its_own_kind():
    """le(bool tensor, 1) computes in int64; le(bool tensor, True) in bool, which le's kernel takes; add(uint16 tensor, 1)
    is refused: the diagonal calls judge each dtype itself."""
    found = {r["report"]["overload"]: r["report"] for r in promotion_reports(("aten::le.Scalar", "aten::clamp_min")) if "report" in r}
    le = finding_of(found["aten::le.Scalar"])
    assert le.promotion == Promotion("always_bool", ("self", "other"))
    (accepted,) = [e for e in le.diagonal if e.outcome == ACCEPTED_VERDICT]
    assert DType("bool") in accepted.dtypes and DType("uint16") not in accepted.dtypes
    clamp_min = finding_of(found["aten::clamp_min"])
    (accepted,) = [e for e in clamp_min.diagonal if e.outcome == ACCEPTED_VERDICT]
    assert DType("bool") not in accepted.dtypes  # clamp_min(bool, True): "clamp_min_scalar_cpu" not implemented for 'Bool'


def _plan() -> OverloadPlan:
    """add.Tensor as slot-by-slot evidence gives it: a 0-dim companion let every dtype in at each slot."""
    every = named("bool", "int64", "uint16", "float32", "float8_e4m3fn")
    alone = probed(("other",), every, beside=("self float32",), made_by="OpInfo add (1 call)")
    together = probed(("self", "other"), named("int64", "float32"), made_by="OpInfo add (1 call)")
    refused = probed(("self", "other"), named("uint16"), refused="\"add_stub\" not implemented for 'UInt16'", made_by="OpInfo add (1 call)")
    observed = Evidence(OPINFO, "OpInfo add", named("bool", "float32"), ("self",))
    cuda = Evidence(DECLARED, "OpInfo add declares for cuda", named("bfloat16"), ("self",))
    return OverloadPlan(
        "add.Tensor",
        (
            Variable("P0", every, ("self",), (together, refused, observed, cuda)),
            Variable("P1", every, ("other",), (alone, together, refused)),
            Variable("P2", every, ("return.0",), ()),
        ),
    )


def test_promoted_slots_share_one_variable_of_diagonal_dtypes():
    finding = PromotionFinding("add.Tensor", Promotion("default", ("self", "other")), ("self", "other"))
    plan = with_verdicts(with_promotion(_plan(), finding))
    assert plan.promotion == Promotion("default", ("self", "other"))
    (variable,) = plan.variables
    assert variable.binds == ("self", "other", "return.0")
    assert variable.dtypes == named("int64", "bfloat16", "float32")  # a 0-dim companion's dtypes are not the kernel's
    assert variable.verdicts.of(DType("uint16")) == REJECTED_VERDICT
    assert variable.verdicts.of(DType("float8_e4m3fn")) == UNKNOWN
    assert variable.verdicts.of(DType("int64")) == ACCEPTED_VERDICT


def test_int_to_float_sets_hold_computation_dtypes_and_the_return_follows_the_kind():
    plan = with_promotion(_plan(), PromotionFinding("div.Tensor", Promotion("int_to_float", ("self", "other")), ("self", "other")))
    assert plan.variables[0].dtypes == named("bfloat16", "float32")
    always = with_promotion(_plan(), PromotionFinding("eq.Tensor", Promotion("always_bool", ("self", "other")), ("self", "other")))
    assert [v.binds for v in always.variables] == [("self", "other"), ("return.0",)]
    real = with_promotion(_plan(), PromotionFinding("abs", Promotion("complex_to_float", ("self",)), ("self",)))
    assert real.variables[1].binds == ("return.0",)


def test_no_promotion_keeps_the_plan_and_carries_the_conflict():
    finding = finding_of({"overload": "aten::lerp.Tensor", "declared": {"kind": "default", "args": ["self", "end"]}, "tried": []})
    plan = with_promotion(_plan(), finding)
    assert plan.variables == _plan().variables and plan.promotion is None
    assert [c.kind for c in plan.conflicts] == [CONFLICT]


def test_a_return_the_kind_never_gives_makes_it_default():
    """div.Tensor_mode built with rounding_mode=None divides as int_to_float; its samples floor int64 into int64."""
    floored = Evidence(OPINFO, "OpInfo div.floor_rounding", named("int64", "float32"), ("return.0",))
    plan = OverloadPlan("div.Tensor_mode", (Variable("P0", named("int64", "float32"), ("self", "other", "return.0"), (floored,)),))
    diagonal = (diagonal_calls(("self", "other"), named("int64", "float32")),)
    finding = PromotionFinding("div.Tensor_mode", Promotion("int_to_float", ("self", "other")), ("self", "other"), (), diagonal)
    written = with_promotion(plan, finding)
    assert written.promotion == Promotion("default", ("self", "other"))
    assert written.variables[0].dtypes == named("int64", "float32")
    assert [c.kind for c in written.conflicts] == [CONFLICT] and "never returns" in written.conflicts[0].message


def test_in_place_and_out_overloads_take_the_functional_promotion():
    from migrate.model.native import NativeFunctions
    from tests.conftest import REAL_NATIVE_FUNCTIONS

    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    every = named("int64", "uint16", "float32")
    together = probed(("self", "other"), named("int64", "float32"), made_by="OpInfo add (1 call)")
    add = with_promotion(
        OverloadPlan("add.Tensor", (Variable("P0", every, ("self", "other", "return.0"), (together,)),)),
        PromotionFinding("add.Tensor", Promotion("default", ("self", "other")), ("self", "other")),
    )
    plans = {
        "add.Tensor": add,
        "add_.Tensor": OverloadPlan("add_.Tensor", (Variable("P0", every, ("self", "return.0")), Variable("P1", every, ("other",)))),
        "add.out": OverloadPlan("add.out", (Variable("P0", every, ("self", "other")), Variable("P1", every, ("out", "return.0")))),
    }
    finding = PromotionFinding("add.Tensor", Promotion("default", ("self", "other")), ("self", "other"), (), (together,))
    found = sibling_promotions(native, plans, {"add.Tensor": finding})
    assert found["add_.Tensor"].promotion == add.promotion
    assert [v.binds for v in found["add_.Tensor"].variables] == [("self", "other", "return.0")]
    assert [v.binds for v in found["add.out"].variables] == [("self", "other", "out", "return.0")]
    assert found["add.out"].variables[0].dtypes == named("int64", "float32")


def test_a_dtype_the_kernel_computes_in_another_is_promoted_there_and_refused_where_a_sibling_writes_it():
    """acos(int64) runs in float32 (int_to_float): settled as promoted, not unknown, and still not in the set; acos_
    and acos.out write the float result into an int64 tensor, which ATen refuses: rejected with its message."""
    from migrate.model.native import NativeFunctions
    from migrate.model.verdict import PROMOTED
    from tests.conftest import REAL_NATIVE_FUNCTIONS

    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    float32, int64, bool_ = DType("float32"), DType("int64"), DType("bool")
    diagonal = (diagonal_calls(("self",), named("int64", "float32")),)
    finding = PromotionFinding("acos", Promotion("int_to_float", ("self",)), ("self",), (), diagonal)
    acos = with_verdicts(with_promotion(OverloadPlan("acos", (Variable("P0", named("float32"), ("self", "return.0")),)), finding))
    (variable,) = acos.variables
    assert variable.dtypes == named("float32")
    assert variable.verdicts.of(int64) == PROMOTED and variable.verdicts.of(float32) == ACCEPTED_VERDICT
    assert variable.verdicts.of(bool_) == UNKNOWN  # no call ran at bool: nothing settles it
    assert dict(variable.verdicts.promoted)[int64] == "computed in torch.float32 (int_to_float)"
    assert variable.verdicts.to_json()["promoted"] == {"torch.int64": "computed in torch.float32 (int_to_float)"}
    assert Variable.from_json(variable.to_json()).verdicts == variable.verdicts

    refusal = "RuntimeError: result type Float can't be cast to the desired output type Long"
    inplace = OverloadPlan("acos_", (Variable("P0", named("float32"), ("self", "return.0"), (
        probed(("self",), named("float32"), made_by="OpInfo acos (1 call)"),
        probed(("self",), named("int64"), refused=refusal, made_by="OpInfo acos (1 call)"),
    )),))
    out = OverloadPlan("acos.out", (
        Variable("P0", named("float32"), ("self",)),
        Variable("P1", named("float32"), ("out", "return.0"), (
            probed(("self", "out"), named("float32"), ("out",), made_by="OpInfo acos (1 call)"),
            probed(("self", "out"), named("int64"), ("out",), refused=refusal, made_by="OpInfo acos (1 call)"),
        )),
    ))
    found = sibling_promotions(native, {"acos": acos, "acos_": inplace, "acos.out": out}, {"acos": finding})
    for name in ("acos_", "acos.out"):
        (variable,) = found[name].variables
        assert variable.dtypes == named("float32")
        assert variable.verdicts.of(int64) == REJECTED_VERDICT, name  # the functional's int64 call is not this overload's
        assert dict(variable.verdicts.rejected)[int64] == refusal


def test_a_return_no_call_bound_joins_the_promoted_variable_where_the_kind_returns_the_computation_dtype():
    """special_xlog1py.self_scalar's calls built from the schema returned float32 for int64 inputs, so its return was
    a variable of its own, which such calls leave free: int_to_float returns the computation dtype, and so does its
    out= overload, whose ``out`` joins too (ATen refuses an int64 ``out``)."""
    from migrate.model.native import NativeFunctions
    from tests.conftest import REAL_NATIVE_FUNCTIONS

    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    functional, out = "special_xlog1py.self_scalar", "special_xlog1py.self_scalar_out"
    assert one_tensor_return(native.by_name[functional].schema) and not one_tensor_return(native.by_name["sort"].schema)
    diagonal = (diagonal_calls(("other",), named("int64", "float32", "float64")),)
    finding = PromotionFinding(functional, Promotion("int_to_float", ("self", "other")), ("other",), (), diagonal)
    plan = OverloadPlan(functional, (Variable("P0", named("float32"), ("other",)),))
    assert [v.binds for v in with_promotion(plan, finding).variables] == [("other",)]  # the return stays free unless the schema says
    written = with_promotion(plan, finding, free_return=True)
    assert [(v.binds, v.dtypes) for v in written.variables] == [(("other", "return.0"), named("float32", "float64"))]
    plans = {functional: written, out: OverloadPlan(out, (Variable("P0", named("float32"), ("other",)),))}
    (variable,) = sibling_promotions(native, plans, {functional: finding})[out].variables
    assert variable.binds == ("other", "out", "return.0") and variable.dtypes == named("float32", "float64")


def test_an_in_place_overload_whose_one_input_is_promoted_does_not_take_a_dtype_its_own_calls_refused():
    """abs takes complex tensors, abs_ refuses them: its own refusal settles complex64. multiply_ refused float8
    beside a 0-dim ``other`` (a refusal its other input may cause), so mul's diagonal calls still speak for it."""
    from migrate.model.native import NativeFunctions
    from tests.conftest import REAL_NATIVE_FUNCTIONS

    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    complex64, float8 = DType("complex64"), DType("float8_e4m3fn")
    abs_refusal = "RuntimeError: In-place abs is not supported for complex tensors."
    abs_diagonal = (diagonal_calls(("self",), named("float32", "complex64")),)
    abs_finding = PromotionFinding("abs", Promotion("complex_to_float", ("self",)), ("self",), (), abs_diagonal)
    abs_plan = with_promotion(OverloadPlan("abs", (Variable("P0", named("float32", "complex64"), ("self",)), Variable("P1", named("float32"), ("return.0",)))), abs_finding)
    abs_inplace = OverloadPlan("abs_", (Variable("P0", named("float32"), ("self", "return.0"), (
        probed(("self",), named("float32"), made_by="OpInfo abs (1 call)"),
        probed(("self",), named("complex64"), refused=abs_refusal, made_by="OpInfo abs (1 call)"),
    )),))
    mul_refusal = "NotImplementedError: \"mul_cpu_reduced_float\" not implemented for 'Float8_e4m3fn'"
    mul_diagonal = (diagonal_calls(("self", "other"), named("float32", "float8_e4m3fn")),)
    mul_finding = PromotionFinding("multiply.Tensor", Promotion("default", ("self", "other")), ("self", "other"), (), mul_diagonal)
    mul_plan = with_promotion(OverloadPlan("multiply.Tensor", (Variable("P0", named("float32", "float8_e4m3fn"), ("self", "other", "return.0")),)), mul_finding)
    mul_inplace = OverloadPlan("multiply_.Tensor", (Variable("P0", named("float32"), ("self", "other", "return.0"), (
        probed(("self", "other"), named("float32"), made_by="OpInfo mul (1 call)"),
        probed(("self", "other"), named("float8_e4m3fn"), refused=mul_refusal, made_by="OpInfo mul (1 call)"),
    )),))
    plans = {"abs": abs_plan, "abs_": abs_inplace, "multiply.Tensor": mul_plan, "multiply_.Tensor": mul_inplace}
    found = sibling_promotions(native, plans, {"abs": abs_finding, "multiply.Tensor": mul_finding})
    promoted = found["abs_"].variables[0]
    assert promoted.binds == ("self",) and complex64 not in promoted.dtypes
    assert promoted.verdicts.of(complex64) == REJECTED_VERDICT and dict(promoted.verdicts.rejected)[complex64] == abs_refusal
    assert float8 in found["multiply_.Tensor"].variables[0].dtypes
