"""The command line: ``dtype-migrate`` (the run), ``lower`` and ``show``.

Exit codes: 0 done, 1 changes pending under ``--check``, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from migrate.cache import store
from migrate.errors import InputError
from migrate.global_sets import GlobalSetsFile
from migrate.native import NativeFunctions, installed_native_functions, sibling_constraints_path
from migrate.outputs import Output, commit, is_installed_path, print_diff, unified_diff
from migrate.plan import SOURCES, Plan
from migrate.yaml_writer import KEPT, UNCHANGED, WRITTEN, YamlResult, apply_plan, close_matches, lower

EXIT_OK, EXIT_PENDING, EXIT_BAD_INPUT = 0, 1, 2
SUBCOMMANDS = ("lower", "show")


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dtype-migrate",
        description="Declare dtype constraints in native_functions.yaml (and type_constraints.yaml) from a plan.",
        epilog="Other commands: 'dtype-migrate lower FILE [-o OUT]', 'dtype-migrate show NAME'.",
    )
    parser.add_argument("--native-functions", type=Path, help="the yaml to migrate (default: the installed torch's packaged copy)")
    parser.add_argument("--torchlib", type=Path, metavar="DIR", help="onnxscript's torch_lib folder to read (default: the installed one)")
    parser.add_argument("--op", action="append", default=[], metavar="NAME", help="only these overloads: aten::name.overload, name.overload or name (repeatable)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="write nothing; print one unified diff of every file that would change")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 when the run would change anything")
    parser.add_argument("--out", type=Path, metavar="DIR", help="write the outputs under DIR instead of in place (required for installed inputs)")
    parser.add_argument("--evidence", type=_evidence_list, default=EVIDENCE, help=f"sources to infer from (default: {','.join(EVIDENCE)})")
    parser.add_argument("--plan", type=Path, metavar="FILE", help="apply this plan (JSON, as --report writes it) instead of inferring one")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write the applied plan and its evidence as JSON")
    parser.add_argument("--overwrite", action="store_true", help="replace hand-written constraints and global sets")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR", help="where evidence caches live (default: ~/.cache/dtype-migrate)")
    return parser


EVIDENCE = ("torchlib", "groups")


def _evidence_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in EVIDENCE]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown evidence source {unknown[0]!r} (choose from {', '.join(EVIDENCE)})")
    return names


def _infer(native: NativeFunctions, args: argparse.Namespace, only: set[str] | None) -> Plan:
    from migrate.infer import Sources, infer_plan
    from migrate.torchlib import scan_torchlib

    torchlib = scan_torchlib(args.torchlib, native, args.cache_dir) if "torchlib" in args.evidence else None
    for error in torchlib.errors if torchlib else ():
        sys.stderr.write(f"dtype-migrate: warning: {error}\n")
    sources = Sources(
        torchlib=torchlib.overloads if torchlib else {},
        opinfo={},
        global_sets=torchlib.global_sets if torchlib else (),
        groups="groups" in args.evidence,
    )
    return infer_plan(native, sources, only)


def _lower_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dtype-migrate lower", description="Write the plain yaml: every type variable back to Tensor.")
    parser.add_argument("file", type=Path)
    parser.add_argument("-o", "--output", type=Path, help="write here (default: standard output)")
    return parser


def _show_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dtype-migrate show", description="Print what each evidence source says about an overload.")
    parser.add_argument("name")
    parser.add_argument("--native-functions", type=Path)
    parser.add_argument("--torchlib", type=Path)
    parser.add_argument("--cache-dir", type=Path)
    return parser


def select_overloads(native: NativeFunctions, requested: list[str]) -> set[str]:
    """Overload names for ``--op`` values; a bare name means every overload of it."""
    selected: set[str] = set()
    by_base: dict[str, list[str]] = {}
    for name in native.by_name:
        by_base.setdefault(name.split(".")[0], []).append(name)
    for raw in requested:
        name = raw.removeprefix("aten::").removesuffix(".default")
        if "." not in name and name in by_base:
            selected.update(by_base[name])
        elif name in native.by_name:
            selected.add(name)
        else:
            raise InputError(f"unknown operator {raw!r}{close_matches(name, dict.fromkeys([*native.by_name, *by_base]))}", native.path)
    return selected


@dataclass(frozen=True)
class Targets:
    """Where each output goes, and how the diff names it."""

    out: Path | None
    native_functions: Path

    def output(self, source: Path, before: bytes | None, after: bytes) -> Output:
        if self.out is not None:
            return Output(source.name, source, self.out / source.name, before, after)
        cwd = Path.cwd().resolve()
        resolved = source.resolve()
        installed = is_installed_path(resolved)
        base = cwd if resolved.is_relative_to(cwd) and not installed else self.native_functions.resolve().parent
        return Output(resolved.relative_to(base).as_posix(), source, source, before, after)


def _coverage(written: NativeFunctions) -> dict[str, int | float]:
    """How much of the written yaml is typed: entries with a tensor slot, and tensor slots."""
    with_slots = [e for e in written.entries if e.schema.tensor_slots]
    typed_entries = sum(1 for e in with_slots if e.schema.variables())
    slots = sum(len(e.schema.tensor_slots) for e in with_slots)
    typed_slots = sum(len(binds) for e in with_slots for binds in e.schema.variables().values())
    return {
        "entries_with_tensor_slots": len(with_slots),
        "entries_typed": typed_entries,
        "entry_share": round(typed_entries / len(with_slots), 4) if with_slots else 0.0,
        "tensor_slots": slots,
        "tensor_slots_typed": typed_slots,
        "slot_share": round(typed_slots / slots, 4) if slots else 0.0,
    }


def _summary(plan: Plan, result: YamlResult, scope: int, written: NativeFunctions) -> dict:
    """The run in numbers, for the summary lines and the report."""
    statuses = [o.status for o in result.outcomes]
    constrained, unchanged = statuses.count(WRITTEN), statuses.count(UNCHANGED)
    kinds: dict[str, int] = {}
    for conflict in [c for o in result.outcomes for c in o.conflicts] + list(result.global_conflicts):
        kinds[conflict.kind] = kinds.get(conflict.kind, 0) + 1
    return {
        "overloads": {
            "in_scope": scope,
            "constrained": constrained,
            "unchanged": unchanged,
            "skipped": scope - constrained - unchanged,
            "with_conflicts": sum(1 for o in result.outcomes if o.conflicts),
        },
        "by_source": {s: n for s in SOURCES if (n := sum(1 for o in plan.overloads if any(s in v.sources for v in o.variables)))},
        "conflicts": dict(sorted(kinds.items())),
        "coverage": _coverage(written),
    }


def _summary_text(summary: dict, result: YamlResult) -> str:
    o, c = summary["overloads"], summary["coverage"]
    lines = [
        f"overloads: {o['constrained']} constrained, {o['unchanged']} unchanged, {o['skipped']} skipped, "
        f"{o['with_conflicts']} with conflicts (of {o['in_scope']})",
        "by source: " + (", ".join(f"{s} {n}" for s, n in summary["by_source"].items()) or "none"),
        f"coverage of the written yaml: {c['entries_typed']} of {c['entries_with_tensor_slots']} entries with tensor slots "
        f"({c['entry_share']:.1%}), {c['tensor_slots_typed']} of {c['tensor_slots']} tensor slots ({c['slot_share']:.1%})",
    ]
    if summary["conflicts"]:
        lines.append("conflicts: " + ", ".join(f"{k} {n}" for k, n in summary["conflicts"].items()) + " (each listed in --report)")
    lines += [f"conflict: {c.message}" for c in result.global_conflicts]
    lines += [f"conflict: {o.name}: {c.message}" for o in result.outcomes if o.status == KEPT for c in o.conflicts[-1:]]
    return "\n".join(lines) + "\n"


def _report(plan: Plan, result: YamlResult, summary: dict) -> Plan:
    """The applied plan with the writer's conflicts added to each overload, and the summary."""
    conflicts = {o.name: o.conflicts for o in result.outcomes}
    overloads = tuple(replace(o, conflicts=conflicts.get(o.name, o.conflicts)) for o in plan.overloads)
    return replace(plan, overloads=overloads, summary=summary)


def run(args: argparse.Namespace) -> int:
    native_path = args.native_functions or installed_native_functions()
    writes = not (args.dry_run or args.check)
    if writes and args.out is None and is_installed_path(native_path):
        raise InputError("these are installed files, which are never written: pass --out DIR (or --dry-run)", native_path)
    native = NativeFunctions.load(native_path)
    sets_path = sibling_constraints_path(native_path)
    sets_file = GlobalSetsFile.load(sets_path)
    selected = select_overloads(native, args.op) if args.op else None
    if selected is None:
        native.validate()
    plan = Plan.read(args.plan) if args.plan is not None else _infer(native, args, selected)
    if selected is not None:
        plan = replace(plan, overloads=tuple(o for o in plan.overloads if o.name in selected))
    scope = len(selected) if selected is not None else len(native.entries)
    result = apply_plan(native, sets_file, plan, overwrite=args.overwrite, plan_path=args.plan)
    targets = Targets(args.out, native_path)
    outputs = [targets.output(native_path, native.data, result.native_functions)]
    if result.type_constraints is not None:
        outputs.append(targets.output(sets_path, sets_file.data, result.type_constraints))
    summary = _summary(plan, result, scope, NativeFunctions.parse(result.native_functions, native_path))
    if args.report is not None:
        store(args.report, _report(plan, result, summary).dumps().encode())
    summary = _summary_text(summary, result)
    changed = any(o.changed for o in outputs)
    if args.dry_run:
        print_diff(unified_diff(outputs))
    elif args.check:
        sys.stderr.write(summary)
        return EXIT_PENDING if changed else EXIT_OK
    else:
        written = commit(outputs, write_unchanged=args.out is not None)
        summary += "".join(f"wrote {p}\n" for p in written) or "nothing to change\n"
    sys.stderr.write(summary)
    return EXIT_OK


def run_lower(args: argparse.Namespace) -> int:
    native = NativeFunctions.load(args.file)
    lowered = lower(native).encode("utf-8")
    if args.output is None:
        sys.stdout.buffer.write(lowered)
        sys.stdout.flush()
    else:
        before = args.output.read_bytes() if args.output.exists() else None
        commit([Output(args.output.name, args.output, args.output, before, lowered)])
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    from migrate.show import run as show

    return show(args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        command, parser = {"lower": (run_lower, _lower_parser), "show": (run_show, _show_parser)}[argv[0]]
        args = parser().parse_args(argv[1:])
    else:
        command, args = run, _run_parser().parse_args(argv)
    try:
        return command(args)
    except InputError as exc:
        sys.stderr.write(f"dtype-migrate: error: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("dtype-migrate: interrupted; nothing was written\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
