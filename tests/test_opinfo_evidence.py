"""Derived OpInfo/probe plans are cached by the state of the sweep cache, and equal what they are derived from."""

import os

import pytest

from migrate.evidence.derived import _key, opinfo_evidence
from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.evidence.opinfo.sweep import load_catalogue, run_sweep, sweep_cache_dir
from migrate.evidence.probe.merge import probe_plans_from_sweep


@pytest.mark.slow  # derives the plans of the whole sweep, twice
def test_cached_plans_equal_fresh_ones_and_follow_the_sweep_cache():
    sweep = run_sweep(progress=False)  # fills the cache if it is cold
    evidence = opinfo_evidence(None, None, False, None)
    assert evidence.opinfo == plans_from_sweep(sweep)
    assert evidence.probe == probe_plans_from_sweep(sweep)
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
