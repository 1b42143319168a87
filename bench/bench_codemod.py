"""Bench the torchlib codemod against what it cannot avoid: a libcst parse and print of every module.

    .venv/bin/python bench/bench_codemod.py [--torchlib DIR] [--native-functions FILE] [--repeat N]

Prints, from one run (best of --repeat, the measurements interleaved):
  codemod over the whole torchlib / bare ``libcst.parse_module`` + ``.code`` of the same files   target <= 1.5
once for the plan a run infers today and once for a plan that gives every planned
variable a generated TypeVar (every annotation the safety rules allow is rewritten).
The codemod is ``rewrite_torchlib`` from the scan's evidence and a plan to the new bytes:
reading, parsing, deciding, transforming and printing. Ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import libcst

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.cache import StageCache  # noqa: E402
from migrate.torchlib_source.resolve import installed_torchlib, scan_torchlib  # noqa: E402
from migrate.evidence.gather import Sources  # noqa: E402
from migrate.infer import infer_plan  # noqa: E402
from migrate.model.native import NativeFunctions, installed_native_functions  # noqa: E402
from migrate.model.plan import Plan, Variable  # noqa: E402
from migrate.write.torchlib.rewrite import rewrite_torchlib  # noqa: E402


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def renamed(plan: Plan) -> Plan:
    """The plan with every variable renamed away from its global set: all of them become generated TypeVars."""
    overloads = tuple(
        replace(o, variables=tuple(Variable(f"V{i}", v.dtypes, v.binds, v.evidence) for i, v in enumerate(o.variables)))
        for o in plan.overloads
    )
    return replace(plan, overloads=overloads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torchlib", type=Path, default=None, help="torch_lib directory (default: installed)")
    parser.add_argument("--native-functions", type=Path, default=None, help="native_functions.yaml (default: installed)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    root = args.torchlib or installed_torchlib()
    native = NativeFunctions.load(args.native_functions or installed_native_functions())
    stages = StageCache.at()
    evidence = scan_torchlib(root, native, stages)
    inferred = infer_plan(native, Sources(torchlib=evidence.overloads, opinfo={}, global_sets=evidence.global_sets))
    plans = {"inferred plan": inferred, "all-generated plan": renamed(inferred)}
    files = sorted(p for p in root.rglob("*.py") if p.is_file())

    def bare() -> None:
        for path in files:
            libcst.parse_module(path.read_bytes()).code

    times: dict[str, list[float]] = {"baseline": [], **{name: [] for name in plans}}
    changed: dict[str, int] = {}
    for _ in range(args.repeat):
        times["baseline"].append(_timed(bare))
        for name, plan in plans.items():
            result: list = []
            times[name].append(_timed(lambda: result.append(rewrite_torchlib(evidence, plan, native, stages, reuse=False))))
            changed[name] = len(result[0].files)
    baseline = min(times["baseline"])
    print(f"torchlib: {root} ({len(files)} modules)")
    print(f"libcst parse + codegen (baseline): {baseline:.3f} s")
    for name in plans:
        best = min(times[name])
        print(f"codemod, {name} ({changed[name]} modules changed): {best:.3f} s  ratio {best / baseline:.3f}  (target <= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
