"""Applying the decisions to one module: the transformers run over its tree, then its imports."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.helpers import get_absolute_module_from_package

from codemods.annotations import AnnotationRewriter, tensor_core
from codemods.docstrings import DocstringRewriter
from codemods.imports import ImportRequest, SplitModule, update_imports
from codemods.layout import SignatureLayout
from codemods.typevars import GLOBAL_MARKER, LINE_LENGTH, TypeVarBlock, TypeVarSpec, block_names
from migrate.write.torchlib.module_index import names_in
from migrate.write.torchlib.naming import ModuleWork
from migrate.write.torchlib.tree import TYPING, TorchlibTree


class Applier:
    """Runs the transformers over one module and prints it."""

    def __init__(self, tree: TorchlibTree):
        self.tree = tree

    def apply(self, work: ModuleWork, global_specs: dict[str, TypeVarSpec] | None = None) -> bytes:
        module = work.module
        tree = module.tree
        typevars, counts, docstrings = {}, {}, {}
        for function in work.functions:
            key = function.info.key
            if function.docstring is not None:
                docstrings[key] = function.docstring
            wanted = {}
            for cls in function.rewrite:
                for slot in cls.slots:
                    annotation = function.annotations.get(slot)
                    if annotation is None:
                        continue
                    wanted[slot] = cls.typevar
                    core = tensor_core(annotation)
                    if not (isinstance(core, cst.Name) and core.value == cls.typevar):
                        names_in(core, work.replaced)
                        function.changed = True
            if wanted:
                typevars[key] = wanted
                counts[key] = function.return_count
        changed = False
        if typevars:
            rewriter = AnnotationRewriter(typevars, counts)
            tree = tree.visit(rewriter)
            changed |= rewriter.changed
            layout = SignatureLayout(typevars.keys(), LINE_LENGTH, tree.default_indent)
            tree = tree.visit(layout)
        if docstrings:
            rewriter = DocstringRewriter(docstrings)
            tree = tree.visit(rewriter)
            changed |= rewriter.changed
        if global_specs:
            existing = frozenset(block_names(tree, GLOBAL_MARKER))
            globals_block = TypeVarBlock(GLOBAL_MARKER, list(global_specs.values()), existing, at_end=True)
            tree = tree.visit(globals_block)
            changed |= globals_block.changed
        needed = self._needed_imports(work, global_specs)
        if not changed and not needed and not module.edited:
            return module.data
        split = SplitModule.split(tree)
        removals = self._removals(work, split)
        context = CodemodContext(full_module_name=self.tree.absolute(module), full_package_name=self.tree.package_of(module))
        split = update_imports(split, context, needed, removals)
        return split.code.encode(tree.encoding)

    def _needed_imports(self, work: ModuleWork, global_specs: dict[str, TypeVarSpec] | None) -> set[ImportRequest]:
        bound = work.module.index.bound_names
        needed = {r for r in work.imports if r.name not in bound}
        for spec in (global_specs or {}).values():
            wanted = ["TypeVar", *spec.bound] + (["Union"] if len(spec.bound) > 1 else [])
            for name in wanted:
                if name in bound:
                    continue
                module = TYPING if name in ("TypeVar", "Union") else self.tree.import_module_of(name)
                needed.add(ImportRequest(module, name))
        return needed

    def _removals(self, work: ModuleWork, split: SplitModule) -> set[ImportRequest]:
        """Imports of names the replaced annotations used, when nothing else in the module uses them."""
        removals = set()
        imports = dict(reversed(work.module.index.facts.imports))
        package = self.tree.package_of(work.module)
        uses = split.uses(work.replaced)
        for name in sorted(work.replaced):
            imported = imports.get(name)
            if imported is None or imported.name is None or uses[name]:
                continue
            module = imported.module
            if imported.level:
                module = get_absolute_module_from_package(package, imported.module or None, imported.level)
            if module is not None:
                removals.add(ImportRequest(module, imported.name))
        return removals
