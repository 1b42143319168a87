"""The whole installed torchlib's export check, cold and warm, against one single-op export, in one run.

    .venv/bin/python bench/bench_export.py [-j N] [--repeat N] [--cache-dir DIR] [--report FILE] [--op NAME]...

Cold: every case exported anew, and every function no export ran judged directly anew (``--refresh``;
the OpInfo sweep's cache is read, not rebuilt). Warm: the same check read from the cache, median of
``--repeat`` runs. Baseline: one ``torch.onnx.export(dynamo=True)`` of a one-op module plus its
onnxruntime session, in a fresh process (what checking one case alone would cost), median of
``--repeat``. Each time is wall-clock, with this process's CPU time beside it (not the workers'; on a
machine others share, the wall-clock time also counts their work: the load average is printed). Targets on 2 cores: cold <= 1.2 x 592 s (710 s),
warm <= 1 s. This is the whole-torchlib check CI does not run. ``--op`` checks only those overloads: the cold
time per case (both judges' cases) of a subset, to extrapolate from without the whole check.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.cli import main as cli  # noqa: E402

ONE_EXPORT = """
import time, torch, onnxruntime, warnings
warnings.simplefilter("ignore")
class M(torch.nn.Module):
    def forward(self, x):
        return torch.sin(x)
started = time.perf_counter()
program = torch.onnx.export(M(), (torch.randn(3, 4),), dynamo=True, verbose=False)
onnxruntime.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
print(time.perf_counter() - started)
"""


def one_export() -> float:
    """One export and session in a fresh process (its imports not counted)."""
    out = subprocess.run([sys.executable, "-c", ONE_EXPORT], capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def check(*argv: str) -> tuple[float, str, float]:
    """The check's wall-clock time, its table, and this process's CPU time (the workers, forked by a forkserver, are not counted)."""
    started, cpu = time.perf_counter(), _cpu()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli(["export-check", *argv])
    if code != 0:
        raise SystemExit(f"dtype-migrate export-check {' '.join(argv)} exited {code}")
    return time.perf_counter() - started, out.getvalue(), _cpu() - cpu


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-dir")
    parser.add_argument("--report", help="write the cold run's report here")
    parser.add_argument("--op", action="append", default=[], help="only these overloads (default: the whole torch_lib)")
    args = parser.parse_args()
    common = ["-j", str(args.jobs), *(["--cache-dir", args.cache_dir] if args.cache_dir else []), *(f"--op={op}" for op in args.op)]
    baseline = statistics.median(one_export() for _ in range(args.repeat))
    cold, text, cold_cpu = check(*common, "--refresh", *(["--report", args.report] if args.report else []))
    warms = [check(*common) for _ in range(args.repeat)]
    warm, warm_cpu = statistics.median(w[0] for w in warms), statistics.median(w[2] for w in warms)
    print("\n".join(text.splitlines()[-4:]))
    print(f"load average (1, 5, 15 min) at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"one export + session (baseline): {baseline:.2f} s")
    cases = sum(int(n) for n in re.findall(r"^(\d+) cases of", text, re.M)) + sum(int(n) for n in re.findall(r": (\d+) cases of \d+ functions", text))
    print(f"{'whole torchlib' if not args.op else f'{len(args.op)} overloads'}, cold, -j {args.jobs}:   {cold:.1f} s (CPU {cold_cpu:.1f} s)  "
          f"ratio {cold / baseline:.1f}  (target <= 710 s for the whole torchlib); {cases} cases, {cold / max(cases, 1):.3f} s per case")
    print(f"whole torchlib, warm:            {warm:.2f} s (CPU {warm_cpu:.2f} s)  ratio {warm / baseline:.2f}  (target <= 1 s)")


if __name__ == "__main__":
    main()
