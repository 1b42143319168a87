"""Benchmark of the OpInfo sweep; prints, never asserts.

In one run, in fresh temporary cache folders:
  (a) the OpInfos' samples run with the recorders (no probing: bench_probe.py measures
      that), then with no recorder, in the same worker machinery and the same -j, and
      their ratio; and the cold sweep as a run does it (recorders and probing);
  (b) the time to load the whole warm cache (in this process, and in a fresh interpreter
      as the command line would);
  (c) ``ops=["scaled_dot_product_attention"]`` on a cold cache: which OpInfos ran.

Full run (every OpInfo; under a minute on 2 cores):
    /work/main/.venv/bin/python bench/bench_opinfo.py -j 2
Quick run on the first 40 OpInfos:
    /work/main/.venv/bin/python bench/bench_opinfo.py -j 2 --limit 40
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache, run_opinfos, run_sweep
from migrate.runtime.processes import DEFAULT_TIMEOUT

_LOAD_IN_FRESH_INTERPRETER = """
import sys, time
started = time.perf_counter()
from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache, run_sweep
result = run_sweep(SweepCache.of(StageCache.at(sys.argv[1])), ops=sys.argv[3:] or None, limit=int(sys.argv[2]) or None, progress=False)
print(f"{time.perf_counter() - started:.2f} {result.stats.from_cache}")
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N OpInfos of the catalogue")
    parser.add_argument("--ops", nargs="+", default=None, help="only the OpInfos that reach these overloads")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per OpInfo")
    args = parser.parse_args(argv)
    jobs = args.jobs or os.cpu_count()
    print(f"jobs={jobs} limit={args.limit} ops={args.ops}")

    with tempfile.TemporaryDirectory(prefix="bench-opinfo-") as cache:
        started = time.perf_counter()
        catalogue = SweepCache.of(StageCache.at(cache)).catalogue()  # outside the timings below; it also starts the fork server
        print(f"catalogue: {len(catalogue)} OpInfos read in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        result = run_sweep(SweepCache.of(StageCache.at(cache)), jobs=jobs, ops=args.ops, limit=args.limit, timeout=args.timeout)
        swept = time.perf_counter() - started
        entries = [entry for entry in result.catalogue if entry.cpu_dtypes]
        started = time.perf_counter()
        with_recorders = run_opinfos(entries, jobs=jobs, timeout=args.timeout, probe=False)
        recorded = time.perf_counter() - started
        started = time.perf_counter()
        bare = run_opinfos(entries, jobs=jobs, timeout=args.timeout, record=False, probe=False)
        baseline = time.perf_counter() - started
        recorded_cpu = sum(run.cpu_seconds for run in with_recorders)
        baseline_cpu = sum(run.cpu_seconds for run in bare)
        print(f"(a) cold sweep as a run does it (recorders and probing), {len(entries)} OpInfos: {swept:.1f} s")
        print(f"    samples with recorders, no probing: {recorded:.1f} s ({result.stats.samples} samples)")
        print(f"    same samples, no recorder: {baseline:.1f} s ({sum(run.samples for run in bare)} samples)")
        print(
            f"    ratio: {recorded / baseline:.2f}  (workers' CPU time: {recorded_cpu:.1f} s / {baseline_cpu:.1f} s"
            f" = {recorded_cpu / baseline_cpu:.2f})"
        )
        print(f"    failures: {len(result.failures)} in {len({f.opinfo for f in result.failures})} OpInfos")

        started = time.perf_counter()
        warm = run_sweep(SweepCache.of(StageCache.at(cache)), ops=args.ops, limit=args.limit, progress=False)
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        plans = plans_from_sweep(warm)
        planned = time.perf_counter() - started
        fresh = subprocess.run(
            [sys.executable, "-c", _LOAD_IN_FRESH_INTERPRETER, cache, str(args.limit or 0), *(args.ops or ())],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        print(f"(b) warm cache: {warm.stats.from_cache} OpInfo runs, {len(warm.observations)} distinct observations")
        print(f"    loaded in {loaded:.2f} s (in a fresh interpreter, imports included: {fresh[0]} s)")
        print(f"    variables of {len(plans)} overloads made from them in {planned:.2f} s")

    with tempfile.TemporaryDirectory(prefix="bench-opinfo-op-") as cold:
        started = time.perf_counter()
        only = run_sweep(SweepCache.of(StageCache.at(cold)), jobs=jobs, ops=["scaled_dot_product_attention"], timeout=args.timeout)
        took = time.perf_counter() - started
        print(f"(c) ops=['scaled_dot_product_attention'], cold cache: {took:.1f} s (catalogue included; fork server up)")
        print(f"    ran {only.stats.ran} of {len(catalogue)} OpInfos: {', '.join(str(run.opinfo) for run in only.runs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
