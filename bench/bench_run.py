"""A whole migration run with warm caches, against a plain ruamel.yaml round trip of the same yaml, in one run.

    .venv/bin/python bench/bench_run.py [--repeat N]

Runs the CLI in-process (`--out` into a temp folder) on the installed torch and
onnxscript: a full run, and `--op scaled_dot_product_attention`. The first,
untimed run warms the caches; each figure is the median of --repeat runs
(default 5). Targets (issue 30): full <= 0.35, --op <= 0.15. The same two runs as a new
`python -m migrate` process each (start-up and imports included, what a
maintainer waits for) are printed beside, for information.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_yaml import median_of, ruamel_round_trip  # noqa: E402
from migrate.cli import main as cli  # noqa: E402
from migrate.model.native import installed_native_functions  # noqa: E402


def run_quietly(*argv: str) -> None:
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stderr(io.StringIO()):
        code = cli(["--out", out, *argv])
    if code != 0:
        raise SystemExit(f"dtype-migrate {' '.join(argv)} exited {code}")


def run_as_command(*argv: str) -> None:
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-m", "migrate", "--out", out, *argv], check=True, env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run_quietly()  # warm the caches, for both runs
    run_quietly("--op", "scaled_dot_product_attention")
    baseline = median_of(args.repeat, lambda: ruamel_round_trip(installed_native_functions()))
    full = median_of(args.repeat, run_quietly)
    one = median_of(args.repeat, lambda: run_quietly("--op", "scaled_dot_product_attention"))
    full_command = median_of(args.repeat, run_as_command)
    one_command = median_of(args.repeat, lambda: run_as_command("--op", "scaled_dot_product_attention"))
    print(f"median of {args.repeat} repeats each")
    print(f"ruamel.yaml load+dump (baseline): {baseline:.3f} s")
    print(f"full run, warm caches:            {full:.3f} s  ratio {full / baseline:.3f}  (target <= 0.35)")
    print(f"--op scaled_dot_product_attention: {one:.3f} s  ratio {one / baseline:.3f}  (target <= 0.15)")
    print(f"as a new process: full {full_command:.3f} s (ratio {full_command / baseline:.3f}), "
          f"--op {one_command:.3f} s (ratio {one_command / baseline:.3f})")


if __name__ == "__main__":
    main()
