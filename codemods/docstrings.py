"""Docstrings: a function whose docstring opens with its ATen schema gets the typed schema there.

torchlib functions document their overload by copying its ``func:`` schema into the
first docstring line. Once the yaml declares type variables, that line shows them
too. Only that line changes, and only when it is exactly the expected old text.
"""

from __future__ import annotations

from typing import Mapping

import libcst as cst

from codemods.toplevel import DefKey, TopLevelTransformer


class DocstringRewriter(TopLevelTransformer):
    """Replaces first docstring lines: ``lines`` maps a function to ``(old first line, new first line)``."""

    def __init__(self, lines: Mapping[DefKey, tuple[str, str]]):
        super().__init__()
        self.lines = lines

    def leave_def(self, key: DefKey, node: cst.FunctionDef) -> cst.FunctionDef:
        change = self.lines.get(key)
        literal = docstring_node(node)
        if change is None or literal is None:
            return node
        old, new = change
        if literal.raw_value.partition("\n")[0] != old or old == new:
            return node
        return with_first_line(node, literal, new)


def with_first_line(node: cst.FunctionDef, literal: cst.SimpleString, first: str) -> cst.FunctionDef:
    """The function with the first line of its docstring (``literal``, from ``docstring_node``) replaced."""
    _, newline, rest = literal.raw_value.partition("\n")
    value = f"{literal.prefix}{literal.quote}{first}{newline}{rest}{literal.quote}"
    statement = node.body.body[0]  # docstring_node checked the shape
    expr = statement.body[0]  # type: ignore[attr-defined]
    new_statement = statement.with_changes(body=[expr.with_changes(value=literal.with_changes(value=value))])
    return node.with_changes(body=node.body.with_changes(body=[new_statement, *node.body.body[1:]]))


def docstring_node(node: cst.FunctionDef) -> cst.SimpleString | None:
    """The function's docstring literal, when its body opens with one plain string statement."""
    body = node.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    first = body.body[0]
    if not (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and isinstance(first.body[0], cst.Expr)):
        return None
    value = first.body[0].value
    return value if isinstance(value, cst.SimpleString) else None
