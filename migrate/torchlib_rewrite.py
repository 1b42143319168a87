"""The torchlib writer: a plan applied to a torchlib tree, so its annotations are the declared variables.

It decides everything from the plan, the scan's evidence and the tree's own
annotations, then runs one libcst transformer per concern (``codemods``):

- **annotations**: the tensor parameters and returns of each ``@torch_op`` function
  registered for a planned overload take the TypeVar of their declared variable,
  inside their ``Optional[...]``/``Sequence[...]`` wrappers. Slots one variable binds
  share one TypeVar. A function registered for several planned overloads takes, per
  slot, the union of their sets; slots tied in any of them stay tied.
- **TypeVars**: a variable named after a global set (with that set's dtypes) is the
  global TypeVar of that name from ``tensor_typing.py``, added there when new and
  never re-bound in the modules using it; any other variable is a generated
  ``T_<overload>_<variable>`` in the module's marked block (``T_<function>_<slot>``
  for a union). Bounds are Unions of onnxscript types; dtypes with no ONNX type drop.
- **safety**: a rewrite must not tell the exporter that a function takes a dtype it
  does not. So a function keeps its annotations where they are narrower than the
  declaration (a dtype it lacks, or two slots it ties that the declaration does
  not), and ``complex=True`` functions keep their real-view annotations. Parameters
  the schema does not call tensors (Scalar, SymInt) are never touched.
- **docstrings** opening with the old schema get the typed one;
- **imports** through ``AddImportsVisitor``/``RemoveImportsVisitor``.

Every such decision the caller should know about is a note. Nothing is inferred
here: the writer applies the plan as given, deterministically, and a second run
over its own output changes nothing.
"""

from __future__ import annotations

import functools
import gc
import itertools
from collections import Counter, defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.helpers import get_absolute_module_from_package

from codemods.annotations import AnnotationRewriter, return_annotations, tensor_core
from codemods.docstrings import DocstringRewriter
from codemods.imports import ImportRequest, SplitModule, update_imports
from codemods.module_index import DefInfo, ModuleIndex, names_in
from codemods.toplevel import DefKey
from codemods.typevars import GENERATED_MARKER, GLOBAL_MARKER, TypeVarBlock, TypeVarSpec, block_names, identifier
from migrate.dtypes import DType, canonical, format_set
from migrate.errors import InputError
from migrate.native import NativeFunctions
from migrate.outputs import Output
from migrate.plan import GlobalSet, OverloadPlan, Plan, Variable
from migrate.schema import RETURN_PREFIX, SchemaError, TypedSchema
from migrate.torchlib import Constraint, TorchlibEvidence, TypeResolver
from migrate.torchlib_scan import ModuleFacts, Ref, facts_cache_dir, module_facts, type_expr

TENSOR_TYPING = "tensor_typing"
"""The torchlib module that holds the global TypeVars."""
TYPING = "typing"
FALLBACK_TYPES_MODULE = "onnxscript.onnx_types"
"""Where onnxscript defines its tensor types: imported from only when the tree imports a type from nowhere."""
OUTPUT_FOLDER = "torch_lib"
"""The folder the rewritten tree is shown (and written, under ``--out``) as."""

# Note kinds, in the order the notes are listed.
KEPT_NARROWER = "kept-narrower"
KEPT_COMPLEX = "kept-complex"
UNION = "union"
DROPPED_NON_ONNX = "dropped-non-onnx"
GLOBAL_SET = "global-set"
NOTE_KINDS = (KEPT_NARROWER, KEPT_COMPLEX, UNION, DROPPED_NON_ONNX, GLOBAL_SET)


@dataclass(frozen=True)
class SlotTypeVar:
    """A slot of a function annotated with its declared variable's TypeVar, and that variable's ONNX dtypes."""

    slot: str  # parameter name or 'return.N'
    typevar: str
    dtypes: tuple[DType, ...]


@dataclass(frozen=True)
class RewrittenFunction:
    """A function whose tensor annotations (some or all) are the declared TypeVars after the run."""

    path: str
    function: str
    line: int
    overloads: tuple[str, ...]
    slots: tuple[SlotTypeVar, ...]
    changed: bool  # whether its annotation text changed in this run


@dataclass(frozen=True)
class TorchlibRewrite:
    """What a run writes into torchlib, and what the report should say about it."""

    files: tuple[tuple[str, bytes, bytes], ...]  # (path relative to the torchlib root, before, after), changed only
    notes: tuple[str, ...]  # 'kind: message' lines, kinds in NOTE_KINDS order
    functions: tuple[RewrittenFunction, ...] = ()

    def notes_of(self, kind: str) -> tuple[str, ...]:
        return tuple(n for n in self.notes if n.startswith(kind + ": "))


def torchlib_outputs(rewrite: TorchlibRewrite, root: Path, out: Path | None, mirror: bool = False) -> list[Output]:
    """The run's outputs for the rewritten files: shown as ``torch_lib/<path>``, written under ``out`` if given.

    With ``mirror``, every other file of the tree comes too, unchanged, so that
    ``out/torch_lib`` is a whole tree that imports (``commit(..., write_unchanged=True)`` writes them).
    """
    changed = {path: (before, after) for path, before, after in rewrite.files}
    paths = set(changed)
    if mirror:
        paths |= {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    outputs = []
    for path in sorted(paths):
        source = root / path
        before, after = changed[path] if path in changed else (source.read_bytes(),) * 2
        target = out / OUTPUT_FOLDER / path if out is not None else source
        outputs.append(Output(f"{OUTPUT_FOLDER}/{path}", source, target, before, after))
    return outputs


# -- the tree -------------------------------------------------------------------------------------


@dataclass
class _Module:
    """A module of the tree: its facts from the scan's content-keyed cache; parsed only if it is rewritten."""

    path: str  # relative to the torchlib root, posix
    name: str  # dotted name within the tree, as TypeResolver knows it
    data: bytes
    facts: ModuleFacts  # imports and type definitions: all that resolving annotations needs

    @functools.cached_property
    def tree(self) -> cst.Module:
        return cst.parse_module(self.data)

    @functools.cached_property
    def index(self) -> ModuleIndex:
        return ModuleIndex.read(self.tree)


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


class _Tree:
    """Every module of a torchlib tree, parsed once, with a resolver for their annotations."""

    def __init__(self, root: Path, cache_dir: Path | str | None):
        self.root = root
        self.modules: dict[str, _Module] = {}
        cache = facts_cache_dir(cache_dir)
        for path in sorted(p for p in root.rglob("*.py") if p.is_file()):
            relative = path.relative_to(root)
            data = path.read_bytes()
            facts, _ = module_facts(data, cache)  # a module with a syntax error has no facts, nothing to rewrite
            self.modules[relative.as_posix()] = _Module(relative.as_posix(), _module_name(relative), data, facts)
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

    def absolute(self, module: _Module) -> str:
        return ".".join(p for p in (self.package, module.name) if p)

    def package_of(self, module: _Module) -> str:
        full = self.absolute(module)
        return full if module.path.endswith("__init__.py") else full.rpartition(".")[0]

    def resolve(self, module: _Module, expr: cst.BaseExpression | None) -> Constraint | None:
        return None if expr is None else self.types.resolve(module.name, type_expr(expr))

    def binding(self, module: _Module, name: str) -> Constraint | None:
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


# -- deciding one function ------------------------------------------------------------------------


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def groups(self, order: Iterable[str]) -> list[list[str]]:
        found: dict[str, list[str]] = {}
        for item in order:
            found.setdefault(self.find(item), []).append(item)
        return list(found.values())


def _onnx(dtypes: Iterable[DType]) -> tuple[DType, ...]:
    return canonical(d for d in dtypes if d.onnx is not None)


@dataclass
class _Class:
    """Slots of one function that carry one dtype per call, with their declared dtypes."""

    slots: list[str]
    contributions: list[tuple[str, Variable, tuple[DType, ...]]]  # (overload, variable, its dtypes)
    free: bool  # some slot is a tensor nobody constrained in one of the overloads: any dtype
    typevar: str = ""  # chosen when the class is rewritten

    @property
    def dtypes(self) -> tuple[DType, ...]:
        return canonical(d for _, _, dtypes in self.contributions for d in dtypes)

    @property
    def onnx(self) -> tuple[DType, ...]:
        return _onnx(self.dtypes)


@dataclass
class _Function:
    """One function's decisions: its slots, classes, what is rewritten, what is said about it."""

    module: _Module
    info: DefInfo
    line: int
    overloads: tuple[str, ...]  # planned overloads it is registered for, in registration order
    annotations: dict[str, cst.BaseExpression | None] = field(default_factory=dict)  # slot -> annotation
    return_count: int = 0
    classes: list[_Class] = field(default_factory=list)
    rewrite: list[_Class] = field(default_factory=list)  # classes whose slots take TypeVars
    docstring: tuple[str, str] | None = None
    changed: bool = False  # whether the run changes its annotations' text

    @property
    def where(self) -> str:
        return f"{self.module.path}:{self.line} {self.info.key.name}"


class _Planner:
    def __init__(self, tree: _Tree, evidence: TorchlibEvidence, plan: Plan, native: NativeFunctions, only: set[str] | None):
        self.tree = tree
        self.evidence = evidence
        self.native = native
        self.only = only
        self.plans: dict[str, OverloadPlan] = {o.name: o for o in plan.overloads}
        self.global_sets: dict[str, GlobalSet] = {g.name: g for g in plan.global_sets}
        self.notes: dict[str, list[str]] = {kind: [] for kind in NOTE_KINDS}
        self.new_globals: dict[str, TypeVarSpec] = {}
        self._lines = self._registration_lines()

    def note(self, kind: str, message: str) -> None:
        if message not in self.notes[kind]:
            self.notes[kind].append(message)

    def _registration_lines(self) -> dict[tuple[str, str, tuple[str, ...]], deque[int]]:
        lines: dict[tuple[str, str, tuple[str, ...]], deque[int]] = defaultdict(deque)
        for registration in self.evidence.registrations:
            lines[(registration.path, registration.function, registration.names)].append(registration.line)
        return lines

    # -- which functions, which overloads

    def function(self, module: _Module, info: DefInfo) -> _Function | None:
        """The function's decisions, or None when the run does not touch it."""
        lines = [self._lines[(module.path, info.key.name, op.names)] for op in info.torch_ops]
        line = next((queue[0] for queue in lines if queue), 0)
        for queue in lines:
            if queue:
                queue.popleft()
        registered: list[str] = []
        is_complex = False
        for op in info.torch_ops:
            if op.private:
                continue
            for name in op.names:
                overload = self.evidence.resolved.get(name)
                if overload is not None and overload not in registered:
                    registered.append(overload)
                    is_complex |= op.complex and overload in self.plans
        planned = tuple(o for o in registered if o in self.plans and o in self.native.by_name)
        if not planned or (self.only is not None and not self.only & set(registered)):
            return None
        function = _Function(module, info, line, planned)
        function.docstring = self._docstring(info, planned)
        if is_complex:
            self.note(KEPT_COMPLEX, f"{function.where} ({', '.join(planned)}): complex=True, keeps its real-view annotations")
            return function
        self._classes(function)
        self._decide(function)
        return function

    def _docstring(self, info: DefInfo, planned: tuple[str, ...]) -> tuple[str, str] | None:
        if info.docstring is None:
            return None
        first = info.docstring.first_line
        text = first.strip()
        try:
            lowered = TypedSchema.parse(text).lowered()
        except SchemaError:
            return None
        for overload in planned:
            schema = self.native.by_name[overload].schema
            if schema.lowered() == lowered:
                typed = self.typed_schema(overload)
                start = first.index(text)
                new = first[:start] + typed + first[start + len(text) :]
                return (first, new) if new != first else None
        return None

    def typed_schema(self, overload: str) -> str:
        plain = TypedSchema.parse(self.native.by_name[overload].schema.lowered())
        tensors = {s.name for s in plain.tensor_slots}
        words = {slot: v.name for v in self.plans[overload].variables for slot in v.binds if slot in tensors}
        return plain.with_words(words)

    # -- classes: the declared constraint of the function

    def variable_dtypes(self, overload: str, variable: Variable) -> tuple[DType, ...] | None:
        """A variable's dtypes; an empty list stands for the global set of its name (None: there is none)."""
        if variable.dtypes:
            return variable.dtypes
        global_set = self.global_sets.get(variable.name)
        if global_set is None:
            self.note(GLOBAL_SET, f"{overload}: {variable.name} has no dtypes and names no global set; left as it is")
            return None
        return global_set.dtypes

    def _classes(self, function: _Function) -> None:
        info = function.info
        params = {p.name: p.annotation for p in info.params}
        slots: list[str] = []
        bound = _UnionFind()
        contributions: dict[str, list[tuple[str, Variable, tuple[DType, ...]]]] = defaultdict(list)
        free: set[str] = set()
        for overload in function.overloads:
            schema = self.native.by_name[overload].schema
            returns = [s for s in schema.slots if s.is_return]
            annotated = return_annotations(info.returns, len(returns))
            plan = self.plans[overload]
            mapped = []
            for slot in schema.tensor_slots:
                if slot.is_return:
                    if annotated is None:
                        continue
                    function.annotations[slot.name] = annotated[int(slot.name[len(RETURN_PREFIX) :])]
                    function.return_count = len(returns)
                elif slot.name in params:
                    function.annotations[slot.name] = params[slot.name]
                else:
                    continue
                mapped.append(slot.name)
                if slot.name not in slots:
                    slots.append(slot.name)
            for slot in mapped:
                variable = plan.variable_of(slot)
                dtypes = None if variable is None else self.variable_dtypes(overload, variable)
                if variable is None or dtypes is None:
                    free.add(slot)
                    continue
                contributions[slot].append((overload, variable, dtypes))
                bound.find(slot)
                for other in mapped:
                    if other != slot and other in variable.binds:
                        bound.union(slot, other)
        order = [s for s in self._slot_order(info, slots) if s in contributions or s in free]
        for group in bound.groups([s for s in order if s in contributions]):
            seen: dict[tuple[str, str], tuple[str, Variable, tuple[DType, ...]]] = {}
            for slot in group:
                for overload, variable, dtypes in contributions[slot]:
                    seen.setdefault((overload, variable.name), (overload, variable, dtypes))
            function.classes.append(_Class(group, list(seen.values()), any(s in free for s in group)))
        function.classes.extend(_Class([s], [], True) for s in order if s in free and s not in contributions)
        self._note_class_sources(function)

    @staticmethod
    def _slot_order(info: DefInfo, slots: list[str]) -> list[str]:
        """Parameters in signature order, then returns."""
        params = [p.name for p in info.params if p.name in slots]
        return params + sorted((s for s in slots if s.startswith(RETURN_PREFIX)), key=lambda s: int(s.split(".")[1]))

    def _note_class_sources(self, function: _Function) -> None:
        for cls in function.classes:
            for overload, variable, dtypes in cls.contributions:
                lost = tuple(d for d in dtypes if d.onnx is None)
                if lost:
                    self.note(DROPPED_NON_ONNX, f"{overload}: {variable.name} drops {format_set(lost)}: no ONNX type")
            sets = {_onnx(dtypes) for _, _, dtypes in cls.contributions}
            overloads = {o for o, _, _ in cls.contributions}
            per_overload = Counter(o for o, _, _ in cls.contributions)
            if len(sets) > 1 or any(n > 1 for n in per_overload.values()):
                declared = "; ".join(f"{o} {v.name} {format_set(_onnx(d))}" for o, v, d in cls.contributions)
                self.note(
                    UNION,
                    f"{function.where}: {', '.join(cls.slots)} serve {len(overloads)} overloads declared differently "
                    f"({declared}): annotated with their union {format_set(cls.onnx)}",
                )

    # -- safety: rewrite a component of tied slots only when the declaration is no wider

    def _decide(self, function: _Function) -> None:
        current = {slot: self.tree.resolve(function.module, a) for slot, a in function.annotations.items()}
        components = _UnionFind()
        for cls in function.classes:
            for slot in cls.slots:
                components.union(slot, cls.slots[0])
        by_label: dict[str, list[str]] = defaultdict(list)
        for slot in (s for c in function.classes for s in c.slots):
            constraint = current.get(slot)
            if constraint is not None and constraint.shared:
                by_label[constraint.label].append(slot)
        for tied in by_label.values():
            for slot in tied[1:]:
                components.union(slot, tied[0])
        class_of = {slot: cls for cls in function.classes for slot in cls.slots}
        all_slots = [s for c in function.classes for s in c.slots]
        for component in components.groups(all_slots):
            classes = list({id(class_of[s]): class_of[s] for s in component}.values())
            reasons = self._narrower(function, classes, current, by_label, class_of)
            constrained = [c for c in classes if not c.free]
            if not reasons:
                function.rewrite.extend(constrained)
            elif constrained:
                who = f"{function.where} ({', '.join(function.overloads)})"
                self.note(KEPT_NARROWER, f"{who} keeps its annotations: {'; '.join(reasons)}")

    def _narrower(
        self,
        function: _Function,
        classes: list[_Class],
        current: dict[str, Constraint | None],
        by_label: dict[str, list[str]],
        class_of: dict[str, _Class],
    ) -> list[str]:
        """Why the current annotations of these classes are narrower than declared (empty: they are not)."""
        reasons = []
        for cls in classes:
            if cls.free:
                continue
            if not cls.onnx:
                reasons.append(f"declared {format_set(cls.dtypes)} has no ONNX type")
                continue
            lacking: dict[tuple[str, tuple[DType, ...]], list[str]] = {}
            for slot in cls.slots:
                constraint = current.get(slot)
                annotation = function.annotations.get(slot)
                if annotation is not None and tensor_core(annotation) is None:
                    reasons.append(f"{slot}'s annotation {_code(annotation)} names no tensor type to replace")
                elif constraint is not None and constraint.dtypes is not None and not set(cls.onnx) <= set(constraint.dtypes):
                    missing = tuple(d for d in cls.onnx if d not in constraint.dtypes)
                    lacking.setdefault((constraint.label, missing), []).append(slot)
            for (label, missing), slots in lacking.items():
                declared = format_set(cls.onnx)
                reasons.append(f"{label} at {', '.join(slots)} lacks {format_set(missing)} of the declared {declared}")
        if any(c.free for c in classes) and any(not c.free for c in classes):
            free = [s for c in classes if c.free for s in c.slots]
            reasons.append(f"tied by a TypeVar to {', '.join(free)}, which the declaration leaves free")
        mine = {s for c in classes for s in c.slots}
        for label, tied in by_label.items():
            owners = {id(class_of[s]): class_of[s] for s in tied}
            if len(owners) < 2 or not set(tied) <= mine or any(c.free for c in owners.values()):
                continue
            sets = {c.onnx for c in owners.values()}
            if not (len(sets) == 1 and len(next(iter(sets))) == 1):  # one and the same dtype ties them anyway
                reasons.append(f"{label} ties {', '.join(tied)}, which the declaration does not")
        return reasons


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


# -- naming and applying, per module --------------------------------------------------------------


@dataclass
class _ModuleWork:
    module: _Module
    functions: list[_Function]
    specs: dict[str, TypeVarSpec] = field(default_factory=dict)
    imports: set[ImportRequest] = field(default_factory=set)
    replaced: set[str] = field(default_factory=set)  # names that were part of a replaced annotation core
    staying: set[str] = field(default_factory=set)  # names annotations use outside the slots rewritten


class _Namer:
    """Chooses the TypeVar of each rewritten class: the global set's, or a generated one."""

    def __init__(self, planner: _Planner, tree: _Tree):
        self.planner = planner
        self.tree = tree

    def name_module(self, work: _ModuleWork) -> None:
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

    def _names_staying(self, work: _ModuleWork) -> set[str]:
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

    def _bound_of(self, module: _Module, name: str) -> tuple[DType, ...] | None:
        constraint = self.tree.binding(module, name)
        return None if constraint is None else constraint.dtypes

    def _global_name(self, work: _ModuleWork, function: _Function, cls: _Class, avoid: set[str]) -> str | None:
        names = {v.name for _, v, _ in cls.contributions}
        if len(names) != 1:
            return None
        name = names.pop()
        global_set = self.planner.global_sets.get(name)
        if global_set is None or _onnx(global_set.dtypes) != cls.onnx or name in avoid:
            return None
        module = work.module
        fallback = f"{function.where} uses a generated TypeVar"
        if name in module.index.bound_names:
            bound = self._bound_of(module, name)
            if bound is not None and _onnx(bound) == cls.onnx:
                return name
            self.planner.note(GLOBAL_SET, f"{module.path} binds {name} to other dtypes than the global set; {fallback}")
            return None
        typing_module = self.tree.tensor_typing
        if typing_module is None:
            self.planner.note(GLOBAL_SET, f"no {TENSOR_TYPING}.py to define {name} in; {fallback}")
            return None
        if name in typing_module.index.bound_names:
            bound = self._bound_of(typing_module, name)
            if bound is None or _onnx(bound) != cls.onnx:
                self.planner.note(GLOBAL_SET, f"{typing_module.path}'s {name} has other dtypes than the global set; {fallback}")
                return None
        elif name not in self.planner.new_globals:
            self.planner.new_globals[name] = TypeVarSpec(name, _type_names(cls.onnx), global_set.desc)
            self.planner.note(GLOBAL_SET, f"added {name} {format_set(cls.onnx)} to {typing_module.path}")
        work.imports.add(ImportRequest(self.tree.absolute(typing_module), name))
        return name

    @staticmethod
    def _generated_name(
        work: _ModuleWork, function: _Function, cls: _Class, reserved: dict[str, tuple[DType, ...] | None], avoid: set[str]
    ) -> str:
        """``T_<overload>_<variable>`` (``T_<function>_<slot>`` for a union), numbered when the name means another set here."""
        bound = _type_names(cls.onnx)
        overload, variable, _ = cls.contributions[0]
        if all(_onnx(d) == cls.onnx for _, _, d in cls.contributions):
            base = f"T_{identifier(overload)}_{variable.name}"
        else:
            base = f"T_{function.info.key.name}_{identifier(cls.slots[0])}"
        for number in itertools.count(1):
            name = base if number == 1 else f"{base}_{number}"
            if name in avoid or (name in work.specs and work.specs[name].bound != bound):
                continue
            if name in reserved and (reserved[name] is None or _type_names(reserved[name]) != bound):
                continue
            break
        work.specs[name] = TypeVarSpec(name, bound)
        return name


def _type_names(dtypes: tuple[DType, ...]) -> tuple[str, ...]:
    return tuple(d.onnx for d in canonical(dtypes) if d.onnx is not None)


class _Applier:
    """Runs the transformers over one module and prints it."""

    def __init__(self, tree: _Tree):
        self.tree = tree

    def apply(self, work: _ModuleWork, global_specs: dict[str, TypeVarSpec] | None = None) -> bytes:
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
        if docstrings:
            rewriter = DocstringRewriter(docstrings)
            tree = tree.visit(rewriter)
            changed |= rewriter.changed
        block = self._generated_block(work, tree)
        if block is not None:
            tree = tree.visit(block)
            changed |= block.changed
        if global_specs:
            existing = frozenset(block_names(tree, GLOBAL_MARKER))
            globals_block = TypeVarBlock(GLOBAL_MARKER, list(global_specs.values()), existing, at_end=True)
            tree = tree.visit(globals_block)
            changed |= globals_block.changed
        needed = self._needed_imports(work, global_specs)
        if not changed and not needed:
            return module.data
        split = SplitModule.split(tree)
        removals = self._removals(work, split)
        context = CodemodContext(full_module_name=self.tree.absolute(module), full_package_name=self.tree.package_of(module))
        split = update_imports(split, context, needed, removals)
        return split.code.encode(tree.encoding)

    def _generated_block(self, work: _ModuleWork, tree: cst.Module) -> TypeVarBlock | None:
        existing = block_names(tree, GENERATED_MARKER)
        if not work.specs and not existing:
            return None
        keep = frozenset(n for n in existing if n in work.staying and n not in work.specs)
        return TypeVarBlock(GENERATED_MARKER, [work.specs[n] for n in sorted(work.specs)], keep)

    def _needed_imports(self, work: _ModuleWork, global_specs: dict[str, TypeVarSpec] | None) -> set[ImportRequest]:
        bound = work.module.index.bound_names
        needed = {r for r in work.imports if r.name not in bound}
        specs = [*work.specs.values(), *(global_specs or {}).values()]
        for spec in specs:
            wanted = ["TypeVar", *spec.bound] + (["Union"] if len(spec.bound) > 1 else [])
            for name in wanted:
                if name in bound:
                    continue
                module = TYPING if name in ("TypeVar", "Union") else self.tree.import_module_of(name)
                needed.add(ImportRequest(module, name))
        return needed

    def _removals(self, work: _ModuleWork, split: SplitModule) -> set[ImportRequest]:
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


# -- the run --------------------------------------------------------------------------------------


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """The parsed tree is millions of objects alive for the whole run, and garbage here is freed by
    reference counting; the cyclic collector would rescan that tree again and again (a fifth of the run)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rewrite_torchlib(
    evidence: TorchlibEvidence,
    plan: Plan,
    native: NativeFunctions,
    only: set[str] | None = None,
    cache_dir: Path | str | None = None,
) -> TorchlibRewrite:
    """Apply ``plan`` to the torchlib tree the evidence was scanned from (``only``: those overloads' functions).

    Only modules registering a planned overload are parsed; the rest are known from the scan's cache.
    """
    with _without_cyclic_gc():
        return _rewrite(evidence, plan, native, only, cache_dir)


def _rewrite(evidence: TorchlibEvidence, plan: Plan, native: NativeFunctions, only: set[str] | None, cache_dir) -> TorchlibRewrite:
    tree = _Tree(Path(evidence.root), cache_dir)
    if not tree.modules:
        raise InputError("no Python modules to rewrite", evidence.root)
    planner = _Planner(tree, evidence, plan, native, only)
    planned = {o.name for o in plan.overloads if only is None or o.name in only}
    touched = {r.path for name in planned for r in evidence.by_overload.get(name, ())}
    works = []
    for module in tree.modules.values():
        if module.path not in touched:
            continue
        functions = [f for f in (planner.function(module, info) for info in module.index.defs) if f is not None]
        if functions:
            works.append(_ModuleWork(module, functions))
    namer = _Namer(planner, tree)
    for work in works:
        namer.name_module(work)
    applier = _Applier(tree)
    files = []
    after_of = {}
    for work in works:
        after_of[work.module.path] = applier.apply(work, planner.new_globals if work.module is tree.tensor_typing else None)
    typing_module = tree.tensor_typing
    if planner.new_globals and typing_module is not None and typing_module.path not in after_of:
        after_of[typing_module.path] = applier.apply(_ModuleWork(typing_module, []), planner.new_globals)
    for path in sorted(after_of):
        before = tree.modules[path].data
        if after_of[path] != before:
            files.append((path, before, after_of[path]))
    functions = tuple(_record(w, f) for w in works for f in w.functions if f.rewrite)
    notes = tuple(f"{kind}: {message}" for kind in NOTE_KINDS for message in planner.notes[kind])
    return TorchlibRewrite(tuple(files), notes, functions)


def _record(work: _ModuleWork, function: _Function) -> RewrittenFunction:
    annotated = [(cls, slot) for cls in function.rewrite for slot in cls.slots if function.annotations.get(slot) is not None]
    slots = tuple(SlotTypeVar(slot, cls.typevar, cls.onnx) for cls, slot in annotated)
    return RewrittenFunction(work.module.path, function.info.key.name, function.line, function.overloads, slots, function.changed)
