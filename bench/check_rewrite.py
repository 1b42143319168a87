"""The rewritten torch_lib of a run, checked against export-check's verdicts: every dtype of every rewritten
annotation exports ok or partial there, over every overload its function serves, as the rewrite reads them
(or is a dtype the original annotation had that no case checks),
and no case ok on the original torch_lib is worse on the rewritten one. Dtypes the original had whose export
says nothing of the function are counted apart, as the rewrite keeps them: complex ones (the exporter sends
them to another function) and failures every dtype of the variable shares (bincount's ``weights``).
A return torchlib annotates alone is judged by the parameters the written yaml ties to it.

    .venv/bin/python bench/check_rewrite.py OUT ORIGINAL.json REWRITTEN.json

OUT is the run's ``--out`` (its native_functions.yaml and torch_lib); the two reports are ``export-check
--report`` of the installed torch_lib and of OUT/torch_lib (with ``--native-functions OUT/native_functions.yaml``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.cache import StageCache
from migrate.torchlib_source.resolve import installed_torchlib, scan_torchlib  # noqa: E402
from migrate.model.declared import declared_variables  # noqa: E402
from migrate.model.dtypes import DType  # noqa: E402
from migrate.model.export_status import FAILED, HANDLED, NO_KERNEL, OK  # noqa: E402
from migrate.model.global_sets import GlobalSetsFile  # noqa: E402
from migrate.model.native import NativeFunctions, installed_native_functions, sibling_constraints_path  # noqa: E402
from migrate.write.torchlib.narrowing import ANY_TENSOR, JOINING, ExportVerdict, exported_elsewhere, tied_verdicts  # noqa: E402


def verdicts(report: Path) -> dict[str, tuple[ExportVerdict, ...]]:
    found: dict[str, list[ExportVerdict]] = {}
    for case in json.loads(report.read_text())["cases"]:
        calls = tuple((tuple(c["dtypes"]), c["status"], c["message"]) for c in case["calls"])
        verdict = ExportVerdict(tuple(case["cast"]), DType.parse(case["dtype"]), case["status"], case["message"], calls)
        found.setdefault(case["overload"], []).append(verdict)
    return {o: tuple(v) for o, v in found.items()}


def main() -> None:
    out, original_report, rewritten_report = (Path(a) for a in sys.argv[1:4])
    native = NativeFunctions.load(installed_native_functions())
    before = scan_torchlib(installed_torchlib(), native, StageCache.at())
    after = scan_torchlib(out / "torch_lib", native, StageCache.at())
    rewritten = verdicts(rewritten_report)
    written = NativeFunctions.load(out / "native_functions.yaml")
    sets = GlobalSetsFile.load(sibling_constraints_path(written.path)).by_name

    def declared_cast(overload: str, returns: tuple[str, ...]) -> tuple[str, ...]:
        """The parameters the written yaml ties to these returns: they prove a return's dtypes (torchlib may
        name a parameter otherwise, atleast_1d.Sequence's ``self`` for ATen's ``tensors``, and keep it as it was)."""
        entry = written.by_name.get(overload)
        for variable in declared_variables(written, entry, sets) if entry is not None else ():
            if set(returns) & set(variable.binds):
                return tuple(s for s in variable.binds if not s.startswith("return."))
        return ()

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

    def outcomes(overload: str, cast: tuple[str, ...]) -> dict:
        """Per dtype, the export outcomes of these slots in every overload the overload's function serves."""
        function = next(((r.path, r.function) for r in after.by_overload.get(overload, ()) if not r.complex), None)
        return tied_verdicts(rewritten, [(other, cast) for other in serving.get(function, [overload])])

    checked = unchecked_kept = complex_kept = shared_kept = 0
    bad = []
    for overload in changed:
        old = {slot: set(v.dtypes) for v in before.overloads[overload].variables for slot in v.binds}
        for variable in after.overloads[overload].variables:
            if (variable.dtypes, variable.binds) in said(before.overloads[overload]):
                continue  # an annotation the run left as it was
            cast = tuple(s for s in variable.binds if not s.startswith("return.")) or declared_cast(overload, variable.binds)
            found = outcomes(overload, cast)
            had = set.intersection(*[old.get(s, set(ANY_TENSOR)) for s in variable.binds])  # a slot torchlib left free: any dtype
            telling = any(status in JOINING for d, (status, _) in found.items() if not exported_elsewhere(d))
            for dtype in variable.dtypes:
                if dtype.onnx is None:
                    continue
                status, message = found.get(dtype, ("", ""))
                if status in HANDLED and status != NO_KERNEL:
                    checked += 1
                elif status in ("", "no-sample", "runtime-error", NO_KERNEL) and dtype in had:
                    unchecked_kept += 1
                elif exported_elsewhere(dtype) and dtype in had:  # the exporter sends it to another function
                    complex_kept += 1
                elif status in FAILED and not telling and dtype in had:  # no dtype exports: the function's failure
                    shared_kept += 1
                else:
                    bad.append(f"{overload} {','.join(variable.binds)} {dtype.name}: {status or 'unchecked'} {message[:100]}")
    original = {(c["overload"], tuple(c["cast"]), c["dtype"]): c["status"] for c in json.loads(original_report.read_text())["cases"]}
    worse = [
        f"{o} {','.join(cast)} {d}: ok -> {c['status']} {c['message'][:100]}"
        for c in json.loads(rewritten_report.read_text())["cases"]
        if original.get((o := c["overload"], cast := tuple(c["cast"]), d := c["dtype"])) == OK and c["status"] != OK
    ]
    statuses = Counter(c["status"] for c in json.loads(rewritten_report.read_text())["cases"])
    print(f"checked overloads whose annotations changed: {len(changed)} ({', '.join(changed)}); rewritten cases by status: {dict(statuses)}")
    print(
        f"dtypes of rewritten annotations: {checked} export ok/partial, {unchecked_kept} unchecked and in the original, "
        f"{complex_kept} complex and in the original (the exporter sends complex inputs to another function), "
        f"{shared_kept} in the original and failing as every dtype does (the function's failure, not the dtype's), "
        f"{len(bad)} neither"
    )
    print(*bad[:20], sep="\n")
    print(f"cases ok on the original and worse on the rewritten torch_lib: {len(worse)}")
    print(*worse[:20], sep="\n")


if __name__ == "__main__":
    main()
