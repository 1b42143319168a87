"""Benchmark of probing; prints, never asserts.

In one run, in a fresh temporary cache folder, on the same OpInfos and the same -j:
  (a) the plain sweep (recorders on, no probing) and the sweep with probing, cold, in
      alternating order; probing time = the difference, divided by the plain sweep's
      time (target <= 1.0). Workers' CPU time spent probing over the plain sweep's
      worker CPU time is printed too: load on the machine does not inflate it.
  (b) the probe evidence made from the sweep (``probe_plans_from_sweep``), and what it
      changed in the plan: slots widened, variables split and joined.

Full run (every OpInfo; a minute or two on 2 cores):
    /work/main/.venv/bin/python bench/bench_probe.py -j 2
Quick run on the first 60 OpInfos:
    /work/main/.venv/bin/python bench/bench_probe.py -j 2 --limit 60
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from migrate.evidence.opinfo.observations import plans_from_sweep
from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache, run_opinfos
from migrate.evidence.probe.merge import probe_plans_from_sweep
from migrate.runtime.runs import SweepResult, SweepStats
from migrate.runtime.processes import DEFAULT_TIMEOUT
from migrate.evidence.gather import Sources
from migrate.infer import infer_plan
from migrate.model.native import NativeFunctions, installed_native_functions
from migrate.pipeline.plan_summary import probe_summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N OpInfos of the catalogue")
    parser.add_argument("--repeat", type=int, default=1, help="pairs of sweeps; the best of each kind counts")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per OpInfo")
    args = parser.parse_args(argv)
    jobs = args.jobs or os.cpu_count()
    print(f"jobs={jobs} limit={args.limit} repeat={args.repeat}")

    with tempfile.TemporaryDirectory(prefix="bench-probe-") as cache:
        catalogue = SweepCache.of(StageCache.at(cache)).catalogue()  # outside the timings; it also starts the fork server
        entries = [entry for entry in catalogue[: args.limit] if entry.cpu_dtypes]
        times: dict[bool, list[float]] = {False: [], True: []}  # keyed by probing or not
        runs = {}
        for attempt in range(args.repeat):
            for probe in (False, True) if attempt % 2 == 0 else (True, False):
                started = time.perf_counter()
                runs[probe] = run_opinfos(entries, jobs=jobs, timeout=args.timeout, probe=probe)
                times[probe].append(time.perf_counter() - started)
        plain, probed = runs[False], runs[True]
        plain_time, probe_time = min(times[False]), min(times[True])
        plain_cpu = sum(run.cpu_seconds for run in plain)
        probing_cpu = sum(run.probe_seconds for run in probed)
        calls = sum(len(run.probes) for run in probed)
        probes = sum(len(p.accepted) + len(p.rejected) for run in probed for call in run.probes for p in call.probes)
        print(f"(a) {len(entries)} OpInfos: plain sweep {plain_time:.1f} s, with probing {probe_time:.1f} s")
        print(f"    {calls} calls probed with {probes} probe calls")
        print(f"    probing time / plain sweep time = {(probe_time - plain_time) / plain_time:.2f}   (target <= 1.0)")
        print(f"    workers' CPU: probing {probing_cpu:.1f} s / plain sweep {plain_cpu:.1f} s = {probing_cpu / plain_cpu:.2f}")
        failures = [f for run in probed for f in run.failures if f.kind.startswith("probe-")]
        print(f"    probe failures: {len(failures)}" + "".join(f"\n      {f.opinfo}: {f.kind}: {f.reason}" for f in failures))

        result = SweepResult(tuple(probed), tuple(catalogue[: args.limit]), SweepStats(len(entries), len(entries), 0, 0, 0.0))
        started = time.perf_counter()
        plans = probe_plans_from_sweep(result)
        derived = time.perf_counter() - started
        native = NativeFunctions.load(installed_native_functions())
        plan = infer_plan(native, Sources({}, plans_from_sweep(result), (), probe=plans))
        print(f"(b) probe evidence for {len(plans)} overloads made in {derived:.2f} s; in the plan: {probe_summary(plan)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
