"""The command line: ``dtype-migrate`` (the run), ``lower``, ``show`` and ``verify``.

Exit codes: 0 done, 1 changes pending under ``--check``, 2 bad input or usage, 3 ``verify`` found violations,
141 when the reader of the output left (as a shell reports SIGPIPE).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.cache import content_key, store
from migrate.errors import InputError
from migrate.evidence.probe.merge import probe_summary
from migrate.evidence.torchlib.resolve import TorchlibEvidence, installed_torchlib, scan_torchlib
from migrate.model.global_sets import GlobalSetsFile, constraints_value
from migrate.model.native import CONSTRAINTS_KEY, NativeFunctions, installed_native_functions, sibling_constraints_path, source_tree_root
from migrate.model.plan import SOURCES, Plan
from migrate.write.native_functions import KEPT, UNCHANGED, WRITTEN, YamlResult, apply_plan, lower
from migrate.write.outputs import Output, commit, is_installed_path, print_diff, unified_diff

if TYPE_CHECKING:  # libcst and the torchlib rewrite load only when a command rewrites torchlib
    from migrate.write.torchlib.rewrite import TorchlibRewrite

EXIT_OK, EXIT_PENDING, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a process ended by SIGPIPE
SUBCOMMANDS = ("lower", "show", "verify", "export-check")


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
    parser.add_argument("--yaml-only", action="store_true", help="write the yaml files only; leave torchlib as it is")
    parser.add_argument("-j", "--jobs", type=int, metavar="N", help="worker processes for the OpInfo sweep (default: all cores)")
    parser.add_argument("--refresh", action="store_true", help="run the OpInfo samples again instead of reading the cache")
    parser.add_argument("--export-check", action="store_true", help="check the torchlib's exports first (dtype-migrate export-check) for the rewrite")
    return parser


EVIDENCE = ("torchlib", "opinfo", "probe", "groups", "aliases", "kernel")


def _evidence_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in EVIDENCE]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown evidence source {unknown[0]!r} (choose from {', '.join(EVIDENCE)})")
    return names


def _infer(
    native: NativeFunctions,
    args: argparse.Namespace,
    torchlib: TorchlibEvidence,
    sets_file: GlobalSetsFile,
    only: set[str] | None,
    summary: dict,
) -> tuple[Plan, frozenset[str]]:
    """The inferred plan, and the overloads some OpInfo sample reached (the untyped rest's reasons need them).

    The plan is read from the cache when the yaml, its sets, torchlib, the sweep cache and the code are unchanged.
    """
    from migrate.infer import Sources, align_runtime_evidence, cached_plan

    use_torchlib = "torchlib" in args.evidence
    state, observed = None, frozenset()
    if {"opinfo", "probe", "aliases", "kernel"} & set(args.evidence):
        from migrate.evidence.opinfo.derived import evidence_of, sweep_state, sweep_summary

        state = sweep_state(args.jobs, args.cache_dir, args.refresh, only)
        swept = sweep_summary(state)
        observed = swept.observed
        summary["opinfo"] = {
            "opinfos": state.opinfos,
            "ran": state.ran,
            "from_cache": state.present - state.ran,
            "overloads_observed": len(swept.observed & native.by_name.keys()),
            "failures": list(swept.failures),
        }

    def sources() -> Sources:
        # Every overload's evidence, also for --op: the global sets are named from the whole file's plan.
        opinfo, probe, aliases, kernel, built, alignment = {}, {}, {}, {}, {}, None
        if state is not None:
            evidence = evidence_of(state)
            opinfo = evidence.opinfo if "opinfo" in args.evidence else {}
            probe = evidence.probe if "probe" in args.evidence else {}
            built = evidence.schema_calls if "probe" in args.evidence else {}
            if "aliases" in args.evidence:
                from migrate.evidence.opinfo.aliases import alias_overloads

                aliases = alias_overloads(native, evidence.aliases, evidence.forwards)
            if "kernel" in args.evidence:
                from migrate.evidence.opinfo.forwards import kernel_plans

                kernel = kernel_plans(native, evidence.kernels)
            (opinfo, probe, kernel, built), alignment = align_runtime_evidence(native, _installed_or_same(native), opinfo, probe, kernel, built)
        return Sources(
            torchlib=torchlib.overloads if use_torchlib else {},
            opinfo=opinfo,
            global_sets=torchlib.global_sets if use_torchlib else (),
            groups="groups" in args.evidence,
            probe=probe,
            torchlib_handled=torchlib.handled if use_torchlib else {},
            existing_sets=sets_file.sets,
            aliases=aliases,
            kernel=kernel,
            schema_calls=built,
            alignment=alignment,
        )

    if torchlib.key:
        key = content_key("plan", ",".join(args.evidence), native.data, sets_file.data or b"", torchlib.key, state.key if state else "")
        plan, alignment = cached_plan(native, sources, key, args.cache_dir, only)
    else:  # a torchlib file could not be read: infer without the cache
        from migrate.infer import infer_plan

        inputs = sources()
        plan, alignment = infer_plan(native, inputs, only), inputs.alignment
    if alignment is not None:
        from migrate.torch_private import torch_version

        summary["runtime_evidence"] = {"torch": torch_version(), **alignment.to_json()}
    return plan, observed


def _installed_or_same(native: NativeFunctions) -> NativeFunctions:
    """The installed torch's yaml, whose schemas name the runtime evidence's slots; parsed only when the file differs."""
    path = installed_native_functions()
    return native if path.read_bytes() == native.data else NativeFunctions.load(path)


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
    parser.add_argument("-v", "--verbose", action="store_true", help="full dtype lists, whole lines, and ATen's rejection messages")
    return parser


def _verify_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dtype-migrate verify", description="Run the OpInfo samples under the dtype checker; exit 3 on any violation.")
    parser.add_argument("--native-functions", type=Path)
    parser.add_argument("--op", action="append", default=[], metavar="NAME")
    parser.add_argument("-j", "--jobs", type=int, metavar="N")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR")
    return parser


def _export_check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dtype-migrate export-check",
        description="Export each declared dtype of each torchlib-registered overload with torch.onnx.export(dynamo=True), "
        "run it in onnxruntime and compare with eager PyTorch.",
    )
    parser.add_argument("--native-functions", type=Path, help="declarations to check (default: the installed yaml, declared by inference)")
    parser.add_argument("--torchlib", type=Path, metavar="DIR", help="the torch_lib folder to export with (default: the installed one)")
    parser.add_argument("--op", action="append", default=[], metavar="NAME")
    parser.add_argument("-j", "--jobs", type=int, metavar="N")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write every case and the summary as JSON")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR")
    parser.add_argument("--refresh", action="store_true", help="export again instead of reading cached results")
    parser.add_argument("--missing", action="store_true", help="print the provisioning list instead of the table: declared dtypes no torchlib function exports")
    return parser


@dataclass(frozen=True)
class Targets:
    """Where the yaml outputs go, and how the diff names every output."""

    out: Path | None

    def display(self, source: Path, name_under_out: str) -> str:
        """The diff path: the output's name under --out, else relative to the current folder when the file is in it."""
        resolved = source.resolve()
        cwd = Path.cwd().resolve()
        if self.out is None and resolved.is_relative_to(cwd) and not is_installed_path(resolved):
            return resolved.relative_to(cwd).as_posix()
        return name_under_out

    def output(self, source: Path, before: bytes | None, after: bytes) -> Output:
        target = self.out / source.name if self.out is not None else source
        return Output(self.display(source, source.name), source, target, before, after)


def _coverage(native: NativeFunctions, plan: Plan, result: YamlResult, observed: frozenset[str]) -> dict:
    """How much of the written yaml is typed: entries with a tensor slot, and tensor slots; the untyped
    entries by reason (``migrate.infer.untyped_reasons``; without samples, as when a --plan is applied,
    none counts as observed).

    Computed from the input and what the writer did to it, without reading the output again.
    """
    from migrate.infer import untyped_reasons

    written = {o.name for o in result.outcomes if o.status == WRITTEN}
    planned = {o.name: o for o in plan.overloads if o.name in written}
    with_slots = [e for e in native.entries if e.schema.tensor_slots]
    typed_entries = typed_slots = 0
    typed = set()
    for entry in with_slots:
        binds = [v.binds for v in planned[entry.name].variables] if entry.name in planned else list(entry.schema.variables().values())
        typed_entries += bool(binds)
        typed_slots += sum(len(b) for b in binds)
        if binds:
            typed.add(entry.name)
    untyped = untyped_reasons(native, typed, observed)
    slots = sum(len(e.schema.tensor_slots) for e in with_slots)
    return {
        "entries_with_tensor_slots": len(with_slots),
        "entries_typed": typed_entries,
        "entry_share": round(typed_entries / len(with_slots), 4) if with_slots else 0.0,
        "tensor_slots": slots,
        "tensor_slots_typed": typed_slots,
        "slot_share": round(typed_slots / slots, 4) if slots else 0.0,
        "untyped_by_reason": {reason: len(names) for reason, names in untyped.items()},
        "untyped": {reason: list(names) for reason, names in untyped.items()},
    }


def _spelling(native: NativeFunctions, plan: Plan, result: YamlResult) -> dict[str, int | float]:
    """How the written yaml spells its variables: by a set's name or as an inline list; line lengths; the file's growth."""
    written = {o.name for o in result.outcomes if o.status == WRITTEN}
    set_names = []  # per written variable: the global set it is spelled by, or None for an inline list
    for overload in plan.overloads:
        for variable in overload.variables if overload.name in written else ():
            value = constraints_value(variable, result.sets)
            set_names.append(variable.name if value is None else None if value.startswith("[") else value)
    named = [n for n in set_names if n is not None]
    lines = [len(line) for line in result.native_functions.decode().splitlines() if line.lstrip().startswith(CONSTRAINTS_KEY + ":")]
    return {
        "variables_written": len(set_names),
        "variables_named": len(named),
        "named_share": round(len(named) / len(set_names), 4) if set_names else 0.0,
        "global_sets_used": len(set(named)),
        "constraints_lines": len(lines),
        "longest_constraints_line": max(lines, default=0),
        "yaml_growth": round((len(result.native_functions) - len(native.data)) / len(native.data), 4),
    }


def _summary(native: NativeFunctions, plan: Plan, result: YamlResult, scope: int, observed: frozenset[str]) -> dict:
    """The run in numbers, for the summary lines and the report."""
    statuses = [o.status for o in result.outcomes]
    constrained, unchanged = statuses.count(WRITTEN), statuses.count(UNCHANGED)
    kinds: dict[str, int] = {}
    for conflict in [c for o in result.outcomes for c in o.conflicts] + list(result.global_conflicts):
        kinds[conflict.kind] = kinds.get(conflict.kind, 0) + 1
    sources = [{s for v in o.variables for s in v.sources} for o in plan.overloads]  # each variable's sources read once
    return {
        "overloads": {
            "in_scope": scope,
            "constrained": constrained,
            "unchanged": unchanged,
            "skipped": scope - constrained - unchanged,
            "with_conflicts": sum(1 for o in result.outcomes if o.conflicts),
        },
        "by_source": {s: n for s in SOURCES if (n := sum(1 for found in sources if s in found))},
        "conflicts": dict(sorted(kinds.items())),
        "coverage": _coverage(native, plan, result, observed),
        "spelling": _spelling(native, plan, result),
        "validation": {"torchgen": "installed", "schemas_unchecked": sorted(native.groups.unchecked)},
    }


def _summary_text(summary: dict, result: YamlResult) -> str:
    o, c = summary["overloads"], summary["coverage"]
    lines = [
        f"overloads: {o['constrained']} constrained, {o['unchanged']} unchanged, {o['skipped']} skipped, "
        f"{o['with_conflicts']} with conflicts (of {o['in_scope']})",
        "by source: " + (", ".join(f"{s} {n}" for s, n in summary["by_source"].items()) or "none"),
        f"coverage of the written yaml: {c['entries_typed']} of {c['entries_with_tensor_slots']} entries with tensor slots "
        f"({c['entry_share']:.1%}), {c['tensor_slots_typed']} of {c['tensor_slots']} tensor slots ({c['slot_share']:.1%})",
        "untyped entries by reason: " + ", ".join(f"{reason} {n}" for reason, n in c["untyped_by_reason"].items()) + " (each listed in --report)",
    ]
    spelling = summary["spelling"]
    lines.append(
        f"spelling: {spelling['variables_named']} of {spelling['variables_written']} variables by a set name "
        f"({spelling['named_share']:.1%}), {spelling['global_sets_used']} global sets; {spelling['constraints_lines']} "
        f"type_constraints lines, the longest {spelling['longest_constraints_line']} characters; yaml {spelling['yaml_growth']:+.1%}"
    )
    unchecked = summary["validation"]["schemas_unchecked"]
    by = "the installed torchgen" if summary["validation"]["torchgen"] == "installed" else f"the source tree's {summary['validation']['torchgen']}"
    lines.append(f"validation: {by}; {len(unchecked)} schemas with type words it does not know were not checked")
    probe = summary["probe"]
    lines.append(
        f"probe: {probe['slots_widened']} slots widened, {probe['variables_split']} variables split, {probe['variables_joined']} joined; "
        f"{probe['overloads_from_built_calls']} overloads no sample reaches typed by a call built from the schema"
    )
    if "opinfo" in summary:
        sweep = summary["opinfo"]
        lines.append(
            f"opinfo: {sweep['opinfos']} OpInfos ({sweep['ran']} run, {sweep['from_cache']} from the cache), "
            f"{sweep['overloads_observed']} overloads of the yaml observed, {len(sweep['failures'])} failures (listed in --report)"
        )
    aligned = summary.get("runtime_evidence", {})
    if aligned.get("overloads_skipped") or aligned.get("overloads_remapped"):
        lines.append(
            f"runtime evidence of torch {aligned['torch']}: {aligned['overloads_skipped']} overloads with runtime evidence the yaml lacks skipped, "
            f"{aligned['overloads_remapped']} whose schema differs keep the evidence that maps by argument name (listed in --report)"
        )
    if "torchlib" in summary:
        t = summary["torchlib"]
        notes = ", ".join(f"{k} {n}" for k, n in t["notes"].items())
        lines.append(
            f"torchlib: {t['functions_changed']} functions rewritten in {t['modules_changed']} modules; "
            f"{t['annotations_narrowed']} annotations narrowed, {t['annotations_widened']} widened" + (f"; notes: {notes}" if notes else "")
        )
    if summary["conflicts"]:
        lines.append("conflicts: " + ", ".join(f"{k} {n}" for k, n in summary["conflicts"].items()) + " (each listed in --report)")
    lines += [f"conflict: {c.message}" for c in result.global_conflicts]
    lines += [f"conflict: {o.name}: {c.message}" for o in result.outcomes if o.status == KEPT for c in o.conflicts[-1:]]
    return "\n".join(lines) + "\n"


def _codemod_summary(rewrite: TorchlibRewrite) -> dict:
    notes: dict[str, int] = {}
    for note in rewrite.notes:
        kind = note.split(":", 1)[0]
        notes[kind] = notes.get(kind, 0) + 1
    return {
        "modules_changed": len(rewrite.files),
        "functions_changed": sum(1 for f in rewrite.functions if f.changed),
        "annotations_narrowed": rewrite.narrowed,
        "annotations_widened": rewrite.widened,
        "notes": notes,
        "note_lines": list(rewrite.notes),
    }


def _report(plan: Plan, result: YamlResult, summary: dict, torchlib_root: Path, cache_dir: Path | None) -> Plan:
    """The applied plan with the writer's conflicts added to each overload, and the summary.

    Export coverage gaps that ``export-check`` results (cached for this torchlib) judged are
    marked confirmed or refuted, and counted in the summary.
    """
    from migrate.check.export import verdict_summary, verdicts

    conflicts = {o.name: o.conflicts for o in result.outcomes}
    conflicts = {o.name: conflicts.get(o.name, o.conflicts) for o in plan.overloads}
    judged = verdicts(conflicts, torchlib_root, cache_dir)
    overloads = tuple(
        replace(o, conflicts=tuple(replace(c, export=judged.get((o.name, i), "")) for i, c in enumerate(conflicts[o.name])))
        for o in plan.overloads
    )
    summary = {**summary, "export_check": verdict_summary(conflicts, judged)}
    return replace(plan, overloads=overloads, summary=summary)


def _refuse_installed(args: argparse.Namespace, *paths: Path) -> None:
    if args.dry_run or args.check or args.out is not None:
        return
    for path in paths:
        if is_installed_path(path):
            hint = "pass --out DIR (or --dry-run)" if path.suffix else "pass --out DIR, --torchlib DIR, or --yaml-only"
            raise InputError(f"installed files are never written: {hint}", path)


def run(args: argparse.Namespace) -> int:
    native_path = args.native_functions or installed_native_functions()
    torchlib_root = args.torchlib or installed_torchlib()
    _refuse_installed(args, native_path, *(() if args.yaml_only else (torchlib_root,)))
    native = NativeFunctions.load(native_path)
    sets_path = sibling_constraints_path(native_path)
    sets_file = GlobalSetsFile.load(sets_path)
    selected = set(native.overloads_named(args.op)) if args.op else None
    if selected is None:
        native.validate()  # every entry's yaml; every schema through the installed torchgen, where it knows the type words
    tree = source_tree_root(native_path)
    if tree is not None:  # the tree's own torchgen checks every schema; the installed one only groups overloads
        from migrate.check.torchgen import validate_with_tree_torchgen

        validate_with_tree_torchgen(native, tree)
    torchlib = scan_torchlib(torchlib_root, native, args.cache_dir)
    for error in torchlib.errors:
        sys.stderr.write(f"dtype-migrate: warning: {error}\n")
    evidence_summary: dict = {}
    if args.plan is not None:
        plan, observed = Plan.read(args.plan), frozenset()
    else:
        plan, observed = _infer(native, args, torchlib, sets_file, selected, evidence_summary)
    if selected is not None:
        plan = replace(plan, overloads=tuple(o for o in plan.overloads if o.name in selected))
    scope = len(selected) if selected is not None else len(native.entries)
    result = apply_plan(native, sets_file, plan, overwrite=args.overwrite, plan_path=args.plan)
    targets = Targets(args.out)
    outputs = [targets.output(native_path, native.data, result.native_functions)]
    if result.type_constraints is not None:
        outputs.append(targets.output(sets_path, sets_file.data, result.type_constraints))
    summary = {**_summary(native, plan, result, scope, observed), **evidence_summary, "probe": probe_summary(plan)}
    if tree is not None:
        summary["validation"] = {"torchgen": str(tree / "torchgen"), "schemas_unchecked": []}
    if not args.yaml_only:
        kept = {o.name for o in result.outcomes if o.status == KEPT}  # torchlib follows what the yaml says
        written_plan = replace(plan, overloads=tuple(o for o in plan.overloads if o.name not in kept))
        from migrate.check.export import rewrite_verdicts
        from migrate.write.torchlib.rewrite import rewrite_torchlib, torchlib_outputs

        declared = {o.name: o.variables for o in written_plan.overloads if selected is None or o.name in selected}
        exported = rewrite_verdicts(declared, torchlib.by_overload, torchlib_root, args.cache_dir, args.export_check, args.jobs)
        rewrite = rewrite_torchlib(torchlib, written_plan, native, only=selected, cache_dir=args.cache_dir, exported=exported)
        for output in torchlib_outputs(rewrite, torchlib.root, args.out, mirror=args.out is not None):
            outputs.append(replace(output, display=targets.display(output.source, output.display)))
        summary["torchlib"] = _codemod_summary(rewrite)
    if args.report is not None:
        store(args.report, _report(plan, result, summary, torchlib_root, args.cache_dir).dumps().encode())
    text = _summary_text(summary, result)
    changed = any(o.changed for o in outputs)
    if args.dry_run:
        print_diff(unified_diff(outputs))
    elif args.check:
        sys.stderr.write(text)
        return EXIT_PENDING if changed else EXIT_OK
    else:
        written = commit(outputs, write_unchanged=args.out is not None)
        changed_targets = {o.target for o in outputs if o.changed}
        text += f"wrote {len(written)} files ({len(changed_targets)} changed)" + (f" under {args.out}\n" if args.out else "\n")
    sys.stderr.write(text)
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


def run_verify(args: argparse.Namespace) -> int:
    from migrate.check.verify import run as verify

    return verify(args)


def run_export_check(args: argparse.Namespace) -> int:
    """Declarations from the yaml when it has any, else from the plan a run infers (whose coverage gaps get verdicts)."""
    from migrate.check.export import report_json, table, verdict_summary, verdicts
    from migrate.check.export import run_export_check as check
    from migrate.model.declared import declared_variables

    native_path = args.native_functions or installed_native_functions()
    torchlib_root = args.torchlib or installed_torchlib()
    native = NativeFunctions.load(native_path)
    torchlib = scan_torchlib(torchlib_root, native, args.cache_dir)
    registered = set(torchlib.by_overload)
    if args.op:
        registered &= set(native.overloads_named(args.op))
    plan = None
    sets_file = GlobalSetsFile.load(sibling_constraints_path(native_path))
    if any(entry.schema.variables() for entry in native.entries):
        declared = {
            name: declared_variables(native, native.by_name[name], sets_file.by_name) for name in registered if name in native.by_name
        }
    else:
        inferring = argparse.Namespace(evidence=EVIDENCE, jobs=args.jobs, cache_dir=args.cache_dir, refresh=False)
        plan, _ = _infer(native, inferring, torchlib, sets_file, set(registered) if args.op else None, {})
        declared = {o.name: o.variables for o in plan.overloads}
    result = check(declared, registered, torchlib_root, args.jobs, args.cache_dir, args.refresh)
    conflicts = None
    if plan is not None:
        listed = {o.name: o.conflicts for o in plan.overloads if o.name in registered}
        conflicts = verdict_summary(listed, verdicts(listed, torchlib_root, args.cache_dir))
    provisioning = None
    if args.missing:
        from migrate.check.export import missing, missing_text, reached_calls

        provisioning = missing(result, declared, reached_calls(registered, args.cache_dir))
    sys.stdout.write(table(result) if provisioning is None else missing_text(provisioning))
    if conflicts is not None:
        sys.stdout.write(
            f"export coverage gaps: {conflicts['confirmed']} confirmed, {conflicts['refuted']} refuted, "
            f"{conflicts['unchecked']} unchecked (of {conflicts['conflicts']})\n"
        )
    if args.report is not None:
        store(args.report, report_json(result, conflicts, provisioning).encode())
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        command, parser = {
            "lower": (run_lower, _lower_parser),
            "show": (run_show, _show_parser),
            "verify": (run_verify, _verify_parser),
            "export-check": (run_export_check, _export_check_parser),
        }[argv[0]]
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
    except BrokenPipeError:
        return _reader_closed_pipe()


def _reader_closed_pipe() -> int:
    """The reader left (``show X | head``): end quietly, as a shell tool does on SIGPIPE.

    Python would flush stdout again at exit and print a second BrokenPipeError, so stdout is
    pointed at /dev/null first.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
