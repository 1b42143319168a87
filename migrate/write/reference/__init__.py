"""The dtype reference people read and query, generated from an annotated yaml (and a run's ``--report``).

``reference_outputs(native, report, out)`` makes three files, all from one list of
``OverloadRow`` (``rows.py``): ``OperatorDtypes.md`` (one row per overload, grouped by
python_module), ``autocast.md`` (the ops of each autocast key per policy, in amp.rst's structure)
and ``index.html`` (one self-contained page: the overloads x the 21 dtypes, searchable, filtered,
each cell's evidence on a click). The files are written together through ``write.outputs``; as
every writer, this reads what the yaml and the report say and infers nothing.
"""

from __future__ import annotations

from pathlib import Path

from migrate.model.native import NativeFunctions
from migrate.model.plan import Plan
from migrate.model.values import ValueRefusal
from migrate.write.outputs import Output
from migrate.write.reference.autocast_md import autocast_markdown
from migrate.write.reference.page import index_html
from migrate.write.reference.rows import overload_rows
from migrate.write.reference.table import operator_dtypes_markdown

FILES = ("OperatorDtypes.md", "autocast.md", "index.html")


def reference_outputs(native: NativeFunctions, report: Path | None, out: Path) -> list[Output]:
    """The three files for ``out``, each with what ``out`` holds now (``before``) to compare or commit."""
    plan = Plan.read(report) if report is not None else None
    rows = overload_rows(native, plan, value_refusals(plan) if plan is not None else ())
    source = native.path.name
    texts = {
        "OperatorDtypes.md": operator_dtypes_markdown(rows, source, report is not None),
        "autocast.md": autocast_markdown(rows, source),
        "index.html": index_html(rows, source),
    }
    return [Output(name, out / name, out / name, _current(out / name), texts[name].encode("utf-8")) for name in FILES]


def value_refusals(plan: Plan) -> tuple[ValueRefusal, ...]:
    """The refusals at some value of an argument that the report's ``summary.values`` lists (none in an older report)."""
    return tuple(ValueRefusal.from_json(r) for r in plan.summary.get("values", {}).get("refusals", ()))


def _current(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None
