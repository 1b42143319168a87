"""The runtime checker in collect mode over every tiny model, mode and pass the ``models`` source runs; prints, never asserts.

Each model is built as the source builds it (random weights from its config), then each of its modes (float32,
bfloat16, float16, autocast to bfloat16 and to float16) runs its inference pass and one training step inside
``migrate.checking(yaml, collect=True)``. A row gives the distinct calls the models stage recorded for that
model, mode and pass, the calls the checker judged, and its violations (the first few printed). The suite runs
two of the modes per model (``tests/test_models.py``); this is the whole table.

    /work/main/.venv/bin/python bench/models_checked.py OUT/native_functions.yaml [--arch NAME]...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import migrate  # noqa: E402
from migrate.cache import StageCache  # noqa: E402
from migrate.evidence.models import passes, zoo  # noqa: E402
from migrate.evidence.models.source import load_models  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("native_functions", type=Path)
    parser.add_argument("--arch", action="append", default=[], help="only these architectures (default: all)")
    args = parser.parse_args()
    stored = load_models(StageCache.at(), jobs=2)
    if stored is None:
        raise SystemExit("models_checked: no models stage in the cache (run dtype-migrate with transformers installed first)")
    total_distinct = total_judged = total_violations = 0
    print("| model | mode | pass | distinct calls | judged | violations |\n| --- | --- | --- | ---: | ---: | ---: |")
    for architecture in (a for a in zoo.ARCHITECTURES if not args.arch or a.name in args.arch):
        for mode in zoo.MODES:
            torch.manual_seed(0)
            model = passes.build(architecture).to(getattr(torch, mode.weights))
            for phase in zoo.PASSES:
                given = passes.inputs(architecture, mode)
                with migrate.checking(args.native_functions, collect=True) as checker:
                    passes.run_pass(model, mode, given, phase == "training")
                distinct = {c.signature for c in stored.calls if (c.model, c.mode, c.phase) == (architecture.name, mode.name, phase)}
                judged, violations = sum(checker.judged.values()), checker.violations
                total_distinct, total_judged, total_violations = total_distinct + len(distinct), total_judged + judged, total_violations + len(violations)
                print(f"| {architecture.name} | {mode.name} | {phase} | {len(distinct)} | {judged} | {len(violations)} |", flush=True)
                for violation in violations[:3]:
                    print(f"  {violation}", file=sys.stderr)
    print(f"| all | | | {total_distinct} | {total_judged} | {total_violations} |")
    return 1 if total_violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
