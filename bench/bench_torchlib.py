"""Bench the torchlib scan against the cost it cannot avoid: parsing every module with libcst.

Prints, from one run (best of --repeat, the three measurements interleaved):
  (a) cold scan (empty cache) / bare ``libcst.parse_module`` of the same files   target <= 1.3
  (b) warm scan (unchanged tree, cache filled) / cold scan                      target <= 0.1
Ratios, not absolute times: they hold on any machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import libcst

from migrate.cache import StageCache
from migrate.torchlib_source.resolve import installed_torchlib, scan_torchlib
from migrate.model.native import NativeFunctions, installed_native_functions


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torchlib", type=Path, default=None, help="torch_lib directory (default: installed)")
    parser.add_argument("--native-functions", type=Path, default=None, help="native_functions.yaml (default: installed)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    root = args.torchlib or installed_torchlib()
    native = NativeFunctions.load(args.native_functions or installed_native_functions())
    files = sorted(p for p in root.rglob("*.py") if p.is_file())

    def bare_parse() -> None:
        # Parsing str is faster than bytes (no encoding detection): the strictest baseline.
        for path in files:
            libcst.parse_module(path.read_bytes().decode("utf-8"))

    bare, cold, warm = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-torchlib-") as scratch:
        for attempt in range(args.repeat):
            bare.append(_timed(bare_parse))
            cache = Path(scratch) / f"cache-{attempt}"
            cold.append(_timed(lambda: scan_torchlib(root, native, StageCache.at(cache))))
            warm.append(_timed(lambda: scan_torchlib(root, native, StageCache.at(cache))))
        evidence = scan_torchlib(root, native, StageCache.at(Path(scratch) / "cache-0"))
    assert evidence.cached_files == evidence.files, "the warm scan did not read every module from the cache"

    best_bare, best_cold, best_warm = min(bare), min(cold), min(warm)
    print(f"torchlib: {root} ({len(files)} modules, {len(evidence.registrations)} registrations)")
    print(f"bare libcst parse: {best_bare:.3f} s")
    print(f"cold scan:         {best_cold:.3f} s   (a) cold / bare parse = {best_cold / best_bare:.2f}   (target <= 1.3)")
    print(f"warm scan:         {best_warm:.3f} s   (b) warm / cold       = {best_warm / best_cold:.3f}  (target <= 0.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
