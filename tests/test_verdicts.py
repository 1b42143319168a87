"""Verdicts per dtype: calls on empty tensors accept nothing, only OpInfo's CUDA claim is other-device evidence,
gating arguments are probed, and the real run's table rows (issue 23) hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from migrate.runtime import torch_private
from migrate.evidence.opinfo.observations import plans_from_observations
from migrate.evidence.probe import prober as probing
from migrate.evidence.probe.merge import probe_plans, probe_site
from migrate.runtime import recorders
from migrate.runtime.runs import CatalogueEntry, Observation, OpInfoId, Probe, ProbedCall
from migrate.infer.merge import merge_overload
from migrate.infer.verdicts import verdicts_of, with_verdicts
from migrate.model.dtypes import TENSOR_DTYPES, DType
from migrate.model.native import NativeFunctions, installed_native_functions
from migrate.model.plan import DECLARED, EMPTY, PROBE, Evidence, OverloadPlan, Plan, Variable, Verdicts
from migrate.model.verdict import ACCEPTED, OTHER_DEVICE, REJECTED, UNKNOWN, Verdict
from migrate.pipeline.plan_summary import dtype_verdict_summary

F32, F64, I64, BOOL = (DType(n) for n in ("float32", "float64", "int64", "bool"))
MM = OpInfoId("mm")


def _recorded(code) -> list[recorders.RawObservation]:
    with recorders.Recording() as recording:
        with recording.active():
            code()
    return recording.observations()


def test_a_recorded_call_on_an_empty_tensor_is_marked_and_accepts_no_dtype():
    empty = torch.zeros(0, 2, dtype=torch.bool)
    (raw,) = [o for o in _recorded(lambda: torch.mm(empty, torch.zeros(2, 3, dtype=torch.bool))) if o.overload == "aten::mm"]
    assert not raw.nonempty  # it ran: ATen returned before its dtype dispatch
    (full,) = [o for o in _recorded(lambda: torch.mm(torch.ones(2, 2), torch.ones(2, 3))) if o.overload == "aten::mm"]
    assert full.nonempty
    slots = (("self", BOOL), ("mat2", BOOL), ("return.0", BOOL))
    observations = [
        Observation("aten::mm", slots, MM, BOOL, True, 1, nonempty=False),
        Observation("aten::mm", tuple((name, F32) for name, _ in slots), MM, F32, True, 1),
    ]
    plan = with_verdicts(plans_from_observations(observations)["mm"])
    (variable,) = plan.variables
    assert variable.dtypes == (F32,)
    assert variable.verdicts.of(BOOL) == UNKNOWN and variable.verdicts.of(F32) == ACCEPTED
    assert any(e.source == EMPTY and BOOL in e.dtypes for e in variable.evidence)  # kept for the report


def test_a_probe_of_an_empty_call_accepts_nothing_and_a_gather_with_an_empty_index_adds_no_uint8():
    slots = (("self", F32), ("index", I64), ("return.0", F32))
    uint8 = DType("uint8")
    accepting = Probe(("index",), ((uint8, (F32,)),), ())
    empty = ProbedCall("aten::gather", slots, OpInfoId("gather"), F32, True, (accepting,), nonempty=False)
    refusing = Probe(("index",), (), ((uint8, "RuntimeError: gather(): Expected dtype int32/int64 for index"),))
    full = ProbedCall("aten::gather", slots, OpInfoId("gather"), F32, True, (refusing,))
    observations = [Observation("aten::gather", slots, OpInfoId("gather"), F32, True, 1)]
    plan = with_verdicts(merge_overload("gather", None, plans_from_observations(observations)["gather"], probe_plans([empty, full], observations)["gather"]))
    index = plan.variable_of("index")
    assert uint8 not in index.dtypes
    assert index.verdicts.of(uint8) == REJECTED and "int32/int64" in dict(index.verdicts.rejected)[uint8]


def test_other_device_is_opinfo_cuda_claim_only():
    relu = next(op for op in torch_private.op_db() if op.name == "nn.functional.relu")
    declared = torch_private.opinfo_declared_dtypes(relu)
    assert set(declared) == {"cuda"}  # MPS/XPU/HPU sets OpInfo derives by default are tested by nobody
    assert declared["cuda"] == frozenset(relu.supported_dtypes("cuda"))
    assert torch.bool not in declared["cuda"]


def test_a_cuda_claim_attaches_to_the_opinfos_own_op_called_directly_only():
    entry = CatalogueEntry(OpInfoId("f"), (F32,), (("cuda", (F32, F64)),), ("f",))
    slots = (("self", F32), ("return.0", F32))
    own = Observation("aten::f", slots, OpInfoId("f"), F32, True, 1)
    nested = Observation("aten::g", slots, OpInfoId("f"), F32, False, 1)
    plans = plans_from_observations([own, nested], [entry])
    own_variable, nested_variable = plans["f"].variables[0], plans["g"].variables[0]
    assert any(e.source == DECLARED and F64 in e.dtypes for e in own_variable.evidence)
    assert not any(e.source == DECLARED for e in nested_variable.evidence)
    assert verdicts_of(own_variable).of(F64) == OTHER_DEVICE


def test_mean_of_an_int64_tensor_with_dtype_float32_is_a_valid_call_so_mean_accepts_int64():
    (captured,) = _captured(lambda: torch.mean(torch.ones(3)), "aten::mean")
    report = probing.probe_call(captured, "mean", timeout=10)
    ((cast, accepted, refused, gated),) = report["probes"]
    assert cast == ["self"] and ["int64", "dtype=torch.float32"] in [row[:2] for row in gated] and "int64" in [d for d, _ in accepted]
    assert "int64" not in [d for d, _ in refused]
    call = ProbedCall.from_report(OpInfoId("mean"), report)
    variable = probe_plans([call])["mean"].variable_of("self")
    assert I64 in variable.dtypes and BOOL in variable.dtypes
    assert any("dtype=torch.float32" in e.where and I64 in e.dtypes for e in variable.evidence)


def _captured(code, overload: str) -> list[recorders.CapturedCall]:
    capture = recorders.CallCapture(lambda name, direct: 3)
    capture.sample_dtype = "float32"
    with recorders.Recording(capture) as recording:
        with recording.active():
            code()
    return [c for c in capture.chosen() if c.slots.name == overload]


def test_verdicts_precedence_and_json_round_trip():
    verdicts = Verdicts((F32,), (F32, F64), ((F64, "no"), (BOOL, "RuntimeError: no bool")))
    assert [verdicts.of(d) for d in (F32, F64, BOOL, I64)] == [ACCEPTED, OTHER_DEVICE, REJECTED, UNKNOWN]
    assert verdicts.incomplete and len(verdicts.unknown) == len(TENSOR_DTYPES) - 3
    assert Verdicts.from_json(json.loads(json.dumps(verdicts.to_json()))) == verdicts
    variable = Variable("T", (F32, F64), ("self",), verdicts=verdicts)
    assert Variable.from_json(variable.to_json()) == variable and variable.to_json()["incomplete"]


def test_the_summary_counts_unknown_verdicts_by_overload_kind():
    native = NativeFunctions.load(installed_native_functions())
    complete = Verdicts(TENSOR_DTYPES)
    plan = Plan(
        (),
        (
            OverloadPlan("add.Tensor", (Variable("T", (F32,), ("self",), verdicts=Verdicts((F32,))),)),
            OverloadPlan("add_.Tensor", (Variable("T", TENSOR_DTYPES, ("self",), verdicts=complete),)),
            OverloadPlan("relu_", (Variable("T", (F32,), ("self",), verdicts=Verdicts((F32,), (), ((BOOL, "no"),))),)),
        ),
    )
    summary = dtype_verdict_summary(native, plan).to_json()
    assert summary["unknown_by_kind"] == {"functional": len(TENSOR_DTYPES) - 1, "inplace": len(TENSOR_DTYPES) - 2}
    assert summary["incomplete_variables"] == 2 and summary["by_verdict"][REJECTED] == 1


def test_every_unknown_verdict_says_why_and_the_summary_counts_them_by_reason():
    from migrate.model.plan import EMPTY, EMPTY_ONLY, NO_CPU_KERNEL, NO_VALID_CALL, NOT_TRIED, OPINFO, Evidence

    seen = Evidence(OPINFO, "test", (F32,), ("self",))
    empty = Evidence(EMPTY, "test, on empty tensors", (BOOL,), ("self",))
    ran = verdicts_of(Variable("T", (F32,), ("self",), (seen, empty)))
    assert (ran.reason_of(BOOL), ran.reason_of(I64), ran.reason_of(F32)) == (EMPTY_ONLY, NOT_TRIED, "")
    assert Verdicts.from_json(json.loads(json.dumps(ran.to_json()))) == ran
    assert verdicts_of(Variable("T", (F32,), ("self",), (empty,))).reason_of(I64) == NO_VALID_CALL
    assert verdicts_of(Variable("T", (F32,), ("self",), (seen,)), cpu_kernel=False).reason_of(I64) == NO_CPU_KERNEL
    native = NativeFunctions.load(installed_native_functions())
    plan = Plan((), (OverloadPlan("relu_", (Variable("T", (F32,), ("self",), verdicts=ran),)),))
    summary = dtype_verdict_summary(native, plan)
    assert summary.unknown_by_reason == {EMPTY_ONLY: 1, NOT_TRIED: len(TENSOR_DTYPES) - 2}
    assert summary.to_json()["unknown_by_kind_and_reason"] == {"inplace": summary.unknown_by_reason}
    assert f"unknown verdicts by reason: {EMPTY_ONLY} 1, {NOT_TRIED} {len(TENSOR_DTYPES) - 2}" in summary.lines()


def test_a_return_probes_never_made_is_rejected_and_one_they_never_reached_stays_unknown():
    from migrate.evidence.probe.merge import RETURNS_LABEL
    from migrate.evidence.sites import seen_on
    from migrate.infer.verdicts import NEVER_RETURNED
    from migrate.model.plan import OPINFO, Evidence
    from migrate.model.verdict import PROBE_CALL, RETURNED

    by_probes = Verdict(RETURNED, seen_on(PROBE_CALL, f"{RETURNS_LABEL}, OpInfo abs (1 call)"))
    returned = Evidence(PROBE, "", (F32, F64), ("return.0",), verdict=by_probes)
    verdicts = verdicts_of(Variable("T", (F32, F64), ("return.0",), (returned,)))
    assert verdicts.of(F64) == ACCEPTED and dict(verdicts.rejected)[I64] == NEVER_RETURNED and not verdicts.incomplete
    observed = Evidence(OPINFO, "test", (F32,), ("return.0",))
    assert verdicts_of(Variable("T", (F32,), ("return.0",), (observed,))).of(I64) == UNKNOWN  # no probe cast its inputs
    both = Evidence(PROBE, "", (F32,), ("self", "return.0"), verdict=by_probes)
    assert verdicts_of(Variable("T", (F32,), ("self", "return.0"), (both,))).of(I64) == UNKNOWN  # an input: nobody cast it


# --- the real run: the rows of issue 23's table --------------------------------------------------


@pytest.fixture(scope="module")
def real_run(full_run) -> tuple[dict, Path]:
    return json.loads((full_run / "report.json").read_text()), full_run


def _slot(report: dict, overload: str, slot: str) -> dict:
    (plan,) = [o for o in report["overloads"] if o["name"] == overload]
    (variable,) = [v for v in plan["variables"] if slot in v["binds"]]
    return variable


@pytest.mark.slow
@pytest.mark.parametrize(
    ("overload", "slot", "dtype", "declared"),
    [
        ("mm", "self", "torch.bool", False),
        ("clamp", "self", "torch.int64", True),
        ("remainder.Scalar", "self", "torch.float32", True),
        ("gather", "index", "torch.uint8", False),
        ("mean", "self", "torch.int64", True),
        ("relu", "self", "torch.bool", False),
        ("max_pool2d", "self", "torch.bool", False),
        ("avg_pool2d", "self", "torch.bool", False),
        ("searchsorted.Tensor", "self", "torch.complex32", False),
        ("searchsorted.Tensor", "self", "torch.complex64", False),
        ("searchsorted.Tensor", "sorted_sequence", "torch.float8_e4m3fn", False),
    ],
)
def test_the_real_run_declares_what_aten_does_on_non_empty_tensors(real_run, overload, slot, dtype, declared):
    report, _ = real_run
    variable = _slot(report, overload, slot)
    assert (dtype in variable["dtypes"]) == declared
    verdict = variable["verdicts"]["by_dtype"][dtype]
    assert verdict in ((ACCEPTED, OTHER_DEVICE) if declared else (REJECTED, UNKNOWN))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.complex32, torch.float8_e4m3fn])
def test_cumsum_declares_a_dtype_it_refuses_alone_exactly_when_its_dtype_argument_lets_it_in(real_run, dtype):
    from migrate.api import load_declarations

    _, out = real_run
    declarations = load_declarations(out / "native_functions.yaml")
    name = str(dtype).removeprefix("torch.")
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.cumsum(torch.ones(3, dtype=dtype), 0)
    assert not declarations.accepts("cumsum", self=name, dim="0").declared  # int_to_long: it computes in its own dtype
    assert torch.cumsum(torch.ones(3, dtype=dtype), 0, dtype=torch.float32).dtype == torch.float32
    assert declarations.accepts("cumsum", self=name, dim="0", dtype="float32").declared  # a given dtype is the computation's


@pytest.mark.slow
def test_the_real_run_declares_no_dtype_only_empty_calls_showed_and_keeps_its_coverage(real_run):
    report, _ = real_run
    summary = report["summary"]
    assert summary["verdicts"]["empty_call_dtypes"]["now"] == 0
    assert summary["verdicts"]["empty_call_dtypes"]["before"] > 0
    assert summary["coverage"]["entry_share"] >= 0.80


def test_a_float_scalar_lets_an_unsigned_tensor_into_clamp_so_clamp_accepts_uint16():
    """clamp(uint16, 0, 3) has no kernel, clamp(uint16, 0.5, 3.5) computes in float: a valid call."""
    (captured,) = _captured(lambda: torch.clamp(torch.ones(3), 0, 3), "aten::clamp")
    report = probing.probe_call(captured, "clamp", timeout=10)
    ((cast, accepted, refused, gated),) = [p for p in report["probes"] if p[0] == ["self"]]
    assert ["uint16", "min=0.5", "NotImplementedError: \"clamp_scalar_cpu\" not implemented for 'UInt16'"] in gated  # and the refusal as recorded
    assert "uint16" in [d for d, _ in accepted] and "uint16" not in [d for d, _ in refused]
    assert report["numbers"] == [["min", "int"], ["max", "int"]]


def test_a_float8_operand_as_a_0_dim_tensor_beside_a_float32_one_is_a_valid_call_of_sub():
    """sub(x, y) has no float8 kernel, but a 0-dim float8 ``other`` is cast to ``self``'s float32: accepted, gated."""
    (captured,) = _captured(lambda: torch.sub(torch.ones(2, 3), torch.ones(2, 3)), "aten::sub.Tensor")
    report = probing.probe_call(captured, "sub", timeout=10)
    ((_, accepted, refused, gated),) = [p for p in report["probes"] if p[0] == ["other"]]
    assert ["float8_e4m3fn", "other 0-dim"] in [row[:2] for row in gated] and "float8_e4m3fn" in [d for d, _ in accepted]
    ((_, _, together, _),) = [p for p in report["probes"] if p[0] == ["self", "other"]]
    assert "float8_e4m3fn" in [d for d, _ in together]  # both float8: no kernel, and no 0-dim retry for a joint cast
    (alone,) = _captured(lambda: torch.neg(torch.ones(2, 3)), "aten::neg")
    assert probing.zero_dim_gate(alone, 0) == []  # no other tensor carries the shape: a 0-dim neg proves nothing more


def test_a_verdicts_message_is_the_dtypes_own_not_the_shared_text():
    refusals = ((I64, "\"gelu\" not implemented for 'Long'"), (DType("int8"), "\"gelu\" not implemented for 'Char'"))
    refused = Evidence(PROBE, "", (DType("int8"), I64), ("self",), 2, Verdict(REJECTED, probe_site(("self",), "OpInfo x (2 calls)"), refusals))
    assert refused.where == "self cast alone, OpInfo x (2 calls): rejected: \"gelu\" not implemented for '{Char|Long}'"  # the line shares them
    variable = Variable("T", (F32,), ("self",), (refused,))
    assert dict(verdicts_of(variable).rejected) == {DType("int8"): "\"gelu\" not implemented for 'Char'", I64: "\"gelu\" not implemented for 'Long'"}
