"""What an annotated entry declares: its type variables resolved to dtype sets.

Resolution follows design.md: the entry's own ``type_constraints`` first, then the
global sets of type_constraints.yaml; a name neither resolves is an error. A list may
name other variables of the entry, by a tensor argument's dtype (``query.dtype``) or by name
(``migrate.model.constraint``), one ``ScalarType``
argument, whose dtypes the entry states under the argument's own key (``dtype: TRealOrUInt8``; unstated,
every dtype), and global sets (their dtypes), in that order of resolution; a name that is none of these, a key no
list names, or variables
that follow each other in a cycle, are errors.
"""

from __future__ import annotations

from typing import Mapping

from dataclasses import replace

from migrate.errors import InputError
from migrate.model.backends import BACKENDS_KEY, BackendSet, DispatchDtypes
from migrate.model.constraint import OPMATH, ConstraintError, ConstraintList, DtypeArgument, follows_problem
from migrate.model.dtypes import TENSOR_DTYPES, DType, UnknownDType, format_set
from migrate.model.exceptions import CONDITIONS, EXCEPTIONS_KEY, TypeException, TypeExceptions
from migrate.model.keyed_sets import KeyedSets
from migrate.model.named_sets import decoded
from migrate.model.native import CONSTRAINTS_KEY, Entry, NativeFunctions
from migrate.model.plan import HAND, Evidence, GlobalSet, Variable
from migrate.model.promotion import PROMOTION_KEY, Promotion, promotion_problem
from migrate.model.schema import RETURN_PREFIX


def set_dtypes(value: str, sets: Mapping[str, GlobalSet]) -> tuple[DType, ...] | None:
    """The dtypes a set's text means: a global set of the file by that name, else what the text says itself (a name
    in the grammar of ``migrate.model.named_sets`` or a PyTorch spelling); None when it is neither."""
    found = sets.get(value)
    return found.dtypes if found is not None else decoded(value)


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
    arguments = entry.schema.dtype_arguments
    tensors = {slot: name for name, binds in words.items() for slot in binds if not slot.startswith(RETURN_PREFIX)}
    for name in mapping:
        if name in words and name in arguments:
            raise InputError(f"{name} names both a type variable and a ScalarType argument", native.path, line, entry.name)
        if name not in words and name not in arguments:
            raise InputError(f"'{CONSTRAINTS_KEY}' names {name}, which no slot of the schema uses", native.path, line, entry.name)

    def dtypes_of(name: str, value: object) -> ConstraintList:
        if isinstance(value, str):
            dtypes = set_dtypes(value, sets)
            if dtypes is None:
                raise InputError(f"unresolved type variable {value}", native.path, line, entry.name)
            return ConstraintList(dtypes)
        if isinstance(value, list) and all(isinstance(d, str) for d in value):
            try:
                return ConstraintList.from_items(value, *((arguments, tensors) if name in words else ()))
            except (UnknownDType, ConstraintError) as exc:
                raise InputError(str(exc), native.path, line, entry.name) from exc
        raise InputError(f"{name} must be a list of dtypes or a set name", native.path, line, entry.name)

    stated = {name: dtypes_of(name, value) for name, value in mapping.items() if name in arguments}
    for name, listed in stated.items():
        if listed.follows or listed.argument or listed.opmath:
            raise InputError(f"the dtypes of the argument {name} must be a list of dtypes or a set name", native.path, line, entry.name)
    variables = []
    for name, binds in words.items():
        constraint = dtypes_of(name, mapping.get(name, name))
        argument = None
        if constraint.argument:  # unstated, the argument may name any dtype, as a plain Tensor may have any
            named = stated[constraint.argument].dtypes if constraint.argument in stated else TENSOR_DTYPES
            argument = DtypeArgument(constraint.argument, named, arguments[constraint.argument])
            if argument.optional and not constraint.dtypes and not constraint.follows and not constraint.opmath:  # [dtype]: None takes its dtypes
                constraint = replace(constraint, dtypes=named)
        for other in constraint.follows:
            if other in words:
                continue
            others = set_dtypes(other, sets)
            if others is None:
                message = f"unresolved type variable {other} in the list of {name}: neither a type variable, a ScalarType argument of the entry nor a global set"
                raise InputError(message, native.path, line, entry.name)
            constraint = replace(constraint, dtypes=(*constraint.dtypes, *others), follows=tuple(f for f in constraint.follows if f != other))
        evidence = (Evidence(HAND, f"{native.path.name}:{line}", constraint.dtypes, binds),)
        for other in constraint.opmath:
            if other not in words:
                raise InputError(f"unresolved type variable {other} in {OPMATH}() in the list of {name}", native.path, line, entry.name)
        variables.append(Variable(name, constraint.dtypes, binds, evidence, constraint.follows, argument=argument, opmath=constraint.opmath))
    unnamed = set(stated) - {v.argument.name for v in variables if v.argument is not None}
    if unnamed:
        raise InputError(f"'{CONSTRAINTS_KEY}' states the dtypes of the argument {min(unnamed)}, which no list names", native.path, line, entry.name)
    problem = follows_problem({v.name: v.depends_on for v in variables})
    if problem is not None:
        raise InputError(problem, native.path, line, entry.name)
    return tuple(variables)


def declared_with_backends(native: NativeFunctions, entry: Entry, sets: Mapping[str, GlobalSet]) -> tuple[Variable, ...]:
    """The entry's variables, each with the sets its ``dispatch_dtypes:`` line states for it per backend and its
    ``type_exceptions:`` line under a condition."""
    variables = _with_exceptions(native, entry, sets, declared_variables(native, entry, sets))
    stated = _keyed_sets(native, entry, sets, DispatchDtypes)
    if stated is None:
        return variables
    line, found = stated
    by_name = {v.name: v for v in variables}
    backends: dict[str, list[BackendSet]] = {}
    for key, name, dtypes in found:
        variable = by_name.get(name)
        if variable is None or variable.listed:
            why = "no type variable of the entry" if variable is None else "a list naming other variables or an argument, which serves every backend"
            raise InputError(f"'{BACKENDS_KEY}:' {key} names {name}, {why}", native.path, line, entry.name)
        beyond = tuple(d for d in dtypes if d not in variable.dtypes)
        if beyond:
            message = f"'{BACKENDS_KEY}:' {key} {name} holds {format_set(beyond)}, outside {name}'s union in type_constraints"
            raise InputError(message, native.path, line, entry.name)
        backends.setdefault(name, []).append(BackendSet(key, dtypes, f"{native.path.name}:{line}"))
    return tuple(replace(v, backends=tuple(backends.get(v.name, ()))) for v in variables)


def _with_exceptions(native: NativeFunctions, entry: Entry, sets: Mapping[str, GlobalSet], variables: tuple[Variable, ...]) -> tuple[Variable, ...]:
    stated = _keyed_sets(native, entry, sets, TypeExceptions)
    if stated is None:
        return variables
    line, found = stated
    names = {v.name for v in variables}
    excepted: dict[str, list[TypeException]] = {}
    for condition, name, dtypes in found:
        missing = CONDITIONS[condition].missing({s.name for s in entry.schema.slots})
        if missing is not None:
            raise InputError(f"'{EXCEPTIONS_KEY}:' {condition} reads the argument {missing}, which the schema lacks", native.path, line, entry.name)
        if name not in names:
            raise InputError(f"'{EXCEPTIONS_KEY}:' {condition} names {name}, no type variable of the entry", native.path, line, entry.name)
        excepted.setdefault(name, []).append(TypeException(condition, dtypes))
    return tuple(replace(v, exceptions=tuple(excepted.get(v.name, ()))) for v in variables)


def _keyed_sets(native: NativeFunctions, entry: Entry, sets: Mapping[str, GlobalSet], kind: type[KeyedSets]) -> tuple[int, list] | None:
    """The entry's line of ``kind.KEY`` (None: it has none): its 1-based number and each (key, variable name, dtypes)
    it states, every set resolved; a malformed line or an unresolved set is an error naming file, line and op."""
    span = native.key_span(entry, kind.KEY)
    if span is None:
        return None
    line = span.start + 1
    try:
        stated = kind.from_mapping(native.fields(entry).get(kind.KEY))
    except ValueError as exc:
        raise InputError(str(exc), native.path, line, entry.name) from exc
    found = []
    for key, values in stated.by_key:
        for name, value in values:
            dtypes = set_dtypes(value, sets) if isinstance(value, str) else value
            if dtypes is None:
                raise InputError(f"'{kind.KEY}:' {key} {name}: unresolved set {value}", native.path, line, entry.name)
            found.append((key, name, dtypes))
    return line, found


def check_declarations(native: NativeFunctions, sets: Mapping[str, GlobalSet]) -> None:
    """Every entry's declaration resolved (its type words, the names its lists give, its ``type_promotion:`` and
    ``dispatch_dtypes:`` lines): a file is taken or refused whole, whatever overloads a command asks about, before
    anything is written from it."""
    for entry in native.entries:
        declared_with_backends(native, entry, sets)
        declared_promotion(native, entry)


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
