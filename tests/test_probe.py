"""Probing on the real OpInfos of scaled_dot_product_attention, where and add: the issue's must-show shapes.

One sweep of those three OpInfos (with probing), run here in a temporary cache that holds the installed torch's
OpInfo catalogue alone (the shipped recording's; a catalogue read cold is test_opinfo_sweep's), merged with
the installed torchlib into a plan. What ATen accepts is asked of torch directly here
(an oracle independent of the probe code), never written down.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from migrate.evidence.opinfo import sweep
from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.evidence.recording import seed
from migrate.evidence.probe.merge import probe_plans_from_sweep
from migrate.model.verdict import ACCEPTED
from migrate.evidence.probe.prober import dtype_universe
from migrate.runtime.recorders import dtype_name
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import scan_torchlib
from migrate.evidence.gather import Sources
from migrate.infer import infer_plan
from migrate.infer.probe_conflicts import JOINED, SPLIT
from migrate.model.dtypes import DType, named
from migrate.model.native import NativeFunctions, installed_native_functions
from migrate.model.plan import OPINFO, PROBE, TORCHLIB, Plan
from migrate.pipeline.plan_summary import probe_summary
from tests.conftest import with_catalogue_of

pytestmark = [pytest.mark.slow, pytest.mark.live]  # a cold OpInfo sweep with probing

OPS = ["scaled_dot_product_attention", "where", "add"]
FLOATS = named("float16", "bfloat16", "float32", "float64")
NATIVE = NativeFunctions.load(installed_native_functions())


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    user = StageCache.at()
    seed(user)  # the shipped recording's facts, the catalogue among them
    return with_catalogue_of(user.root, tmp_path_factory.mktemp("probe-cache"))


@pytest.fixture(scope="module")
def result(cache):
    return sweep.run_sweep(sweep.SweepCache.of(StageCache.at(cache)), jobs=2, ops=OPS, progress=False)


@pytest.fixture(scope="module")
def plan(result, cache):
    torchlib = scan_torchlib(None, NATIVE, StageCache.at(cache))
    sources = Sources(
        torchlib.overloads,
        plans_from_sweep(result),
        torchlib.global_sets,
        probe=probe_plans_from_sweep(result),
        torchlib_handled=torchlib.handled,
    )
    return infer_plan(NATIVE, sources)


def overload(plan, name):
    (found,) = [o for o in plan.overloads if o.name == name]
    return found


def accepts(call) -> bool:
    try:
        call()
    except Exception:
        return False
    return True


def as_dtypes(torch_dtypes) -> tuple[DType, ...]:
    return named(*(dtype_name(d) for d in torch_dtypes))


def test_sdpa_query_key_value_and_return_are_one_variable_and_the_mask_its_own(plan):
    q = torch.randn(1, 2, 3, 4)
    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    together = as_dtypes(d for d in dtype_universe() if accepts(lambda: sdpa(q.to(d), q.to(d), q.to(d))))
    mask = torch.zeros(3, 3)
    with_mask = as_dtypes(
        m for m in dtype_universe() if any(accepts(lambda: sdpa(q.to(d), q.to(d), q.to(d), mask.to(m))) for d in dtype_universe())
    )
    entry = overload(plan, "scaled_dot_product_attention")
    qkv = entry.variable_of("query")
    assert qkv.binds == ("query", "key", "value", "return.0")
    assert qkv.dtypes == together == FLOATS
    attn_mask = entry.variable_of("attn_mask")
    assert attn_mask.binds == ("attn_mask",)
    assert attn_mask.dtypes == with_mask and DType("bool") in attn_mask.dtypes and set(FLOATS) <= set(attn_mask.dtypes)
    assert {OPINFO, PROBE} <= set(attn_mask.sources)


def test_the_mask_set_is_the_sound_union_and_the_evidence_keeps_each_context(plan):
    attn_mask = overload(plan, "scaled_dot_product_attention").variable_of("attn_mask")
    accepted = [e for e in attn_mask.evidence if e.source == PROBE and e.outcome == ACCEPTED]
    alone = [e for e in accepted if e.where.startswith("attn_mask cast alone with query ")]
    together = [e for e in accepted if e.where.startswith("query, key, value, attn_mask cast together")]
    assert alone and together
    # Beside a query of one dtype ATen takes a bool mask but not every float one; cast together
    # with the query it takes each float: which masks it takes depends on the query.
    for context in alone:
        assert DType("bool") in context.dtypes and not set(together[0].dtypes) <= set(context.dtypes)
    refused_alone = [e for e in attn_mask.evidence if e.refused and e.verdict.site.cast == ("attn_mask",)]
    assert {d for e in refused_alone for d in e.dtypes} & set(together[0].dtypes)
    union = {d for e in accepted for d in e.dtypes} | {d for e in attn_mask.evidence if e.source == OPINFO for d in e.dtypes}
    assert set(attn_mask.dtypes) == union


def test_the_torchlib_body_comparison_is_evidence_with_file_and_line(plan):
    attn_mask = overload(plan, "scaled_dot_product_attention").variable_of("attn_mask")
    (body,) = [e for e in attn_mask.evidence if e.source == TORCHLIB]
    path, line = body.where.split(" ", 1)[0].rsplit(":", 1)
    assert path == "ops/nn.py" and body.dtypes == named("bool") and body.slots == ("attn_mask",)
    source = (scan_torchlib(None, NATIVE, StageCache.at()).root / path).read_text().splitlines()
    assert "attn_mask.dtype == ir.DataType.BOOL" in source[int(line) - 1]


def test_where_condition_takes_exactly_what_aten_takes_and_float32_is_refused_with_its_message(plan):
    x = torch.ones(3)
    condition = torch.tensor([True, False, True])
    where = torch.ops.aten.where.self
    oracle = as_dtypes(d for d in dtype_universe() if accepts(lambda: where(condition.to(d), x, x)))
    assert set(oracle) >= {DType("bool"), DType("uint8")}
    variable = overload(plan, "where.self").variable_of("condition")
    assert variable.binds == ("condition",) and variable.dtypes == oracle
    with pytest.raises(RuntimeError) as refused:
        where(condition.float(), x, x)
    (rejection,) = [
        e for e in variable.evidence if e.refused and DType("float32") in e.dtypes and e.verdict.site.cast == ("condition",)
    ]
    assert rejection.slots == ("condition",)
    assert rejection.messages[DType("float32")] == f"RuntimeError: {refused.value}"


def test_add_self_and_other_are_separate_variables_each_over_every_dtype_add_accepts(plan):
    universe = dtype_universe()
    ones = torch.ones(2)
    add = torch.ops.aten.add.Tensor
    pairs = {(a, b) for a, b in itertools.product(universe, universe) if accepts(lambda: add(ones.to(a), ones.to(b)))}
    entry = overload(plan, "add.Tensor")
    self_variable, other_variable = entry.variable_of("self"), entry.variable_of("other")
    assert self_variable is not other_variable
    assert self_variable.binds == ("self",) and other_variable.binds == ("other",)
    assert self_variable.dtypes == as_dtypes(a for a, _ in pairs)
    assert other_variable.dtypes == as_dtypes(b for _, b in pairs)


def test_the_summary_counts_what_probing_changed_and_survives_the_report(plan):
    summary = probe_summary(plan).to_json()
    sdpa_split = [c for c in overload(plan, "scaled_dot_product_attention").conflicts if c.kind == SPLIT]
    assert len(sdpa_split) == 1 and "attn_mask" in sdpa_split[0].slots
    assert summary["variables_split"] == sum(1 for o in plan.overloads for c in o.conflicts if c.kind == SPLIT) >= 2
    assert summary["variables_joined"] == sum(1 for o in plan.overloads for c in o.conflicts if c.kind == JOINED)
    assert summary["slots_widened"] >= 2  # the bool mask, the uint8 condition at least
    assert probe_summary(Plan.from_json(plan.to_json())).to_json() == summary


def test_probing_is_cached_with_the_sweep(cache, result):
    again = sweep.run_sweep(sweep.SweepCache.of(StageCache.at(cache)), jobs=2, ops=OPS, progress=False)
    assert again.stats.ran == 0 and again == result
    assert all(run.probes for run in again.runs)


def test_probes_do_not_depend_on_the_number_of_jobs(result):
    entries = [e for e in result.catalogue if e.cpu_dtypes]
    one = sweep.run_opinfos(entries, jobs=1, progress=False)
    two = sweep.run_opinfos(entries, jobs=2, progress=False)
    assert [run.probes for run in one] == [run.probes for run in two] == [run.probes for run in result.runs]
