"""Returns and relations between arguments: an out= overload's ``out`` takes what its functional returns, numbers that
promote alone set a return, a norm's weight is its input's dtype or float32. Rules on hand-made plans, then the real
full run's entries."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from migrate.api import load_declarations
from migrate.cli import main
from migrate.evidence.sites import seen_on
from migrate.infer.own_calls import with_what_the_functional_returns
from migrate.infer.promotion_findings import finding_of
from migrate.infer.promotion_sets import with_promotion
from migrate.infer.verdicts import NEVER_RETURNED, verdicts_of
from migrate.model.dtypes import named
from migrate.model.plan import PROBE, Evidence, OverloadPlan, Variable
from migrate.model.schema import TypedSchema
from migrate.model.verdict import ACCEPTED, PROBE_CALL, REJECTED, RETURNED, Verdict
from tests.conftest import report_of, run_cli

COMPLEX = named("complex64", "complex128")


def _ran(dtypes: tuple, slots: tuple[str, ...]) -> Evidence:
    return Evidence(PROBE, "", dtypes, slots, 1, Verdict(ACCEPTED, seen_on(PROBE_CALL, "self cast alone")))


def test_an_out_of_its_own_variable_takes_what_the_functional_returned_there():
    returned = Variable("R", COMPLEX, ("return.0",), (_ran(COMPLEX, ("return.0",)),))
    refused = Evidence(PROBE, "", named("complex128"), ("out", "return.0"), 1, Verdict(REJECTED, seen_on(PROBE_CALL, "out cast alone"), ((named("complex128")[0], "Found dtype ComplexDouble but expected ComplexFloat"),)))
    out = Variable("O", named("complex64"), ("out", "return.0"), (_ran(named("complex64"), ("out", "return.0")), refused))
    widened = with_what_the_functional_returns(OverloadPlan("fft_ifft.out", (out,)), {"out": returned, "return.0": returned}).variables[0]
    assert widened.dtypes == COMPLEX
    assert widened.verdicts.accepted == COMPLEX  # the functional's calls ran: complex128 is accepted, not refused


def test_an_out_whose_functional_return_is_an_inputs_dtype_or_that_follows_keeps_its_own_calls():
    both = Variable("T", named("uint16", "float32"), ("self", "return.0"), (_ran(named("uint16", "float32"), ("self", "return.0")),))
    out = Variable("O", named("float32"), ("out", "return.0"), (_ran(named("float32"), ("out", "return.0")),))
    plan = OverloadPlan("conj_physical.out", (out,))
    assert with_what_the_functional_returns(plan, {"out": both, "return.0": both}) == plan  # conj_physical.out refuses uint16
    returned = Variable("R", COMPLEX, ("return.0",), (_ran(COMPLEX, ("return.0",)),))
    follower = OverloadPlan("x.out", (Variable("O", named("complex64"), ("out", "return.0"), (), ("T",)),))
    assert with_what_the_functional_returns(follower, {"out": returned, "return.0": returned}) == follower


def _predicted(returned: str) -> dict[str, list[str]]:
    """Every kind's (computation, result) dtypes of numbers of ``returned``'s kind, as torch's rules predict them."""
    from migrate.model.promotion import KINDS

    moved = {"int_to_float": ["float32", "float32"], "bool_to_long": ["int64", "int64"] if returned == "bool" else [returned, returned]}
    return {kind: moved.get(kind, [returned, "bool" if kind == "always_bool" else returned]) for kind in KINDS}


WHERE_SCALAR = {
    "overload": "aten::where.Scalar",
    "declared": {"kind": "no_opmath", "args": ["self", "other"]},
    "tried": [
        {
            "args": ["self", "other"],
            "tensors": [],
            "mixed": [],
            "diagonal": [[dtype, returned, "", _predicted(returned)] for dtype, returned in (("bool", "bool"), ("int8", "int64"), ("int64", "int64"))],
        }
    ],
}


def test_numbers_that_promote_alone_set_the_return_their_calls_returned():
    finding = finding_of(WHERE_SCALAR)
    assert finding.tensors == () and [e.dtypes for e in finding.returned] == [named("bool", "int64")]  # a recorded report of ints alone
    plan = OverloadPlan("where.Scalar", (Variable("C", named("bool", "uint8"), ("condition",)), Variable("R", named("int64", "float32"), ("return.0",))))
    promoted = with_promotion(plan, finding)
    assert promoted.variables[1].dtypes == named("bool", "int64", "float32")
    assert promoted.promotion == finding.promotion


def test_what_probes_never_returned_is_no_refusal_where_a_number_may_set_the_return():
    returned = Evidence(PROBE, "", named("int64"), ("return.0",), 1, Verdict(RETURNED, seen_on(PROBE_CALL, "returned by accepted probes")))
    variable = Variable("R", named("int64"), ("return.0",), (returned,))
    assert dict(verdicts_of(variable).rejected)[named("bool")[0]] == NEVER_RETURNED
    assert verdicts_of(variable, tensors_set_returns=False).rejected == ()
    assert TypedSchema.parse("where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor").numbers_may_set_returns
    assert not TypedSchema.parse("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor").numbers_may_set_returns


# -- the real full run


def _constraints(full_run: Path, overload: str) -> tuple[str, str]:
    lines = (full_run / "native_functions.yaml").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"- func: {overload}("))
    return lines[at], lines[at + 1]


NORMS = ("layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "batch_norm", "native_batch_norm")


@pytest.mark.slow
@pytest.mark.parametrize("overload", NORMS)
def test_a_norms_weight_and_statistics_are_the_inputs_dtype_or_the_one_it_computes_in(full_run: Path, overload):
    func, constraints = _constraints(full_run, overload)
    assert "U? weight" in func and "U? bias" in func
    assert constraints == "  type_constraints: {T: TFloatingAndHalfBFloat16, U: [input.dtype, opmath(input.dtype)]}"
    declarations = load_declarations(full_run / "native_functions.yaml")
    weights = {"weight": None, "bias": None} if overload.startswith("native_") or overload == "batch_norm" else {}
    for input, weight, declared in (
        (torch.float16, torch.float32, True),
        (torch.bfloat16, torch.bfloat16, True),
        (torch.float64, torch.float64, True),
        (torch.float64, torch.float32, False),  # mixed dtype (CPU): all inputs must share same datatype
        (torch.float16, torch.bfloat16, False),  # mixed dtype (CPU): expect parameter to have scalar type of Float
    ):
        verdict = declarations.accepts(overload, input=input, **dict.fromkeys(weights or ("weight", "bias"), weight))
        assert bool(verdict) is declared, (input, weight, str(verdict))
    if overload == "native_layer_norm":
        refused = str(declarations.accepts(overload, input=torch.float64, weight=torch.float32))
        assert "not in U = [T, opmath(T)]" in refused and "opmath(T) is torch.float64 in this call" in refused


@pytest.mark.slow
def test_the_norms_backwards_follow_the_gradients_computation_dtype_and_show_says_so(full_run: Path, capfd):
    for overload in ("native_layer_norm_backward", "native_group_norm_backward", "native_batch_norm_backward"):
        assert _constraints(full_run, overload)[1] == "  type_constraints: {T: TFloatingAndHalfBFloat16, U: [grad_out.dtype, opmath(grad_out.dtype)]}"
    assert main(["show", "native_layer_norm", "--native-functions", str(full_run / "native_functions.yaml")]) == 0
    shown = capfd.readouterr().out
    said = "(or the dtype T has in the call; or opmath(T): float32 for float16, bfloat16; complex64 for complex32)"
    assert f"    weight, bias, return.1, return.2: U = [input.dtype, opmath(input.dtype)] {said}\n" in shown  # whole: under 200 characters
    report = report_of(full_run)
    plan = next(o for o in report["overloads"] if o["name"] == "native_layer_norm")
    weight = next(v for v in plan["variables"] if "weight" in v["binds"])
    assert weight["opmath"] == weight["follows"] and weight["dtypes"] == []
    refusal = "input cast to float64 beside weight, bias at float32 refused (RuntimeError: mixed dtype (CPU): all inputs must share same datatype.)"
    assert any(refusal in e.get("where", "") for e in weight["evidence"])


@pytest.mark.slow
def test_out_overloads_write_what_their_functional_returns(full_run: Path):
    assert _constraints(full_run, "fft_ifft.out")[0].endswith("*, TComplex(a!) out) -> TComplex(a!)")
    assert _constraints(full_run, "bucketize.Tensor_out")[0].endswith("TInt32OrInt64(a!) out) -> TInt32OrInt64(a!)")  # out_int32=True
    func, constraints = _constraints(full_run, "where.Scalar")
    assert func.endswith("-> T") and constraints == "  type_constraints: {T: [torch.bool, torch.int64, torch.float32, torch.complex64]}"


@pytest.mark.slow
def test_a_return_a_dtype_argument_sets_is_what_calls_with_it_none_returned(full_run: Path):
    assert _constraints(full_run, "_to_copy")[1] == "  type_constraints: {T: [dtype, self.dtype]}"
    assert _constraints(full_run, "zeros")[1] == "  type_constraints: {T: [torch.float32, dtype]}"
    # over two dimensions apart a float8 sum runs (the catalogue's recipe), over one it is refused
    floats_int64_float8 = "'floating_and_complex_types_and(torch.int64, torch.half, torch.bfloat16, *float8_types(), torch.float8_e8m0fnu)'"
    assert _constraints(full_run, "sum.dim_IntList")[1].startswith(f"  type_constraints: {{T: {floats_int64_float8}, U: [dtype, self.dtype]")
    func, constraints = _constraints(full_run, "cumsum_")
    assert func.endswith("-> T(a!)") and "dtype" not in constraints  # an in-place return is its self
    # randint's dtype=long: left out it is long, so a call that passes None (float32) says nothing of it
    assert _constraints(full_run, "randint")[1].startswith("  type_constraints: {T: [TAllAndHalfBFloat16, dtype]")


def test_an_arguments_default_as_the_schema_spells_it():
    randint = TypedSchema.parse("randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, ScalarType? out_dtype=None) -> Tensor")
    assert (randint.default_of("dtype"), randint.default_of("out_dtype"), randint.default_of("high"), randint.default_of("nothing")) == ("long", "None", None, None)


@pytest.mark.slow
def test_a_number_beside_a_shifted_or_masked_tensor_promotes_as_the_kernel_the_call_reaches(full_run: Path):
    # bool << 1 computes in int64 (no shift has a bool kernel): the promotion says so, and the set is the computation's
    func, line = _constraints(full_run, "bitwise_left_shift.Tensor_Scalar")
    assert func.endswith("(TIntegral self, Scalar other) -> TIntegral") and line == "  type_promotion: {kind: default, args: [self, other]}"
    # __and__.Scalar forwards to bitwise_and.Scalar: bool & 1 is int64, bool & True bool
    lines = (full_run / "native_functions.yaml").read_text().split("\n- func: ")
    for overload in ("bitwise_and.Scalar", "__and__.Scalar", "__ixor__.Scalar"):
        (entry,) = [e for e in lines if e.startswith(f"{overload}(")]
        assert "  type_promotion: {kind: default, args: [self, other]}" in entry.splitlines()


@pytest.mark.slow
def test_show_names_the_call_built_for_promotion_that_refused_a_computation_dtype(full_run: Path, capfd):
    code, out, _ = run_cli(capfd, "show", "bitwise_left_shift.Tensor_Scalar", "--native-functions", str(full_run / "native_functions.yaml"))
    at = out.splitlines().index("    bool")
    assert code == 0 and out.splitlines()[at + 1 : at + 3] == [
        "      by self at one dtype, a call built for promotion:",
        "      NotImplementedError: \"lshift_cpu\" not implemented for 'Bool'",
    ]



@pytest.mark.slow
def test_a_reduction_computes_an_integer_tensor_in_int64_and_a_given_dtype_in_that_dtype(full_run: Path):
    from migrate.api import load_declarations

    text = (full_run / "native_functions.yaml").read_text()
    line = "  type_promotion: {kind: int_to_long, args: [self]}"
    for overload in ("sum", "sum.dim_IntList", "prod", "prod.dim_int", "cumsum", "cumprod"):
        (entry,) = [e for e in text.split("\n- func: ") if e.startswith(f"{overload}(")]
        assert entry.startswith(f"{overload}(T self, ") and ", U: [dtype, self.dtype], " in entry and line in entry.splitlines()
    # in-place and out= write into a tensor whose dtype they compute in; nansum refuses complex whatever dtype names
    for overload in ("cumsum_", "cumsum.out", "sum.IntList_out", "nansum"):
        (entry,) = [e for e in text.split("\n- func: ") if e.startswith(f"{overload}(")]
        assert "int_to_long" not in entry
    declarations = load_declarations(full_run / "native_functions.yaml")
    assert declarations.accepts("sum", self="int8", **{"return.0": "int64"}).declared
    assert not declarations.accepts("sum", self="int8", **{"return.0": "int8"}).declared
    refused = declarations.accepts("sum", self="float8_e4m3fn")  # "sum_cpu" not implemented for 'Float8_e4m3fn'
    assert not refused.declared and "computes in torch.float8_e4m3fn" in refused.reason
    assert declarations.accepts("sum", self="float8_e4m3fn", dtype="float32", **{"return.0": "float32"}).declared
    assert declarations.accepts("cumsum", self="uint16", dim="1", dtype="float64", **{"return.0": "float64"}).declared


@pytest.mark.slow
def test_show_says_a_dtype_the_promotion_computes_in_another_is_promoted_there(full_run: Path, capfd):
    code, out, _ = run_cli(capfd, "show", "sum", "--native-functions", str(full_run / "native_functions.yaml"))
    assert code == 0 and "  type_promotion: {kind: int_to_long, args: [self]}" in out
    assert "    bool, uint8, int8, int16, int32, uint16, uint32, uint64: promoted: computed in int64 (int_to_long), which the set holds" in out
