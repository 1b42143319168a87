"""Each overload's evidence merged into its variables: the runtime sources re-cut by the probe, torchlib filling
the slots they leave, the slots a probe fact says follow another variable. The rules, and what counts as
evidence, are stated once, in docs/evidence.md. Names are still the sources' own (``migrate.infer.naming``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from migrate.evidence.probe.follows import Follows
from migrate.infer.probe_conflicts import split_and_joined
from migrate.model.constraint import follows_problem
from migrate.model.dtypes import DType, canonical, format_set, opmath
from migrate.model.plan import DECLARED, OPINFO, Conflict, Evidence, OverloadPlan, Variable
from migrate.model.verdict import names_a_dtype


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


def refused_without_companions(variable: Variable) -> set[DType]:
    """Dtypes ATen refused at every input slot of the variable, by a message naming a dtype, in calls whose other
    arguments held no tensor, only Python numbers, and no other evidence accepted: the dtype itself was refused,
    not a companion beside it or the call's data (``bitwise_and.Scalar(float32 tensor, 1)``: ``"bitwise_and_cpu"
    not implemented for 'Float'``; ``lstm``'s built call at float64 takes another path, refused with ``t() expects
    a tensor with <= 2 dimensions``, which names none)."""
    inputs = {s for s in variable.binds if not s.startswith("return.")}
    refused, accepted = set(), set()
    for piece in variable.evidence:
        if not piece.refused:
            accepted.update(piece.dtypes)
        elif (site := piece.verdict.site).cast and inputs <= set(site.cast) and not site.beside:
            refused.update(d for d, message in piece.messages.items() if names_a_dtype(message))
    return refused - accepted


def _widened_by(variables: list[Variable], torchlib: OverloadPlan, returns_complete: bool) -> list[Variable]:
    """Each variable with the dtypes (and evidence) of the torchlib variables sharing a slot with it, but those
    ATen refused at its inputs in a call with no other tensor (no data or companion to blame).

    With ``returns_complete`` (no number or ``ScalarType`` argument may set a return), a variable of returns alone is
    what the accepted calls returned, their inputs cast to every dtype: torchlib's annotation there says what its own
    function gives (``embedding_bag``'s index outputs annotated ``TFloat``), so it is kept as it is."""
    widened = []
    for variable in variables:
        if returns_complete and all(slot.startswith("return.") for slot in variable.binds):
            widened.append(variable)
            continue
        dtypes, evidence = set(variable.dtypes), list(variable.evidence)
        refused = refused_without_companions(variable)
        for theirs in torchlib.variables:
            shared = set(theirs.binds) & set(variable.binds)
            if shared:
                dtypes.update(d for d in theirs.dtypes if d not in refused)
                evidence += [replace(e, slots=tuple(s for s in e.slots if s in shared)) for e in theirs.evidence if shared & set(e.slots)]
        widened.append(Variable(variable.name, canonical(dtypes), variable.binds, tuple(evidence)))
    return widened


def merge_overload(
    name: str,
    torchlib: OverloadPlan | None,
    opinfo: OverloadPlan | None,
    probe: OverloadPlan | None = None,
    handled: tuple[Evidence, ...] = (),
    schema_call: OverloadPlan | None = None,
    returns_complete: bool = False,
) -> OverloadPlan:
    """One overload's variables from its sources (names are still the sources' own).

    ``schema_call``, for an overload no sample reached, is probed like ``probe``; but ATen may
    have refused such a call for its data, so torchlib's dtypes at its slots widen it (``_widened_by``).
    """
    variables = [_observed(v) for v in opinfo.variables] if opinfo else []
    conflicts = list(opinfo.conflicts) if opinfo else []
    if probe is not None:
        conflicts += split_and_joined(tuple(variables), probe.variables)
        variables = _probed(variables, probe)
        conflicts += probe.conflicts
    if schema_call is not None:
        variables = list(schema_call.variables)
    from_runtime = len(variables)  # torchlib fills the slots after these
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
        if schema_call is not None:
            variables = _widened_by(variables[:from_runtime], torchlib, returns_complete) + variables[from_runtime:]
    return OverloadPlan(name, tuple(_attach(variables, handled)), tuple(conflicts))


def with_follows(plan: OverloadPlan, facts: Iterable[Follows]) -> OverloadPlan:
    """The plan with each variable a probe fact says follows another variable made to follow it: a variable whose
    inputs are exactly the fact's slots (its returns had their dtype in every call: ``native_layer_norm``'s mean).

    Its own dtypes are those ATen accepted beside every dtype of the other, and any it had that neither
    gives (nothing is narrowed); a fact whose slots the plan groups otherwise, or that would make
    variables follow each other in a cycle, changes nothing. A fact that follows the other's computation
    dtype makes it take that too (``opmath``).
    """
    variables = list(plan.variables)
    names = [v.name for v in variables]
    for fact in facts:
        follower = next((v for v in variables if fact.slots[0] in v.binds), None)
        holding = [v for slot in fact.on for v in variables if slot in v.binds]  # the variable of each slot followed
        if follower is None or len(holding) != len(fact.on) or len({id(v) for v in holding}) != 1:
            continue
        if {s for s in follower.binds if not s.startswith("return.")} != set(fact.slots):
            continue
        target = holding[0]
        if target is follower or names.count(target.name) != 1:
            continue
        given = {*target.dtypes, *(map(opmath, target.dtypes) if fact.opmath else ())}
        own = canonical(fact.dtypes + tuple(d for d in follower.dtypes if d not in given))
        if set(target.dtypes) <= set(own):
            continue  # it takes every dtype of the other anyway
        computed = follower.opmath + ((target.name,) if fact.opmath else ())
        made = Variable(follower.name, own, follower.binds, follower.evidence + (fact.evidence,), follower.follows + (target.name,), opmath=computed)
        trial = [made if v is follower else v for v in variables]
        if follows_problem({v.name: v.depends_on for v in trial}) is None:
            variables = trial
    return replace(plan, variables=tuple(variables))
