"""What an export-check result depends on, so that a change elsewhere keeps it cached.

A case's result depends on the exporter and runtime (the torch, onnxscript, onnx, onnx_ir and
onnxruntime versions), on the code that runs and judges it (the workers' functions and what they
call, not every module they import: a new helper in ``torch_private`` for the checker changes no
export), and, in the torch_lib, on the functions registered for its overload and those the exporter
ran for it, each with the definitions it reaches (its helpers, the TypeVars of its annotations, the
decorator that registers it). Both are digests of definitions: a top-level function, class or
assignment, unparsed (comments, layout and docstrings do not count: the rewrite writes a function's
schema into its docstring), with the definitions its names reach in its
own module and in the modules of its package it imports, transitively. A name looked up dynamically
(``getattr`` with a string) is not followed; the module's other top-level statements always count.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from migrate.cache import StageCache

VERSIONED = ("torch", "onnxscript", "onnx", "onnx_ir", "onnxruntime")  # what exports and runs a case
TORCHLIB = "onnxscript.function_libs.torch_lib"


@dataclass
class _Module:
    """A module's top-level definitions by name, the names its imports bind (anywhere in it), and the statements
    that define no name (run whenever the module is imported)."""

    name: str
    defined: dict[str, list[ast.stmt]] = field(default_factory=dict)
    imported: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    always: list[ast.stmt] = field(default_factory=list)


class Definitions:
    """The definitions of the modules ``locate`` finds (a module name -> its file, or None outside the package), and
    the digest of what a definition reaches."""

    def __init__(self, locate: Callable[[str], Path | None]):
        self._locate = locate
        self._modules: dict[str, _Module | None] = {}
        self._texts: dict[int, str] = {}
        self._references: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}

    def module(self, name: str) -> _Module | None:
        if name not in self._modules:
            path = self._locate(name)
            self._modules[name] = _index(name, path) if path is not None and path.is_file() else None
        return self._modules[name]

    def reached(self, roots: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Every (module, name) the roots reach, sorted; a root's name '' is its module's statements that define no name."""
        seen: set[tuple[str, str]] = set()
        todo = list(roots)
        while todo:
            key = todo.pop()
            if key in seen or self.module(key[0]) is None:
                continue
            seen.add(key)
            if (key[0], "") not in seen:
                todo.append((key[0], ""))
            todo.extend(self._reaches(key))
        return sorted(seen)

    def digest(self, roots: Iterable[tuple[str, str]]) -> str:
        found = hashlib.sha256()
        for module, name in self.reached(roots):
            found.update(f"{module}:{name}\0".encode())
            for statement in self._statements(module, name):
                found.update(self._text(statement).encode() + b"\0")
        return found.hexdigest()

    def _statements(self, module: str, name: str) -> list[ast.stmt]:
        found = self.module(module)
        return [] if found is None else (found.always if not name else found.defined.get(name, []))

    def _text(self, statement: ast.stmt) -> str:
        if id(statement) not in self._texts:
            self._texts[id(statement)] = _unparsed(statement)
        return self._texts[id(statement)]

    def _reaches(self, key: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        if key not in self._references:
            module = self.module(key[0])
            found: set[tuple[str, str]] = set()
            for statement in self._statements(*key):
                for base, attribute in _names(statement):
                    found.update(self._resolve(module, base, attribute))
            self._references[key] = tuple(sorted(found))
        return self._references[key]

    def _resolve(self, module: _Module, base: str, attribute: str) -> Iterator[tuple[str, str]]:
        if base in module.defined:
            yield module.name, base
        target = module.imported.get(base)
        if target is None:
            return
        if self.module(target) is not None:  # a module: the attribute taken of it
            if attribute:
                yield target, attribute
                if self.module(f"{target}.{attribute}") is not None:
                    yield f"{target}.{attribute}", ""
        else:  # a name imported from a module
            owner, _, name = target.rpartition(".")
            yield owner, name


def _index(name: str, path: Path) -> _Module:
    module = _Module(name)
    tree = ast.parse(path.read_bytes())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module.imported[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                module.imported[alias.asname or alias.name] = f"{base}.{alias.name}"
    for statement in tree.body:
        names = _defines(statement)
        for defined in names:
            module.defined.setdefault(defined, []).append(statement)
        if not names and not isinstance(statement, (ast.Import, ast.ImportFrom)) and not _is_docstring(statement):
            module.always.append(statement)
    return module


def _defines(statement: ast.stmt) -> list[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, ast.AnnAssign) else []
    return [node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)]


def _unparsed(statement: ast.stmt) -> str:
    """The statement as code, without the docstrings of the functions and classes in it: the rewrite writes a
    torchlib function's schema into its docstring, which changes no export."""
    documented = [
        (node, node.body)
        for node in ast.walk(statement)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body and _is_docstring(node.body[0])
    ]
    try:
        for node, body in documented:
            node.body = body[1:] or [ast.Pass()]
        return ast.unparse(statement)
    finally:
        for node, body in documented:
            node.body = body


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)


def _names(statement: ast.stmt) -> Iterator[tuple[str, str]]:
    """Each name a statement uses, with the attribute taken of it ('' when none): ``torch_private.onnx_tracer``
    is ('torch_private', 'onnx_tracer')."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            yield node.value.id, node.attr
        elif isinstance(node, ast.Name):
            yield node.id, ""


# --- the workers' code ---------------------------------------------------------------------------


def package_files(package: str, folder: Path) -> Callable[[str], Path | None]:
    """Where the modules of ``package`` are, its top in ``folder`` (None for a module outside it)."""

    def locate(name: str) -> Path | None:
        if name != package and not name.startswith(package + "."):
            return None
        path = folder.joinpath(*name.removeprefix(package).lstrip(".").split(".")) if name != package else folder
        return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")

    return locate


TOOL = package_files("migrate", Path(__file__).resolve().parents[1])


def versions() -> str:
    """The Python version and those of the packages that export and run a case."""
    found = [f"python {sys.version_info[:2]}"]
    for package in VERSIONED:
        try:
            found.append(f"{package}=={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{package}==-")
    return "\n".join(found)


@cache
def worker_digest(*roots: str) -> str:
    """The digest of what these functions (``module:name``; a module alone: all of it) reach in the tool's code,
    with the versions of what exports and runs a case."""
    return hashlib.sha256(f"{code_reached(_tool(), roots)}\n{versions()}".encode()).hexdigest()


@cache
def _tool() -> Definitions:
    """The tool's definitions, read once per process (both judges' code reach the same modules)."""
    return Definitions(TOOL)


def code_reached(definitions: Definitions, roots: Iterable[str]) -> str:
    """The digest of what these roots (``module:name``; a module alone: all of it) reach."""
    keys = []
    for root in roots:
        module, _, name = root.partition(":")
        keys += [(module, name)] if name else [(module, n) for n in (definitions.module(module) or _Module(module)).defined] + [(module, "")]
    return definitions.digest(keys)


# --- the torch_lib -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TorchlibKeys:
    """Per function a torch_lib registers, the digest of what it reaches; per overload ('sin', 'add.Tensor'), the
    functions registered for it in registration order (a new one registered first changes what the exporter runs)."""

    functions: dict[str, str]
    registered: dict[str, tuple[str, ...]]

    def depends(self, overload: str, functions: Iterable[str]) -> dict[str, str]:
        """The digests of the overload's registered functions and of these (the functions its calls used)."""
        wanted = set(self.registered.get(overload, ())) | set(functions)
        return {f: self.functions.get(f, "") for f in sorted(wanted)}


def torchlib_digest(root: Path) -> str:
    """The torch_lib's content: every module's path and bytes."""
    found = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*.py") if p.is_file()):
        found.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return found.hexdigest()


def torchlib_keys(root: Path, cache: StageCache) -> TorchlibKeys:
    """The keys of a torch_lib's functions, computed once per content (the ``export-keys`` stage)."""
    stage = cache.stage("export-keys", __name__)
    return stage.get((torchlib_digest(root),), lambda: _torchlib_keys(Path(root)), kind=TorchlibKeys)


def _torchlib_keys(root: Path) -> TorchlibKeys:
    definitions = Definitions(package_files(TORCHLIB, root))
    registered: dict[str, list[str]] = {}
    functions: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*.py") if p.is_file()):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join((TORCHLIB, *(parts[:-1] if parts[-1] == "__init__" else parts)))
        indexed = definitions.module(module)
        for statements in indexed.defined.values() if indexed is not None else ():
            for node in statements:
                for target in _registrations(node):
                    overload = target.removeprefix("aten::").removesuffix(".default")
                    if node.name not in registered.setdefault(overload, []):
                        registered[overload].append(node.name)
                    functions.setdefault(node.name, []).append(module)
    digests = {name: definitions.digest([(module, name) for module in sorted(set(modules))]) for name, modules in functions.items()}
    return TorchlibKeys(digests, {overload: tuple(names) for overload, names in registered.items()})


def _registrations(node: ast.stmt) -> list[str]:
    """The operators a ``@torch_op(...)`` decorator registers a function for."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    found = []
    for decorator in node.decorator_list:
        if not isinstance(decorator, ast.Call) or not decorator.args:
            continue
        called = decorator.func.attr if isinstance(decorator.func, ast.Attribute) else getattr(decorator.func, "id", "")
        if called != "torch_op":
            continue
        first = decorator.args[0]
        values = first.elts if isinstance(first, (ast.Tuple, ast.List)) else [first]
        found += [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return found

