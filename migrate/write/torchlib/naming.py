"""Naming the annotation of each rewritten class of slots, per module, in torchlib's conventions.

- A class of one ONNX dtype is annotated with its onnxscript type (``BOOL``, ``INT64``), never a TypeVar.
- Any other class takes the TypeVar of its named set (``AnnotationDecider.named_set``), defined in
  ``tensor_typing.py`` and added there when new, bound to the set's ONNX-expressible part.
- A second independent class of the same set in one function takes a numbered twin
  (``TFloat2``), as torchlib pairs ``TTensor`` with ``TTensor2``; twins live in
  ``tensor_typing.py`` too.
- An annotation that already says what the declaration says stays as written.

No TypeVar is defined outside ``tensor_typing.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import libcst as cst

from codemods.annotations import tensor_core
from codemods.imports import ImportRequest
from codemods.typevars import TypeVarSpec
from migrate.model.dtypes import DType, canonical, format_set
from migrate.write.torchlib.decide import GLOBAL_SET, FunctionDecision, AnnotationDecider, SlotClass, onnx_part
from migrate.write.torchlib.tree import TENSOR_TYPING, TorchlibModule, TorchlibTree


@dataclass
class ModuleWork:
    module: TorchlibModule
    functions: list[FunctionDecision]
    imports: set[ImportRequest] = field(default_factory=set)
    replaced: set[str] = field(default_factory=set)  # names that were part of a replaced annotation core


class Namer:
    """Chooses each rewritten class's annotation name and the imports and tensor_typing TypeVars it needs."""

    def __init__(self, decider: AnnotationDecider, tree: TorchlibTree):
        self.decider = decider
        self.tree = tree

    def name_module(self, work: ModuleWork) -> None:
        module = work.module
        for function in work.functions:
            rewritten = {slot for cls in function.rewrite for slot in cls.slots}
            used = {  # labels of TypeVars the function keeps elsewhere: a class must not be tied to them
                c.label
                for slot, annotation in function.annotations.items()
                if slot not in rewritten and (c := self.tree.resolve(module, annotation)) is not None and c.shared
            }
            for cls in list(function.rewrite):
                name = self._as_written(function, cls, used) or self._name(work, function, cls, used)
                if name is None:
                    function.rewrite.remove(cls)
                    continue
                used.add(name)
                cls.typevar = name

    def _as_written(self, function: FunctionDecision, cls: SlotClass, used: set[str]) -> str | None:
        """The name every slot of the class is annotated with already, when it means the declared set (and ties nothing else)."""
        cores = [tensor_core(a) for s in cls.slots if (a := function.annotations.get(s)) is not None]
        if not cores or not all(isinstance(c, cst.Name) for c in cores) or len({c.value for c in cores}) != 1:
            return None
        name = cores[0].value
        constraint = self.tree.resolve(function.module, cores[0])
        if constraint is None or constraint.dtypes is None or onnx_part(constraint.dtypes) != cls.onnx or name in used:
            return None
        if len(cls.onnx) > 1 and not constraint.shared:
            return None  # a Union alias ties nothing: the class needs a TypeVar
        return name

    def _name(self, work: ModuleWork, function: FunctionDecision, cls: SlotClass, used: set[str]) -> str | None:
        if len(cls.onnx) == 1:
            name = cls.onnx[0].onnx
            if name not in work.module.index.bound_names:
                work.imports.add(ImportRequest(self.tree.import_module_of(name), name))
            return name
        named = self.decider.named_set(cls)
        typing_module = self.tree.tensor_typing
        if named is None:
            return None  # decide keeps classes of unnamed sets
        if typing_module is None:
            self.decider.note(GLOBAL_SET, f"no {TENSOR_TYPING}.py to define {named.name} in; {function.where} keeps its annotations")
            return None
        for number in itertools.count(1):
            name = named.name if number == 1 else f"{named.name}{number}"
            if name in used:
                continue
            if name in work.module.index.bound_names and work.module is not typing_module:
                if self._bound_of(work.module, name) == cls.onnx:
                    return name
                continue  # the module binds the name to something else: the next twin
            if name in typing_module.index.bound_names:
                if self._bound_of(typing_module, name) != cls.onnx:
                    continue
            elif name not in self.decider.new_globals:
                twin = f"; a twin of {named.name} for a second independent variable" if number > 1 else ""
                self.decider.new_globals[name] = TypeVarSpec(name, type_names(cls.onnx), named.desc)
                self.decider.note(GLOBAL_SET, f"added {name} {format_set(cls.onnx)} to {typing_module.path}{twin}")
            elif self.decider.new_globals[name].bound != type_names(cls.onnx):
                continue
            if work.module is not typing_module:
                work.imports.add(ImportRequest(self.tree.absolute(typing_module), name))
            return name
        raise AssertionError("unreachable")

    def _bound_of(self, module: TorchlibModule, name: str) -> tuple[DType, ...] | None:
        constraint = self.tree.binding(module, name)
        return None if constraint is None or constraint.dtypes is None else onnx_part(constraint.dtypes)


def type_names(dtypes: tuple[DType, ...]) -> tuple[str, ...]:
    return tuple(d.onnx for d in canonical(dtypes) if d.onnx is not None)
