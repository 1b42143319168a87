"""Benchmark of the cold first run, before and after a change; prints, never asserts.

Runs the whole ``dtype-migrate --out DIR`` on an empty cache folder for two source trees, in
alternating order: a git revision (exported with ``git archive``) and this working tree. Per run:
wall time, and the CPU time the sweep's workers spent on the OpInfos (their ``cpu_seconds`` in the
cache files: load on the machine does not inflate it), and the part of it spent probing (their
``probe_seconds``: the calls cast again after the samples ran); the median of each kind counts.
Target (issue 33): after / before <= 1.15, on wall time (what a fresh clone's user waits).

    /work/main/.venv/bin/python bench/bench_cold_run.py --before a155d44 -j 2 [--repeat N] [--after-evidence LIST]

``--after-evidence`` gives the after run's ``--evidence``: the cost of a change apart from a source it also added.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _cold_run(source: Path, jobs: int, scratch: Path, options: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the sweep's workers, of which probing) of one full run on an empty cache."""
    cache, out = tempfile.mkdtemp(dir=scratch), tempfile.mkdtemp(dir=scratch)
    env = {**os.environ, "PYTHONPATH": str(source)}
    argv = [sys.executable, "-m", "migrate", "--cache-dir", cache, "--out", out, "-j", str(jobs), *options]
    started = time.perf_counter()
    subprocess.run(argv, cwd=source, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    runs = [json.loads(path.read_text()) for path in Path(cache, "opinfo").glob("*/*.json")]
    runs = [run for run in runs if isinstance(run, dict)]
    return wall, sum(run.get("cpu_seconds", 0.0) for run in runs), sum(run.get("probe_seconds", 0.0) for run in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="git revision of the tree before the change")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs; the median of each kind counts")
    parser.add_argument("--after-evidence", help="the after run's --evidence (to leave out a source the before tree lacks)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        old = scratch / "before"
        old.mkdir()
        archive = subprocess.run(["git", "archive", args.before], cwd=HERE, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        results: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": []}
        for _ in range(args.repeat):
            after_options = ["--evidence", args.after_evidence] if args.after_evidence else []
            for kind, source, options in (("before", old, []), ("after", HERE, after_options)):
                results[kind].append(_cold_run(source, args.jobs, scratch, options))
                wall, cpu, probing = results[kind][-1]
                print(f"{kind}: {wall:.1f} s wall, {cpu:.1f} s CPU in the sweep's workers ({probing:.1f} s of it probing)", flush=True)
    middle = {kind: tuple(statistics.median(run[i] for run in runs) for i in range(3)) for kind, runs in results.items()}
    after, before = middle["after"], middle["before"]
    print(
        f"cold run after / before (medians of {args.repeat}): {after[0] / before[0]:.2f} wall ({before[0]:.1f} -> {after[0]:.1f} s), {after[1] / before[1]:.2f} CPU "
        f"(samples {(after[1] - after[2]) / (before[1] - before[2]):.2f}, probing {after[2] / before[2]:.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
