"""Probing's rules on constructed data and fakes: bounds, clones, seeds, the merge, torchlib bodies."""

from __future__ import annotations

import os
import time

import pytest
import torch

from migrate.evidence.opinfo import sweep
from migrate.evidence.opinfo.observations import plans_from_observations
from migrate.evidence.probe import prober as probing
from migrate.evidence.probe.merge import probe_plans
from migrate.runtime.recorders import CallCapture, CapturedCall, Recording
from migrate.runtime.runs import PROBE_CRASH, PROBE_TIMEOUT, Observation, OpInfoId, Probe, ProbedCall
from migrate.runtime.processes import Job, run_in_workers
from migrate.torchlib_source.resolve import body_evidence
from migrate.torchlib_source.scan import scan_module
from migrate.infer.merge import merge_overload
from migrate.infer.probe_conflicts import JOINED, SPLIT
from migrate.model.dtypes import DType, named
from migrate.model.plan import OPINFO, PROBE, TORCHLIB, Plan
from migrate.pipeline.plan_summary import probe_summary
from migrate.runtime.torch_private import OverloadSlots

F32, F64, I64, BOOL = (DType(n) for n in ("float32", "float64", "int64", "bool"))
FAKE = OpInfoId("fake")


# --- bounded and safe: fake overloads in real workers -----------------------------------------


def fake_call(func, name="aten::fake", mutates=False) -> CapturedCall:
    slots = OverloadSlots(name, ((0, "self", False, False),), ((0, "return.0", False),), False, mutates)
    return CapturedCall(func, slots, (torch.ones(3),), {}, (torch.float32, torch.float32), True, "float32")


def copied(x):
    return x.clone()


def hangs_at_float64(x):
    if x.dtype == torch.float64:
        time.sleep(120)
    return x.clone()


def aborts_at_float64(x):
    if x.dtype == torch.float64:
        os.abort()
    return x.clone()


def fake_opinfo(kind):
    """A stand-in for the sweep's OpInfo job: a sample dtype's report, then three fake calls probed."""
    yield {"dtype": "float32", "samples": 1, "observations": [], "errors": []}
    bad = {"hang": hangs_at_float64, "abort": aborts_at_float64}[kind]
    calls = [fake_call(copied, "aten::fine"), fake_call(bad, f"aten::{kind}"), fake_call(copied, "aten::after")]
    yield from probing.probe_reports(calls, "fake", timeout=1.0)


@pytest.mark.slow  # probes in a worker process
def test_a_probe_over_its_timeout_ends_the_worker_and_the_run_keeps_everything_before():
    started = time.monotonic()
    (outcome,) = run_in_workers([Job(fake_opinfo, "hang", "fake")], jobs=1, progress=False)
    assert time.monotonic() - started < 60
    run = sweep._run_from_outcome(FAKE, outcome)
    (failure,) = run.failures
    assert failure.kind == PROBE_TIMEOUT and "aten::hang" in failure.reason and "SIGALRM" in failure.reason
    assert run.complete and run.samples == 1  # the samples had all run: the run is whole, and cached
    assert [call.overload for call in run.probes] == ["aten::fine"]


@pytest.mark.slow  # probes in a worker process
def test_a_probe_that_crashes_is_contained_in_its_worker_and_recorded():
    work = [Job(fake_opinfo, "abort", "fake"), Job(fake_opinfo, "hang", "other")]
    outcomes = {o.job.label: o for o in run_in_workers(work, jobs=2, progress=False)}
    run = sweep._run_from_outcome(FAKE, outcomes["fake"])
    (failure,) = run.failures
    assert failure.kind == PROBE_CRASH and "aten::abort" in failure.reason and "SIGABRT" in failure.reason
    assert [call.overload for call in run.probes] == ["aten::fine"]
    assert sweep._run_from_outcome(FAKE, outcomes["other"]).probes  # the other worker went on


def test_in_place_overloads_are_probed_on_clones():
    def fill(x):
        return x.fill_(7)

    call = fake_call(fill, "aten::fill_", mutates=True)
    report = probing.probe_call(call, "fill", timeout=10)
    assert torch.equal(call.args[0], torch.ones(3))
    ((cast, accepted, _, _),) = report["probes"]
    assert cast == ["self"] and len(accepted) > 10


def test_a_tensor_the_call_writes_into_is_not_tried_as_a_0_dim_one():
    """``x - y`` may take a 0-dim ``y`` of another dtype; a 0-dim ``out`` is only resized before the same dtype check."""
    from migrate.runtime import torch_private

    func = torch.ops.aten.sub.out
    slots = torch_private.overload_slots(func)
    call = CapturedCall(func, slots, (torch.ones(3), torch.ones(3)), {"out": torch.empty(3)}, (torch.float32,) * 4, False, "float32")
    index = {name: i for i, (_, name, _, _) in enumerate(slots.arguments)}
    assert [gate[1] for gate in probing.zero_dim_gate(call, index["other"])] == ["other"]
    assert probing.zero_dim_gate(call, index["out"]) == []


def test_the_capture_keeps_what_an_in_place_call_was_given():
    x = torch.ones(3)
    capture = CallCapture(lambda overload, direct: 3)
    with Recording(capture) as recording:
        with recording.active():
            x.add_(1)
    (call,) = [c for c in capture.chosen() if c.slots.name == "aten::add_.Tensor"]
    assert torch.equal(call.args[0], torch.ones(3)) and torch.equal(x, torch.full((3,), 2.0))


def test_every_probe_starts_from_its_own_fixed_seed():
    drawn = []

    def noisy(x):
        drawn.append(torch.rand(1).item())
        return x.clone()

    probing.probe_call(fake_call(noisy), "noisy", timeout=10)
    first = list(drawn)
    drawn.clear()
    torch.rand(5)  # whatever the generator's state before, the same draws
    probing.probe_call(fake_call(noisy), "noisy", timeout=10)
    assert drawn == first and len(set(first)) == len(first) > 1


def test_a_probe_that_repeats_an_earlier_one_but_for_the_values_takes_its_answer():
    made = []

    def picky(x):
        made.append(x.dtype)
        if x.dtype == torch.int8:
            raise RuntimeError("index 3 is out of bounds for dimension 0")  # names no dtype: may depend on the values
        if x.is_complex():
            raise NotImplementedError("\"picky\" not implemented for 'ComplexFloat'")
        return x.clone()

    answers: probing.Answers = {}
    first = probing.probe_call(fake_call(picky), "picky", timeout=10, answers=answers)
    asked = len(made)
    made.clear()
    same_but_values = fake_call(picky)
    same_but_values = CapturedCall(picky, same_but_values.slots, (torch.full((3,), 2.0),), {}, same_but_values.dtypes, True, "float32")
    again = probing.probe_call(same_but_values, "picky", timeout=10, answers=answers)
    assert again["probes"] == first["probes"] and asked > 10
    assert made == [torch.int8]  # asked again: only the refusal that names no dtype
    made.clear()
    other_shape = CapturedCall(picky, same_but_values.slots, (torch.ones(4),), {}, same_but_values.dtypes, True, "float32")
    probing.probe_call(other_shape, "picky", timeout=10, answers=answers)
    assert len(made) == asked


def test_the_calls_chosen_vary_the_context_and_keep_each_pattern_of_absent_slots():
    capture = CallCapture(lambda overload, direct: 3)
    for sample in ("bool", "int8", "float32", "int64"):
        capture.sample_dtype = sample
        dtype = getattr(torch, sample)
        with Recording(capture) as recording:
            with recording.active():
                torch.add(torch.ones(2, dtype=dtype), torch.ones(2, dtype=dtype))
                torch.where(torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=dtype), torch.ones(2, dtype=dtype))
    chosen = [c.sample_dtype for c in capture.chosen() if c.slots.name == "aten::add.Tensor"]
    assert chosen == ["float32", "int64", "bool"]


# --- the derivation and the merge, on constructed calls ---------------------------------------


def observed(overload, slots, sample=F32):
    return Observation(overload, slots, FAKE, sample, True, 1)


def probed(overload, slots, *probes):
    return ProbedCall(overload, slots, FAKE, F32, True, probes)


def test_a_probe_rejection_never_overrides_an_observation():
    observations = [observed("aten::f", (("self", I64), ("return.0", I64)), I64)]
    call = probed("aten::f", (("self", F32), ("return.0", F32)), Probe(("self",), ((F64, (F64,)),), ((I64, "RuntimeError: no int64 here"),)))
    observations.append(observed("aten::f", call.slots))
    merged = merge_overload("f", None, plans_from_observations(observations)["f"], probe_plans([call], observations)["f"])
    (variable,) = merged.variables
    assert variable.dtypes == named("int64", "float32", "float64")
    (refused,) = [e for e in variable.evidence if e.refused]
    assert refused.dtypes == named("int64") and "no int64 here" in refused.where


def test_probing_splits_a_variable_and_each_slot_keeps_only_its_own_observations():
    sdpa = "aten::sdpa_like"
    observations = [
        observed(sdpa, (("query", F32), ("attn_mask", F32), ("return.0", F32))),
        observed(sdpa, (("query", F64), ("attn_mask", None), ("return.0", F64)), F64),
    ]
    call = probed(
        sdpa,
        observations[0].slots,
        Probe(("query",), (), ((F64, "RuntimeError: query alone"),)),
        Probe(("attn_mask",), ((BOOL, (F32,)),), ((F64, "RuntimeError: mask"),)),
        Probe(("query", "attn_mask"), ((F64, (F64,)),), ()),
    )
    opinfo = plans_from_observations(observations)["sdpa_like"]
    assert [v.binds for v in opinfo.variables] == [("query", "attn_mask", "return.0")]
    merged = merge_overload("sdpa_like", None, opinfo, probe_plans([call], observations)["sdpa_like"])
    assert [v.binds for v in merged.variables] == [("query", "return.0"), ("attn_mask",)]
    mask = merged.variable_of("attn_mask")
    assert mask.dtypes == named("bool", "float32", "float64")  # float64 from the probe together with query
    assert {d for e in mask.evidence if e.source == OPINFO for d in e.dtypes} == {F32}  # never observed at float64
    assert [c.kind for c in merged.conflicts] == [SPLIT]


def test_slots_probing_shows_tied_are_joined_first():
    # a == b and a == c wherever they meet, b != c: the observations alone tie a to b (schema
    # order); probing shows a and c cannot move apart, so a joins c and b stays alone.
    slots = lambda a, b, c: (("a", a), ("b", b), ("c", c))  # noqa: E731
    observations = [observed("aten::g", slots(F32, F32, None)), observed("aten::g", slots(None, F32, F64))]
    observations.append(observed("aten::g", slots(F64, None, F64), F64))
    call = probed(
        "aten::g",
        slots(F64, None, F64),
        Probe(("a",), (), ((F32, "RuntimeError: a and c differ"),)),
        Probe(("c",), (), ((F32, "RuntimeError: a and c differ"),)),
        Probe(("a", "c"), ((F32, ()),), ()),
    )
    opinfo = plans_from_observations(observations)["g"]
    assert [v.binds for v in opinfo.variables] == [("a", "b"), ("c",)]
    merged = merge_overload("g", None, opinfo, probe_plans([call], observations)["g"])
    assert [v.binds for v in merged.variables] == [("a", "c"), ("b",)]
    assert sorted(c.kind for c in merged.conflicts) == [JOINED, SPLIT]
    # c, observed at float64 only, was accepted at float32 together with a: widened.
    assert probe_summary(Plan((), (merged,))).to_json() == {"slots_widened": 1, "variables_split": 1, "variables_joined": 1, "overloads_from_built_calls": 0}


def test_slots_widened_count_slots_with_accepted_dtypes_never_observed():
    observations = [observed("aten::h", (("self", F32), ("return.0", F32)))]
    call = probed("aten::h", observations[0].slots, Probe(("self",), ((F64, (F64,)),), ((BOOL, "RuntimeError: no"),)))
    merged = merge_overload("h", None, plans_from_observations(observations)["h"], probe_plans([call], observations)["h"])
    assert probe_summary(Plan((), (merged,))).slots_widened == 2  # self, and the return it widened too
    assert all(PROBE in v.sources for v in merged.variables)


# --- torchlib bodies ---------------------------------------------------------------------------

MODULE = b'''from onnxscript import ir
from onnxscript.onnx_types import BOOL, FLOAT16, INT64


@torch_op("aten::f", trace_only=True)
def aten_f(
    self: TTensor, mask: TensorType, other: TTensor
) -> TTensor:
    if mask.dtype == ir.DataType.BOOL:
        pass
    if self.type.dtype in {
        FLOAT16.dtype,
        INT64.dtype,
    }:
        pass
    # other.dtype == ir.DataType.BOOL, in a comment
    local = other
    if local.dtype == BOOL.dtype:  # not a parameter
        pass
    return self


@torch_op("aten::g")
def aten_g(self: TTensor) -> TTensor:
    if self.dtype == ir.DataType.BOOL:  # not trace-only
        pass
    return self


def helper(self):
    return self.dtype == ir.DataType.FLOAT
'''


def test_trace_only_bodies_yield_their_dtype_comparisons_with_lines():
    facts = scan_module(MODULE)
    checks = {r.function: [(c.param, c.dtypes, c.line) for c in r.dtype_checks] for r in facts.registrations}
    lines = MODULE.decode().splitlines()
    mask_line = next(i for i, text in enumerate(lines, 1) if "mask.dtype ==" in text)
    self_line = next(i for i, text in enumerate(lines, 1) if "self.type.dtype in" in text)
    assert checks == {"aten_f": [("mask", ("BOOL",), mask_line), ("self", ("FLOAT16", "INT64"), self_line)], "aten_g": []}
    (registration,) = [r for r in facts.registrations if r.function == "aten_f"]
    evidence = list(body_evidence([registration], {"self", "mask", "other"}))
    assert [(e.source, e.slots, e.dtypes) for e in evidence] == [
        (TORCHLIB, ("mask",), named("bool")),
        (TORCHLIB, ("self",), named("float16", "int64")),
    ]
    assert evidence[0].where.endswith(f":{mask_line} aten_f: mask.dtype == ir.DataType.BOOL")
