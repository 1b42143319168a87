"""The torchlib tree a rewrite works on: its modules, their scanned facts, a resolver for their annotations.

A module is parsed only when it is rewritten; everything else is known from the scan's content-keyed cache.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from migrate.cache import StageCache
from migrate.torchlib_source.facts import ModuleFacts, Ref, facts_stage
from migrate.torchlib_source.resolve import Constraint, TypeResolver
from migrate.torchlib_source.scan import module_facts, parsed_module, type_expr
from migrate.write.torchlib.module_index import ModuleIndex

TENSOR_TYPING = "tensor_typing"
"""The torchlib module that holds the global TypeVars."""
TYPING = "typing"
FALLBACK_TYPES_MODULE = "onnxscript.onnx_types"
"""Where onnxscript defines its tensor types: imported from only when the tree imports a type from nowhere."""


@dataclass
class TorchlibModule:
    """A module of the tree: its facts from the scan's content-keyed cache; parsed only if it is rewritten."""

    path: str  # relative to the torchlib root, posix
    name: str  # dotted name within the tree, as TypeResolver knows it
    data: bytes
    facts: ModuleFacts  # imports and type definitions: all that resolving annotations needs
    edited: bool = False  # whether ``tree`` is no longer the parse of ``data``

    @functools.cached_property
    def tree(self) -> cst.Module:
        return parsed_module(self.data)

    @functools.cached_property
    def index(self) -> ModuleIndex:
        return ModuleIndex.read(self.tree)

    def replace_tree(self, tree: cst.Module) -> None:
        """Continue from an edited tree (a pass before the annotations edited it): the index is read again from it."""
        self.__dict__.update(tree=tree)
        self.__dict__.pop("index", None)
        self.edited = True


def _module_name(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(root: Path) -> str:
    """The dotted package the torchlib root is (``onnxscript.function_libs.torch_lib``), from its __init__ files."""
    parts: list[str] = []
    folder = root.resolve()
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


class TorchlibTree:
    """Every module of a torchlib tree, parsed once, with a resolver for their annotations."""

    def __init__(self, root: Path, cache: StageCache):
        self.root = root
        self.modules: dict[str, TorchlibModule] = {}
        facts_cache = facts_stage(cache)
        for path in sorted(p for p in root.rglob("*.py") if p.is_file()):
            relative = path.relative_to(root)
            data = path.read_bytes()
            facts, _ = module_facts(data, facts_cache)  # a module with a syntax error has no facts, nothing to rewrite
            self.modules[relative.as_posix()] = TorchlibModule(relative.as_posix(), _module_name(relative), data, facts)
        packages = frozenset(m.name for m in self.modules.values() if m.path.endswith("__init__.py"))
        self.types = TypeResolver({m.name: m.facts for m in self.modules.values()}, packages)
        self.tensor_typing = next((m for m in self.modules.values() if m.name == TENSOR_TYPING), None)
        self.package = self._package()

    def _package(self) -> str:
        """The dotted name of the torchlib root, as its modules spell it when they import tensor_typing.

        That spelling (``onnxscript.function_libs.torch_lib``) is what new imports must use;
        a tree that never imports tensor_typing absolutely is named by its __init__ files.
        """
        spellings = Counter(
            imported.module
            for module in self.modules.values()
            for _, imported in module.facts.imports
            if imported.level == 0
            and imported.name is not None
            and self.types.tree_module(module.name, imported.module, 0) == TENSOR_TYPING
            and (imported.module == TENSOR_TYPING or imported.module.endswith("." + TENSOR_TYPING))
        )
        if spellings:
            spelling = min(spellings, key=lambda m: (-spellings[m], m))
            return spelling[: -len(TENSOR_TYPING)].rstrip(".")
        return _package_of(self.root)

    def absolute(self, module: TorchlibModule) -> str:
        return ".".join(p for p in (self.package, module.name) if p)

    def package_of(self, module: TorchlibModule) -> str:
        full = self.absolute(module)
        return full if module.path.endswith("__init__.py") else full.rpartition(".")[0]

    def resolve(self, module: TorchlibModule, expr: cst.BaseExpression | None) -> Constraint | None:
        return None if expr is None else self.types.resolve(module.name, type_expr(expr))

    def binding(self, module: TorchlibModule, name: str) -> Constraint | None:
        """What a module-level name of ``module`` stands for, or None when the module does not bind it."""
        if name not in module.index.bound_names:
            return None
        return self.types.resolve(module.name, Ref((name,)))

    def import_module_of(self, name: str) -> str:
        """Where to import an onnxscript type name from: where the tree already does, else where its types live."""
        for wanted in (name, "TensorType"):
            sources = Counter(
                imported.module
                for module in self.modules.values()
                for bound, imported in module.facts.imports
                if bound == wanted and imported.name == wanted and imported.level == 0
            )
            if sources:
                return min(sources, key=lambda m: (-sources[m], m))
        return FALLBACK_TYPES_MODULE
