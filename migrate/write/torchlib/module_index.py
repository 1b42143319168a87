"""One parsed torchlib module, indexed for the rewrite: imports, type definitions, ``@torch_op`` functions.

The rewrite decides from these facts before any transformer runs. Imports and
definitions come out as ``migrate.torchlib_source.scan``'s plain data so that
``migrate.torchlib_source.resolve.TypeResolver`` resolves annotations exactly as the scan did; the
functions keep their libcst nodes, because the transformers edit those nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from codemods.docstrings import docstring_node
from codemods.toplevel import DefKey, TopLevelVisitor, callee_name
from migrate.torchlib_source.facts import Definition, Import, ModuleFacts
from migrate.torchlib_source.scan import assigned_type, imports_of, string_value

TORCH_OP = "torch_op"
_FLAGS = ("complex", "private")


@dataclass(frozen=True)
class TorchOp:
    """One readable ``@torch_op(...)`` decorator."""

    names: tuple[str, ...]
    complex: bool = False
    private: bool = False


@dataclass(frozen=True)
class ParamInfo:
    name: str
    annotation: cst.BaseExpression | None


@dataclass(frozen=True)
class Docstring:
    """A function's docstring as written: its first line, where the schema usually is."""

    first_line: str  # raw source text between the opening quotes and the first newline


@dataclass(frozen=True)
class DefInfo:
    """A module-level function's header."""

    key: DefKey
    torch_ops: tuple[TorchOp, ...]
    params: tuple[ParamInfo, ...]
    returns: cst.BaseExpression | None
    docstring: Docstring | None


@dataclass(frozen=True)
class ModuleIndex:
    facts: ModuleFacts  # imports and definitions, as the scan reads them (no registrations)
    defs: tuple[DefInfo, ...]

    @property
    def bound_names(self) -> frozenset[str]:
        """Names bound at module level by an import or a type definition."""
        return frozenset(name for name, _ in self.facts.imports) | frozenset(d.name for d in self.facts.definitions)

    @classmethod
    def read(cls, module: cst.Module) -> ModuleIndex:
        visitor = _Indexer()
        module.visit(visitor)
        return cls(ModuleFacts(tuple(visitor.imports), tuple(visitor.definitions), (), ()), tuple(visitor.defs))


def read_torch_op(decorator: cst.Decorator) -> TorchOp | None:
    """The decorator as a ``TorchOp``; None when it is not ``@torch_op(...)`` with literal names and flags."""
    call = decorator.decorator
    if callee_name(decorator) != TORCH_OP or not isinstance(call, cst.Call):
        return None
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    name_node = positional[0] if positional else keywords.get("name")
    if name_node is None:
        return None
    single = string_value(name_node)
    if single is not None:
        names: tuple[str | None, ...] = (single,)
    elif isinstance(name_node, (cst.Tuple, cst.List)):
        names = tuple(string_value(e.value) for e in name_node.elements)
    else:
        return None
    if not names or any(n is None for n in names):
        return None
    flags = {}
    for flag in _FLAGS:
        value = keywords.get(flag)
        if value is not None:
            if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
                return None
            flags[flag] = value.value == "True"
    return TorchOp(tuple(names), **flags)  # type: ignore[arg-type]


def names_in(node: cst.CSTNode | None, into: set[str]) -> None:
    """Adds the value of every Name in an annotation expression to ``into``.

    Walks the few node kinds annotations are made of: libcst's generic ``children``
    costs a visitor per node, too much for every annotation of torchlib.
    """
    if node is None:
        return
    if isinstance(node, cst.Name):
        into.add(node.value)
    elif isinstance(node, cst.Attribute):
        names_in(node.value, into)
    elif isinstance(node, cst.Subscript):
        names_in(node.value, into)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                names_in(element.slice.value, into)
    elif isinstance(node, cst.BinaryOperation):
        names_in(node.left, into)
        names_in(node.right, into)
    elif isinstance(node, (cst.Tuple, cst.List)):
        for item in node.elements:
            names_in(item.value, into)
    elif not isinstance(node, (cst.BaseString, cst.Ellipsis, cst.BaseNumber)):
        for child in node.children:
            names_in(child, into)


class _Indexer(TopLevelVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.imports: list[tuple[str, Import]] = []
        self.definitions: list[Definition] = []
        self.defs: list[DefInfo] = []

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        for statement in node.body:
            if isinstance(statement, (cst.Import, cst.ImportFrom)):
                self.imports.extend(imports_of(statement))
            elif isinstance(statement, (cst.Assign, cst.AnnAssign)):
                assigned = assigned_type(statement)
                if assigned is not None:
                    self.definitions.append(Definition(assigned[0], assigned[1], 0, ""))
        return False

    def visit_def(self, key: DefKey, node: cst.FunctionDef) -> None:
        torch_ops = tuple(op for op in (read_torch_op(d) for d in node.decorators) if op is not None)
        every = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        params = tuple(ParamInfo(p.name.value, p.annotation.annotation if p.annotation else None) for p in every)
        returns = node.returns.annotation if node.returns else None
        literal = docstring_node(node)
        docstring = None
        if literal is not None:
            raw = literal.raw_value
            docstring = Docstring(raw.split("\n", 1)[0])
        self.defs.append(DefInfo(key, torch_ops, params, returns, docstring))
