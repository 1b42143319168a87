"""What the file's structure ties: in-place, out= and mutable siblings take their functional overload's
constraints where they have no evidence of their own (aliases take their target's: ``migrate.infer.aliases``),
but for a return their own calls fixed at one dtype."""

from __future__ import annotations

from dataclasses import replace

from migrate.evidence.gather import Sources
from migrate.infer.own_calls import fixed_returns, with_fallback, with_inputs_read_as_the_functional, with_what_the_functional_returns, written_by_own_calls
from migrate.infer.verdicts import with_verdicts
from migrate.model.native import NativeFunctions
from migrate.model.plan import GROUPS, Evidence, OverloadPlan, Variable
from migrate.model.schema import TypedSchema


def sibling_slot(slot: str, sibling: TypedSchema, functional: TypedSchema) -> tuple[str, ...]:
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
    """Plans for in-place / out= / mutable siblings from their functional overload, at the slots no evidence of
    their own speaks for (all of them for a sibling no call reached; see ``migrate.infer.own_calls``)."""
    taken: dict[str, OverloadPlan] = {}
    for name, plan in sorted(plans.items()):
        group = native.groups.get(name)
        if group is None or name not in group.of_kind("functional") or not plan.variables:
            continue
        functional = native.by_name[name].schema
        read = {slot: frozenset(v.verdicts.accepted) for v in plan.variables if v.verdicts is not None for slot in v.binds if not slot.startswith("return.")}
        for sibling_name in group.names:
            if sibling_name == name:
                continue
            sibling = native.by_name[sibling_name].schema
            covered = {s for variable in plan.variables for slot in variable.binds for s in sibling_slot(slot, sibling, functional)}
            own = written_by_own_calls(plans.get(sibling_name, OverloadPlan(sibling_name, ())), sibling, covered)
            if sibling_name in group.of_kind("out"):
                own = with_inputs_read_as_the_functional(own, sibling, read)
                returned = {s: v for v in plan.variables for slot in v.binds if slot.startswith("return.") for s in sibling_slot(slot, sibling, functional)}
                own = with_what_the_functional_returns(own, returned)
            bound = {s for v in own.variables for s in v.binds}
            variables = []
            for variable in plan.variables:
                binds = tuple(s for slot in variable.binds for s in sibling_slot(slot, sibling, functional) if s not in bound)
                if binds:
                    evidence = (Evidence(GROUPS, f"from {name}", variable.dtypes, binds),)
                    variables.append(replace(variable, binds=binds, evidence=evidence))
            if variables:
                variables = _following_own(plan, own, variables, sibling, functional)
                taken[sibling_name] = with_fallback(own, plan.followed_within(variables, others={v.name for v in own.variables}))
            elif own != plans.get(sibling_name, own):
                taken[sibling_name] = own
    return taken


def _following_own(plan: OverloadPlan, own: OverloadPlan, carried: list[Variable], sibling: TypedSchema, functional: TypedSchema) -> list[Variable]:
    """The carried variables, each that follows a variable not carried made to follow the sibling's own variable at
    that variable's slots (one kernel: ``index_put_``'s values follow its own ``self`` as ``index_put``'s do); one whose
    followed slots the sibling binds otherwise is left as it is."""
    names = {v.name for v in carried}
    own_at = {slot: v.name for v in own.variables for slot in v.binds}
    by_name = {v.name: v for v in plan.variables}

    def target(name: str) -> str | None:
        if name in names:
            return name
        held = {own_at.get(s) for slot in by_name[name].binds for s in sibling_slot(slot, sibling, functional)}
        return held.pop() if len(held) == 1 and not held & ({None} | names) else None  # a carried name would be renamed

    found = []
    for variable in carried:
        follows, computed = [target(n) for n in variable.follows], [target(n) for n in variable.opmath]
        found.append(variable if None in follows or None in computed else replace(variable, follows=tuple(follows), opmath=tuple(computed)))
    return found


def tied_by_structure(native: NativeFunctions, sources: Sources) -> set[str]:
    """Overloads that take another's constraints when they have none of their own: aliases, and in-place and
    out= siblings of a functional overload. Calls built from their schemas do not speak for them: whether they
    do must not depend on what else typed them (torchlib's annotations among it, which a run rewrites)."""
    tied = {name for name in sources.aliases if name in sources.schema_calls}
    if sources.groups:
        for name in sources.schema_calls:
            group = native.groups.get(name) if name in native.by_name else None
            if group is not None and group.of_kind("functional") and name not in group.of_kind("functional"):
                tied.add(name)
    return tied


def with_fixed_returns(native: NativeFunctions, plans: dict[str, OverloadPlan], sources: Sources) -> dict[str, OverloadPlan]:
    """Plans whose returns their own calls fixed at one dtype (``migrate.infer.own_calls.fixed_returns``) where
    structure gave those returns another variable: such a return takes a variable of that dtype alone.

    ``_cast_Byte`` forwards to ``_to_copy``, whose return its ``dtype`` argument sets, so as an alias its
    return took every dtype; its own calls, ``self`` cast to all 21, returned uint8 each time.
    """
    taken = {}
    for name, plan in sorted(plans.items()):
        own = sources.probe.get(name) or sources.schema_calls.get(name)
        fixed = fixed_returns(own, native.by_name[name].schema) if own is not None else ()
        fixed = tuple(v for v in fixed if not any(v.binds == mine.binds and v.dtypes == mine.dtypes for mine in plan.variables))
        if not fixed:
            continue
        returns = {slot for v in fixed for slot in v.binds}
        rest = plan.kept({slot for v in plan.variables for slot in v.binds} - returns)
        verdicts = with_verdicts(OverloadPlan(name, fixed), native.has_cpu_kernel(native.by_name[name]))
        taken[name] = with_fallback(rest, verdicts.variables)
    return taken
