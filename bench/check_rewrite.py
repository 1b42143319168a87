"""The rewritten torch_lib of a run, checked against export-check's verdicts: every dtype of every rewritten
annotation exports ok or partial there, over every overload its function serves, as the rewrite reads them
(or is a dtype the original annotation had that no case checks),
and no case ok on the original torch_lib is worse on the rewritten one (cases per value: ``reduce='amax'``, ``min=number``). Dtypes the original had whose export
says nothing of the function are counted apart, as the rewrite keeps them: complex ones (the exporter sends
them to another function) and failures every dtype of the variable shares (bincount's ``weights``).
A return torchlib annotates alone is judged by the parameters the written yaml ties to it.

A call proves or refutes only the functions that ran for its overload: each function is judged by the export
where the exporter dispatched to it and by the function-level judge (the function called directly) where it
did not; the two judges' verdicts are counted apart. Every dtype the run added or removed (its ``dtype-added``
and ``dtype-removed`` notes, by the judge they name) must rest on a call of the original torch_lib that ran
the function: those that do not are counted (target 0).

    .venv/bin/python bench/check_rewrite.py OUT [ORIGINAL.json REWRITTEN.json] [-j N]

OUT is the run's ``--out`` (its native_functions.yaml, torch_lib and ``--report`` OUT/report.json); the two
reports are ``export-check --report`` of the installed torch_lib and of OUT/torch_lib (with
``--native-functions OUT/native_functions.yaml``). Without them, both checks run here, over every overload
either torch_lib registers, and their reports are written to OUT/export-original.json and
OUT/export-rewritten.json: the original's from the cache once it has run, the rewritten one's from the same
results for every overload whose functions the rewrite left as they were (the cache is keyed by the functions a
case depends on), so only the overloads of changed functions are exported again.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.cache import StageCache  # noqa: E402
from migrate.cli import main as cli  # noqa: E402
from migrate.torchlib_source.resolve import installed_torchlib, scan_torchlib  # noqa: E402
from migrate.model.declared import declared_variables  # noqa: E402
from migrate.model.dtypes import DType  # noqa: E402
from migrate.model.export_status import FAILED, HANDLED, NO_KERNEL, OK  # noqa: E402
from migrate.model.global_sets import GlobalSetsFile  # noqa: E402
from migrate.model.native import NativeFunctions, installed_native_functions, sibling_constraints_path  # noqa: E402
from migrate.write.torchlib.decide import DTYPE_ADDED, DTYPE_REMOVED  # noqa: E402
from migrate.write.torchlib.narrowing import ANY_TENSOR, FUNCTION_JUDGE, JOINING, JUDGE_NAMES, ExportStatus, exported_elsewhere, tied_statuses  # noqa: E402

# a dtype-added / dtype-removed note: 'ops/core.py:6327 aten_mT (mT) self, return.0: torch.bool (export ok)'
NOTE = re.compile(r"^(?P<kind>dtype-added|dtype-removed): \S+ (?P<function>\S+) \((?P<overloads>[^)]*)\) (?P<slots>[^:]+): (?P<dtype>\S+) \((?P<why>.*)\)$")


def verdicts(report: Path) -> dict[str, tuple[ExportStatus, ...]]:
    """Both judges' cases of an export-check report (one per value), per overload, each call with the functions that ran."""
    found: dict[str, list[ExportStatus]] = {}
    obj = json.loads(report.read_text())
    for case in obj["cases"] + obj.get("judged", []):
        calls = tuple((tuple(c["dtypes"]), c["status"], c["message"], tuple(c.get("ran", ()))) for c in case["calls"])
        judge = case.get("judge", "export")
        verdict = ExportStatus(tuple(case["cast"]), DType.parse(case["dtype"]), case["status"], case["message"], calls, judge, case.get("value", ""))
        found.setdefault(case["overload"], []).append(verdict)
    return {o: tuple(v) for o, v in found.items()}


def case_key(case: dict) -> tuple:
    """A report's case as both reports name it: overload, function, slots, dtype and value (a case per value)."""
    return case["overload"], case["function"], tuple(case["cast"]), case["dtype"], case.get("value", "")


def value_said(case: dict) -> str:
    return f" [{case['value']}]" if case.get("value") else ""


def unreached_changes(
    notes: list[str], original: dict[str, tuple[ExportStatus, ...]], declared: Callable[[Iterable[str]], dict[str, list[tuple[str, ...]]]]
) -> tuple[Counter, list[str]]:
    """The run's added and removed dtypes per (kind, judge), and those for which the judge the note names has no
    call of the original torch_lib that ran the function with the dtype at the slots the note's annotation ties,
    each overload's own as the rewrite reads them (``tied_statuses``: le.Scalar's ``self`` alone for aten_le's
    ``self, other``); a case the exporter decomposed, or sent to another function, proves nothing of it.
    ``declared``: per overload, the slots each of its declared variables binds."""
    counts: Counter = Counter()
    unreached = []
    for note in notes:
        found = NOTE.match(note)
        if found is None:
            continue
        why = found["why"]
        judge = next((j for j, said in sorted(JUDGE_NAMES.items(), key=lambda i: -len(i[1])) if why.startswith(said)), "ATen")
        counts[found["kind"], judge] += 1
        if judge == "ATen":
            continue  # ATen's rejection, not an export
        slots = [s.strip() for s in found["slots"].split(",")]
        overloads = declared(o.strip() for o in found["overloads"].split(","))
        by_judge = {o: tuple(v for v in verdicts if v.judge == judge) for o, verdicts in original.items()}
        if DType.parse(found["dtype"]) not in tied_statuses(by_judge, slots, overloads, found["function"]):
            unreached.append(note)
    return counts, unreached


def export_check(report: Path, *argv: str) -> None:
    """``dtype-migrate export-check`` of a torch_lib, its report written; its totals printed."""
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        code = cli(["export-check", "--report", str(report), *argv])
    if code != 0:
        raise SystemExit(f"dtype-migrate export-check {' '.join(argv)} exited {code}")
    print(*table.getvalue().splitlines()[-3:], sep="\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("reports", type=Path, nargs="*", help="ORIGINAL.json REWRITTEN.json (default: run both checks)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--op", action="append", default=[], help="only these overloads, when the checks run here (default: all)")
    args = parser.parse_args()
    out = args.out
    if args.reports:
        original_report, rewritten_report = args.reports
    else:
        original_report, rewritten_report = out / "export-original.json", out / "export-rewritten.json"
        common = ["-j", str(args.jobs), *(f"--op={op}" for op in args.op)]
        export_check(original_report, *common)
        export_check(rewritten_report, *common, "--native-functions", str(out / "native_functions.yaml"), "--torchlib", str(out / "torch_lib"))
        summary = json.loads(rewritten_report.read_text())["summary"]
        print(f"rewritten torch_lib: {summary['overloads_run']} overloads exported again, {summary['overloads_from_cache']} from the cache")
    native = NativeFunctions.load(installed_native_functions())
    before = scan_torchlib(installed_torchlib(), native, StageCache.at())
    after = scan_torchlib(out / "torch_lib", native, StageCache.at())
    rewritten = verdicts(rewritten_report)
    written = NativeFunctions.load(out / "native_functions.yaml")
    sets = GlobalSetsFile.load(sibling_constraints_path(written.path)).by_name

    def declared(overloads: Iterable[str]) -> dict[str, list[tuple[str, ...]]]:
        """Per overload, the slots each variable of the written yaml binds: they say which slots an annotation's cases
        cast there (a return torchlib annotates alone is proven by the parameters the yaml ties to it; torchlib may
        name a parameter otherwise, atleast_1d.Sequence's ``self`` for ATen's ``tensors``, and keep it as it was)."""
        entries = [written.by_name[o] for o in overloads if o in written.by_name]
        return {e.name: [v.binds for v in declared_variables(written, e, sets)] for e in entries}

    def said(plan) -> set[tuple]:
        return {(v.dtypes, v.binds) for v in plan.variables}

    checked_overloads = set(rewritten)
    changed = sorted(
        o for o in after.overloads if o in before.overloads and o in checked_overloads and said(after.overloads[o]) != said(before.overloads[o])
    )
    serving: dict[tuple[str, str], list[str]] = {}  # a function, and the overloads it serves: the rewrite settles it over all
    for overload, registrations in after.by_overload.items():
        for registration in registrations:
            if not registration.complex:
                serving.setdefault((registration.path, registration.function), []).append(overload)

    def outcomes(overload: str, slots: tuple[str, ...]) -> dict:
        """Per dtype, the outcomes of the slots an annotation ties, in every overload the overload's function serves
        (each overload's own slots), by the calls that ran it."""
        function = next(((r.path, r.function) for r in after.by_overload.get(overload, ()) if not r.complex), None)
        return tied_statuses(rewritten, slots, declared(serving.get(function, [overload])), function[1] if function else None)

    checked: Counter = Counter()  # per judge (``export+function``: a dtype both judged, over the overloads a function serves)
    unchecked_kept = complex_kept = shared_kept = 0
    bad = []
    for overload in changed:
        old = {slot: set(v.dtypes) for v in before.overloads[overload].variables for slot in v.binds}
        for variable in after.overloads[overload].variables:
            if (variable.dtypes, variable.binds) in said(before.overloads[overload]):
                continue  # an annotation the run left as it was
            found = outcomes(overload, variable.binds)
            had = set.intersection(*[old.get(s, set(ANY_TENSOR)) for s in variable.binds])  # a slot torchlib left free: any dtype
            telling = any(outcome[0] in JOINING for d, outcome in found.items() if not exported_elsewhere(d))
            for dtype in variable.dtypes:
                if dtype.onnx is None:
                    continue
                status, message, judge = found.get(dtype, ("", "", ""))
                if status in HANDLED and status != NO_KERNEL:
                    checked[judge] += 1
                elif status in ("", "no-sample", "runtime-error", NO_KERNEL) and dtype in had:
                    unchecked_kept += 1
                elif exported_elsewhere(dtype) and dtype in had:  # the exporter sends it to another function
                    complex_kept += 1
                elif status in FAILED and not telling and dtype in had:  # no dtype exports: the function's failure
                    shared_kept += 1
                else:
                    bad.append(f"{overload} {','.join(variable.binds)} {dtype.name}: {status or 'unchecked'} {message[:100]}")
    first, second = json.loads(original_report.read_text()), json.loads(rewritten_report.read_text())
    statuses = Counter(c["status"] for c in second["cases"])
    print(f"checked overloads whose annotations changed: {len(changed)} ({', '.join(changed)}); rewritten cases by status: {dict(statuses)}")
    notes = json.loads((out / "report.json").read_text())["summary"]["torchlib"]["note_lines"]
    counts, unreached = unreached_changes(notes, verdicts(original_report), declared)
    for kind in (DTYPE_ADDED, DTYPE_REMOVED):
        split = ", ".join(f"{JUDGE_NAMES.get(j, 'ATen rejects it')} {counts[kind, j]}" for j in (*JUDGE_NAMES, "ATen"))
        print(f"dtypes {kind.removeprefix('dtype-')}: {sum(n for (k, _), n in counts.items() if k == kind)} ({split})")
    print(f"dtypes added or removed by cases whose function did not run: {len(unreached)}")
    print(*unreached[:20], sep="\n")
    judged_checked = ", ".join(f"{' and '.join(JUDGE_NAMES[j] for j in key.split('+'))} {n}" for key, n in sorted(checked.items()))
    print(
        f"dtypes of rewritten annotations: {sum(checked.values())} ok/partial ({judged_checked}), {unchecked_kept} unchecked and in the original, "
        f"{complex_kept} complex and in the original (the exporter sends complex inputs to another function), "
        f"{shared_kept} in the original and failing as every dtype does (the function's failure, not the dtype's), "
        f"{len(bad)} neither"
    )
    print(*bad[:20], sep="\n")
    for key, judge in (("cases", "export"), ("judged", JUDGE_NAMES[FUNCTION_JUDGE])):
        was = {case_key(c): c["status"] for c in first.get(key, [])}
        worse = [
            f"{c['overload']} {c['function']} {','.join(c['cast'])} {c['dtype']}{value_said(c)}: ok -> {c['status']} {c['message'][:100]}"
            for c in second.get(key, [])
            if was.get(case_key(c)) == OK and c["status"] != OK
        ]
        print(f"{judge}: cases ok on the original and worse on the rewritten torch_lib: {len(worse)} (of {len(second.get(key, []))} checked)")
        print(*worse[:20], sep="\n")


if __name__ == "__main__":
    main()
