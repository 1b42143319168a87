"""Parameter names as the yaml's: which torchlib parameters are renamed, and why the others are left alone.

torch.onnx calls a torchlib function with keyword arguments named as in
``native_functions.yaml`` ("dispatch is done with keyword arguments", its README says), so a
parameter spelled otherwise is not passed at all. A parameter no schema argument of that
name takes is paired with the schema argument at its position, when the function has no
parameter of that argument's name already. It is renamed (``codemods.parameters``) when:

- every overload the function serves pairs it with the same name (``linalg_det(Tensor A)``
  beside ``det(Tensor self)``: left alone);
- the function serves no name the yaml does not declare (its keywords are unknown);
- nothing else in the tree names the function (a caller's keywords would break);
- the new name shadows nothing the body uses (the transformer's check on scope metadata).

A parameter no schema argument pairs with is one the schema lacks: reported, left alone.
Each decision is a ``ParameterName`` in the rewrite's result; renaming runs before the
annotations are decided, so everything after it sees the yaml's names.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from codemods.parameters import SCOPE_STATEMENT, SHADOWS, ParameterRenamer, Refusal
from codemods.toplevel import DefKey
from migrate.cache import Remembered
from migrate.torchlib_source.resolve import OverloadIndex, TorchlibEvidence
from migrate.model.native import NativeFunctions
from migrate.model.schema import SchemaError, TypedSchema
from migrate.write.torchlib.module_index import DefInfo
from migrate.write.torchlib.parameter_names import RENAMED, ParameterName
from migrate.write.torchlib.tree import TorchlibModule, TorchlibTree

SCHEMA_LACKS_IT = "schema-lacks-it"
OVERLOADS_DISAGREE = "overloads-disagree"
UNDECLARED_OVERLOAD = "undeclared-overload"
NAMED_ELSEWHERE = "named-elsewhere"
LEFT_ALONE = (SCHEMA_LACKS_IT, OVERLOADS_DISAGREE, UNDECLARED_OVERLOAD, NAMED_ELSEWHERE, SHADOWS, SCOPE_STATEMENT)
"""Every reason a parameter keeps a name the yaml does not use (``ParameterName.outcome``)."""


@dataclass
class _Function:
    module: TorchlibModule
    info: DefInfo
    line: int
    overloads: tuple[str, ...]
    undeclared: tuple[str, ...]  # registered names the yaml does not declare
    arguments: dict[str, tuple[str, ...]]  # per overload, its schema's argument names


class _Arguments:
    """Each overload's schema argument names, autogen-only overloads included, read once."""

    def __init__(self, native: NativeFunctions):
        self.index = OverloadIndex(native)
        self.found: dict[str, tuple[str, ...]] = {}

    def __call__(self, overload: str) -> tuple[str, ...]:
        if overload not in self.found:
            schema = self.index.schema(overload)
            self.found[overload] = tuple(s.name for s in schema.slots if not s.is_return) if schema else ()
        return self.found[overload]


def rename_parameters(tree: TorchlibTree, evidence: TorchlibEvidence, native: NativeFunctions, only: set[str] | None) -> tuple[ParameterName, ...]:
    """Renames, in the tree's parsed modules, every parameter the rules allow; a record per mismatching parameter.

    Only modules with a mismatch are parsed (the scan's registrations find them).
    """
    arguments = _Arguments(native)
    paths = sorted(
        {
            r.path
            for r in evidence.registrations
            if not r.private and any(p.name not in arguments(o) for o in _served(r.names, evidence) for p in r.params)
        }
    )
    records: list[ParameterName] = []
    for path in paths:
        module = tree.modules.get(path)
        if module is not None:
            records += _rename_module(tree, module, _functions(module, evidence, arguments, only))
    return tuple(records)


def _served(names: tuple[str, ...], evidence: TorchlibEvidence) -> tuple[str, ...]:
    return tuple(dict.fromkeys(evidence.resolved[n] for n in names if n in evidence.resolved))


def _functions(module: TorchlibModule, evidence: TorchlibEvidence, arguments: _Arguments, only: set[str] | None) -> list[_Function]:
    lines: dict[tuple[str, tuple[str, ...]], deque[int]] = defaultdict(deque)  # per decorator, in source order
    for registration in evidence.registrations:
        if registration.path == module.path:
            lines[(registration.function, registration.names)].append(registration.line)
    functions = []
    for info in module.index.defs:
        queues = [lines[(info.key.name, op.names)] for op in info.torch_ops]
        line = min((queue.popleft() for queue in queues if queue), default=0)
        names = tuple(n for op in info.torch_ops if not op.private for n in op.names)
        overloads = _served(names, evidence)
        if not overloads or (only is not None and not only & set(overloads)):
            continue
        by_overload = {o: arguments(o) for o in overloads}
        if all(p.name in args for p in info.params for args in by_overload.values()):
            continue
        undeclared = tuple(n for n in names if n not in evidence.resolved)
        functions.append(_Function(module, info, line, overloads, undeclared, by_overload))
    return functions


def _decide(function: _Function, named_elsewhere: bool) -> tuple[dict[str, str], list[ParameterName]]:
    """The renames to try (``{old: new}``) and the parameters left alone, with why."""
    params = [p.name for p in function.info.params]
    renames, left = {}, []
    record = functools.partial(_record, function)

    for position, param in enumerate(params):
        if all(param in args for args in function.arguments.values()):
            continue
        paired = {}
        for overload, args in function.arguments.items():
            if param in args:
                paired[overload] = param
            elif position < len(args) and args[position] not in params:
                paired[overload] = args[position]
            else:
                paired[overload] = ""
        targets = set(paired.values())
        if targets == {""}:
            left.append(record(param, "", SCHEMA_LACKS_IT, f"no argument of {', '.join(function.overloads)} pairs with it"))
        elif len(targets) > 1:
            spelled = "; ".join(f"{o} {t or '(none)'}" for o, t in paired.items())
            left.append(record(param, "", OVERLOADS_DISAGREE, f"the overloads it serves name it differently ({spelled})"))
        elif function.undeclared:
            why = f"it also serves {', '.join(function.undeclared)}, which the yaml does not declare"
            left.append(record(param, targets.pop(), UNDECLARED_OVERLOAD, why))
        elif named_elsewhere:
            why = f"{function.info.key.name} is named elsewhere in the tree, where a call's keywords would break"
            left.append(record(param, targets.pop(), NAMED_ELSEWHERE, why))
        else:
            renames[param] = targets.pop()
    return renames, left


def _schema_line(function: _Function, renames: dict[str, str]) -> str | None:
    """The docstring's first line when it is the schema of an overload served, naming each renamed argument as the parameter."""
    if function.info.docstring is None:
        return None
    line = function.info.docstring.first_line
    try:
        schema = TypedSchema.parse(line.strip())
    except SchemaError:
        return None
    names = [s.name for s in schema.slots if not s.is_return]
    params = [p.name for p in function.info.params]
    if schema.name not in function.overloads:
        return None
    if all(params.index(old) < len(names) and names[params.index(old)] == old for old in renames):
        return line
    return None


def _named_elsewhere(tree: TorchlibTree, functions: list[_Function]) -> set[str]:
    """The functions' names that occur in the tree other than in their own ``def`` line."""
    names = sorted({f.info.key.name for f in functions})
    if not names:
        return set()
    word = re.compile(rb"(?<!\w)(def\s+)?(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
    found = set()
    for module in tree.modules.values():
        for match in word.finditer(module.data):
            if match.group(1) is None:
                found.add(match.group(2).decode())
    return found


def _rename_module(tree: TorchlibTree, module: TorchlibModule, functions: list[_Function]) -> list[ParameterName]:
    """Renames what the rules allow in one module; the records in source order, each function's in parameter order."""
    elsewhere = _named_elsewhere(tree, functions)
    records: dict[DefKey, list[ParameterName]] = {}
    wanted: dict[DefKey, dict[str, str]] = {}
    lines: dict[DefKey, str] = {}
    for function in functions:
        key = function.info.key
        renames, records[key] = _decide(function, key.name in elsewhere)
        if renames:
            wanted[key] = renames
            line = _schema_line(function, renames)
            if line is not None:
                lines[key] = line
    if wanted:
        renaming = _Renaming.of(module, wanted, lines)
        for function in functions:
            key = function.info.key
            done = renaming.renamed.get(key, {})
            records[key] += [_record(function, old, new, RENAMED, "") for old, new in done.items()]
            records[key] += [_record(function, r.old, r.new, r.kind, r.why) for r in renaming.refused.get(key, ())]
        if renaming.tree is not None:
            module.replace_tree(renaming.tree)
    ordered = []
    for function in functions:
        params = [p.name for p in function.info.params]
        ordered += sorted(records[function.info.key], key=lambda r: params.index(r.param))
    return ordered


@dataclass(frozen=True)
class _Renaming:
    """What ``ParameterRenamer`` made of a module: its tree (None: unchanged), and each function's renames and refusals."""

    tree: cst.Module | None
    renamed: Mapping[DefKey, Mapping[str, str]]
    refused: Mapping[DefKey, tuple[Refusal, ...]]

    @classmethod
    def of(cls, module: TorchlibModule, wanted: dict[DefKey, dict[str, str]], lines: dict[DefKey, str]) -> _Renaming:
        """Made once per process for a module's bytes and the renames asked (the runs of a test suite rename the same
        modules; a tree is never changed in place); a tree an earlier pass edited is renamed as it is."""

        def renamed() -> _Renaming:
            renamer = ParameterRenamer(wanted, lines)
            tree = module.tree.visit(renamer)
            return cls(tree if renamer.changed else None, renamer.renamed, renamer.refused)

        if module.edited:
            return renamed()
        return _RENAMINGS.get((module.data, tuple((k, tuple(v.items())) for k, v in wanted.items()), tuple(lines.items())), renamed)


_RENAMINGS = Remembered(8)


def _record(function: _Function, param: str, new: str, outcome: str, why: str) -> ParameterName:
    return ParameterName(function.module.path, function.info.key.name, function.line, function.overloads, param, new, outcome, why)
