"""Derived OpInfo/probe plans are cached by the content of the sweep cache, and equal what they are derived from."""

from dataclasses import replace

import pytest

from migrate.cache import StageCache
from migrate.evidence.derived import evidence_of, probed_calls
from migrate.evidence.opinfo.observations import plans_from_observations
from migrate.evidence.opinfo.sweep import SweepCache, run_sweep
from migrate.evidence.probe import catalogue_calls, schema_calls, value_calls
from migrate.evidence.probe.merge import built_from_schema, probe_plans
from migrate.pipeline.session import Options, Session
from migrate.runtime.runs import OpInfoId, OpInfoRun, SweepResult, overload_key


@pytest.mark.slow  # reads the whole sweep
def test_cached_plans_equal_fresh_ones():
    """Every tenth overload's plans derived afresh here (each plan reads its own overload's calls only) equal the cached
    ones a run reads (the sweep's runs and the tiny models' joined)."""
    cache = StageCache.at()
    sweep = run_sweep(SweepCache.of(cache), progress=False)  # fills the cache if it is cold
    state = Session(Options()).sweep
    evidence = evidence_of(state)
    joined = SweepResult(sweep.runs + state.models.runs, sweep.catalogue, sweep.stats)
    chosen = set(sorted(evidence.probe)[::10]) | set(sorted(evidence.opinfo)[::10]) | {"remainder.Scalar"}
    keep = lambda found: tuple(o for o in found if overload_key(o.overload) in chosen)  # noqa: E731
    opinfo = plans_from_observations(keep(joined.observations), sweep.catalogue)
    assert len(opinfo) > 50 and opinfo == {name: evidence.opinfo[name] for name in opinfo}
    built = schema_calls.STAGE.cached(cache, []) + catalogue_calls.STAGE.cached(cache, []) + value_calls.STAGE.cached(cache, [])  # the run made them if the cache lacked them
    probe = probe_plans(probed_calls(keep(joined.probes), keep(built), evidence.observed), keep(joined.observations))
    assert len(probe) > 150 and probe == {name: evidence.probe[name] for name in chosen & set(evidence.probe)}
    # remainder.Scalar is seen only inside take_along_dim, never probed there: the calls built from its schema probe it
    assert not any(overload_key(call.overload) == "remainder.Scalar" for call in sweep.probes)
    assert any(built_from_schema(e) for v in evidence.probe["remainder.Scalar"].variables for e in v.evidence)
    assert evidence.stats.ran == 0 and evidence.stats.from_cache == len(sweep.runs)


def test_the_sweep_key_follows_the_content_of_the_cached_runs(tmp_path):
    """A run stored again with other content gets a new file name, so a new key; the old file goes."""
    run = OpInfoRun(OpInfoId("add"), (), (), samples=3, complete=True)
    cache = SweepCache.of(StageCache.at(tmp_path))
    cache.store_run(run)
    before = cache.key([run.opinfo])
    cache.store_run(run)
    assert cache.key([run.opinfo]) == before  # the same content: the same name
    cache.store_run(replace(run, samples=4))
    assert cache.key([run.opinfo]) != before
    assert len(cache.files()) == 1 and cache.run(run.opinfo).samples == 4
