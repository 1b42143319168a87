"""Imports: libcst's ``AddImportsVisitor`` and ``RemoveImportsVisitor``, run on a module's head only.

Both visitors read and edit only the module's leading import block, yet walk the whole
module (and ``RemoveImportsVisitor`` resolves every scope in it): on torchlib's
``ops/core.py`` that is 9 s for an added import. So the module is split into its head
(docstring and leading imports) and the rest; the visitors run on the head, and the
rest is printed once. Whether an import is still used is decided by the caller from
the text of the whole module (``uses``): a scope analysis of the head cannot see the rest.

libcst prepends added names and leaves the parentheses of a shortened import where
they were; ``ImportLayout`` then writes each edited ``from`` import in the layout it
had (one line, or one name per line) and in its order when that was sorted.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.helpers import get_absolute_module_from_package_for_import

from codemods.printing import module_code
from codemods.toplevel import is_docstring_line, is_import_line, top_import_end
from codemods.typevars import LINE_LENGTH

_CODEGEN = cst.Module(body=[])


@dataclass(frozen=True, order=True)
class ImportRequest:
    """``from <module> import <name>``, the module absolute."""

    module: str
    name: str


@dataclass(frozen=True)
class SplitModule:
    """A module as its head (a module of its docstring and leading imports) and the printed text of the rest."""

    head: cst.Module
    rest: str

    @classmethod
    def split(cls, module: cst.Module) -> SplitModule:
        cut = top_import_end(module)
        if cut >= len(module.body):
            return cls(module, "")
        head = module.with_changes(body=module.body[:cut], footer=(), has_trailing_newline=True)
        rest = module.with_changes(header=(), body=module.body[cut:])
        return cls(head, module_code(rest))

    @property
    def code(self) -> str:
        return self.head.code + self.rest

    def uses(self, names: Iterable[str]) -> Counter[str]:
        """How often each name occurs as a word outside the leading imports (strings and comments included)."""
        names = sorted(set(names))
        if not names:
            return Counter()
        word = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in names) + r")\b")
        texts = [self.rest] + [self.head.code_for_node(s) for s in self.head.body if not is_import_line(s)]
        return Counter(found for text in texts for found in word.findall(text))


def update_imports(
    split: SplitModule, context: CodemodContext, add: Iterable[ImportRequest], remove: Iterable[ImportRequest]
) -> SplitModule:
    """Adds and removes ``from`` imports among the leading imports; what to remove must be unused in the module.

    Each visitor sees only the import statements of the modules it has work for (the
    others cannot change), which keeps its cost independent of the module's size.
    """
    add, remove = sorted(set(add)), sorted(set(remove))
    if not add and not remove:
        return split
    head = split.head
    first, end = (1 if head.body and is_docstring_line(head.body[0]) else 0), top_import_end(head)
    leading: list[cst.BaseStatement | None] = list(head.body[first:end])
    before = _from_imports(head)
    package = context.full_package_name

    def statements_of(modules: set[str]) -> list[int]:
        """The first leading import from each module: the one libcst's visitors edit."""
        found: dict[str, int] = {}
        for index, statement in enumerate(leading):
            module = _absolute_module(statement, package) if statement is not None else None
            if module in modules:
                found.setdefault(module, index)
        return sorted(found.values())

    if add:
        targets = statements_of({r.module for r in add})
        for request in add:
            AddImportsVisitor.add_needed_import(context, request.module, request.name)
        result = AddImportsVisitor(context).transform_module(_module_of(head, [leading[i] for i in targets])).body
        for index, statement in zip(targets, result):
            leading[index] = statement
        leading.extend(result[len(targets) :])
    if remove:
        targets = statements_of({r.module for r in remove})
        for request in remove:
            RemoveImportsVisitor.remove_unused_import(context, request.module, request.name)
        result = RemoveImportsVisitor(context).transform_module(_module_of(head, [leading[i] for i in targets])).body
        kept = {_absolute_module(s, package): s for s in result}
        for index in targets:  # a statement the visitor removed whole is missing from its result
            leading[index] = kept.get(_absolute_module(leading[index], package))  # type: ignore[arg-type]
    body = [*head.body[:first], *(s for s in leading if s is not None), *head.body[end:]]
    head = head.with_changes(body=body).visit(ImportLayout(before, head.default_indent, head.config_for_parsing))
    return SplitModule(head, split.rest)


def _module_of(like: cst.Module, statements: Sequence[cst.BaseStatement | None]) -> cst.Module:
    return like.with_changes(header=(), body=statements, footer=())


def _absolute_module(statement: cst.BaseStatement, package: str | None) -> str | None:
    """The absolute module a single ``from`` import statement imports from."""
    node = _single_from_import(statement)
    return None if node is None else get_absolute_module_from_package_for_import(package, node)


def _key(node: cst.ImportFrom) -> tuple[int, str]:
    module = _CODEGEN.code_for_node(node.module) if node.module is not None else ""
    return (len(node.relative), module)


def _from_imports(module: cst.Module) -> dict[tuple[int, str], cst.ImportFrom]:
    found = {}
    for statement in module.body[: top_import_end(module)]:
        for small in statement.body:  # type: ignore[attr-defined]
            if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                found.setdefault(_key(small), small)
    return found


def _alias_text(alias: cst.ImportAlias) -> str:
    return _CODEGEN.code_for_node(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))


def member_key(name: str) -> tuple[int, list[object]]:
    """isort's (and ruff's) member order: CONSTANTS, then Classes, then others; case-insensitive, natural."""
    bare = name.split(" as ")[0]
    kind = 0 if bare.isupper() and len(bare) > 1 else 1 if bare[:1].isupper() else 2
    natural = [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", bare.lower())]
    return (kind, natural)


def _section(statement: cst.SimpleStatementLine) -> int:
    """isort's sections: __future__, standard library, the rest, relative imports."""
    small = statement.body[0]
    if isinstance(small, cst.ImportFrom) and small.relative:
        return 3
    module = small.module if isinstance(small, cst.ImportFrom) else small.names[0].name  # type: ignore[union-attr]
    name = _CODEGEN.code_for_node(module)  # type: ignore[arg-type]
    top = name.split(".")[0]
    return 0 if top == "__future__" else 1 if top in sys.stdlib_module_names else 2


def _statement_key(statement: cst.SimpleStatementLine) -> tuple[int, int, str]:
    """Where isort puts a statement: by section, ``import x`` before ``from x import``, then by module."""
    small = statement.body[0]
    if isinstance(small, cst.ImportFrom):
        module = "." * len(small.relative) + (_CODEGEN.code_for_node(small.module) if small.module else "")
        return (_section(statement), 1, module.lower())
    return (_section(statement), 0, _CODEGEN.code_for_node(small.names[0].name).lower())  # type: ignore[union-attr]


def _is_blank(lines: Sequence[cst.EmptyLine]) -> bool:
    return all(line.comment is None for line in lines)


class ImportLayout(cst.CSTTransformer):
    """Lays out the leading ``from`` imports libcst's visitors edited or added, as a formatter would.

    An edited import keeps its layout (one line, or one name per line) and its order
    when that was sorted; an added one is sorted, wrapped when too long, and moved to
    its isort position with the blank lines around sections kept.
    """

    def __init__(self, before: dict[tuple[int, str], cst.ImportFrom], indent: str, config: cst.PartialParserConfig):
        super().__init__()
        self.before = before
        self.indent = indent
        self.config = config

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False  # all the work is on the module's statement list

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = list(updated_node.body)
        first, end = (1 if body and is_docstring_line(body[0]) else 0), top_import_end(updated_node)
        kept: list[cst.SimpleStatementLine] = []
        added = []
        for statement in body[first:end]:
            node = _single_from_import(statement)
            old = None if node is None else self.before.get(_key(node))
            if node is None:
                kept.append(statement)  # type: ignore[arg-type]
            elif old is None:
                added.append(self._laid_out(statement, node, None))  # type: ignore[arg-type]
            else:
                kept.append(statement if old.deep_equals(node) else self._laid_out(statement, node, old))  # type: ignore[arg-type]
        for statement in sorted(added, key=_statement_key):
            kept = _placed(kept, statement)
        return updated_node.with_changes(body=[*body[:first], *kept, *body[end:]])

    def _laid_out(
        self, statement: cst.SimpleStatementLine, node: cst.ImportFrom, old: cst.ImportFrom | None
    ) -> cst.SimpleStatementLine:
        """The statement in the layout of ``old`` (a new one: sorted, one line if it fits)."""
        if "#" in _CODEGEN.code_for_node(statement):
            return statement  # comments inside the import: leave libcst's layout
        names = [_alias_text(a) for a in node.names]  # type: ignore[union-attr]
        if old is None:
            ordered, multi_line = sorted(names, key=member_key), False
        else:
            old_names = [_alias_text(a) for a in old.names]  # type: ignore[union-attr]
            ordered = [n for n in old_names if n in names] + [n for n in names if n not in old_names]
            if old_names == sorted(old_names, key=member_key):
                ordered = sorted(ordered, key=member_key)
            multi_line = "\n" in _CODEGEN.code_for_node(old)
        module = "." * len(node.relative) + (_CODEGEN.code_for_node(node.module) if node.module else "")
        one_line = f"from {module} import {', '.join(ordered)}"
        if multi_line or len(one_line) > LINE_LENGTH:
            text = f"from {module} import (\n" + "".join(f"{self.indent}{n},\n" for n in ordered) + ")\n"
        else:
            text = one_line + "\n"
        laid_out = cst.parse_statement(text, self.config)
        kept = {"leading_lines": statement.leading_lines, "trailing_whitespace": statement.trailing_whitespace}
        return laid_out.with_changes(**kept)  # type: ignore[return-value]


def _single_from_import(statement: cst.BaseStatement) -> cst.ImportFrom | None:
    """The statement's ``from`` import when that is all the line holds (and names its names)."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        node = statement.body[0]
        if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            return node
    return None


def _placed(imports: list[cst.SimpleStatementLine], new: cst.SimpleStatementLine) -> list[cst.SimpleStatementLine]:
    """``imports`` with ``new`` at its isort position; a section keeps its blank line above it."""
    key = _statement_key(new)
    at = next((i for i, s in enumerate(imports) if _statement_key(s) > key), len(imports))
    before = imports[at - 1] if at > 0 else None
    after = imports[at] if at < len(imports) else None
    if after is not None and not _is_blank(after.leading_lines):
        new_leading: tuple[cst.EmptyLine, ...] = (cst.EmptyLine(),) if before is not None and _section(before) != key[0] else ()
    elif before is None and after is not None:
        new_leading = tuple(after.leading_lines)
    else:
        new_leading = (cst.EmptyLine(),) if before is not None and _section(before) != key[0] else ()
    result = [*imports[:at], new.with_changes(leading_lines=new_leading)]
    if after is not None:
        if _is_blank(after.leading_lines):
            after = after.with_changes(leading_lines=() if _section(after) == key[0] else (cst.EmptyLine(),))
        result.append(after)
        result.extend(imports[at + 1 :])
    return result
