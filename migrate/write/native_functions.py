"""The yaml writer: applies a plan to native_functions.yaml, and lowers an annotated file back.

It only applies: every decision was made in the plan. An edit is a replacement of
the schema span on a ``func:`` line plus one inserted ``type_constraints:`` line
(or the removal of one), so every other byte of the file stays, comments included,
and lowering is the exact inverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from migrate.errors import InputError
from migrate.model.declared import declared_variables
from migrate.model.dtypes import format_set
from migrate.model.global_sets import constraints_line
from migrate.model.native import CONSTRAINTS_KEY, Entry, NativeFunctions, close_matches
from migrate.model.plan import Conflict, GlobalSet, Plan, Variable, line_of
from migrate.model.schema import TENSOR, is_variable_name

WRITTEN, UNCHANGED, KEPT = "written", "unchanged", "kept"


@dataclass(frozen=True)
class Outcome:
    """What the writer did with one overload of the plan."""

    name: str
    status: str  # WRITTEN, UNCHANGED or KEPT (hand-written constraints differ, no --overwrite)
    conflicts: tuple[Conflict, ...] = ()


def validate_plan(plan: Plan, native: NativeFunctions, sets: Mapping[str, GlobalSet], plan_path: Path | None = None) -> None:
    """Reject a plan the writer cannot apply, naming the plan file's line and the overload."""
    text = plan_path.read_text() if plan_path is not None else ""
    seen_overloads: set[str] = set()

    def fail(message: str, op: str) -> InputError:
        if plan_path is not None:
            return InputError(message, plan_path, line_of(text, op), op)
        entry = native.by_name.get(op)
        return InputError(message, native.path, entry.func_line + 1 if entry else None, op)

    for overload in plan.overloads:
        entry = native.by_name.get(overload.name)
        if entry is None:
            raise fail(f"unknown overload{close_matches(overload.name, native.by_name)}", overload.name)
        if overload.name in seen_overloads:
            raise fail("overload planned twice", overload.name)
        seen_overloads.add(overload.name)
        bound: set[str] = set()
        names: set[str] = set()
        for variable in overload.variables:
            if not is_variable_name(variable.name):
                raise fail(f"{variable.name!r} cannot name a type variable", overload.name)
            if variable.name in names:
                raise fail(f"type variable {variable.name} declared twice", overload.name)
            names.add(variable.name)
            if not variable.dtypes and variable.name not in sets:
                raise fail(f"unresolved type variable {variable.name}", overload.name)
            if not variable.binds:
                raise fail(f"type variable {variable.name} binds no slot", overload.name)
            for slot_name in variable.binds:
                slot = entry.schema.slot(slot_name)
                if slot is None:
                    raise fail(f"type variable {variable.name} binds {slot_name}, which the schema does not have", overload.name)
                if not slot.is_tensor:
                    raise fail(f"type variable {variable.name} binds {slot_name}, a {slot.word} and not a tensor", overload.name)
                if slot_name in bound:
                    raise fail(f"slot {slot_name} is bound by two type variables", overload.name)
                bound.add(slot_name)


def _resolved(variable: Variable, sets: Mapping[str, GlobalSet]) -> Variable:
    """A plan variable with no dtypes stands for the global set of its name."""
    if variable.dtypes:
        return variable
    return Variable(variable.name, sets[variable.name].dtypes, variable.binds, variable.evidence, variable.verdicts)


def _same_declaration(a: tuple[Variable, ...], b: tuple[Variable, ...]) -> bool:
    def key(variables):
        return sorted((v.name, tuple(sorted(v.binds)), v.dtypes) for v in variables)

    return key(a) == key(b)


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


class _LineEdits:
    """Replacements of whole lines by text, applied in one pass over the file."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.replacements: dict[int, str] = {}

    def replace(self, number: int, text: str) -> None:
        self.replacements[number] = text

    def delete_span(self, start: int, stop: int) -> None:
        """Delete lines [start, stop); at the end of a file with no final newline, take the newline before too."""
        for number in range(start, stop):
            self.replacements[number] = ""
        if stop == len(self.lines) and not _eol(self.lines[-1]) and start > 0:
            before = self.replacements.get(start - 1, self.lines[start - 1])
            self.replacements[start - 1] = before[: len(before) - len(_eol(before))]

    def text(self) -> str:
        return "".join(self.replacements.get(n, line) for n, line in enumerate(self.lines))


def _lower_entry(native: NativeFunctions, entry: Entry, edits: _LineEdits) -> None:
    line = native.lines[entry.func_line]
    lowered = entry.schema.lowered()
    if lowered != entry.schema.text:
        edits.replace(entry.func_line, line[: entry.schema_start] + lowered + line[entry.schema_end :])
    span = native.key_span(entry, CONSTRAINTS_KEY)
    if span is not None:
        edits.delete_span(span.start, span.end)


def lower(native: NativeFunctions) -> str:
    """The plain file: every type variable back to Tensor, every type_constraints key gone."""
    edits = _LineEdits(native.lines)
    for entry in native.entries:
        _lower_entry(native, entry, edits)
    return edits.text()


def _write_entry(native: NativeFunctions, entry: Entry, variables: tuple[Variable, ...], sets, edits: _LineEdits) -> None:
    _lower_entry(native, entry, edits)
    words = {slot.name: TENSOR for slot in entry.schema.tensor_slots}
    for variable in variables:
        words.update(dict.fromkeys(variable.binds, variable.name))
    line = native.lines[entry.func_line]
    func_line = line[: entry.schema_start] + entry.schema.with_words(words) + line[entry.schema_end :]
    constraints = constraints_line(entry.key_indent, _in_schema_order(entry, variables), sets)
    if constraints is not None:
        eol = _eol(line)
        if eol:
            func_line += constraints + eol
        else:  # the last line of a file with no final newline stays without one
            func_line += (_eol(native.lines[0]) or "\n") + constraints
    edits.replace(entry.func_line, func_line)


def _in_schema_order(entry: Entry, variables: tuple[Variable, ...]) -> list[Variable]:
    order = {slot.name: index for index, slot in enumerate(entry.schema.slots)}
    return sorted(variables, key=lambda v: min(order[s] for s in v.binds))


@dataclass(frozen=True)
class YamlResult:
    native_functions: bytes
    type_constraints: bytes | None  # None: the file does not exist and need not
    outcomes: tuple[Outcome, ...]
    global_conflicts: tuple[Conflict, ...]
    sets: Mapping[str, GlobalSet]  # the global sets in force once written


def apply_plan(native: NativeFunctions, sets_file, plan: Plan, *, overwrite: bool = False, plan_path: Path | None = None) -> YamlResult:
    """The bytes of both files after applying ``plan``; hand-written constraints stay unless ``overwrite``."""
    constraints_bytes, sets, global_conflicts = sets_file.updated(plan.global_sets, overwrite)
    validate_plan(plan, native, sets, plan_path)
    edits = _LineEdits(native.lines)
    outcomes = []
    for overload in plan.overloads:
        entry = native.by_name[overload.name]
        native.fields(entry)  # broken yaml in an entry about to change is an error, not a silent edit
        wanted = tuple(_resolved(v, sets) for v in overload.variables)
        existing = declared_variables(native, entry, sets)
        if _same_declaration(existing, wanted):
            outcomes.append(Outcome(overload.name, UNCHANGED, overload.conflicts))
        elif existing and not overwrite:
            kept = Conflict(
                "hand-written-kept",
                tuple(s for v in existing for s in v.binds),
                (),
                f"kept the declared {_describe(existing)}; the evidence says {_describe(wanted)} (use --overwrite to replace it)",
            )
            outcomes.append(Outcome(overload.name, KEPT, overload.conflicts + (kept,)))
        else:
            _write_entry(native, entry, wanted, sets, edits)
            outcomes.append(Outcome(overload.name, WRITTEN, overload.conflicts))
    return YamlResult(edits.text().encode("utf-8"), constraints_bytes, tuple(outcomes), global_conflicts, sets)


def _describe(variables: tuple[Variable, ...]) -> str:
    if not variables:
        return "no constraints"
    return "; ".join(f"{v.name}({', '.join(v.binds)}) = {format_set(v.dtypes)}" for v in variables)

