"""What backward evidence costs: the cold OpInfo sweep with backward against the same sweep without, in one run.

Both run every OpInfo (or the first N) as a cold sweep does it (recorders and probing,
no cache), alternating, and print the medians of the repeats. Target: backward adds at
most 1x the forward sweep's time, i.e. with / without <= 2.

    /work/main/.venv/bin/python bench/bench_backward.py -j 2 [--repeat 3] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache, run_opinfos
from migrate.runtime.processes import DEFAULT_TIMEOUT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="only the first N OpInfos of the catalogue")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per OpInfo")
    args = parser.parse_args(argv)
    jobs = args.jobs or os.cpu_count()
    entries = [entry for entry in SweepCache.of(StageCache.at()).catalogue()[: args.limit] if entry.cpu_dtypes]  # also starts the fork server
    print(f"jobs={jobs} OpInfos={len(entries)} repeat={args.repeat}")
    times: dict[bool, list[float]] = {True: [], False: []}
    overloads: dict[bool, int] = {}
    for _ in range(args.repeat):
        for backward in (False, True):
            started = time.perf_counter()
            runs = run_opinfos(entries, jobs=jobs, timeout=args.timeout, backward=backward)
            times[backward].append(time.perf_counter() - started)
            overloads[backward] = len({o.overload for run in runs for o in run.observations})
    without, with_backward = statistics.median(times[False]), statistics.median(times[True])
    print(f"cold sweep without backward: {without:.1f} s (median; {overloads[False]} overloads observed)")
    print(f"cold sweep with backward:    {with_backward:.1f} s (median; {overloads[True]} overloads observed)")
    print(f"ratio with / without: {with_backward / without:.2f}; backward adds {with_backward / without - 1:.2f}x the forward sweep")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
