"""The run in numbers: the summary's fields (what ``--report`` keeps under ``summary``) and its lines on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING

from migrate.model.global_sets import constraints_value
from migrate.model.native import CONSTRAINTS_KEY, NativeFunctions
from migrate.model.plan import SOURCES, Plan
from migrate.model.promotion import counts_by_kind
from migrate.write.native_functions import KEPT, UNCHANGED, WRITTEN, YamlResult
from migrate.write.torchlib.parameter_names import RENAMED

if TYPE_CHECKING:
    from migrate.write.torchlib.rewrite import TorchlibRewrite


def coverage_summary(native: NativeFunctions, plan: Plan, result: YamlResult, observed: frozenset[str]) -> dict:
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


def spelling_summary(native: NativeFunctions, plan: Plan, result: YamlResult) -> dict[str, int | float]:
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


def run_summary(native: NativeFunctions, plan: Plan, result: YamlResult, scope: int, observed: frozenset[str]) -> dict:
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
        "coverage": coverage_summary(native, plan, result, observed),
        "spelling": spelling_summary(native, plan, result),
        "promotion": {
            "lines_by_kind": counts_by_kind(result.native_functions),
            "written": sum(1 for o in result.outcomes if o.promotion == WRITTEN),
            "kept": sum(1 for o in result.outcomes if o.promotion == KEPT),
        },
        "validation": {"torchgen": "installed", "schemas_unchecked": sorted(native.groups.unchecked)},
    }


def summary_text(summary: dict, result: YamlResult) -> str:
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
    promotion = summary["promotion"]
    by_kind = ", ".join(f"{kind} {n}" for kind, n in promotion["lines_by_kind"].items()) or "none"
    lines.append(f"type_promotion: {sum(promotion['lines_by_kind'].values())} lines ({by_kind}); {promotion['written']} written, {promotion['kept']} hand-written kept")
    unchecked = summary["validation"]["schemas_unchecked"]
    by = "the installed torchgen" if summary["validation"]["torchgen"] == "installed" else f"the source tree's {summary['validation']['torchgen']}"
    lines.append(f"validation: {by}; {len(unchecked)} schemas with type words it does not know were not checked")
    probe = summary["probe"]
    lines.append(
        f"probe: {probe['slots_widened']} slots widened, {probe['variables_split']} variables split, {probe['variables_joined']} joined; "
        f"{probe['overloads_from_built_calls']} overloads no sample reaches typed by a call built from the schema"
    )
    if "verdicts" in summary:
        from migrate.evidence.verdicts import dtype_verdict_lines

        lines += dtype_verdict_lines(summary["verdicts"])
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
    if "autocast" in summary:
        from migrate.evidence.autocast.policies import summary_lines

        lines += summary_lines(summary["autocast"])
    if "torchlib" in summary:
        t = summary["torchlib"]
        notes = ", ".join(f"{k} {n}" for k, n in t["notes"].items())
        lines.append(
            f"torchlib: {t['functions_changed']} functions rewritten in {t['modules_changed']} modules; "
            f"{t['annotations_narrowed']} annotations narrowed, {t['annotations_widened']} widened" + (f"; notes: {notes}" if notes else "")
        )
        names = t["parameters"]
        left = ", ".join(f"{why} {n}" for why, n in names["left_alone"].items())
        lines.append(
            f"torchlib parameter names: {names['renamed']} renamed to the yaml's in {names['functions_renamed']} functions; "
            f"{sum(names['left_alone'].values())} left alone" + (f": {left}" if left else "") + " (each listed in --report)"
        )
    if summary["conflicts"]:
        lines.append("conflicts: " + ", ".join(f"{k} {n}" for k, n in summary["conflicts"].items()) + " (each listed in --report)")
    lines += [f"conflict: {c.message}" for c in result.global_conflicts]
    lines += [f"conflict: {o.name}: {c.message}" for o in result.outcomes if o.status == KEPT for c in o.conflicts[-1:]]
    return "\n".join(lines) + "\n"


def codemod_summary(rewrite: TorchlibRewrite) -> dict:
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
        "parameters": parameter_summary(rewrite),
    }


def parameter_summary(rewrite: TorchlibRewrite) -> dict:
    """Parameters the yaml names otherwise: how many were renamed, how many left alone by why, and each as a line."""
    renamed = [p for p in rewrite.parameters if p.outcome == RENAMED]
    left: dict[str, int] = {}
    for p in rewrite.parameters:
        if p.outcome != RENAMED:
            left[p.outcome] = left.get(p.outcome, 0) + 1
    return {
        "renamed": len(renamed),
        "functions_renamed": len({(p.path, p.line, p.function) for p in renamed}),
        "left_alone": dict(sorted(left.items())),
        "lines": [str(p) for p in rewrite.parameters],
    }
