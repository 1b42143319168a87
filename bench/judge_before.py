"""The torchlib rewrite's added and removed dtypes under the rule before each call said which function ran (every
export call of an overload counted for its functions, and no function-level judge), on today's cached export
results: the "before" beside a run's own figures, from the same exports.

    .venv/bin/python bench/judge_before.py OUT [-j N]

Writes the run to OUT (``--out``, with ``OUT/report.json``) and prints its dtype-added and dtype-removed counts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.audit import export  # noqa: E402
from migrate.cli import main as cli  # noqa: E402
from migrate.write.torchlib.narrowing import EXPORT_JUDGE  # noqa: E402


class Everyone(tuple):
    """The functions a call ran, as the old rule read them: all of them."""

    def __contains__(self, function: object) -> bool:
        return True


def old_rule(*args, **kwargs):
    """rewrite_statuses as before: the export's cases only, each call counting for every function of the overload."""
    found = {}
    for overload, verdicts in _today(*args, **kwargs).items():
        kept = tuple(
            replace(v, calls=tuple((slots, status, message, Everyone()) for slots, status, message, _ in v.calls))
            for v in verdicts
            if v.judge == EXPORT_JUDGE
        )
        if kept:
            found[overload] = kept
    return found


_today = export.rewrite_statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("-j", "--jobs", type=int, default=1)
    args = parser.parse_args()
    export.rewrite_statuses = old_rule
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(["--out", str(args.out), "--report", str(args.out / "report.json"), "-j", str(args.jobs)])
    if code != 0:
        raise SystemExit(f"the run exited {code}")
    notes = json.loads((args.out / "report.json").read_text())["summary"]["torchlib"]["notes"]
    print(f"before (every export call counts for the overload's functions): dtypes added {notes.get('dtype-added', 0)}, removed {notes.get('dtype-removed', 0)}")


if __name__ == "__main__":
    main()
