"""The yaml writer: applies a plan to native_functions.yaml, and lowers an annotated file back.

It only applies: every decision was made in the plan. An edit is a replacement of
the schema span on a ``func:`` line plus one inserted ``type_constraints:`` line, one
``type_promotion:`` line, one ``autocast:`` line and one ``dispatch_dtypes:`` line after it, in that order (or the removal
of them), so every other byte of the file stays, comments included, and lowering is the
exact inverse.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from migrate.cache import Remembered
from migrate.errors import InputError
from migrate.model.autocast import AUTOCAST_KEY, Policies, autocast_line, declared_autocast
from migrate.model.backends import BACKENDS_KEY
from migrate.model.constraint import follows_problem
from migrate.model.declared import declared_promotion, declared_variables
from migrate.model.dtypes import format_set
from migrate.model.exceptions import EXCEPTIONS_KEY
from migrate.model.global_sets import constraints_line, dispatch_dtypes, type_exceptions
from migrate.model.native import CONSTRAINTS_KEY, Entry, NativeFunctions, close_matches
from migrate.model.plan import Conflict, GlobalSet, OverloadPlan, Plan, Variable, line_of
from migrate.model.promotion import PROMOTION_KEY, Promotion, promotion_problem
from migrate.model.schema import TENSOR, TypedSchema, is_variable_name

WRITTEN, UNCHANGED, KEPT = "written", "unchanged", "kept"
NOT_PLANNED = "types-not-planned"  # an overload planned for its autocast policy alone: its type variables stay as they are


@dataclass(frozen=True)
class Outcome:
    """What the writer did with one overload of the plan."""

    name: str
    status: str  # WRITTEN, UNCHANGED, KEPT (hand-written constraints differ, no --overwrite) or NOT_PLANNED
    conflicts: tuple[Conflict, ...] = ()
    autocast: str = UNCHANGED  # the same for the entry's autocast line
    promotion: str = UNCHANGED  # the same for the entry's type_promotion line


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
            if not variable.dtypes and not variable.listed and variable.name not in sets:
                raise fail(f"unresolved type variable {variable.name}", overload.name)
            if not variable.binds:
                raise fail(f"type variable {variable.name} binds no slot", overload.name)
            if variable.backends and variable.listed:
                raise fail(f"type variable {variable.name} names other variables or an argument: it has no set per backend", overload.name)
            union = resolved_variable(variable, sets).dtypes if variable.backends else ()
            for backend in variable.backends:
                beyond = tuple(d for d in backend.dtypes if d not in union)
                if beyond:
                    raise fail(f"{backend.key}'s set of {variable.name} holds {format_set(beyond)}, outside its union", overload.name)
            for slot_name in variable.binds:
                slot = entry.schema.slot(slot_name)
                if slot is None:
                    raise fail(f"type variable {variable.name} binds {slot_name}, which the schema does not have", overload.name)
                if not slot.is_tensor:
                    raise fail(f"type variable {variable.name} binds {slot_name}, a {slot.word} and not a tensor", overload.name)
                if slot_name in bound:
                    raise fail(f"slot {slot_name} is bound by two type variables", overload.name)
                bound.add(slot_name)
        problem = follows_problem({v.name: v.depends_on for v in overload.variables}) or _arguments_problem(entry, overload.variables)
        if problem is not None:
            raise fail(problem, overload.name)
        if overload.promotion is not None:
            schema = TypedSchema.parse(entry.schema.with_words(_words(entry, overload.variables)))
            problem = promotion_problem(overload.promotion, schema)
            if problem is not None:
                raise fail(problem, overload.name)


def _arguments_problem(entry: Entry, variables: tuple[Variable, ...]) -> str | None:
    """Why the arguments the variables name cannot be written: not a ScalarType argument of the schema, a
    variable of that name, or two variables giving one argument different dtypes; None when they can."""
    stated: dict[str, tuple] = {}
    for variable in variables:
        if variable.argument is None:
            continue
        name = variable.argument.name
        if name not in entry.schema.dtype_arguments:
            return f"type variable {variable.name} names {name}, which is not a ScalarType argument of the schema"
        if any(v.name == name for v in variables):
            return f"{name} names both a type variable and a ScalarType argument"
        if stated.setdefault(name, variable.argument.dtypes) != variable.argument.dtypes:
            return f"the variables that name the argument {name} give it different dtypes"
    return None


def resolved_variable(variable: Variable, sets: Mapping[str, GlobalSet]) -> Variable:
    """A plan variable with no dtypes (and naming nothing) stands for the global set of its name."""
    if variable.dtypes or variable.listed:
        return variable
    return replace(variable, dtypes=sets[variable.name].dtypes)


def same_declaration(a: tuple[Variable, ...], b: tuple[Variable, ...]) -> bool:
    def key(variables):
        return sorted((v.name, tuple(sorted(v.binds)), v.dtypes, v.follows, v.opmath, v.argument and (v.argument.name, v.argument.dtypes)) for v in variables)

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
        if _eol(self.lines[-1]) or any(self.current(n) for n in range(stop, len(self.lines))):
            return
        kept = next((n for n in range(start - 1, -1, -1) if self.current(n)), None)  # spans deleted before may end there
        if kept is not None:
            before = self.current(kept)
            self.replacements[kept] = before[: len(before) - len(_eol(before))]

    def current(self, number: int) -> str:
        return self.replacements.get(number, self.lines[number])

    def text(self) -> str:
        return "".join(self.replacements.get(n, line) for n, line in enumerate(self.lines))


def _followed_by(native: NativeFunctions, line: str, added: list[str]) -> str:
    """``line`` with whole lines after it; the last line of a file with no final newline stays without one."""
    for text in added:
        eol = _eol(line)
        line += text + eol if eol else (_eol(native.lines[0]) or "\n") + text
    return line


ANNOTATION_KEYS = (CONSTRAINTS_KEY, EXCEPTIONS_KEY, PROMOTION_KEY, AUTOCAST_KEY, BACKENDS_KEY)
"""The keys the writer adds after an entry's ``func:`` line, in the order it writes them."""


def _lower_entry(native: NativeFunctions, entry: Entry, edits: _LineEdits) -> None:
    line = native.lines[entry.func_line]
    lowered = entry.schema.lowered()
    if lowered != entry.schema.text:
        edits.replace(entry.func_line, line[: entry.schema_start] + lowered + line[entry.schema_end :])
    for key in ANNOTATION_KEYS:
        span = native.key_span(entry, key)
        if span is not None:
            edits.delete_span(span.start, span.end)


def lower(native: NativeFunctions) -> str:
    """The plain file: every type variable back to Tensor, every type_constraints, type_promotion, autocast and
    dispatch_dtypes key gone (once per process for the contents lowered last: every run lowers its input)."""

    def lowered() -> str:
        edits = _LineEdits(native.lines)
        for entry in native.entries:
            _lower_entry(native, entry, edits)
        return edits.text()

    return _LOWERED.get(native.data, lowered)


_LOWERED = Remembered(4)


def _typed_func_line(native: NativeFunctions, entry: Entry, variables: tuple[Variable, ...]) -> str:
    """The entry's func line with its tensor slots spelled by ``variables`` (Tensor where none binds them)."""
    line = native.lines[entry.func_line]
    return line[: entry.schema_start] + entry.schema.with_words(_words(entry, variables)) + line[entry.schema_end :]


def _words(entry: Entry, variables: tuple[Variable, ...]) -> dict[str, str]:
    words = {slot.name: TENSOR for slot in entry.schema.tensor_slots}
    for variable in variables:
        words.update(dict.fromkeys(variable.binds, variable.name))
    return words


def _rewrite_annotations(native: NativeFunctions, entry: Entry, written: Mapping[str, str | None], edits: _LineEdits) -> None:
    """Replace the annotation keys in ``written`` by their line (None: remove it); the entry's other keys stay.

    A written line goes directly after the last key before it (in ``ANNOTATION_KEYS`` order) that the entry
    keeps, else directly after the func line, so the keys stand in the writer's order.
    """
    anchor, added = entry.func_line, {}
    for key in ANNOTATION_KEYS:
        span = native.key_span(entry, key)
        if key in written:
            if span is not None:
                edits.delete_span(span.start, span.end)
            if written[key] is not None:
                added.setdefault(anchor, []).append(written[key])
        elif span is not None:
            anchor = span.end - 1
    for at, lines in added.items():
        edits.replace(at, _followed_by(native, edits.current(at), lines))


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
        wanted = tuple(resolved_variable(v, sets) for v in overload.variables)
        existing = declared_variables(native, entry, sets)
        autocast, autocast_status, autocast_conflicts = _autocast_outcome(native, entry, overload.autocast, overwrite)
        promotion, promotion_status, promotion_conflicts = _promotion_outcome(native, entry, overload, overwrite)
        conflicts = overload.conflicts + autocast_conflicts + promotion_conflicts
        if not overload.variables and (overload.autocast or overload.promotion):
            status = NOT_PLANNED
        elif same_declaration(existing, wanted):
            status = UNCHANGED
        elif existing and not overwrite:
            status = KEPT
            conflicts += (
                Conflict(
                    "hand-written-kept",
                    tuple(s for v in existing for s in v.binds),
                    (),
                    f"kept the declared {_describe(existing)}; the evidence says {_describe(wanted)} (use --overwrite to replace it)",
                ),
            )
        else:
            status = WRITTEN
        status, promotion_status, unfit = _fitting(entry, wanted, status, promotion, promotion_status)
        conflicts += unfit
        written: dict[str, str | None] = {}
        if status == WRITTEN:
            edits.replace(entry.func_line, _typed_func_line(native, entry, wanted))
            written[CONSTRAINTS_KEY] = constraints_line(entry.key_indent, _in_schema_order(entry, wanted), sets)
        if promotion_status == WRITTEN:
            written[PROMOTION_KEY] = promotion.line(entry.key_indent) if promotion is not None else None
        if autocast_status == WRITTEN:
            written[AUTOCAST_KEY] = autocast_line(entry.key_indent, autocast)
        if status in (WRITTEN, UNCHANGED) and overload.variables:
            backends = _backends_line(native, entry, wanted, sets)
            if backends != _current_line(native, entry, BACKENDS_KEY):
                written[BACKENDS_KEY] = backends
            stated = type_exceptions(_in_schema_order(entry, wanted), sets)
            excepted = stated.line(entry.key_indent) if stated is not None else None
            if excepted != _current_line(native, entry, EXCEPTIONS_KEY):
                written[EXCEPTIONS_KEY] = excepted
        if written:
            _rewrite_annotations(native, entry, written, edits)
        outcomes.append(Outcome(overload.name, status, conflicts, autocast_status, promotion_status))
    return YamlResult(edits.text().encode("utf-8"), constraints_bytes, tuple(outcomes), global_conflicts, sets)


def _backends_line(native: NativeFunctions, entry: Entry, variables: tuple[Variable, ...], sets: Mapping[str, GlobalSet]) -> str | None:
    """The ``dispatch_dtypes:`` line the plan's sets per backend give the entry; None where the backends agree."""
    stated = dispatch_dtypes(_in_schema_order(entry, variables), sets)
    return stated.line(entry.key_indent) if stated is not None else None


def _current_line(native: NativeFunctions, entry: Entry, key: str) -> str | None:
    """The entry's one-line ``key:`` as it stands (no line end); None when it has none."""
    span = native.key_span(entry, key)
    return "".join(native.lines[span.start : span.end]).rstrip("\r\n") if span is not None else None


def _autocast_outcome(native: NativeFunctions, entry: Entry, planned: Policies, overwrite: bool) -> tuple[Policies, str, tuple[Conflict, ...]]:
    """The autocast line to write, its status, and the conflict when a hand-written one differs and stays."""
    existing = declared_autocast(native, entry)
    if not planned or planned == existing:
        return existing, UNCHANGED, ()
    if existing and not overwrite:
        said = ", ".join(f"{k}: {p}" for k, p in planned)
        kept = Conflict("hand-written-autocast-kept", (), (), f"kept the declared autocast policy; the evidence says {{{said}}} (use --overwrite to replace it)")
        return existing, KEPT, (kept,)
    return planned, WRITTEN, ()


def _promotion_outcome(native: NativeFunctions, entry: Entry, overload: OverloadPlan, overwrite: bool) -> tuple[Promotion | None, str, tuple[Conflict, ...]]:
    """The promotion the entry ends with, its status, and the conflict when a hand-written line differs and stays.

    A plan with no variables and no promotion says nothing of promotion (it plans an autocast policy alone); one
    with variables and no promotion says the overload does not promote, which removes a line only with --overwrite.
    """
    existing = declared_promotion(native, entry)
    planned = overload.promotion
    if planned == existing or (planned is None and not overload.variables):
        return existing, UNCHANGED, ()
    if existing is not None and not overwrite:
        said = str(planned) if planned is not None else "no promotion"
        kept = Conflict("hand-written-promotion-kept", existing.args, (), f"kept the declared {PROMOTION_KEY}: {existing}; the evidence says {said} (use --overwrite to replace it)")
        return existing, KEPT, (kept,)
    return planned, WRITTEN, ()


def _fitting(entry: Entry, wanted: tuple[Variable, ...], status: str, promotion: Promotion | None, promotion_status: str) -> tuple[str, str, tuple[Conflict, ...]]:
    """The constraint and promotion statuses once the entry's promoted tensors share one variable in the written file.

    ``validate_plan`` checked the plan's own pair; a line kept by hand beside one the evidence writes may still not fit:
    a new promotion is then not written, and new variables that would split a kept promotion are not either.
    """
    if promotion is None:
        return status, promotion_status, ()
    schema = TypedSchema.parse(entry.schema.with_words(_words(entry, wanted))) if status == WRITTEN else entry.schema
    problem = promotion_problem(promotion, schema)
    if problem is None:
        return status, promotion_status, ()
    if promotion_status == WRITTEN:
        message = f"did not write {PROMOTION_KEY}: {promotion}: {problem} (the declared variables stay)"
        return status, KEPT, (Conflict("promotion-unfit", promotion.args, (), message),)
    message = f"kept the declared variables: the evidence's would break the declared {PROMOTION_KEY}: {promotion} ({problem})"
    return KEPT, promotion_status, (Conflict("promotion-unfit", promotion.args, (), message),)


def _describe(variables: tuple[Variable, ...]) -> str:
    if not variables:
        return "no constraints"
    return "; ".join(f"{v.name}({', '.join(v.binds)}) = {v.constraint}" + (f", {v.argument.name} = {format_set(v.argument.dtypes)}" if v.argument else "") for v in variables)

