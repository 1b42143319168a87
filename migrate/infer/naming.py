"""The variables' names, given last, deterministically, from the whole file's evidence whatever ``--op`` selects.

Every dtype set used by ``NAMED_FROM`` entries or more, or with a name already (in the target's
type_constraints.yaml, else a torchlib TypeVar whose name means that set in the grammar), is a global set; so is a
rarer set whose inline list would make an entry's ``type_constraints:`` line longer than ``LINE_LIMIT``. A set with
no name yet takes its name in the grammar of ``migrate.model.named_sets`` (at most 40 characters), which decodes to
exactly its dtypes; a set with no such name, or whose name the file gives another set, is no global set: an entry
spells it where it uses it (its list, or its PyTorch spelling when shorter). A variable is then spelled by its set's
name: in the schema when the name is short (``IN_SCHEMA_LIMIT``), no other variable of the entry has that set and
the ``func:`` line stays within ``LINE_LIMIT``, else as a letter and one ``T: Name``, so a long name is written once,
not in every slot.
"""

from __future__ import annotations

from dataclasses import replace

from collections import defaultdict
from typing import Callable, Iterable, Mapping

from migrate.model.dtypes import DType, format_set
from migrate.model.global_sets import constraints_line, dispatch_dtypes
from migrate.model.named_sets import parse_name, pytorch_spelling, set_name
from migrate.model.native import NativeFunctions
from migrate.model.plan import GlobalSet, OverloadPlan, Variable
from migrate.model.schema import TypedSchema

_LETTERS = "TUVWXYZ"
NAMED_FROM = 3  # entries using a set that make it a global set
LINE_LIMIT = 200  # characters of a written type_constraints: or func: line; PyTorch's lint folds lines over 1,000
_FUNC_KEY = "- func: "
IN_SCHEMA_LIMIT = 16  # characters of a set's name written in the schema's slots (TFloat, TRealOrUInt8); a longer one is T: Name


def name_variables(plan: OverloadPlan, schema: TypedSchema, set_names: Mapping[tuple[DType, ...], str]) -> OverloadPlan:
    """A set's short name where the variable's dtypes equal a named set no other variable of the entry has; else T, U, V, ...

    Letters throughout when the names would make the ``func:`` line longer than ``LINE_LIMIT`` (and than it was).

    A variable that follows others is always a letter (its list names them, so it is never a set); the names
    it follows are renamed with them.
    """
    order = {slot.name: i for i, slot in enumerate(schema.slots)}
    variables = sorted(plan.variables, key=lambda v: min(order[s] for s in v.binds))
    counts: dict[tuple[DType, ...], int] = {}
    for variable in variables:
        if not variable.listed:  # a list spells its own dtypes: it takes no set's name from another variable
            counts[variable.dtypes] = counts.get(variable.dtypes, 0) + 1
    letters = (n for n in [*_LETTERS, *(f"T{i}" for i in range(1, 100))] if n not in set_names.values())

    def in_schema(variable: Variable) -> str | None:
        name = set_names.get(variable.dtypes)
        fits = name is not None and len(name) <= IN_SCHEMA_LIMIT
        return name if fits and not variable.listed and counts[variable.dtypes] == 1 else None

    short = [in_schema(v) for v in variables]
    written = schema.with_words({slot: name or "T" for v, name in zip(variables, short) for slot in v.binds})
    if len(_FUNC_KEY + written) > max(LINE_LIMIT, len(_FUNC_KEY + schema.lowered())):  # no schema line the names push over
        short = [None] * len(variables)
    new_names = [name or next(letters) for name in short]
    renamed = {v.name: name for v, name in zip(variables, new_names)}  # a followed variable's name is unique (with_follows)
    named = [
        replace(
            v,
            name=name,
            binds=tuple(sorted(v.binds, key=order.__getitem__)),
            follows=tuple(renamed[n] for n in v.follows),
            opmath=tuple(renamed[n] for n in v.opmath),
        )
        for v, name in zip(variables, new_names)
    ]
    return replace(plan, variables=tuple(named))  # its promotion and autocast kept


def _set_names(existing: Iterable[GlobalSet], torchlib: Iterable[GlobalSet]) -> dict[tuple[DType, ...], str]:
    """Names sets already have: the target file's (first in file order), else a torchlib TypeVar's that means its set
    in the grammar (``TTensor``, ``TRealOrUInt8`` mean other sets to a PyTorch reader: never the yaml's)."""
    names: dict[tuple[DType, ...], str] = {}
    for global_set in existing:
        names.setdefault(global_set.dtypes, global_set.name)
    taken = {global_set.name for global_set in existing}
    for global_set in torchlib:
        if global_set.name not in taken and parse_name(global_set.name) == global_set.dtypes:
            names.setdefault(global_set.dtypes, global_set.name)
    return names


def _composed(dtypes: tuple[DType, ...], taken: set[str]) -> str | None:
    """The set's name in the grammar, unless it has none of at most 40 characters or the file gives it another set."""
    name = set_name(dtypes)
    return name if name is not None and name not in taken else None


def spelling(existing: tuple[GlobalSet, ...], torchlib: tuple[GlobalSet, ...]) -> Callable[[tuple[DType, ...]], str]:
    """How a run spells a dtype set in a message: the target file's name, else its name in the grammar, else its
    PyTorch spelling."""
    known = _set_names(existing, torchlib)
    taken = {g.name for g in existing}
    return lambda dtypes: known.get(dtypes) or _composed(dtypes, taken) or pytorch_spelling(dtypes)


def global_sets(
    native: NativeFunctions, plans: Iterable[OverloadPlan], existing: tuple[GlobalSet, ...], torchlib: tuple[GlobalSet, ...]
) -> tuple[GlobalSet, ...]:
    """The named sets the plans' variables are spelled with, sorted by name (see the module's docstring)."""
    plans = sorted(plans, key=lambda p: p.name)
    entries: dict[tuple[DType, ...], set[str]] = defaultdict(set)
    for plan in plans:
        for variable in plan.variables:
            if not variable.listed:  # written as its own list: no set spells it
                entries[variable.dtypes].add(plan.name)
            if variable.argument is not None:  # the dtypes its argument may name, and its None case: sets like any variable's
                entries[variable.argument.dtypes].add(plan.name)
                if variable.dtypes:
                    entries[variable.dtypes].add(plan.name)
    known = _set_names(existing, torchlib)
    taken = {g.name for g in existing}
    names = {}
    for dtypes in sorted(entries, key=lambda d: (len(d), [t.sort_key for t in d])):
        if dtypes in known or len(entries[dtypes]) >= NAMED_FROM:
            name = known.get(dtypes) or _composed(dtypes, taken)
            if name is not None:
                names[dtypes] = name
                taken.add(name)
    sets = {name: GlobalSet(name, dtypes) for dtypes, name in names.items()}
    for plan in plans:
        entry = native.by_name[plan.name]
        while True:
            named = name_variables(plan, entry.schema, names)
            line = constraints_line(entry.key_indent, named.variables, sets)
            inline = [v.dtypes for v in named.variables if v.dtypes not in names and not v.listed]
            inline += [v.argument.dtypes for v in named.variables if v.argument is not None and v.argument.dtypes not in names]
            inline += [v.dtypes for v in named.variables if v.argument is not None and v.dtypes and v.dtypes not in names]
            nameable = [(dtypes, name) for dtypes in inline if (name := _composed(dtypes, taken)) is not None]
            if line is None or len(line) <= LINE_LIMIT or not nameable:
                break
            longest, name = max(nameable, key=lambda item: (len(format_set(item[0])), [t.sort_key for t in item[0]]))
            names[longest] = name
            taken.add(name)
            sets[name] = GlobalSet(name, longest)
    return tuple(sorted((GlobalSet(name, dtypes, pytorch_spelling(dtypes)) for dtypes, name in names.items()), key=lambda g: g.name))


def backend_sets(
    native: NativeFunctions, plans: Iterable[OverloadPlan], unions: tuple[GlobalSet, ...], existing: tuple[GlobalSet, ...], torchlib: tuple[GlobalSet, ...]
) -> tuple[GlobalSet, ...]:
    """The named sets the ``dispatch_dtypes:`` lines of the named ``plans`` add to ``unions`` (``global_sets``'s), by
    the same rule: a set ``NAMED_FROM`` entries state for a backend, one with a name already, and a rarer one whose
    list would make a line longer than ``LINE_LIMIT``. Named after the unions', so no union's name or spelling
    changes (torchlib reads the unions alone)."""
    plans = sorted(plans, key=lambda p: p.name)
    entries: dict[tuple[DType, ...], set[str]] = defaultdict(set)
    for plan in plans:
        for backend in (b for v in plan.variables for b in v.backends):
            entries[backend.dtypes].add(plan.name)
    known = _set_names(existing, torchlib)
    sets = {g.name: g for g in unions}
    taken = {g.name for g in (*existing, *unions)}

    def name_of(dtypes: tuple[DType, ...]) -> str | None:
        return known.get(dtypes) or _composed(dtypes, taken)

    def add(dtypes: tuple[DType, ...], name: str) -> None:
        taken.add(name)
        sets[name] = GlobalSet(name, dtypes, pytorch_spelling(dtypes))

    for dtypes in sorted(entries, key=lambda d: (len(d), [t.sort_key for t in d])):
        if dtypes and dtypes not in {g.dtypes for g in sets.values()} and (dtypes in known or len(entries[dtypes]) >= NAMED_FROM):  # [] is its own spelling
            if (name := name_of(dtypes)) is not None:
                add(dtypes, name)
    for plan in (p for p in plans if any(v.backends for v in p.variables)):
        entry = native.by_name[plan.name]
        while True:
            stated = dispatch_dtypes(plan.variables, sets)
            inline = [b.dtypes for v in plan.variables for b in v.backends if b.dtypes != v.dtypes and b.dtypes not in {g.dtypes for g in sets.values()}]
            nameable = [(dtypes, name) for dtypes in inline if (name := name_of(dtypes)) is not None]
            if stated is None or len(stated.line(entry.key_indent)) <= LINE_LIMIT or not nameable:
                break
            add(*max(nameable, key=lambda item: (len(format_set(item[0])), [t.sort_key for t in item[0]])))
    return tuple(sorted(sets.values(), key=lambda g: g.name))
