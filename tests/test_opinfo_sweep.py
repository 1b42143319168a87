"""The OpInfo evidence source on a handful of real OpInfos: recorders, sweep, cache, filter, variables.

The whole sweep takes minutes; these tests run the few OpInfos that show each
property (mixed-dtype ``add.Tensor`` calls come from inside gradient and conv
samples) in a temporary cache.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from migrate.runtime import torch_private
from migrate.evidence.opinfo import sweep
from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache, run_sweep
from migrate.runtime import processes
from migrate.runtime.runs import CALL_RAISED, NO_CPU_DTYPES, OpInfoId
from migrate.runtime.processes import CRASH, DONE, TIMEOUT, Job, run_in_workers
from tests.conftest import with_catalogue_of

pytestmark = [pytest.mark.slow, pytest.mark.live]  # OpInfo sweeps in workers, into a cold cache

FLOATS = ["float16", "bfloat16", "float32", "float64"]
SDPA = OpInfoId("nn.functional.scaled_dot_product_attention")
SELECTED = [
    "scaled_dot_product_attention",
    "where",
    "linear",
    "gradient",
    "conv1d",
    "jiterator_unary",
    "_flash_attention_forward",
]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The selected OpInfos' sweep and the cache it filled."""
    cache = tmp_path_factory.mktemp("opinfo-cache")
    return cache, run_sweep(SweepCache.of(StageCache.at(cache)), jobs=2, ops=SELECTED, progress=False)


@pytest.fixture(scope="module")
def cache(swept):
    return swept[0]


@pytest.fixture(scope="module")
def result(swept):
    return swept[1]


@pytest.fixture(scope="module")
def plans(result):
    return plans_from_sweep(result)


def names(dtypes):
    return [d.name for d in dtypes]


def copy_of(cache, tmp_path, with_runs=True):
    """A private copy of the module's cache (all of it, or the catalogue only)."""
    target = tmp_path / "cache"
    if with_runs:
        shutil.copytree(cache, target)
        return target
    return with_catalogue_of(cache, target)


def test_the_cold_filter_selects_opinfos_by_operator_name(result):
    assert sorted(str(e.opinfo) for e in result.catalogue) == [
        "gradient",
        "jiterator_unary",
        "nn.functional.conv1d",
        "nn.functional.linear",
        "nn.functional.scaled_dot_product_attention",
        "torch.ops.aten._flash_attention_forward",
        "where",
    ]
    assert result.stats.ran == 6 and result.stats.from_cache == 0  # _flash_attention_forward has no CPU dtypes


def test_a_cold_catalogue_reads_cuda_claims_as_on_a_current_gpu(result):
    """The database decides ``SM80OrLater`` when it is imported, False on a host without a GPU: flash attention would
    claim float16 alone on CUDA. Read as on capability 9.0, it claims bfloat16 too."""
    (flash,) = [e for e in result.catalogue if str(e.opinfo) == "torch.ops.aten._flash_attention_forward"]
    assert names(dict(flash.declared)["cuda"]) == ["float16", "bfloat16"]
    # they depend on the installed torch alone: the process read them once, and every later catalogue takes those
    assert torch_private.opinfo_claims_on_a_current_gpu()() is torch_private.opinfo_claims_on_a_current_gpu()()


def test_the_cold_catalogue_reads_alias_pairs_from_torch(cache):
    catalogue = SweepCache.of(StageCache.at(cache)).cached_catalogue()  # every OpInfo, as the worker read them
    pairs = {pair for entry in catalogue for pair in entry.aliases}
    assert ("clip", "clamp") in pairs and ("special_expit", "sigmoid") in pairs
    stored = json.loads(next(cache.rglob("catalogue.json")).read_text())
    assert any(["clip", "clamp"] in o["aliases"] for o in stored)


def test_sdpa_is_seen_at_its_own_name_with_one_variable_over_the_float_dtypes(result, plans):
    direct = {o.overload for o in result.observations if o.direct and o.opinfo == SDPA}
    assert "aten::scaled_dot_product_attention" in direct
    plan = plans["scaled_dot_product_attention"]
    variable = plan.variable_of("query")
    assert {"query", "key", "value", "return.0"} <= set(variable.binds)
    assert names(variable.dtypes) == FLOATS
    assert any(e.source == "opinfo" and str(SDPA) in e.where for e in variable.evidence)


def test_linear_is_seen_at_its_own_name_and_through_its_kernels(result, plans):
    seen = {(o.overload, o.direct) for o in result.observations if o.opinfo == OpInfoId("nn.functional.linear")}
    assert ("aten::linear", True) in seen
    assert any(not direct for _, direct in seen)
    assert plans["linear"].variable_of("input") is not None


def test_add_tensor_self_and_other_end_in_different_variables(result, plans):
    mixing = {
        str(o.opinfo)
        for o in result.observations
        if o.overload == "aten::add.Tensor" and None not in (dict(o.slots)["self"], dict(o.slots)["other"])
        and dict(o.slots)["self"] != dict(o.slots)["other"]
    }
    assert {"gradient", "nn.functional.conv1d"} <= mixing
    plan = plans["add.Tensor"]
    assert plan.variable_of("self") is not plan.variable_of("other")


def test_where_condition_is_its_own_variable_over_bool(plans):
    condition = plans["where.self"].variable_of("condition")
    assert condition.binds == ("condition",)
    assert names(condition.dtypes) == ["bool"]
    assert len(plans["where.self"].variable_of("self").dtypes) > 1


def test_every_failure_is_listed_with_its_reason(result):
    failures = {(str(f.opinfo), f.kind): f for f in result.failures}
    jiterator = failures["jiterator_unary", CALL_RAISED]
    (run,) = [r for r in result.runs if str(r.opinfo) == "jiterator_unary"]
    assert "CUDA" in jiterator.reason and jiterator.count == run.samples
    assert failures["torch.ops.aten._flash_attention_forward", NO_CPU_DTYPES].reason
    assert {str(f.opinfo) for f in result.failures} == {"jiterator_unary", "torch.ops.aten._flash_attention_forward"}


def test_declared_dtypes_of_other_devices_are_kept(result):
    (entry,) = [e for e in result.catalogue if e.opinfo == OpInfoId("jiterator_unary")]
    declared = dict(entry.declared)
    assert "cuda" in declared and "cpu" not in declared
    assert names(declared["cuda"]) and set(declared["cuda"]) >= set(entry.cpu_dtypes)


def test_a_rerun_reads_the_cache_and_gives_the_same_result(cache, result):
    again = run_sweep(SweepCache.of(StageCache.at(cache)), jobs=2, ops=SELECTED, progress=False)
    assert again.stats.ran == 0 and again.stats.from_cache == 6
    assert again == result


def test_refresh_runs_again(cache, result, tmp_path):
    private = copy_of(cache, tmp_path)
    again = run_sweep(SweepCache.of(StageCache.at(private)), jobs=2, ops=["where"], refresh=True, progress=False)
    # The where OpInfo by its name; sdpa because its cached run shows it reaching aten::where.self.
    assert [str(run.opinfo) for run in again.runs] == [str(SDPA), "where"]
    assert again.stats.ran == 2 and again.stats.from_cache == 0
    assert set(again.runs) <= set(result.runs)


def test_observations_do_not_depend_on_the_number_of_jobs(result):
    entries = [e for e in result.catalogue if e.cpu_dtypes]
    one = sweep.run_opinfos(entries, jobs=1, progress=False)
    two = sweep.run_opinfos(entries, jobs=2, progress=False)
    assert one == two == list(result.runs)


def test_a_cold_op_filter_runs_only_the_opinfos_of_that_op(cache, tmp_path):
    private = copy_of(cache, tmp_path, with_runs=False)
    only = run_sweep(SweepCache.of(StageCache.at(private)), jobs=2, ops=["aten::scaled_dot_product_attention"], progress=False)
    assert [run.opinfo for run in only.runs] == [SDPA] and only.stats.ran == 1


def test_a_warm_op_filter_also_selects_the_opinfos_cached_as_reaching_it(cache, tmp_path):
    private = copy_of(cache, tmp_path)
    selected = run_sweep(SweepCache.of(StageCache.at(private)), jobs=2, ops=["add.Tensor"], progress=False)
    chosen = {str(e.opinfo) for e in selected.catalogue}
    assert {"gradient", "nn.functional.conv1d", "add"} <= chosen
    assert "jiterator_unary" not in chosen
    assert selected.stats.ran == 1  # only the add OpInfo, found by name, was not cached yet


def test_the_recorders_count_a_call_seen_by_both_once():
    import torch

    from migrate.runtime.recorders import Recording

    x = torch.ones(3)
    with Recording() as recording:
        for _ in range(3):  # the first call goes through torch's PreDispatch handling, the others are memoised
            with recording.active():
                torch.add(x, x)
                torch.nn.functional.linear(x.reshape(1, 3), torch.ones(2, 3))
    seen = {(o.overload, o.direct): o.count for o in recording.observations()}
    assert seen[("aten::add.Tensor", True)] == 3 and ("aten::add.Tensor", False) not in seen
    assert seen[("aten::linear", True)] == 3
    assert ("aten::linear", False) not in seen and seen[("aten::mm", False)] == 3


def test_memoised_handlers_are_forgotten_and_yield_to_another_recording():
    import torch

    from migrate.runtime.recorders import Recording

    x = torch.ones(2)
    add = torch.ops.aten.add.Tensor
    first = Recording()
    with first.active():
        torch.add(x, x)
    assert add._dispatch_cache  # memoised while `first` lives
    with Recording() as second:  # `first` was not closed: its entry must not capture these calls
        for _ in range(2):
            with second.active():
                torch.add(x, x)
    assert {(o.overload, o.count) for o in second.observations() if o.direct} == {("aten::add.Tensor", 2)}
    assert sum(o.count for o in first.observations()) == 1
    first.__exit__(None, None, None)
    assert torch._C.DispatchKey.PreDispatch not in add._dispatch_cache


def test_a_private_api_that_moved_is_named_in_one_line():
    with pytest.raises(torch_private.TorchAPIChanged) as raised:
        torch_private._private("torch._C._NoSuchDispatcherSwitch")
    message = str(raised.value)
    assert "torch._C._NoSuchDispatcherSwitch" in message and torch_private.TESTED_TORCH in message
    assert "\n" not in message


# --- worker processes: timeouts and crashes, with deliberately bad jobs ---------------------------


def stubborn(_):
    """Reports once, then hangs and swallows every exception it can."""
    yield "before the hang"
    while True:
        try:
            time.sleep(60)
        except BaseException:  # noqa: B036 - the point of the test
            pass


def aborts(_):
    yield "before the crash"
    os.abort()


def quick(value):
    yield value


def test_a_worker_over_its_timeout_is_killed_and_keeps_what_it_reported():
    started = time.monotonic()
    work = [Job(stubborn, None, "stubborn"), Job(quick, 7, "quick")]
    outcomes = {o.job.label: o for o in run_in_workers(work, jobs=2, timeout=3, progress=False)}
    assert time.monotonic() - started < 20
    assert outcomes["stubborn"].status == TIMEOUT and "timeout" in outcomes["stubborn"].reason
    assert outcomes["stubborn"].reports == ("before the hang",)
    assert outcomes["quick"].status == DONE and outcomes["quick"].reports == (7,)


class _LatePipe:
    """A worker's pipe whose last message arrives just after the parent's first read."""

    def __init__(self, messages):
        self.messages, self.polls = list(messages), 0

    def poll(self):
        self.polls += 1
        return self.polls > 1 and bool(self.messages)

    def recv(self):
        return self.messages.pop(0)

    def close(self):
        pass


class _EndedProcess:
    exitcode = 0

    def is_alive(self):
        return False

    def join(self, timeout=None):
        pass


def test_a_worker_that_ends_right_after_its_last_report_is_not_taken_for_a_crash(tmp_path):
    worker = processes._Running(Job(quick, 1, "quick"), _EndedProcess(), _LatePipe([(DONE, 0.5)]), tmp_path / "log", 0.0)
    outcome = processes._collect(worker)
    assert outcome.status == DONE and outcome.cpu_seconds == 0.5


def test_a_crash_is_contained_and_reported_with_its_signal():
    outcomes = list(run_in_workers([Job(aborts, None, "aborts"), Job(quick, 1, "quick")], jobs=1, progress=False))
    crashed, finished = outcomes
    assert crashed.status == CRASH and "SIGABRT" in crashed.reason
    assert crashed.reports == ("before the crash",)
    assert finished.status == DONE and finished.reports == (1,)


def test_a_timed_out_opinfo_is_a_failure_and_is_not_cached(cache, tmp_path):
    private = copy_of(cache, tmp_path, with_runs=False)
    result = run_sweep(SweepCache.of(StageCache.at(private)), jobs=1, ops=["gradient"], timeout=0.01, progress=False)
    (failure,) = result.failures
    assert failure.kind == TIMEOUT and failure.opinfo == OpInfoId("gradient")
    assert not result.runs[0].complete
    assert SweepCache.of(StageCache.at(private)).run(OpInfoId("gradient")) is None


def test_op_spellings_select_overloads_as_the_command_line_means_them():
    matches, operators = sweep._overload_matcher(["aten::sum.default", "add.Tensor", "where"])
    recorded = ["aten::sum", "aten::sum.dim_IntList", "aten::add.Tensor", "aten::add.out", "aten::where.self", "prims::where"]
    assert [name for name in recorded if matches(name)] == ["aten::sum", "aten::add.Tensor", "aten::where.self"]
    assert operators == {"sum", "add", "where"}


def test_backward_runs_once_per_dtype_the_opinfo_declares_for_backward(result):
    conv = OpInfoId("nn.functional.conv1d")
    backward = [o for o in result.observations if o.opinfo == conv and o.overload == "aten::convolution_backward"]
    forward = [o for o in result.observations if o.opinfo == conv and o.overload == "aten::convolution"]
    assert sorted({o.sample_dtype.name for o in backward}) == sorted(FLOATS + ["complex64", "complex128"])  # not int64
    for dtype in FLOATS:  # one sample's backward: one call, while every sample runs forward
        assert sum(o.count for o in backward if o.sample_dtype.name == dtype) == 1
        assert sum(o.count for o in forward if o.sample_dtype.name == dtype) > 1
