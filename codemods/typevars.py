"""TypeVars the rewrite defines, kept in one marked block at the end of ``tensor_typing.py``:
global sets of ``type_constraints.yaml`` that torchlib did not define yet (and their
numbered twins), so that every module imports them from there, as torchlib's
authoring guide asks.

A block is the statement whose leading comment is the marker plus the ``TypeVar``
assignments that follow it directly. A run rewrites its entries sorted by name and
keeps, verbatim, the entries it is told are still in use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import libcst as cst

from codemods.toplevel import top_import_end

GLOBAL_MARKER = ("# Global sets of type_constraints.yaml, added by dtype-migrate when first used by torchlib.",)
LINE_LENGTH = 95
"""Where a generated TypeVar line wraps: torchlib's formatter width."""


@dataclass(frozen=True)
class TypeVarSpec:
    """``name = TypeVar("name", bound=Union[...])`` over onnxscript type names, with an optional comment line."""

    name: str
    bound: tuple[str, ...]
    comment: str = ""

    def statement(self, indent: str = "    ", line_length: int = LINE_LENGTH) -> cst.SimpleStatementLine:
        """The assignment in black's layout: one line when it fits, else the arguments, else one Union member per line.

        Built as nodes: parsing generated text costs more than the rest of a module's rewrite.
        """
        bound = self.bound[0] if len(self.bound) == 1 else f"Union[{', '.join(self.bound)}]"
        one_line = f'{self.name} = TypeVar("{self.name}", bound={bound})'
        arguments = f'{indent}"{self.name}", bound={bound}'
        if len(one_line) <= line_length:
            call = self._call(_space(" "), _space(""), _space(""), None)
        elif len(arguments) <= line_length or len(self.bound) == 1:
            call = self._call(_space(" "), _line(indent), _line(""), None)
        else:
            call = self._call(_line(indent), _line(indent), _line(""), indent)
        target = cst.AssignTarget(cst.Name(self.name))
        return cst.SimpleStatementLine([cst.Assign([target], call)])

    def _call(self, after_name: _Whitespace, open_: _Whitespace, close: _Whitespace, explode: str | None) -> cst.Call:
        """``TypeVar("name", bound=...)``; ``explode`` (an indent) puts each argument and Union member on its line."""
        if len(self.bound) == 1:
            bound: cst.BaseExpression = cst.Name(self.bound[0])
        else:
            inner = _line(explode * 2) if explode else _space("")
            between = _line(explode * 2) if explode else _space(" ")
            last = cst.Comma(whitespace_after=_line(explode)) if explode else cst.MaybeSentinel.DEFAULT
            commas = [cst.Comma(whitespace_after=between)] * (len(self.bound) - 1) + [last]
            elements = [cst.SubscriptElement(cst.Index(cst.Name(n)), comma=c) for n, c in zip(self.bound, commas)]
            bound = cst.Subscript(cst.Name("Union"), elements, lbracket=cst.LeftSquareBracket(whitespace_after=inner))
        name_arg = cst.Arg(cst.SimpleString(f'"{self.name}"'), comma=cst.Comma(whitespace_after=after_name))
        bound_arg = cst.Arg(
            bound,
            keyword=cst.Name("bound"),
            equal=cst.AssignEqual(whitespace_before=_space(""), whitespace_after=_space("")),
            comma=cst.Comma(whitespace_after=close) if explode else cst.MaybeSentinel.DEFAULT,
            whitespace_after_arg=_space("") if explode else close,
        )
        return cst.Call(cst.Name("TypeVar"), [name_arg, bound_arg], whitespace_before_args=open_)

    @property
    def comment_lines(self) -> tuple[cst.EmptyLine, ...]:
        return tuple(cst.EmptyLine(comment=cst.Comment(f"# {line}".rstrip())) for line in self.comment.splitlines())


_Whitespace = Union[cst.SimpleWhitespace, cst.ParenthesizedWhitespace]


def _space(text: str) -> cst.SimpleWhitespace:
    return cst.SimpleWhitespace(text)


def _line(indent: str) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, the next line indented by ``indent``."""
    return cst.ParenthesizedWhitespace(last_line=cst.SimpleWhitespace(indent))


def typevar_name(statement: cst.BaseStatement) -> str | None:
    """The name a statement binds when it is ``NAME = TypeVar("NAME", ...)``."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)):
        return None
    call = assign.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "TypeVar"):
        return None
    return assign.targets[0].target.value


def _comment_lines(lines: Sequence[cst.EmptyLine]) -> bool:
    return all(line.comment is not None for line in lines)


def _marker_at(statement: cst.BaseStatement, marker: tuple[str, ...]) -> int | None:
    """Where the marker's first line stands in the statement's leading lines, if it does."""
    comments = [line.comment.value if line.comment else None for line in statement.leading_lines]
    for at in range(len(comments) - len(marker) + 1):
        if tuple(comments[at : at + len(marker)]) == marker:
            return at
    return None


@dataclass(frozen=True)
class Block:
    """Where a marked block stands in a module body: statements [start, end)."""

    start: int
    end: int
    marker_at: int  # index of the marker in the first statement's leading lines


def find_block(body: Sequence[cst.BaseStatement], marker: tuple[str, ...]) -> Block | None:
    for start, statement in enumerate(body):
        at = _marker_at(statement, marker)
        if at is None or typevar_name(statement) is None:
            continue
        end = start + 1
        while end < len(body) and typevar_name(body[end]) is not None and _comment_lines(body[end].leading_lines):
            end += 1
        return Block(start, end, at)
    return None


def block_names(module: cst.Module, marker: tuple[str, ...]) -> dict[str, cst.SimpleStatementLine]:
    """The entries of a module's marked block, by name."""
    block = find_block(module.body, marker)
    if block is None:
        return {}
    return {typevar_name(s): s for s in module.body[block.start : block.end]}  # type: ignore[misc]


class TypeVarBlock(cst.CSTTransformer):
    """Writes one marked block: ``specs`` (re)generated, existing entries named in ``keep`` kept verbatim.

    The block goes where it was, else after the module's imports (or at its end with
    ``at_end``); a block left with no entries is removed.
    """

    def __init__(self, marker: tuple[str, ...], specs: Sequence[TypeVarSpec], keep: frozenset[str], at_end: bool = False):
        super().__init__()
        self.marker = marker
        self.specs = specs
        self.keep = keep
        self.at_end = at_end
        self.changed = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False  # everything happens on the module's statement list, in leave_Module

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = list(updated_node.body)
        block = find_block(body, self.marker)
        entries: dict[str, tuple[cst.SimpleStatementLine, tuple[cst.EmptyLine, ...]]] = {}
        before: tuple[cst.EmptyLine, ...] = (cst.EmptyLine(),)
        if block is not None:
            first = body[block.start]
            before = tuple(first.leading_lines[: block.marker_at])
            for index in range(block.start, block.end):
                statement = body[index]
                own = statement.leading_lines
                if index == block.start:  # the first entry's own comments follow the marker
                    own = own[block.marker_at + len(self.marker) :]
                name = typevar_name(statement)
                if name in self.keep:
                    entries[name] = (statement, tuple(own))  # type: ignore[index, assignment]
            start, end = block.start, block.end
        else:
            start = end = len(body) if self.at_end else top_import_end(updated_node)
        for spec in self.specs:
            entries[spec.name] = (spec.statement(updated_node.default_indent), spec.comment_lines)
        marker = tuple(cst.EmptyLine(comment=cst.Comment(line)) for line in self.marker)
        statements = []
        for index, name in enumerate(sorted(entries)):
            statement, own = entries[name]
            leading = (*before, *marker, *own) if index == 0 else own
            statements.append(statement.with_changes(leading_lines=leading))
        old = body[start:end]
        code = updated_node.code_for_node
        if len(old) == len(statements) and all(code(a) == code(b) for a, b in zip(old, statements)):
            return updated_node
        self.changed = True
        return updated_node.with_changes(body=[*body[:start], *statements, *body[end:]])
