"""What every torchlib codemod shares: a walk that never enters a function or class body.

torchlib's modules are long (``ops/core.py`` has some 10,000 lines) and everything the
codemods touch is at module level: imports, TypeVar assignments, and the headers
(decorators, parameters, return annotation, docstring) of module-level functions. A
walk that descends into function bodies costs about as much as parsing the module
again, so these walks stop at every ``def``, ``class`` and simple statement and edit a
function in ``leave_FunctionDef`` from its header alone.

Functions are identified across walks by ``DefKey``: the name and how many module-level
functions of that name came before it (torchlib defines some functions twice, under
``if``/``else`` on the torch version).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import libcst as cst


@dataclass(frozen=True)
class DefKey:
    """A module-level function: its name, and its rank among module-level functions of that name."""

    name: str
    occurrence: int = 0


class _DefCounter:
    """Gives each module-level ``def`` its ``DefKey``, in source order."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def key(self, node: cst.FunctionDef) -> DefKey:
        name = node.name.value
        occurrence = self._seen.get(name, 0)
        self._seen[name] = occurrence + 1
        return DefKey(name, occurrence)


class TopLevelVisitor(cst.CSTVisitor):
    """Visits module-level statements (also inside ``if``/``try`` blocks) and calls ``visit_def`` per function."""

    def __init__(self) -> None:
        super().__init__()
        self._defs = _DefCounter()

    def visit_def(self, key: DefKey, node: cst.FunctionDef) -> None:
        """Override: called once per module-level function, in source order."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.visit_def(self._defs.key(node), node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return False


class TopLevelTransformer(cst.CSTTransformer):
    """Transforms module-level functions from their headers (``leave_def``), never walking their bodies."""

    def __init__(self) -> None:
        super().__init__()
        self._defs = _DefCounter()
        self._keys: list[DefKey] = []
        self.changed = False  # whether any function was edited

    def leave_def(self, key: DefKey, node: cst.FunctionDef) -> cst.FunctionDef:
        """Override: the function as it should be (``node`` itself to keep it)."""
        return node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._keys.append(self._defs.key(node))
        return False

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        result = self.leave_def(self._keys.pop(), updated_node)
        self.changed |= result is not updated_node
        return result

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return False


def is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def is_docstring_line(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def top_import_end(module: cst.Module) -> int:
    """Index of the first statement after the module's leading import block (its docstring skipped).

    This is where libcst's ``AddImportsVisitor`` inserts new imports, and the only imports it reads.
    """
    index = 1 if module.body and is_docstring_line(module.body[0]) else 0
    while index < len(module.body) and is_import_line(module.body[index]):
        index += 1
    return index


def callee_name(decorator: cst.Decorator) -> str | None:
    """The last part of a decorator's callee: ``torch_op`` for ``@registration.torch_op(...)``."""
    node = decorator.decorator
    node = node.func if isinstance(node, cst.Call) else node
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


class ReplaceNodes(cst.CSTTransformer):
    """Replaces nodes of the original tree by identity, all in one walk."""

    def __init__(self, replacements: Mapping[cst.CSTNode, cst.CSTNode]):
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def, override]
        return self.replacements.get(original_node, updated_node)
