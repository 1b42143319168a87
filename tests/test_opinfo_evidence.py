"""Derived OpInfo/probe plans are cached by the state of the sweep cache, and equal what they are derived from."""

import os

from migrate.evidence.opinfo.derived import _key, opinfo_evidence, probed_calls
from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.evidence.opinfo.sweep import load_catalogue, run_sweep, sweep_cache_dir
from migrate.evidence.probe.merge import BUILT_CALL, probe_plans
from migrate.evidence.probe.schema_calls import cached_schema_calls
from migrate.evidence.runtime.records import overload_key


def test_cached_plans_equal_fresh_ones_and_follow_the_sweep_cache():
    sweep = run_sweep(progress=False)  # fills the cache if it is cold
    evidence = opinfo_evidence(None, None, False, None)
    assert evidence.opinfo == plans_from_sweep(sweep)
    built = cached_schema_calls(sweep_cache_dir(None))  # opinfo_evidence made them if the cache lacked them
    assert evidence.probe == probe_plans(probed_calls(sweep.probes, built, evidence.observed), sweep.observations)
    # remainder.Scalar is seen only inside take_along_dim, never probed there: the calls built from its schema probe it
    assert not any(overload_key(call.overload) == "remainder.Scalar" for call in sweep.probes)
    assert any(BUILT_CALL in e.where for v in evidence.probe["remainder.Scalar"].variables for e in v.evidence)
    assert evidence.stats.ran == 0 and evidence.stats.from_cache == len(sweep.runs)

    folder = sweep_cache_dir(None)
    names = [e.opinfo.file_name for e in load_catalogue() if e.cpu_dtypes and (folder / e.opinfo.file_name).exists()]
    before = _key(folder, names)
    stat = (folder / names[0]).stat()
    os.utime(folder / names[0], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    try:
        assert _key(folder, names) != before
        assert opinfo_evidence(None, None, False, None).opinfo == evidence.opinfo
    finally:
        os.utime(folder / names[0], ns=(stat.st_atime_ns, stat.st_mtime_ns))
