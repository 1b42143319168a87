"""Yaml writer speed against a plain ruamel.yaml round trip of the same file, measured in one run.

    .venv/bin/python bench/bench_yaml.py [--native-functions FILE] [--repeat N]

Prints the time to apply the all-slots plan (one variable per tensor slot of every
entry) and a one-overload plan, each from reading the file to the new bytes, divided
by a plain ruamel.yaml load+dump (the NATIVEFUNCTIONS lint's settings), each the median of
--repeat runs (default 5). Targets:
all-slots <= 0.5, one overload <= 0.1.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

from ruamel.yaml import YAML

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.model import native as native_module  # noqa: E402
from migrate.model.global_sets import GlobalSetsFile  # noqa: E402
from migrate.model.native import NativeFunctions, installed_native_functions, sibling_constraints_path  # noqa: E402
from migrate.model.plan import OverloadPlan, Plan, Variable  # noqa: E402
from migrate.write.native_functions import apply_plan  # noqa: E402
from tests.conftest import all_slots_plan  # noqa: E402


def median_of(repeat: int, work) -> float:
    """Median wall time: on a shared machine the minimum flatters, the mean follows the neighbours' load."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ruamel_round_trip(path: Path) -> None:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1000
    yaml.boolean_representation = ["False", "True"]
    yaml.dump(yaml.load(path.read_text()), io.StringIO())


def apply_from_disk(path: Path, plan: Plan) -> bytes:
    """Everything a run does for the yaml: read and scan the file, apply the plan, produce the bytes."""
    native_module._parse_entry_yaml.cache_clear()  # each repeat pays for its own yaml parsing
    native = NativeFunctions.load(path)
    return apply_plan(native, GlobalSetsFile.load(sibling_constraints_path(path)), plan).native_functions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--native-functions", type=Path, default=installed_native_functions())
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    path = args.native_functions
    native = NativeFunctions.load(path)
    everything = all_slots_plan(native)
    sdpa = native.by_name["scaled_dot_product_attention"]
    one = Plan((), (OverloadPlan(sdpa.name, (Variable("T", everything.global_sets[0].dtypes, ("query", "key", "value", "return.0")),)),))

    baseline = median_of(args.repeat, lambda: ruamel_round_trip(path))
    all_slots = median_of(args.repeat, lambda: apply_from_disk(path, everything))
    one_overload = median_of(args.repeat, lambda: apply_from_disk(path, one))
    print(f"file: {path} ({len(native.entries)} entries)")
    print(f"ruamel.yaml load+dump (baseline): {baseline:.3f} s")
    print(f"all-slots plan:   {all_slots:.3f} s  ratio {all_slots / baseline:.3f}  (target <= 0.5)")
    print(f"one-overload plan: {one_overload:.3f} s  ratio {one_overload / baseline:.3f}  (target <= 0.1)")


if __name__ == "__main__":
    main()
