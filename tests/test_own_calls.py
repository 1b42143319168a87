"""In-place and out= overloads get calls of their own, built from their functional sibling's accepted calls; returns a
``ScalarType`` argument sets are called at every dtype of that argument."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from migrate.evidence.probe.dtype_arguments import DtypeArgument, _report
from migrate.evidence.probe.merge import probe_plans
from migrate.evidence.probe.prober import probe_call
from migrate.runtime.aten_call import PROBE_TIMEOUT
from migrate.evidence.probe.siblings import sibling_calls, siblings, written_slots
from migrate.evidence.gather import Sources
from migrate.infer import infer_plan
from migrate.infer.dtype_arguments import with_dtype_arguments
from migrate.infer.verdicts import verdicts_of
from migrate.model.dtypes import TENSOR_DTYPES, named
from migrate.model.native import NativeFunctions
from migrate.model.plan import OPINFO, Evidence, OverloadPlan, Variable
from migrate.model.verdict import ACCEPTED, REJECTED
from migrate.runtime import torch_private
from migrate.runtime.recorders import CapturedCall, slot_dtypes
from migrate.runtime.runs import ProbedCall, OpInfoId
from tests.conftest import REAL_NATIVE_FUNCTIONS

REAL = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)


def captured(name: str, *args) -> CapturedCall:
    func = torch_private.aten_overload(name)
    slots = torch_private.overload_slots(func)
    return CapturedCall(func, slots, args, {}, slot_dtypes(slots, args, {}, func(*args)), True, "float32", True)


def test_the_siblings_of_a_functional_overload_are_found_from_the_schemas():
    def names(name):
        return [(torch_private.overload_slots(f).name, outs) for f, outs in siblings(torch_private.aten_overload(name))]

    assert names("aten::add.Tensor") == [("aten::add_.Tensor", ()), ("aten::add.out", ("out",))]
    assert names("aten::max.dim") == [("aten::max.dim_max", ("max", "max_values"))]
    assert names("aten::add_.Tensor") == []  # an in-place overload is no functional one


def probed_siblings(call: CapturedCall) -> dict[str, OverloadPlan]:
    reports = [probe_call(c, f"test\0{i}", PROBE_TIMEOUT, written_slots(c)) for i, c in enumerate(sibling_calls([call]))]
    return probe_plans([ProbedCall.from_report(OpInfoId("add", ""), r) for r in reports])


def test_out_and_in_place_calls_judge_the_written_tensor_at_each_dtype():
    plans = probed_siblings(captured("aten::add.Tensor", torch.rand(2, 3), torch.rand(2, 3)))
    assert set(plans) == {"add.out", "add_.Tensor"}
    out = next(v for v in plans["add.out"].variables if "out" in v.binds)
    verdicts = verdicts_of(out)
    # int64 is accepted where the inputs are int64 too; beside float32 inputs ATen refuses it, and says why
    assert verdicts.of(named("float64")[0]) == ACCEPTED and verdicts.of(named("int64")[0]) == ACCEPTED
    assert verdicts.of(named("uint16")[0]) == REJECTED
    refusals = [e.messages[named("int64")[0]] for e in out.evidence if e.refused and e.verdict.site.cast == ("out",) and named("int64")[0] in e.dtypes]
    assert refusals == ["RuntimeError: result type Float can't be cast to the desired output type Long"]
    inplace = next(v for v in plans["add_.Tensor"].variables if "self" in v.binds)
    assert verdicts_of(inplace).of(named("int64")[0]) == ACCEPTED  # self and other at int64 together
    assert verdicts_of(inplace).of(named("uint16")[0]) == REJECTED  # add_stub has no uint16 kernel


def test_only_what_a_sibling_writes_is_cast_alone():
    inplace, out = sibling_calls([captured("aten::add.Tensor", torch.rand(2, 3), torch.rand(2, 3))])
    assert (written_slots(inplace), written_slots(out)) == ({0}, {2})  # the mutated self; out after self and other
    report = probe_call(out, "test", PROBE_TIMEOUT, written_slots(out))
    assert [cast for cast, *_ in report["probes"]] == [["out"], ["self", "other", "out"]]


def test_a_sibling_is_built_only_where_it_runs_as_built():
    # broadcasting into self: add(a, b) runs, a.add_(b) does not; the out= tensor takes the broadcast shape
    plans = probed_siblings(captured("aten::add.Tensor", torch.rand(1), torch.rand(3)))
    assert set(plans) == {"add.out"}


def test_a_return_a_dtype_argument_sets_takes_every_dtype_the_argument_was_accepted_at():
    fact = DtypeArgument.from_json(_report("aten::to.dtype", PROBE_TIMEOUT))
    assert fact.argument == "dtype" and fact.follows_argument("return.0")
    assert fact.accepted_dtypes == TENSOR_DTYPES
    randn = DtypeArgument.from_json(_report("aten::randn", PROBE_TIMEOUT))
    refused = dict(randn.refused)
    assert "not implemented for 'Long'" in refused[named("int64")[0]] and named("float64")[0] in dict(randn.accepted)


def test_the_return_leaves_the_input_s_variable_and_carries_its_own_verdicts():
    fact = DtypeArgument.from_json(_report("aten::randn", PROBE_TIMEOUT))
    fact = DtypeArgument("to.dtype", "dtype", ("return.0",), fact.accepted, fact.refused)
    observed = (Evidence(OPINFO, "test", named("float32"), ("self", "return.0")),)
    plan = OverloadPlan("to.dtype", (Variable("T", named("float32"), ("self", "return.0"), observed),))
    made = with_dtype_arguments(plan, "to.dtype", fact)
    (own, returned) = made.variables
    assert own.binds == ("self",) and returned.binds == ("return.0",)
    assert returned.dtypes == fact.accepted_dtypes
    assert verdicts_of(returned).of(named("int64")[0]) == REJECTED
    # what other calls returned stays; an argument accepted at one dtype only sets nothing
    observed16 = OverloadPlan("to.dtype", (Variable("T", named("float16"), ("self", "return.0"), (replace(observed[0], dtypes=named("float16")),)),))
    assert named("float16")[0] in with_dtype_arguments(observed16, "to.dtype", fact).variables[1].dtypes
    once = DtypeArgument("to.dtype", "dtype", ("return.0",), fact.accepted[:1], fact.refused)
    assert with_dtype_arguments(plan, "to.dtype", once) is plan
    assert with_dtype_arguments(None, "to.dtype", once).variables[0].dtypes == (fact.accepted[0][0],)  # nothing else speaks
    full = infer_plan(REAL, Sources({}, {"to.dtype": plan}, (), dtype_arguments={"to.dtype": fact}), only={"to.dtype"})
    (overload,) = full.overloads
    # the real schema's dtype is required: the return is exactly the dtype it names, at the dtypes it was accepted at
    set_by = {v.binds: v for v in overload.variables}[("return.0",)]
    assert (set_by.dtypes, set_by.argument.name, set_by.argument.dtypes) == ((), "dtype", returned.dtypes)


def test_an_overload_no_call_could_be_built_for_keeps_aten_s_last_refusal():
    from migrate.evidence.probe.schema_calls import built_calls

    refusals: list[str] = []
    assert built_calls(torch_private.aten_overload("aten::affine_grid_generator"), PROBE_TIMEOUT, refusals=refusals) == []
    assert refusals and all(message.split(":")[0].endswith("Error") for message in refusals)


def test_untyped_entries_show_their_last_refusal_or_the_cuda_claim(tmp_path):
    from migrate.cache import StageCache
    from migrate.evidence.untyped import NOT_BUILT, cuda_claims, last_refusals
    from migrate.runtime.runs import CatalogueEntry

    fact = DtypeArgument("randn", "dtype", ("return.0",), (), ((named("int64")[0], "NotImplementedError: no Long"),))
    found = last_refusals(["randn", "affine_grid_generator"], StageCache(tmp_path), {"randn": fact})
    assert found == {"randn": "NotImplementedError: no Long", "affine_grid_generator": NOT_BUILT}
    entry = CatalogueEntry(OpInfoId("_fft_c2c", ""), (), (("cuda", named("float16", "complex64")),), ("_fft_c2c",))
    assert cuda_claims(["_fft_c2c.out", "other"], [entry]) == {"_fft_c2c.out": ["torch.float16", "torch.complex64"]}


_DTYPE_SET_BY = ("to.device", "to.dtype", "_to_copy", "zeros", "full", "arange", "sum", "sum.dim_IntList", "ones_like")


@pytest.mark.slow  # a run of the tool (warm with the shared cache)
def test_returns_a_dtype_argument_sets_pass_the_runtime_checker_at_every_dtype(tmp_path):
    from migrate.check.checker import checking
    from migrate.cli import main

    assert main(["--out", str(tmp_path), "--yaml-only", *(a for op in _DTYPE_SET_BY for a in ("--op", op))]) == 0
    x = torch.rand(2, 3)
    calls = {
        "to.device": lambda d: x.to("cpu", d),
        "to.dtype": lambda d: x.to(d),
        "_to_copy": lambda d: torch.ops.aten._to_copy(x, dtype=d),
        "zeros": lambda d: torch.zeros(2, 3, dtype=d),
        "full": lambda d: torch.full((2, 3), 1, dtype=d),
        "arange": lambda d: torch.arange(5, dtype=d),
        "sum": lambda d: torch.sum(x, dtype=d),
        "sum.dim_IntList": lambda d: x.sum(1, dtype=d),
        "ones_like": lambda d: torch.ones_like(x, dtype=d),
    }
    ran = {name: 0 for name in calls}
    with checking(tmp_path / "native_functions.yaml", collect=True) as checker:
        for dtype in TENSOR_DTYPES:
            for name, call in calls.items():
                try:
                    call(getattr(torch, dtype.name))
                except Exception:  # ATen refused the dtype: nothing to judge
                    continue
                ran[name] += 1
    assert [str(v) for v in checker.violations] == []
    assert all(ran[name] == len(TENSOR_DTYPES) for name in ("to.device", "to.dtype", "_to_copy", "zeros", "full", "ones_like")), ran
    assert min(ran.values()) > 0
