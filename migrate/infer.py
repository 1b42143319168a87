"""Inference: evidence from every source merged into one plan.

Each source speaks per overload in plan terms (``OverloadPlan``s). The merge is
plain data work: OpInfo observations say what ATen accepts and win where present;
probing (``migrate.evidence.probe.merge``) re-cuts the observed variables where ATen accepted their
slots apart or needs them together, and widens them by what ATen accepted when
called directly (each slot keeps its own observed evidence); torchlib fills the slots
nobody observed; dtypes OpInfos declare for other devices widen an observed variable;
dtypes torchlib's trace-only bodies test a parameter for are attached as evidence; an
overload's in-place and out= siblings with no evidence of their own take its
constraints (provenance ``groups``). Disagreements become conflicts. Names are given
last, deterministically.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from migrate.evidence.probe.merge import split_and_joined
from migrate.model.dtypes import DType, canonical, format_set
from migrate.model.native import NativeFunctions
from migrate.model.plan import DECLARED, GROUPS, OPINFO, Conflict, Evidence, GlobalSet, OverloadPlan, Plan, Variable
from migrate.model.schema import TypedSchema

_LETTERS = "TUVWXYZ"


@dataclass(frozen=True)
class Sources:
    """The evidence a run has, per overload, from each source it was asked to use."""

    torchlib: Mapping[str, OverloadPlan]
    opinfo: Mapping[str, OverloadPlan]
    global_sets: tuple[GlobalSet, ...]
    groups: bool = True  # let in-place/out= siblings take their functional overload's constraints
    probe: Mapping[str, OverloadPlan] = field(default_factory=dict)  # migrate.evidence.probe.merge.probe_plans_from_sweep
    torchlib_handled: Mapping[str, tuple[Evidence, ...]] = field(default_factory=dict)  # TorchlibEvidence.handled


def _observed(variable: Variable) -> Variable:
    """An observed variable, widened by the dtypes OpInfos declare for other devices."""
    declared = [d for e in variable.evidence if e.source == DECLARED for d in e.dtypes]
    if not declared:
        return variable
    return Variable(variable.name, canonical(variable.dtypes + tuple(declared)), variable.binds, variable.evidence)


def _compare(torchlib: Variable, observed: list[Variable]) -> list[Conflict]:
    """torchlib narrower than ATen is an export coverage gap; wider is worth a note."""
    seen = canonical(d for v in observed for d in v.dtypes)
    slots = tuple(s for v in observed for s in v.binds if s in torchlib.binds)
    conflicts = []
    missing = tuple(d for d in seen if d not in torchlib.dtypes and d.onnx is not None)
    if missing:
        message = f"torchlib's {torchlib.name} at {', '.join(slots)} lacks {format_set(missing)}, which ATen accepts: an export coverage gap"
        conflicts.append(Conflict("export-coverage-gap", slots, missing, message))
    extra = tuple(d for d in torchlib.dtypes if d not in seen)
    if extra:
        message = f"torchlib's {torchlib.name} at {', '.join(slots)} also allows {format_set(extra)}, never observed"
        conflicts.append(Conflict("torchlib-wider", slots, extra, message))
    return conflicts


def _probed(observed: list[Variable], probe: OverloadPlan) -> list[Variable]:
    """The observed variables re-cut to the probed ones, each slot keeping its own observed and declared evidence.

    A probed variable's dtypes already hold everything observed at its slots; observed
    slots no probed variable binds keep their observed variable.
    """
    variables, covered = [], set()
    for probed in probe.variables:
        dtypes, evidence = set(probed.dtypes), []
        for variable in observed:
            for piece in variable.evidence:
                shared = tuple(s for s in piece.slots if s in probed.binds)
                if shared:
                    evidence.append(replace(piece, slots=shared))
                    if piece.source in (OPINFO, DECLARED):
                        dtypes.update(piece.dtypes)
        variables.append(Variable(probed.name, tuple(dtypes), probed.binds, tuple(evidence) + probed.evidence))
        covered.update(probed.binds)
    for variable in observed:
        rest = tuple(s for s in variable.binds if s not in covered)
        if rest:
            evidence = tuple(e for e in variable.evidence if not e.slots or set(e.slots) & set(rest))
            variables.append(Variable(variable.name, variable.dtypes, rest, evidence))
    return variables


def _attach(variables: list[Variable], handled: tuple[Evidence, ...]) -> list[Variable]:
    """Evidence that torchlib handles some dtypes at a slot, added to the variable binding that slot (never widening it)."""
    attached = []
    for variable in variables:
        extra = tuple(e for e in handled if set(e.slots) & set(variable.binds))
        attached.append(replace(variable, evidence=variable.evidence + extra) if extra else variable)
    return attached


def merge_overload(
    name: str,
    torchlib: OverloadPlan | None,
    opinfo: OverloadPlan | None,
    probe: OverloadPlan | None = None,
    handled: tuple[Evidence, ...] = (),
) -> OverloadPlan:
    """One overload's variables from its sources (names are still the sources' own)."""
    variables = [_observed(v) for v in opinfo.variables] if opinfo else []
    conflicts = list(opinfo.conflicts) if opinfo else []
    if probe is not None:
        conflicts += split_and_joined(tuple(variables), probe.variables)
        variables = _probed(variables, probe)
        conflicts += probe.conflicts
    observed_slots = {s for v in variables for s in v.binds}
    for variable in torchlib.variables if torchlib else ():
        overlapping = [v for v in variables if set(v.binds) & set(variable.binds)]
        conflicts += _compare(variable, overlapping) if overlapping else []
        rest = tuple(s for s in variable.binds if s not in observed_slots)
        if rest:
            evidence = tuple(e for e in variable.evidence if not e.slots or set(e.slots) & set(rest))
            variables.append(Variable(variable.name, variable.dtypes, rest, evidence))
    if torchlib:
        conflicts += torchlib.conflicts
    return OverloadPlan(name, tuple(_attach(variables, handled)), tuple(conflicts))


def _sibling_slot(slot: str, sibling: TypedSchema, functional: TypedSchema) -> tuple[str, ...]:
    """Where a functional overload's slot stands in a sibling: same argument, or the return and its out= argument."""
    if not slot.startswith("return."):
        own = sibling.slot(slot)
        return (slot,) if own is not None and own.is_tensor else ()
    index = int(slot.split(".")[1])
    found = []
    if sibling.slot(slot) is not None and sibling.slot(slot).is_tensor:
        found.append(slot)
    names = {s.name for s in functional.slots}
    outs = [s.name for s in sibling.slots if not s.is_return and s.is_tensor and "!" in s.alias and s.name not in names]
    if index < len(outs):
        found.append(outs[index])
    return tuple(found)


def group_siblings(native: NativeFunctions, plans: dict[str, OverloadPlan]) -> dict[str, OverloadPlan]:
    """Plans for in-place / out= / mutable siblings that have no evidence, from their functional overload."""
    taken: dict[str, OverloadPlan] = {}
    for name, plan in sorted(plans.items()):
        group = native.groups.get(name)
        if group is None or name not in group.of_kind("functional") or not plan.variables:
            continue
        functional = native.by_name[name].schema
        for sibling_name in group.names:
            if sibling_name == name or plans.get(sibling_name, OverloadPlan(sibling_name, ())).variables:
                continue
            sibling = native.by_name[sibling_name].schema
            variables = []
            for variable in plan.variables:
                binds = tuple(s for slot in variable.binds for s in _sibling_slot(slot, sibling, functional))
                if binds:
                    evidence = (Evidence(GROUPS, f"from {name}", variable.dtypes, binds),)
                    variables.append(Variable(variable.name, variable.dtypes, binds, evidence))
            if variables:
                taken[sibling_name] = OverloadPlan(sibling_name, tuple(variables))
    return taken


def name_variables(plan: OverloadPlan, schema: TypedSchema, global_sets: tuple[GlobalSet, ...]) -> OverloadPlan:
    """Global set names where a variable's set equals one no other variable of the entry has; else T, U, V, ..."""
    order = {slot.name: i for i, slot in enumerate(schema.slots)}
    variables = sorted(plan.variables, key=lambda v: min(order[s] for s in v.binds))
    set_names: dict[tuple[DType, ...], str] = {}
    for global_set in global_sets:  # of sets with equal dtypes, the first listed names them
        set_names.setdefault(global_set.dtypes, global_set.name)
    counts: dict[tuple[DType, ...], int] = {}
    for variable in variables:
        counts[variable.dtypes] = counts.get(variable.dtypes, 0) + 1
    reserved = {g.name for g in global_sets}
    letters = iter(list(_LETTERS) + [f"T{i}" for i in range(1, 100)])
    named = []
    for variable in variables:
        name = set_names.get(variable.dtypes) if counts[variable.dtypes] == 1 else None
        if name is None:
            name = next(n for n in letters if n not in reserved)
        named.append(Variable(name, variable.dtypes, tuple(sorted(variable.binds, key=order.__getitem__)), variable.evidence))
    return OverloadPlan(plan.name, tuple(named), plan.conflicts)


def infer_plan(native: NativeFunctions, sources: Sources, only: set[str] | None = None) -> Plan:
    """The plan for every overload of the file (or only those named), from the sources given."""
    names = [e.name for e in native.entries]
    merged = {}
    for name in names:
        torchlib, opinfo, probe = sources.torchlib.get(name), sources.opinfo.get(name), sources.probe.get(name)
        if torchlib or opinfo or probe:
            merged[name] = merge_overload(name, torchlib, opinfo, probe, sources.torchlib_handled.get(name, ()))
    if sources.groups:
        merged.update(group_siblings(native, merged))
    overloads = []
    for name in names:
        if only is not None and name not in only:
            continue
        plan = merged.get(name)
        if plan is not None and plan.variables:
            overloads.append(name_variables(plan, native.by_name[name].schema, sources.global_sets))
    return Plan(sources.global_sets, tuple(overloads))
