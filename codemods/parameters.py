"""Parameter names: a function's parameters renamed, with every use of them in its body and their
names in the docstring's schema line.

torch.onnx calls torchlib functions with keyword arguments named as in
``native_functions.yaml``, so a parameter spelled otherwise is never passed. A rename
follows Python's scoping, read from libcst's scope metadata, never from the text: every
binding of the parameter in the function's scope and every access resolving to one of them
(in nested functions, lambdas and comprehensions too) takes the new name; a nested scope
binding the old name for itself keeps it. Default values and annotations are evaluated
outside the function, so their names never change.

A rename is refused when the new name would capture something: the function's scope or a
scope nested in it binds the new name or reads it (a builtin such as ``min``, a
module-level name, another local), or a ``global``/``nonlocal`` statement names either
name. The caller is told which renames were refused, and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, Scope, ScopeProvider

from codemods.docstrings import docstring_node, with_first_line
from codemods.toplevel import DefKey, ReplaceNodes, TopLevelTransformer

SHADOWS = "shadows"
"""The new name is bound or read in the function's body: renaming would change what some name means."""
SCOPE_STATEMENT = "scope-statement"
"""A ``global``/``nonlocal`` statement names the old or the new name: left to a human."""


@dataclass(frozen=True)
class Refusal:
    """A rename the transformer did not make: ``kind`` is SHADOWS or SCOPE_STATEMENT, ``why`` says what it found."""

    old: str
    new: str
    kind: str
    why: str


class _ScopeStatements(cst.CSTVisitor):
    """The names every ``global`` and ``nonlocal`` statement of a function names."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Global(self, node: cst.Global) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names.update(item.name.value for item in node.names)


class FunctionScopes:
    """The scopes of one function: its own and every scope nested in it."""

    def __init__(self, node: cst.FunctionDef):
        self.node = node
        # The function's own nodes (no copy), so that what the metadata finds can be replaced by identity.
        scopes = MetadataWrapper(cst.Module(body=[node]), unsafe_skip_copy=True).resolve(ScopeProvider)
        every = {id(s): s for s in scopes.values() if s is not None}.values()
        self.own = next(s for s in every if getattr(s, "node", None) is node)
        self.inner = sorted((s for s in every if self._nested(s)), key=lambda s: getattr(s, "name", "") or "")
        statements = _ScopeStatements()
        node.body.visit(statements)
        self.scope_statements = frozenset(statements.names)

    def _nested(self, scope: Scope) -> bool:
        while scope is not None and scope is not self.own:
            parent = scope.parent
            scope = None if parent is scope else parent
        return scope is self.own

    @property
    def scopes(self) -> Iterator[Scope]:
        yield self.own
        yield from self.inner

    def refusal(self, old: str, new: str) -> Refusal | None:
        """Why renaming the parameter ``old`` to ``new`` would change the function's meaning; None when it would not."""
        for name in (old, new):
            if name in self.scope_statements:
                return Refusal(old, new, SCOPE_STATEMENT, f"a global or nonlocal statement names {name!r}")
        for scope in self.scopes:
            where = "the function" if scope is self.own else f"the nested {_scope_name(scope)}"
            if any(a.scope is scope for a in scope.assignments[new]):
                return Refusal(old, new, SHADOWS, f"{where} binds {new!r} already")
            for access in scope.accesses[new]:
                return Refusal(old, new, SHADOWS, f"{where} reads {new!r} ({_meaning(access.referents, list(self.scopes))}), which the parameter would shadow")
        return None

    def renaming(self, old: str, new: str) -> dict[cst.CSTNode, cst.CSTNode]:
        """Node replacements renaming ``old`` in the function's scope: its bindings and every access to them."""
        replacements: dict[cst.CSTNode, cst.CSTNode] = {}
        for assignment in self.own.assignments[old]:
            if assignment.scope is not self.own:
                continue
            binding = getattr(assignment, "node", None)
            name = binding.name if isinstance(binding, cst.Param) else binding
            if isinstance(name, cst.Name):
                replacements[name] = name.with_changes(value=new)
            for access in assignment.references:
                if isinstance(access.node, cst.Name):
                    replacements[access.node] = access.node.with_changes(value=new)
        return replacements


def _scope_name(scope: Scope) -> str:
    """A nested function's name, or the kind of scope (``lambda``, ``comprehension``)."""
    if isinstance(getattr(scope, "node", None), cst.Lambda):
        return "lambda"
    return getattr(scope, "name", None) or type(scope).__name__.removesuffix("Scope").lower()


def _meaning(referents, inside: list[Scope]) -> str:  # type: ignore[no-untyped-def]
    """What a read name refers to, in words: the function sees only itself, so module-level names and builtins are one."""
    if any(any(getattr(r, "scope", None) is s for s in inside) for r in referents):
        return "a binding in the function"
    return "a builtin or module-level name"


def renamed_schema_line(line: str, renames: Mapping[str, str]) -> str:
    """A schema line (``name(Tensor x, int dim=0) -> Tensor``) with its arguments renamed; other text as it was."""
    start = line.find("(")
    if start < 0:
        return line
    depth, pieces, piece_start = 0, [], start + 1
    for at in range(start, len(line)):
        char = line[at]
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
            if depth == 0:
                pieces.append((piece_start, at))
                break
        elif char == "," and depth == 1:
            pieces.append((piece_start, at))
            piece_start = at + 1
    else:
        return line
    out, done = [], 0
    for begin, end in pieces:
        declared = re.match(r"(?P<type>\s*\S.*?\s)(?P<name>\w+)(?=\s*(=|$))", line[begin:end])
        if declared is None or declared["name"] not in renames:
            continue
        name_at = begin + declared.start("name")
        out += [line[done:name_at], renames[declared["name"]]]
        done = name_at + len(declared["name"])
    return "".join(out) + line[done:]


class ParameterRenamer(TopLevelTransformer):
    """Renames parameters of module-level functions: ``renames`` maps a function to ``{old: new}``.

    ``schema_lines`` gives, per function, the first line of its docstring when that line is a
    schema naming the arguments as the parameters are named; its names are renamed with them.
    ``renamed`` and ``refused`` say what happened to each rename asked for.
    """

    def __init__(self, renames: Mapping[DefKey, Mapping[str, str]], schema_lines: Mapping[DefKey, str] | None = None):
        super().__init__()
        self.renames = renames
        self.schema_lines = schema_lines or {}
        self.renamed: dict[DefKey, dict[str, str]] = {}
        self.refused: dict[DefKey, tuple[Refusal, ...]] = {}

    def leave_def(self, key: DefKey, node: cst.FunctionDef) -> cst.FunctionDef:
        wanted = self.renames.get(key)
        if not wanted:
            return node
        scopes = FunctionScopes(node)
        replacements: dict[cst.CSTNode, cst.CSTNode] = {}
        done, refused = {}, []
        for old, new in sorted(wanted.items()):
            refusal = scopes.refusal(old, new)
            if refusal is not None:
                refused.append(refusal)
                continue
            replacements.update(scopes.renaming(old, new))
            done[old] = new
        if refused:
            self.refused[key] = tuple(refused)
        if not done:
            return node
        self.renamed[key] = done
        renamed = node.visit(ReplaceNodes(replacements))
        literal = docstring_node(renamed)
        line = self.schema_lines.get(key)
        if literal is not None and line is not None and literal.raw_value.partition("\n")[0] == line:
            renamed = with_first_line(renamed, literal, renamed_schema_line(line, done))
        return renamed  # type: ignore[return-value]
