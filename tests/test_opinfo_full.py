"""The whole OpInfo sweep in the run's own cache (which the full-run tests fill too: one cold sweep per suite at most)."""

from __future__ import annotations

import pytest

from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache, run_sweep
from migrate.runtime.runs import CALL_RAISED, NO_CPU_DTYPES
from migrate.model.native import NativeFunctions, installed_native_functions

pytestmark = pytest.mark.slow  # the whole OpInfo sweep

FLOATS = ["float16", "bfloat16", "float32", "float64"]


@pytest.fixture(scope="module")
def result():
    return run_sweep(SweepCache.of(StageCache.at()), progress=False)


@pytest.fixture(scope="module")
def plans(result):
    return plans_from_sweep(result)


def test_every_opinfo_is_run_or_listed_as_failed(result):
    runnable = [entry.opinfo for entry in result.catalogue if entry.cpu_dtypes]
    assert [run.opinfo for run in result.runs] == runnable
    assert all(run.complete for run in result.runs)
    no_cpu = {entry.opinfo for entry in result.catalogue if not entry.cpu_dtypes}
    assert {f.opinfo for f in result.failures if f.kind == NO_CPU_DTYPES} == no_cpu
    assert all(f.reason for f in result.failures)
    for run in result.runs:
        assert {f.opinfo for f in run.failures} <= {run.opinfo}
        assert sum(f.count for f in run.failures if f.kind == CALL_RAISED) <= run.samples


def test_jiterator_opinfos_fail_for_want_of_a_gpu(result):
    runs = [run for run in result.runs if run.opinfo.name.startswith("jiterator_")]
    assert runs
    for run in runs:
        (failure,) = run.failures
        assert failure.kind == CALL_RAISED and "CUDA" in failure.reason and failure.count == run.samples
        assert failure in result.failures and not run.observations


def test_at_least_758_overloads_of_native_functions_are_observed(plans):
    native = NativeFunctions.load(installed_native_functions())
    assert sum(1 for name in plans if name in native.by_name) >= 758


def test_sdpa_at_its_own_name_one_variable_over_the_float_dtypes(plans):
    variable = plans["scaled_dot_product_attention"].variable_of("query")
    assert {"query", "key", "value", "return.0"} <= set(variable.binds)
    assert [d.name for d in variable.dtypes] == FLOATS


def test_add_tensor_self_and_other_are_different_variables(plans):
    plan = plans["add.Tensor"]
    assert plan.variable_of("self") is not plan.variable_of("other")


def test_where_self_condition_is_its_own_variable_over_bool(plans):
    condition = plans["where.self"].variable_of("condition")
    assert condition.binds == ("condition",) and [d.name for d in condition.dtypes] == ["bool"]
