"""The variables' names, given last, deterministically, from the whole file's evidence whatever ``--op`` selects.

Every dtype set used by ``NAMED_FROM`` entries or more, or with a name already (in the target's
type_constraints.yaml, else a torchlib TypeVar of that set), is a global set; so is a rarer set whose
inline list would make an entry's ``type_constraints:`` line longer than ``LINE_LIMIT``. A set with no
name yet takes the one composed from ATen's dtype groups (``migrate.model.named_sets``, at most 40 characters),
the next abridged one while another set has it, ``Set`` added while a hand-written or torchlib name means another
set. A variable is then spelled by its set's name: in the schema when the name is short (``IN_SCHEMA_LIMIT``), no
other variable of the entry has that set and the ``func:`` line stays within ``LINE_LIMIT``, else as a letter and
one ``T: Name``, so a long name is written once, not in every slot.
"""

from __future__ import annotations

from dataclasses import replace

from collections import defaultdict
from typing import Callable, Iterable, Mapping

from migrate.model.dtypes import DType, format_set
from migrate.model.global_sets import constraints_line, dispatch_dtypes
from migrate.model.named_sets import composed_name, name_candidates, pytorch_spelling
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
        replace(v, name=name, binds=tuple(sorted(v.binds, key=order.__getitem__)), follows=tuple(renamed[n] for n in v.follows))
        for v, name in zip(variables, new_names)
    ]
    return replace(plan, variables=tuple(named))  # its promotion and autocast kept


def _set_names(existing: Iterable[GlobalSet], torchlib: Iterable[GlobalSet]) -> dict[tuple[DType, ...], str]:
    """Names sets already have: the target file's (first in file order), else torchlib's (shortest, then first by name)."""
    names: dict[tuple[DType, ...], str] = {}
    for global_set in existing:
        names.setdefault(global_set.dtypes, global_set.name)
    taken = {global_set.name for global_set in existing}  # a torchlib TypeVar of a name the file gives another set yields
    for global_set in sorted(torchlib, key=lambda g: (len(g.name), g.name)):
        if global_set.name not in taken:
            names.setdefault(global_set.dtypes, global_set.name)
    return names


def _composed(dtypes: tuple[DType, ...], taken: set[str]) -> str:
    """The first composed name no other set has (an abridged name may be another's), else ``Set`` added while taken."""
    name = next((n for n in name_candidates(dtypes) if n not in taken), None)
    if name is not None:
        return name
    name = composed_name(dtypes)
    while name in taken:  # a hand-written or torchlib name that means another set
        name += "Set"
    return name


def spelling(existing: tuple[GlobalSet, ...], torchlib: tuple[GlobalSet, ...]) -> Callable[[tuple[DType, ...]], str]:
    """How a run names a dtype set when it names it: the target file's name, else torchlib's (unless the file gives
    that name another set), else the name composed from PyTorch's dtype groups, ``Set`` added while it is taken."""
    known = _set_names(existing, torchlib)
    taken = {g.name for g in (*existing, *torchlib)}
    return lambda dtypes: known.get(dtypes) or _composed(dtypes, taken)


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
    taken = {g.name for g in (*existing, *torchlib)}
    names = {}
    for dtypes in sorted(entries, key=lambda d: (len(d), [t.sort_key for t in d])):
        if dtypes in known or len(entries[dtypes]) >= NAMED_FROM:
            names[dtypes] = known.get(dtypes) or _composed(dtypes, taken)
            taken.add(names[dtypes])
    sets = {name: GlobalSet(name, dtypes) for dtypes, name in names.items()}
    for plan in plans:
        entry = native.by_name[plan.name]
        while True:
            named = name_variables(plan, entry.schema, names)
            line = constraints_line(entry.key_indent, named.variables, sets)
            inline = [v.dtypes for v in named.variables if v.dtypes not in names and not v.listed]
            inline += [v.argument.dtypes for v in named.variables if v.argument is not None and v.argument.dtypes not in names]
            inline += [v.dtypes for v in named.variables if v.argument is not None and v.dtypes and v.dtypes not in names]
            if line is None or len(line) <= LINE_LIMIT or not inline:
                break
            longest = max(inline, key=lambda d: (len(format_set(d)), [t.sort_key for t in d]))
            names[longest] = _composed(longest, taken)
            taken.add(names[longest])
            sets[names[longest]] = GlobalSet(names[longest], longest)
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
    taken = {g.name for g in (*existing, *torchlib, *unions)}

    def add(dtypes: tuple[DType, ...]) -> None:
        name = known.get(dtypes) or _composed(dtypes, taken)
        taken.add(name)
        sets[name] = GlobalSet(name, dtypes, pytorch_spelling(dtypes))

    for dtypes in sorted(entries, key=lambda d: (len(d), [t.sort_key for t in d])):
        if dtypes and dtypes not in {g.dtypes for g in sets.values()} and (dtypes in known or len(entries[dtypes]) >= NAMED_FROM):  # [] is its own spelling
            add(dtypes)
    for plan in (p for p in plans if any(v.backends for v in p.variables)):
        entry = native.by_name[plan.name]
        while True:
            stated = dispatch_dtypes(plan.variables, sets)
            inline = [b.dtypes for v in plan.variables for b in v.backends if b.dtypes != v.dtypes and b.dtypes not in {g.dtypes for g in sets.values()}]
            if stated is None or len(stated.line(entry.key_indent)) <= LINE_LIMIT or not inline:
                break
            add(max(inline, key=lambda d: (len(format_set(d)), [t.sort_key for t in d])))
    return tuple(sorted(sets.values(), key=lambda g: g.name))
