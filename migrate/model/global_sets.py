"""type_constraints.yaml: the named dtype sets every entry of native_functions.yaml may use.

Like native_functions.yaml, the file is edited as text: existing items (and their
comments) stay byte for byte and in place, a new set goes in before the first item
whose name sorts after its own (so a file the tool wrote stays sorted by name, and an
``--op`` run followed by a full run writes what a full run alone writes), and a
changed set is rewritten in place only under ``--overwrite``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterable, Mapping

from migrate.errors import InputError
from migrate.model.backends import BACKEND_KEYS, DispatchDtypes
from migrate.model.exceptions import CONDITIONS, TypeExceptions
from migrate.model.keyed_sets import SetValue
from migrate.model.constraint import dtype_of
from migrate.model.dtypes import TENSOR_DTYPES, DType, UnknownDType, format_set, parse_set
from migrate.model.named_sets import pytorch_spelling
from migrate.model.native import CONSTRAINTS_KEY, load_item, top_level_items
from migrate.model.plan import Conflict, GlobalSet, OverloadPlan, Variable
from migrate.model.schema import RETURN_PREFIX, is_variable_name

HEADER = "# Named dtype sets for the type variables of native_functions.yaml; written by dtype-migrate.\n"
_PLAIN_SAFE = re.compile(r"[A-Za-z0-9(][^:#\n\"']*[^:#\s\"']|[A-Za-z0-9]")


def render_item(global_set: GlobalSet) -> str:
    """One set as the writer spells it: three lines, flow-style dtypes."""
    desc = global_set.desc or f"Dtypes of {global_set.name}."
    if not _PLAIN_SAFE.fullmatch(desc):
        desc = '"' + desc.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"- name: {global_set.name}\n  dtypes: {format_set(global_set.dtypes)}\n  desc: {desc}\n"


def constraints_value(
    variable: Variable, sets: Mapping[str, GlobalSet], taken: Collection[str] = (), followed: Mapping[str, str] | None = None
) -> str | None:
    """How an entry's type_constraints spells a variable: nothing for a global set's own name, else a set name or a list.

    A variable that follows others or is set by an argument is always a list: its dtypes, then the names, a
    followed variable as ``followed`` spells it (``query.dtype``, see ``followed_spelling``). Its dtypes, two or
    more, are the name of the global set of exactly those dtypes when one is and no variable or argument of the entry
    (``taken``) has that name, which a list's names would mean first; one dtype is its own name
    (``[torch.float32, input.dtype]``, never ``[TFloat32, input.dtype]``).
    """
    followed = followed or {}
    if variable.listed:
        if variable.argument is not None and not variable.depends_on and variable.dtypes == (variable.argument.dtypes if variable.argument.optional else ()):
            return f"[{variable.argument.name}]"  # None (when it may be) takes the dtypes the argument may name
        spelled = next((s.name for s in sets.values() if s.dtypes == variable.dtypes and s.name not in taken), None) if len(variable.dtypes) > 1 else None
        if spelled is None and variable.dtypes and spells_shorter(variable.dtypes):
            spelled = shorter_spelling(variable.dtypes)  # a list's item may be a set's PyTorch spelling, quoted
        if spelled is None:
            return variable.constraint.spelled(followed)
        return "[" + ", ".join([spelled, *variable.constraint.spelled_names(followed)]) + "]"
    own = sets.get(variable.name)
    if own is not None and own.dtypes == variable.dtypes:
        return None
    return set_value(variable.dtypes, sets)


def set_value(dtypes: tuple[DType, ...], sets: Mapping[str, GlobalSet]) -> str:
    """A dtype set as a ``type_constraints`` value: the name of a global set of those dtypes, else ``shorter_spelling``."""
    equal = next((s.name for s in sets.values() if s.dtypes == dtypes), None)
    return equal if equal is not None else shorter_spelling(dtypes)


LISTED_UP_TO = 4
"""Dtypes of a set no global set names that the yaml lists; a larger one takes its PyTorch spelling where shorter."""


def spells_shorter(dtypes: tuple[DType, ...]) -> bool:
    """Whether a set no global set names is written in its PyTorch spelling (quoted) rather than as its list: past
    ``LISTED_UP_TO`` dtypes, where that is shorter."""
    return len(dtypes) > LISTED_UP_TO and len(pytorch_spelling(dtypes)) + 2 < len(format_set(dtypes))


def shorter_spelling(dtypes: tuple[DType, ...]) -> str:
    """A set no global set names, as a value of the yaml: its PyTorch spelling (quoted: its commas are yaml's in a flow
    mapping) where ``spells_shorter``, else its list."""
    return f"'{pytorch_spelling(dtypes)}'" if spells_shorter(dtypes) else format_set(dtypes)


def followed_spelling(variables: Iterable[Variable]) -> dict[str, str]:
    """How a list names each variable: by the dtype of its first argument in schema order (``query.dtype``), which
    reads without the docs; a variable binding returns alone keeps its name."""
    return {v.name: dtype_of(arguments[0]) for v in variables if (arguments := [s for s in v.binds if not s.startswith(RETURN_PREFIX)])}


def constraints_line(indent: int, variables: Iterable[Variable], sets: Mapping[str, GlobalSet]) -> str | None:
    """The ``type_constraints:`` line (no line end) of an entry whose variables are in schema order; None when none is needed.

    The ``ScalarType`` arguments the lists name follow the variables, each once, with the dtypes it may name;
    an argument that may name every dtype has no key.
    """
    variables = tuple(variables)
    arguments = {v.argument.name: v.argument.dtypes for v in variables if v.argument is not None}
    taken = {v.name for v in variables} | set(arguments)
    followed = followed_spelling(variables)
    mapping = [(v.name, value) for v in variables if (value := constraints_value(v, sets, taken, followed)) is not None]
    mapping += [(name, set_value(dtypes, sets)) for name, dtypes in arguments.items() if dtypes != TENSOR_DTYPES]  # unstated: every dtype
    if not mapping:
        return None
    return " " * indent + f"{CONSTRAINTS_KEY}: {{" + ", ".join(f"{name}: {value}" for name, value in mapping) + "}"


def _spelled(dtypes: tuple[DType, ...], sets: Mapping[str, GlobalSet]) -> SetValue:
    """A set as a keyed line spells it: a global set's name, else PyTorch's spelling where shorter, else the list."""
    named = next((s.name for s in sets.values() if s.dtypes == dtypes), None)
    return named or (pytorch_spelling(dtypes) if spells_shorter(dtypes) else dtypes)


def dispatch_dtypes(variables: Iterable[Variable], sets: Mapping[str, GlobalSet]) -> DispatchDtypes | None:
    """The ``dispatch_dtypes:`` of an entry whose variables are in schema order: per dispatch key, each variable whose
    set there is not its union, spelled as ``type_constraints:`` spells sets; None where the backends agree."""
    variables = tuple(variables)
    by_key = tuple(
        (key, tuple((v.name, _spelled(v.on(key), sets)) for v in variables if v.on(key) != v.dtypes))
        for key in BACKEND_KEYS
    )
    stated = tuple((key, values) for key, values in by_key if values)
    return DispatchDtypes(stated) if stated else None


def type_exceptions(variables: Iterable[Variable], sets: Mapping[str, GlobalSet]) -> TypeExceptions | None:
    """The ``type_exceptions:`` of an entry whose variables are in schema order: per condition, each variable's set on
    that path; None where no variable has one."""
    variables = tuple(variables)
    by_condition = tuple(
        (condition, tuple((v.name, _spelled(e.dtypes, sets)) for v in variables for e in v.exceptions if e.condition == condition))
        for condition in CONDITIONS
    )
    stated = tuple((condition, values) for condition, values in by_condition if values)
    return TypeExceptions(stated) if stated else None


def sets_used(sets: tuple[GlobalSet, ...], overloads: Iterable[OverloadPlan], backends: bool = True) -> tuple[GlobalSet, ...]:
    """The global sets these overloads' variables use (with ``backends``: their sets per backend too; without, the
    unions alone, what torchlib's rewrite reads)."""
    overloads = tuple(overloads)
    used = {v.name for o in overloads for v in o.variables} | {v.dtypes for o in overloads for v in o.variables if not v.listed}
    used |= {d for o in overloads for v in o.variables if v.argument is not None for d in (v.argument.dtypes, v.dtypes)}
    used |= {e.dtypes for o in overloads for v in o.variables for e in v.exceptions}
    if backends:
        used |= {b.dtypes for o in overloads for v in o.variables for b in v.backends}
    return tuple(g for g in sets if g.name in used or g.dtypes in used)


@dataclass(frozen=True)
class GlobalSetsFile:
    """The file as read (``data`` None when it does not exist yet) and the sets it declares."""

    path: Path
    data: bytes | None
    sets: tuple[GlobalSet, ...]
    spans: tuple[tuple[int, int], ...]  # line span of each set's item

    @classmethod
    def load(cls, path: Path) -> GlobalSetsFile:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path, None, (), ())
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path) from exc
        lines = data.decode("utf-8").splitlines(keepends=True)
        spans = tuple(top_level_items(lines, path, "named dtype sets"))
        sets = tuple(_read_set(path, "".join(lines[a:b]), a) for a, b in spans)
        seen: set[str] = set()
        for (start, _), global_set in zip(spans, sets):
            if global_set.name in seen:
                raise InputError("set declared twice", path, start + 1, global_set.name)
            seen.add(global_set.name)
        return cls(path, data, sets, spans)

    @property
    def by_name(self) -> dict[str, GlobalSet]:
        return {s.name: s for s in self.sets}

    def updated(self, wanted: tuple[GlobalSet, ...], overwrite: bool) -> tuple[bytes | None, dict[str, GlobalSet], tuple[Conflict, ...]]:
        """New file bytes with ``wanted`` sets present, the sets in force afterwards, and conflicts.

        A wanted set whose name exists with other dtypes replaces it only under ``overwrite``.
        """
        lines = self.data.decode("utf-8").splitlines(keepends=True) if self.data is not None else []
        in_force = dict(self.by_name)
        replace: dict[int, str] = {}
        inserted: dict[int, list[str]] = {}  # before which existing item (len: at the end), new items in order
        conflicts = []
        for global_set in sorted(wanted, key=lambda g: g.name):
            existing = in_force.get(global_set.name)
            if existing is None:
                at = next((i for i, s in enumerate(self.sets) if s.name > global_set.name), len(self.sets))
                inserted.setdefault(at, []).append(render_item(global_set))
                in_force[global_set.name] = global_set
            elif existing.dtypes != global_set.dtypes:
                if overwrite:
                    replace[self.sets.index(existing)] = render_item(global_set)
                    in_force[global_set.name] = global_set
                else:
                    conflicts.append(
                        Conflict(
                            "global-set-kept",
                            (),
                            global_set.dtypes,
                            f"{self.path.name} keeps {global_set.name} = {format_set(existing.dtypes)}; "
                            f"the plan has {format_set(global_set.dtypes)} (use --overwrite to replace it)",
                        )
                    )
        if not inserted and not replace:
            return self.data, in_force, tuple(conflicts)
        out, pos = [], 0
        for index, (start, stop) in enumerate(self.spans):
            out += lines[pos:start] + inserted.get(index, [])
            if index in replace:
                out.append(replace[index])
                pos = stop
            else:
                pos = start
        out += lines[pos:]
        if self.data is None:
            out.insert(0, HEADER)
        elif out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        out += inserted.get(len(self.spans), [])
        return "".join(out).encode("utf-8"), in_force, tuple(conflicts)


def _read_set(path: Path, text: str, first_line: int) -> GlobalSet:
    item = load_item(path, text, first_line)
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str) or not is_variable_name(name):
        raise InputError("a set needs a 'name:' that is an identifier and no schema type word", path, first_line + 1)
    dtypes = item.get("dtypes")
    if not isinstance(dtypes, list) or not all(isinstance(d, str) for d in dtypes):
        raise InputError("'dtypes:' must be a list of dtypes", path, first_line + 1, name)
    try:
        return GlobalSet(name, parse_set(dtypes), str(item.get("desc") or ""))
    except UnknownDType as exc:
        raise InputError(str(exc), path, first_line + 1, name) from exc
