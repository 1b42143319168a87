"""What an annotated entry declares: its type variables resolved to dtype sets.

Resolution follows design.md: the entry's own ``type_constraints`` first, then the
global sets of type_constraints.yaml; a name neither resolves is an error. A list may
name other variables of the entry (``migrate.model.constraint``); a name that is none,
or variables that follow each other in a cycle, are errors.
"""

from __future__ import annotations

from typing import Mapping

from migrate.errors import InputError
from migrate.model.constraint import ConstraintList, follows_problem
from migrate.model.dtypes import UnknownDType
from migrate.model.native import CONSTRAINTS_KEY, Entry, NativeFunctions
from migrate.model.plan import HAND, Evidence, GlobalSet, Variable
from migrate.model.promotion import PROMOTION_KEY, Promotion, promotion_problem


def declared_variables(native: NativeFunctions, entry: Entry, sets: Mapping[str, GlobalSet]) -> tuple[Variable, ...]:
    """The entry's variables in order of first appearance, each with its resolved dtypes."""
    words = entry.schema.variables()
    span = native.key_span(entry, CONSTRAINTS_KEY)
    if not words and span is None:
        return ()
    line = (span.start if span else entry.func_line) + 1
    mapping = native.fields(entry).get(CONSTRAINTS_KEY) if span else {}
    if not isinstance(mapping, dict):
        raise InputError(f"'{CONSTRAINTS_KEY}:' must be a mapping of type variables", native.path, line, entry.name)
    for name in mapping:
        if name not in words:
            raise InputError(f"'{CONSTRAINTS_KEY}' names {name}, which no slot of the schema uses", native.path, line, entry.name)
    variables = []
    for name, binds in words.items():
        value = mapping.get(name, name)
        where = f"{native.path.name}:{line}"
        if isinstance(value, str):
            if value not in sets:
                raise InputError(f"unresolved type variable {value}", native.path, line, entry.name)
            constraint = ConstraintList(sets[value].dtypes)
        elif isinstance(value, list) and all(isinstance(d, str) for d in value):
            try:
                constraint = ConstraintList.from_items(value)
            except UnknownDType as exc:
                raise InputError(str(exc), native.path, line, entry.name) from exc
        else:
            raise InputError(f"{name} must be a list of dtypes or a set name", native.path, line, entry.name)
        evidence = (Evidence(HAND, where, constraint.dtypes, binds),)
        variables.append(Variable(name, constraint.dtypes, binds, evidence, constraint.follows))
    problem = follows_problem({v.name: v.follows for v in variables})
    if problem is not None:
        raise InputError(problem, native.path, line, entry.name)
    return tuple(variables)


def declared_promotion(native: NativeFunctions, entry: Entry) -> Promotion | None:
    """The entry's ``type_promotion:`` line, checked against its schema; None when it has none."""
    span = native.key_span(entry, PROMOTION_KEY)
    if span is None:
        return None
    try:
        promotion = Promotion.from_mapping(native.fields(entry).get(PROMOTION_KEY))
    except ValueError as exc:
        raise InputError(str(exc), native.path, span.start + 1, entry.name) from exc
    problem = promotion_problem(promotion, entry.schema)
    if problem is not None:
        raise InputError(problem, native.path, span.start + 1, entry.name)
    return promotion
