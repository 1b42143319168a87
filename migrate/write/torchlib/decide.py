"""Deciding one function: which of its slots take which declared variable, and whether rewriting them is safe.

A function registered for several planned overloads takes, per slot, the union of their
sets; slots tied in any of them stay tied. A function keeps its annotations where they are
narrower than the declaration (a dtype it lacks, or two slots it ties that the declaration
does not), and ``complex=True`` functions keep their real-view annotations. A dtype leaves an
annotation only on proof and joins only on a real export (``narrowing``). Every such
decision the caller should know about is a note.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import libcst as cst

from codemods.annotations import return_annotations, tensor_core
from codemods.typevars import TypeVarSpec
from migrate.torchlib_source.resolve import Constraint, TorchlibEvidence
from migrate.model.dtypes import DType, canonical, format_set, opmath
from migrate.model.native import NativeFunctions
from migrate.model.plan import GlobalSet, OverloadPlan, Plan, Variable
from migrate.model.schema import RETURN_PREFIX, SchemaError, TypedSchema
from migrate.write.torchlib.module_index import DefInfo
from migrate.write.torchlib.narrowing import ANY_TENSOR, Change, ExportStatus, rejected_dtypes, settle, tied_statuses
from migrate.write.torchlib.tree import TorchlibModule, TorchlibTree

# Note kinds, in the order the notes are listed.
KEPT_NARROWER = "kept-narrower"
KEPT_COMPLEX = "kept-complex"
UNION = "union"
DROPPED_NON_ONNX = "dropped-non-onnx"
GLOBAL_SET = "global-set"
INLINE_SET = "inline-set"
DTYPE_REMOVED = "dtype-removed"
DTYPE_ADDED = "dtype-added"
NOTE_KINDS = (KEPT_NARROWER, KEPT_COMPLEX, UNION, DROPPED_NON_ONNX, GLOBAL_SET, INLINE_SET, DTYPE_REMOVED, DTYPE_ADDED)


class UnionFind:
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


def onnx_part(dtypes: Iterable[DType]) -> tuple[DType, ...]:
    return canonical(d for d in dtypes if d.onnx is not None)


@dataclass
class SlotClass:
    """Slots of one function that carry one dtype per call, with their declared dtypes."""

    slots: list[str]
    contributions: list[tuple[str, Variable, tuple[DType, ...]]]  # (overload, variable, its dtypes)
    free: bool  # some slot is a tensor nobody constrained in one of the overloads: any dtype
    typevar: str = ""  # chosen when the class is rewritten
    settled: tuple[DType, ...] | None = None  # the ONNX dtypes to write, when the narrowing rule changed the declared ones
    added: tuple[Change, ...] = ()
    removed: tuple[Change, ...] = ()

    @property
    def dtypes(self) -> tuple[DType, ...]:
        return canonical(d for _, _, dtypes in self.contributions for d in dtypes)

    @property
    def onnx(self) -> tuple[DType, ...]:
        """The ONNX dtypes its annotation says: the declared ones, or those the narrowing rule settled."""
        return onnx_part(self.dtypes) if self.settled is None else self.settled


@dataclass
class FunctionDecision:
    """One function's decisions: its slots, classes, what is rewritten, what is said about it."""

    module: TorchlibModule
    info: DefInfo
    line: int
    overloads: tuple[str, ...]  # planned overloads it is registered for, in registration order
    annotations: dict[str, cst.BaseExpression | None] = field(default_factory=dict)  # slot -> annotation
    return_count: int = 0
    classes: list[SlotClass] = field(default_factory=list)
    rewrite: list[SlotClass] = field(default_factory=list)  # classes whose slots take TypeVars
    docstring: tuple[str, str] | None = None
    changed: bool = False  # whether the run changes its annotations' text

    @property
    def where(self) -> str:
        return f"{self.module.path}:{self.line} {self.info.key.name}"


class AnnotationDecider:
    def __init__(
        self,
        tree: TorchlibTree,
        evidence: TorchlibEvidence,
        plan: Plan,
        native: NativeFunctions,
        only: set[str] | None,
        exported: Mapping[str, tuple[ExportStatus, ...]] | None = None,
    ):
        self.tree = tree
        self.exported = exported or {}  # per overload, export-check's cases
        self.evidence = evidence
        self.native = native
        self.only = only
        self.plans: dict[str, OverloadPlan] = {o.name: o for o in plan.overloads}
        self.global_sets: dict[str, GlobalSet] = {g.name: g for g in plan.global_sets}
        # torchlib's own TypeVars first (shortest name, then first by name), then the yaml's global sets: a rewrite
        # speaks torchlib's names (TFloat), the yaml its grammar's (TFloatingAndHalfBFloat16)
        torchlib = sorted(evidence.global_sets, key=lambda g: (len(g.name), g.name), reverse=True)
        by_name = sorted(plan.global_sets, key=lambda g: g.name, reverse=True)
        self._by_dtypes = {g.dtypes: g for g in (*by_name, *torchlib)}
        self._by_onnx = {onnx_part(g.dtypes): g for g in (*by_name, *torchlib)}
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

    def named_set(self, cls: SlotClass) -> GlobalSet | None:
        """The global set a class is annotated with: of its very dtypes, else the first by name of its ONNX dtypes."""
        very = self._by_dtypes.get(cls.dtypes) if cls.settled is None or cls.settled == onnx_part(cls.dtypes) else None
        return very or self._by_onnx.get(cls.onnx)

    # -- which functions, which overloads

    def function(self, module: TorchlibModule, info: DefInfo) -> FunctionDecision | None:
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
        function = FunctionDecision(module, info, line, planned)
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
        """A variable's dtypes; an empty list stands for the global set of its name (None: there is none).

        A variable that follows others takes its own dtypes and theirs (or the dtypes theirs compute in), one set
        by a ``ScalarType`` argument also every dtype the argument may name: ONNX type constraints cannot say "the
        dtype of that input" or "the dtype that argument names", so torchlib gets the union.
        """
        if variable.listed:
            others = self.plans[overload].variables
            theirs = [self.variable_dtypes(overload, v) for v in others if v.name in variable.follows]
            computed = [self.variable_dtypes(overload, v) for v in others if v.name in variable.opmath]
            if None in theirs or None in computed:
                return None
            named = variable.argument.dtypes if variable.argument is not None else ()
            named += tuple(d for e in variable.exceptions for d in e.dtypes)  # a path a condition names
            return canonical(variable.dtypes + named + tuple(d for dtypes in theirs for d in dtypes) + tuple(opmath(d) for dtypes in computed for d in dtypes))
        if variable.dtypes:
            return variable.dtypes
        global_set = self.global_sets.get(variable.name)
        if global_set is None:
            self.note(GLOBAL_SET, f"{overload}: {variable.name} has no dtypes and names no global set; left as it is")
            return None
        return global_set.dtypes

    def _classes(self, function: FunctionDecision) -> None:
        info = function.info
        params = {p.name: p.annotation for p in info.params}
        slots: list[str] = []
        bound = UnionFind()
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
            function.classes.append(SlotClass(group, list(seen.values()), any(s in free for s in group)))
        function.classes.extend(SlotClass([s], [], True) for s in order if s in free and s not in contributions)
        self._note_class_sources(function)

    @staticmethod
    def _slot_order(info: DefInfo, slots: list[str]) -> list[str]:
        """Parameters in signature order, then returns."""
        params = [p.name for p in info.params if p.name in slots]
        return params + sorted((s for s in slots if s.startswith(RETURN_PREFIX)), key=lambda s: int(s.split(".")[1]))

    def _note_class_sources(self, function: FunctionDecision) -> None:
        for cls in function.classes:
            for overload, variable, dtypes in cls.contributions:
                lost = tuple(d for d in dtypes if d.onnx is None)
                if lost:
                    self.note(DROPPED_NON_ONNX, f"{overload}: {variable.name} drops {format_set(lost)}: no ONNX type")
            sets = {onnx_part(dtypes) for _, _, dtypes in cls.contributions}
            overloads = {o for o, _, _ in cls.contributions}
            per_overload = Counter(o for o, _, _ in cls.contributions)
            if len(sets) > 1 or any(n > 1 for n in per_overload.values()):
                declared = "; ".join(f"{o} {v.name} {format_set(onnx_part(d))}" for o, v, d in cls.contributions)
                self.note(
                    UNION,
                    f"{function.where}: {', '.join(cls.slots)} serve {len(overloads)} overloads declared differently "
                    f"({declared}): annotated with their union {format_set(cls.onnx)}",
                )

    # -- safety: rewrite a component of tied slots only when the declaration is no wider

    def _decide(self, function: FunctionDecision) -> None:
        current = {slot: self.tree.resolve(function.module, a) for slot, a in function.annotations.items()}
        components = UnionFind()
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
            for cls in classes:
                if not cls.free:
                    self._settle(function, cls, current)
            reasons = self._narrower(function, classes, current, by_label, class_of)
            constrained = [c for c in classes if not c.free]
            unnamed = [c for c in constrained if len(c.onnx) > 1 and self.named_set(c) is None]
            if not reasons and unnamed:
                sets = "; ".join(f"{', '.join(c.slots)} {format_set(c.dtypes)}" for c in unnamed)
                self.note(INLINE_SET, f"{function.where} keeps its annotations: no global set names the declared {sets}")
            elif not reasons:
                function.rewrite.extend(constrained)
            elif constrained:
                who = f"{function.where} ({', '.join(function.overloads)})"
                self.note(KEPT_NARROWER, f"{who} keeps its annotations: {'; '.join(reasons)}")

    def _settle(self, function: FunctionDecision, cls: SlotClass, current: dict[str, Constraint | None]) -> None:
        """The class's annotation under the narrowing rule: a dtype leaves on an export failure or ATen's
        rejection, joins on an export that works; without export results, a declaration wider than the
        annotation keeps it as today. With them, a class no case checks (returns only, an overload no
        sample reaches) keeps its original dtypes: a dtype joins only on an export that works."""
        claims = [c.dtypes for s in cls.slots if (c := current.get(s)) is not None]
        if not claims:  # unannotated: as today
            return
        original = set.intersection(*[set(onnx_part(ANY_TENSOR if c is None else c)) for c in claims])
        declared = set(cls.onnx)
        if not self.exported and not declared <= original:
            return
        exported = self._exported(function, cls)
        rejected: dict[DType, str] | None = None
        for _, variable, _ in cls.contributions:  # a dtype leaves only when every overload the function serves refuses it
            refused = rejected_dtypes(variable)
            rejected = refused if rejected is None else {d: m for d, m in rejected.items() if d in refused}
        settled = settle(declared, original, exported, rejected or {})
        cls.settled, cls.added, cls.removed = settled.dtypes, settled.added, settled.removed

    def _exported(self, function: FunctionDecision, cls: SlotClass) -> dict[DType, tuple[str, str, str]]:
        """Per dtype, the verdict of the class's slots (several overloads combined) by the calls that ran the function."""
        declared = {overload: [v.binds for v in self.plans[overload].variables] for overload, _, _ in cls.contributions}
        return tied_statuses(self.exported, cls.slots, declared, function.info.key.name)

    @staticmethod
    def _lacking(cls: SlotClass, dtypes: tuple[DType, ...]) -> tuple[DType, ...]:
        """The class's dtypes an annotation of ``dtypes`` lacks (those a real export adds are not lacking)."""
        added = {change.dtype for change in cls.added}
        return tuple(d for d in cls.onnx if d not in dtypes and d not in added)

    def note_changes(self, function: FunctionDecision) -> None:
        """A note per dtype a rewritten annotation lost or gained, with why."""
        for cls in function.rewrite:
            for kind, changes in ((DTYPE_REMOVED, cls.removed), (DTYPE_ADDED, cls.added)):
                for change in changes:
                    self.note(kind, f"{function.where} ({', '.join(function.overloads)}) {', '.join(cls.slots)}: {change.dtype} ({change.why})")

    def _narrower(
        self,
        function: FunctionDecision,
        classes: list[SlotClass],
        current: dict[str, Constraint | None],
        by_label: dict[str, list[str]],
        class_of: dict[str, SlotClass],
    ) -> list[str]:
        """Why the current annotations of these classes are narrower than declared (empty: they are not)."""
        reasons = []
        for cls in classes:
            if cls.free:
                continue
            if not cls.onnx:
                no_onnx = f"declared {format_set(cls.dtypes)} has no ONNX type"
                reasons.append(no_onnx if cls.settled is None else f"no dtype of {', '.join(cls.slots)} exports or is kept")
                continue
            lacking: dict[tuple[str, tuple[DType, ...]], list[str]] = {}
            for slot in cls.slots:
                constraint = current.get(slot)
                annotation = function.annotations.get(slot)
                if annotation is not None and tensor_core(annotation) is None:
                    reasons.append(f"{slot}'s annotation {code_of(annotation)} names no tensor type to replace")
                elif constraint is not None and constraint.dtypes is not None and (missing := self._lacking(cls, constraint.dtypes)):
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


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
