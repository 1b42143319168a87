"""Naming the TypeVar of each rewritten class of slots, per module: the global set's, or a generated one."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from codemods.annotations import return_annotations
from codemods.imports import ImportRequest
from codemods.module_index import names_in
from codemods.toplevel import DefKey
from codemods.typevars import GENERATED_MARKER, TypeVarSpec, block_names, identifier
from migrate.model.dtypes import DType, canonical, format_set
from migrate.model.schema import RETURN_PREFIX
from migrate.write.torchlib.decide import GLOBAL_SET, FunctionDecision, Planner, SlotClass, onnx_part
from migrate.write.torchlib.tree import TENSOR_TYPING, TorchlibModule, TorchlibTree


@dataclass
class ModuleWork:
    module: TorchlibModule
    functions: list[FunctionDecision]
    specs: dict[str, TypeVarSpec] = field(default_factory=dict)
    imports: set[ImportRequest] = field(default_factory=set)
    replaced: set[str] = field(default_factory=set)  # names that were part of a replaced annotation core
    staying: set[str] = field(default_factory=set)  # names annotations use outside the slots rewritten


class Namer:
    """Chooses the TypeVar of each rewritten class: the global set's, or a generated one."""

    def __init__(self, planner: Planner, tree: TorchlibTree):
        self.planner = planner
        self.tree = tree

    def name_module(self, work: ModuleWork) -> None:
        module = work.module
        existing = block_names(module.tree, GENERATED_MARKER)
        work.staying = self._names_staying(work)
        reserved = {n: self._bound_of(module, n) for n in existing if n in work.staying}
        taken = {n for n in module.index.bound_names if n not in existing}
        for function in work.functions:
            kept_labels = {
                c.label
                for slot, annotation in function.annotations.items()
                if not any(slot in cls.slots for cls in function.rewrite)
                and (c := self.tree.resolve(module, annotation)) is not None
                and c.shared
            }
            used: set[str] = set()
            for cls in function.rewrite:
                name = self._global_name(work, function, cls, kept_labels | used)
                if name is None:
                    name = self._generated_name(work, function, cls, reserved, taken | kept_labels | used)
                used.add(name)
                cls.typevar = name

    def _names_staying(self, work: ModuleWork) -> set[str]:
        """Names the module's annotations still use outside the slots this run rewrites."""
        rewritten: dict[DefKey, set[str]] = defaultdict(set)
        for function in work.functions:
            rewritten[function.info.key].update(s for c in function.rewrite for s in c.slots)
        staying: set[str] = set()
        for info in work.module.index.defs:
            slots = rewritten.get(info.key, set())
            for param in info.params:
                if param.name not in slots:
                    names_in(param.annotation, staying)
            if info.returns is not None and not any(s.startswith(RETURN_PREFIX) for s in slots):
                names_in(info.returns, staying)
            elif info.returns is not None:
                count = next((f.return_count for f in work.functions if f.info.key == info.key), 0)
                parts = return_annotations(info.returns, count) or ()
                for index, part in enumerate(parts):
                    if f"{RETURN_PREFIX}{index}" not in slots:
                        names_in(part, staying)
        return staying

    def _bound_of(self, module: TorchlibModule, name: str) -> tuple[DType, ...] | None:
        constraint = self.tree.binding(module, name)
        return None if constraint is None else constraint.dtypes

    def _global_name(self, work: ModuleWork, function: FunctionDecision, cls: SlotClass, avoid: set[str]) -> str | None:
        names = {v.name for _, v, _ in cls.contributions}
        if len(names) != 1:
            return None
        name = names.pop()
        global_set = self.planner.global_sets.get(name)
        if global_set is None or onnx_part(global_set.dtypes) != cls.onnx or name in avoid:
            return None
        module = work.module
        fallback = f"{function.where} uses a generated TypeVar"
        if name in module.index.bound_names:
            bound = self._bound_of(module, name)
            if bound is not None and onnx_part(bound) == cls.onnx:
                return name
            self.planner.note(GLOBAL_SET, f"{module.path} binds {name} to other dtypes than the global set; {fallback}")
            return None
        typing_module = self.tree.tensor_typing
        if typing_module is None:
            self.planner.note(GLOBAL_SET, f"no {TENSOR_TYPING}.py to define {name} in; {fallback}")
            return None
        if name in typing_module.index.bound_names:
            bound = self._bound_of(typing_module, name)
            if bound is None or onnx_part(bound) != cls.onnx:
                self.planner.note(GLOBAL_SET, f"{typing_module.path}'s {name} has other dtypes than the global set; {fallback}")
                return None
        elif name not in self.planner.new_globals:
            self.planner.new_globals[name] = TypeVarSpec(name, type_names(cls.onnx), global_set.desc)
            self.planner.note(GLOBAL_SET, f"added {name} {format_set(cls.onnx)} to {typing_module.path}")
        work.imports.add(ImportRequest(self.tree.absolute(typing_module), name))
        return name

    @staticmethod
    def _generated_name(
        work: ModuleWork, function: FunctionDecision, cls: SlotClass, reserved: dict[str, tuple[DType, ...] | None], avoid: set[str]
    ) -> str:
        """``T_<overload>_<variable>`` (``T_<function>_<slot>`` for a union), numbered when the name means another set here."""
        bound = type_names(cls.onnx)
        overload, variable, _ = cls.contributions[0]
        if all(onnx_part(d) == cls.onnx for _, _, d in cls.contributions):
            base = f"T_{identifier(overload)}_{variable.name}"
        else:
            base = f"T_{function.info.key.name}_{identifier(cls.slots[0])}"
        for number in itertools.count(1):
            name = base if number == 1 else f"{base}_{number}"
            if name in avoid or (name in work.specs and work.specs[name].bound != bound):
                continue
            if name in reserved and (reserved[name] is None or type_names(reserved[name]) != bound):
                continue
            break
        work.specs[name] = TypeVarSpec(name, bound)
        return name


def type_names(dtypes: tuple[DType, ...]) -> tuple[str, ...]:
    return tuple(d.onnx for d in canonical(dtypes) if d.onnx is not None)
