"""Overloads no sample reaches are probed through calls built from their schemas; the plans speak only for what
such a call can show (arguments, not lists), and the run uses them only where nothing else typed the overload."""

from __future__ import annotations

import pytest
import torch

from migrate.runtime import torch_private, worker_stage
from migrate.evidence.probe import schema_calls
from migrate.evidence.probe.schema_calls import probe_built_calls, schema_call_plans
from migrate.evidence.probe.prober import dtype_universe
from migrate.runtime.recorders import dtype_name
from migrate.runtime.runs import SCHEMA_CALL, ProbedCall
from migrate.evidence.gather import Sources
from migrate.infer import infer_plan
from migrate.model.dtypes import DType, canonical, named
from migrate.model.native import NativeFunctions
from migrate.model import verdict
from migrate.model.plan import GROUPS, OPINFO, PROBE, TORCHLIB, Evidence, OverloadPlan, Variable
from tests.conftest import FLOATS, REAL_NATIVE_FUNCTIONS

REAL = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
NAMES = ["aten::_add_relu.Tensor", "aten::_cummax_helper", "aten::_stack", "aten::special_zeta.self_scalar"]


@pytest.fixture(scope="module")
def built():
    reports, lost = probe_built_calls(NAMES, jobs=2)
    assert lost == []
    return reports


def plans_of(reports) -> dict[str, OverloadPlan]:
    return schema_call_plans(tuple(ProbedCall.from_report(SCHEMA_CALL, r) for r in reports))


@pytest.mark.slow  # built calls, in workers
@pytest.mark.live
def test_what_a_built_call_accepts_is_what_aten_accepts_when_called_directly(built):
    variable, returned = plans_of(built)["special_zeta.self_scalar"].variables
    assert returned.binds == ("return.0",) and DType("int64") not in returned.dtypes  # int_to_float: float32 for int64
    accepted = []
    for dtype in dtype_universe():
        try:
            torch.special.zeta(1, torch.rand(2, 3).mul(2).to(dtype))
        except Exception:
            continue
        accepted.append(DType(dtype_name(dtype)))
    assert variable.binds == ("other",)
    assert variable.dtypes == canonical(accepted) and len(accepted) < len(dtype_universe())
    assert {e.source for e in variable.evidence} == {PROBE}
    assert variable.evidence[0].verdict.site.kind == verdict.SCHEMA_CALL


@pytest.mark.slow  # built calls, in workers
@pytest.mark.live
def test_an_index_beside_the_data_is_given_int64_so_the_data_is_not_typed_int64_alone(built):
    variables = {v.binds: v.dtypes for v in plans_of(built)["_cummax_helper"].variables}
    assert variables[("indices",)] == named("int64")
    assert set(named("float32", "float64", "int64")) <= set(variables[("self", "values")])


@pytest.mark.slow  # built calls, in workers
@pytest.mark.live
def test_a_return_no_argument_carries_takes_what_the_probes_returned_and_list_slots_stay_free(built):
    plans = plans_of(built)
    assert "_stack" not in plans  # lists of one dtype were tried, never mixed ones
    (returned,) = [v for v in plans["_add_relu.Tensor"].variables if any(s.startswith("return.") for s in v.binds)]
    assert returned.binds == ("return.0",)  # promoted from two arguments cast apart: no argument's dtype alone
    assert set(named("int64", "float32")) <= set(returned.dtypes) and DType("bool") not in returned.dtypes
    assert any(e.outcome == verdict.RETURNED for e in returned.evidence)


@pytest.mark.slow  # built calls, in workers
@pytest.mark.live
def test_reports_do_not_depend_on_chunks_or_workers(built, monkeypatch):
    monkeypatch.setattr(worker_stage, "CHUNK", 2)
    assert probe_built_calls(NAMES, jobs=1) == (built, [])


def test_built_calls_speak_where_no_sample_reached_widened_by_torchlib_and_their_siblings_follow():
    built = {
        name: OverloadPlan(name, (Variable("P0", FLOATS, ("other",), (Evidence(PROBE, "built", FLOATS, ("other",)),)),))
        for name in ("special_zeta.self_scalar", "add.Tensor")
    }
    observed = OverloadPlan("add.Tensor", (Variable("T", named("int64"), ("other",), (Evidence(OPINFO, "test", named("int64"), ("other",)),)),))
    torchlib = (Evidence(TORCHLIB, "ops: other", named("int64"), ("other",)), Evidence(TORCHLIB, "ops: return", named("int64"), ("return.0",)))
    annotated = OverloadPlan("special_zeta.self_scalar", (Variable("I", named("int64"), ("other", "return.0"), torchlib),))
    wanted = {"special_zeta.self_scalar", "special_zeta.self_scalar_out", "add.Tensor"}
    plan = infer_plan(REAL, Sources({"special_zeta.self_scalar": annotated}, {"add.Tensor": observed}, (), schema_calls=built), wanted)
    by_name = {o.name: o for o in plan.overloads}
    assert by_name["add.Tensor"].variables[0].dtypes == named("int64")
    zeta = by_name["special_zeta.self_scalar"]  # ATen may have refused the built call for its data: torchlib widens it
    assert zeta.variables[0].sources == (TORCHLIB, PROBE) and zeta.variables[0].dtypes == canonical(FLOATS + named("int64"))
    assert sorted(c.kind for c in zeta.conflicts) == ["export-coverage-gap", "torchlib-wider"]
    assert zeta.variables[1].binds == ("return.0",) and zeta.variables[1].sources == (TORCHLIB,)  # torchlib fills the rest
    assert all(len(set(v.evidence)) == len(v.evidence) for v in zeta.variables)  # each piece once
    assert by_name["special_zeta.self_scalar_out"].variables[0].sources == (GROUPS,)


def test_targets_leave_out_overloads_with_a_dtype_argument_and_out_overloads():
    names = {torch_private.overload_slots(f).name for f in schema_calls.targets()}
    assert "aten::sparse_csr_tensor.crow_col_value" not in names  # with dtype=None it accepts float32 values only
    assert "aten::view_copy.dtype" not in names and "aten::special_zeta.self_scalar_out" not in names
    assert {"aten::special_zeta.self_scalar", "aten::_cummax_helper", "aten::fill_diagonal_"} <= names
