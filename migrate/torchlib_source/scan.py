"""Per-module facts of a torchlib source file, read with libcst (cached by file content in ``facts``).

A module's facts (``migrate.torchlib_source.facts``) are what the later stages need and nothing more: its ``@torch_op``
registrations (names, flags, parameter and return annotations), its module-level type
definitions (TypeVars, Union aliases) and its imports, all as plain frozen data that
does not depend on where the file lives. That makes them cacheable by the hash of
the file's bytes alone.

Speed: one libcst parse per file and one visitor pass that never descends into
function bodies (a full walk of torchlib costs nearly as much as parsing it).
Line numbers come from one regex pass over the text, matched in source order against
the defs and assignments the visitor found (decorator lines counted up from their
def); libcst's PositionProvider, which costs twice the parse, is used only for a
module where that match fails.

Bodies of ``trace_only=True`` functions run as Python at export time, so a comparison
of a parameter's dtype there (``attn_mask.dtype == ir.DataType.BOOL``, ``self.dtype in
{FLOAT16.dtype, ...}``) shows a dtype the function handles at that parameter. Those
comparisons are read from the text of each such body (from its def to the next line
indented no deeper than the def), not from the tree, for the same reason.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, replace
from typing import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from migrate.cache import Stage
from migrate.torchlib_source.facts import (
    BitOr,
    Definition,
    DtypeCheck,
    Import,
    ModuleFacts,
    Opaque,
    Param,
    Ref,
    Registration,
    ScanProblem,
    Subscript,
    TypeExpr,
    TypeVarCall,
)


_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9_]+::[A-Za-z0-9_]+(\.[A-Za-z0-9._]+)?")
_FLAGS = ("complex", "private", "trace_only")
_CODEGEN = cst.Module(body=[])


# -- reading libcst nodes -------------------------------------------------------------------------


def _code(node: cst.CSTNode) -> str:
    return _CODEGEN.code_for_node(node)


def _dotted(node: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(node, cst.Name):
        return (node.value,)
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return None if base is None else base + (node.attr.value,)
    return None


def imports_of(statement: cst.Import | cst.ImportFrom) -> list[tuple[str, Import]]:
    """The names a module-level import binds, each with where it comes from."""
    if isinstance(statement, cst.Import):
        bound_names = []
        for alias in statement.names:
            dotted = ".".join(_dotted(alias.name) or ())
            bound = alias.asname.name.value if alias.asname else dotted.split(".")[0]
            bound_names.append((bound, Import(dotted if alias.asname else bound, 0, None)))
        return bound_names
    if isinstance(statement.names, cst.ImportStar):
        return []
    module = ".".join(_dotted(statement.module) or ()) if statement.module is not None else ""
    bound_names = []
    for alias in statement.names:
        name = alias.name.value if isinstance(alias.name, cst.Name) else ".".join(_dotted(alias.name) or ())
        bound = alias.asname.name.value if alias.asname else name
        bound_names.append((bound, Import(module, len(statement.relative), name)))
    return bound_names


def assigned_type(node: cst.Assign | cst.AnnAssign) -> tuple[str, TypeExpr] | None:
    """``NAME = <type expression>`` (a TypeVar, a Union, an alias) as name and expression; None for anything else."""
    if isinstance(node, cst.Assign):
        if len(node.targets) != 1:
            return None
        target, value = node.targets[0].target, node.value
    else:
        target, value = node.target, node.value
    if not isinstance(target, cst.Name) or value is None:
        return None
    expr = type_expr(value)
    return None if isinstance(expr, Opaque) else (target.value, expr)


def string_value(node: cst.BaseExpression) -> str | None:
    """A string literal's value (implicitly concatenated ones too); None for anything else."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def type_expr(node: cst.BaseExpression) -> TypeExpr:
    """The annotation ``node`` as plain data."""
    dotted = _dotted(node)
    if dotted is not None:
        return Ref(dotted)
    if isinstance(node, cst.Subscript):
        base = _dotted(node.value)
        if base is not None and all(isinstance(e.slice, cst.Index) for e in node.slice):
            return Subscript(Ref(base), tuple(type_expr(e.slice.value) for e in node.slice))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        members = []
        for side in (node.left, node.right):
            expr = type_expr(side)
            members.extend(expr.members if isinstance(expr, BitOr) else (expr,))
        return BitOr(tuple(members))
    if isinstance(node, cst.Call):
        func = _dotted(node.func)
        name = string_value(node.args[0].value) if node.args and node.args[0].keyword is None else None
        if func is not None and func[-1] == "TypeVar" and name is not None:
            bound = next((type_expr(a.value) for a in node.args if a.keyword and a.keyword.value == "bound"), None)
            constraints = tuple(type_expr(a.value) for a in node.args[1:] if a.keyword is None and a.star == "")
            return TypeVarCall(name, bound, constraints)
    text = string_value(node)
    if text is not None:  # a forward reference: "TFloat"
        try:
            return type_expr(cst.parse_expression(text))
        except cst.ParserSyntaxError:
            return Opaque(repr(text))
    return Opaque(_code(node))


def _comment(statement: cst.SimpleStatementLine) -> str:
    """The comment block directly above the statement (no blank line between) and the one on its line."""
    above: list[str] = []
    for line in reversed(statement.leading_lines):
        if line.comment is None:
            break
        above.insert(0, line.comment.value.lstrip("#").strip())
    trailing = statement.trailing_whitespace.comment
    if trailing is not None:
        above.append(trailing.value.lstrip("#").strip())
    return " ".join(text for text in above if text)


# -- the visitor ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Anchor:
    """Where an item's line is: that of a def or an assignment, or of a decorator some lines above a def.

    The text search finds ``keyword``/``name`` at ``indent``; the slow path asks for ``target``'s position.
    Items of one statement (several decorators) share the statement's match.
    """

    statement: cst.CSTNode  # the FunctionDef or SimpleStatementLine
    keyword: str  # 'def' or '='
    indent: str
    name: str
    decorators_up: int  # 0, or how many decorator lines up from the def the target starts
    target: cst.CSTNode  # the node whose line is wanted: a Decorator, or the statement


class _ModuleVisitor(cst.CSTVisitor):
    """Collects imports, type definitions and registrations, never entering function or class bodies."""

    def __init__(self, module: cst.Module):
        super().__init__()
        self.module = module
        self.indents: list[str] = []
        self.conditions: list[str] = []
        self.imports: list[tuple[str, Import]] = []
        # Each item found waits for its line, in source order: (anchor, build(line of anchor) -> item).
        self.found: list[tuple[_Anchor, Callable[[int], Definition | Registration | ScanProblem]]] = []

    @property
    def indent(self) -> str:
        return "".join(self.indents)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.indents.append(self.module.default_indent if node.indent is None else node.indent)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.indents.pop()

    def visit_If_body(self, node: cst.If) -> None:
        self.conditions.append(_code(node.test))

    def leave_If_body(self, node: cst.If) -> None:
        self.conditions.pop()

    def visit_If_orelse(self, node: cst.If) -> None:
        self.conditions.append(f"not ({_code(node.test)})")

    def leave_If_orelse(self, node: cst.If) -> None:
        self.conditions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        for statement in node.body:
            if isinstance(statement, (cst.Import, cst.ImportFrom)):
                self.imports.extend(imports_of(statement))
            elif isinstance(statement, (cst.Assign, cst.AnnAssign)):
                self._definition(node, statement)
        return False

    def _definition(self, line: cst.SimpleStatementLine, node: cst.Assign | cst.AnnAssign) -> None:
        assigned = assigned_type(node)
        if assigned is None:
            return
        (name, expr), comment = assigned, _comment(line)
        anchor = _Anchor(line, "=", self.indent, name, 0, line)
        self.found.append((anchor, lambda at: Definition(name, expr, at, comment)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for index, decorator in enumerate(node.decorators):
            call = decorator.decorator
            callee = _dotted(call.func if isinstance(call, cst.Call) else call)
            if callee is None or callee[-1] != "torch_op":
                continue
            up = len(node.decorators) - index
            anchor = _Anchor(node, "def", self.indent, node.name.value, up, decorator)
            try:
                registration = self._registration(node, call)
            except _BadDecorator as exc:
                problem = ScanProblem(str(exc), None, node.name.value)
                self.found.append((anchor, lambda at, p=problem: replace(p, line=at)))
                continue
            self.found.append((anchor, lambda at, r=registration: replace(r, line=at)))
        return False

    def _registration(self, node: cst.FunctionDef, call: cst.BaseExpression) -> Registration:
        if not isinstance(call, cst.Call):
            raise _BadDecorator("@torch_op without arguments: it needs the ATen name(s) to register")
        positional = [a for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        name_node = positional[0].value if positional else keywords.get("name")
        if name_node is None:
            raise _BadDecorator("@torch_op without a name")
        names = _literal_names(name_node)
        for name in names:
            if name.endswith(".default") or not _QUALIFIED_NAME.fullmatch(name):
                raise _BadDecorator(f"@torch_op name {name!r} is not 'namespace::name' or 'namespace::name.overload'")
        flags = {}
        for flag in _FLAGS:
            value = keywords.get(flag)
            if value is None:
                continue
            if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
                raise _BadDecorator(f"@torch_op {flag}= is not a literal True or False: {_code(value)}")
            flags[flag] = value.value == "True"
        params = node.params
        every = (*params.posonly_params, *params.params, *params.kwonly_params)
        return Registration(
            names=names,
            function=node.name.value,
            line=0,
            params=tuple(Param(p.name.value, type_expr(p.annotation.annotation) if p.annotation else None) for p in every),
            returns=type_expr(node.returns.annotation) if node.returns else None,
            condition=" and ".join(self.conditions),
            **flags,
        )


class _BadDecorator(ValueError):
    """A @torch_op decorator this scan cannot read statically."""


def _literal_names(node: cst.BaseExpression) -> tuple[str, ...]:
    """The names of ``@torch_op("aten::x")`` or ``@torch_op(("aten::x", "aten::y"))``; anything else is an error."""
    single = string_value(node)
    if single is not None:
        return (single,)
    if isinstance(node, (cst.Tuple, cst.List)):
        names = tuple(string_value(e.value) for e in node.elements)
        if names and all(isinstance(n, str) for n in names):
            return names  # type: ignore[return-value]
    raise _BadDecorator(f"@torch_op name is not a string literal or a tuple of string literals: {_code(node)}")


# -- one module -----------------------------------------------------------------------------------


# The start of a def or of an assignment: a superset of the anchors, matched in one pass over the text.
_STATEMENT_START = re.compile(
    r"^(?P<indent>[ \t]*)(?:(?:async[ \t]+)?def[ \t]+(?P<def>\w+)|(?P<name>\w+)[ \t]*(?::|=(?!=)))", re.M
)


def _anchor_lines(text: str, anchors: list[_Anchor]) -> list[int] | None:
    """The line of each anchor, each statement found after the previous one; None when one is not found."""
    matches = _STATEMENT_START.finditer(text)
    lines: list[int] = []
    line, counted_to, statement = 1, 0, None
    for anchor in anchors:
        if statement is not anchor.statement:
            group = "def" if anchor.keyword == "def" else "name"
            match = next((m for m in matches if m["indent"] == anchor.indent and m[group] == anchor.name), None)
            if match is None:
                return None
            line += text.count("\n", counted_to, match.start())
            counted_to, statement = match.start(), anchor.statement
        start = _decorator_start(text, counted_to, anchor.indent, anchor.decorators_up)
        if start is None:
            return None
        lines.append(line - text.count("\n", start, counted_to))
    return lines


def _decorator_start(text: str, def_start: int, indent: str, up: int) -> int | None:
    """Where the line ``up`` decorator lines (``<indent>@``) above the def starts."""
    position = def_start
    for _ in range(up):
        found = text.rfind("\n" + indent + "@", 0, position)
        if found >= 0:
            position = found + 1
        elif position > 0 and text.startswith(indent + "@"):
            position = 0
        else:
            return None
    return position


_DTYPE_CHECK = re.compile(
    r"\b(?P<param>[A-Za-z_]\w*)(?:\.type)?\.dtype\s*(?P<op>==|!=|\bnot\s+in\b|\bin\b)\s*"
    r"(?P<rhs>\{[^{}]*\}|\([^()]*\)|\[[^\[\]]*\]|[A-Za-z_][\w.]*)"
)
_DTYPE_NAME = re.compile(r"\bir\.DataType\.(\w+)|\b([A-Z][A-Z0-9_]*)\.dtype\b")
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def\b", re.M)


def _dtype_checks(text: str, line_starts: list[int], registration: Registration, indent: str) -> tuple[DtypeCheck, ...]:
    """The dtype comparisons on the registration's parameters in its body (the text from its def to its end)."""
    found_def = _DEF.search(text, line_starts[registration.line - 1])
    if found_def is None:
        return ()
    body_start = text.find("\n", found_def.end()) + 1
    # The body ends at the next statement indented no deeper than the def (closing brackets and comments aside).
    end = re.compile(rf"^[ \t]{{0,{len(indent)}}}(?=[^ \t\r\n)\]}}#])", re.M).search(text, body_start)
    body_end = end.start() if end is not None else len(text)
    params = {p.name for p in registration.params}
    checks = []
    for match in _DTYPE_CHECK.finditer(text, body_start, body_end):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if match["param"] not in params or "#" in text[line_start : match.start()]:
            continue
        names = tuple(dict.fromkeys(a or b for a, b in _DTYPE_NAME.findall(match["rhs"])))
        if names:
            line = bisect.bisect_right(line_starts, match.start())
            checks.append(DtypeCheck(match["param"], names, line, " ".join(match.group().split())))
    return tuple(checks)


def _position_lines(module: cst.Module, anchors: list[_Anchor]) -> list[int]:
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return [positions[a.target].start.line for a in anchors]


def scan_module(data: bytes) -> ModuleFacts:
    """The facts of one module's source; syntax errors and unreadable decorators become problems."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ModuleFacts((), (), (), (ScanProblem(f"not UTF-8: {exc.reason}", None),))
    try:
        module = parsed_module(data)
    except cst.ParserSyntaxError as exc:
        # The message's 'error at LINE:COL' is where the parser failed; raw_line can be the line after it.
        found = re.search(r"error at (\d+):\d+: (.*)", exc.message)
        line, reason = (int(found.group(1)), found.group(2)) if found else (exc.raw_line, exc.message.splitlines()[0])
        return ModuleFacts((), (), (), (ScanProblem(f"syntax error: {reason}", line),))
    visitor = _ModuleVisitor(module)
    module.visit(visitor)
    anchors = [anchor for anchor, _ in visitor.found]
    lines = _anchor_lines(text, anchors)
    if lines is None:
        lines = _position_lines(module, anchors)
    items = [build(line) for (_, build), line in zip(visitor.found, lines)]
    if ".dtype" in text and any(isinstance(i, Registration) and i.trace_only for i in items):
        line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        items = [
            replace(item, dtype_checks=_dtype_checks(text, line_starts, item, anchor.indent))
            if isinstance(item, Registration) and item.trace_only
            else item
            for (anchor, _), item in zip(visitor.found, items)
        ]
    return ModuleFacts(
        imports=tuple(visitor.imports),
        definitions=tuple(i for i in items if isinstance(i, Definition)),
        registrations=tuple(i for i in items if isinstance(i, Registration)),
        problems=tuple(i for i in items if isinstance(i, ScanProblem)),
    )


@functools.lru_cache(maxsize=24)  # a torch_lib's modules (18 today) and a few more: ops/core.py's tree alone weighs tens of MB
def parsed_module(data: bytes) -> cst.Module:
    """libcst's tree of a module's bytes, parsed once per process: a run scans a module it then rewrites, and the runs of
    one process (a test suite's) scan and rewrite the same modules; a tree is never changed in place (an edit makes a
    new one)."""
    return cst.parse_module(data)


def module_facts(data: bytes, stage: Stage) -> tuple[ModuleFacts, bool]:
    """The module's facts, from the stage's cache when this exact content was scanned before; and whether it was."""
    facts = stage.read(data, kind=ModuleFacts)
    if facts is not None:
        return facts, True
    facts = _scanned(data)
    stage.write(facts, data)
    return facts, False


@functools.lru_cache(maxsize=64)
def _scanned(data: bytes) -> ModuleFacts:
    """``scan_module``, once per process for each content: the runs of one process (a test suite's) scan the same
    modules into caches of their own."""
    return scan_module(data)
