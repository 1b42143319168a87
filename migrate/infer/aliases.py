"""Alias overloads take the constraints of the overload they stand for (provenance ``aliases``).

Which overload that is, slot by slot, is the evidence's (``migrate.evidence.opinfo.aliases``): an alias such as ``clip``
or ``__and__.Tensor`` forwards to ``clamp`` or ``bitwise_and.Tensor`` before the kernels the recorders see, so
samples never show it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from migrate.evidence.opinfo.aliases import AliasOf
from migrate.model.plan import ALIASES, Evidence, OverloadPlan
from migrate.model.promotion import Promotion


def alias_plans(aliases: Mapping[str, AliasOf], plans: Mapping[str, OverloadPlan]) -> dict[str, OverloadPlan]:
    """Plans for alias overloads from their target's plan, slot by slot: an OpInfo alias (``arccos``, ``clip``) is
    another name of its target's operator and declares what the target declares, its ``type_promotion:`` included,
    whatever its own samples showed; a kernel that forwards to another takes the target's only where no evidence of
    its own speaks, and the target's promotion where each promoting argument is one of its own (``__and__.Scalar``
    promotes as ``bitwise_and.Scalar``).

    An alias slot carried into two of the target's variables would need both: such an alias is left alone.
    """
    taken = {}
    for alias, of in sorted(aliases.items()):
        plan = plans.get(of.target)
        own = plans.get(alias)
        if plan is None or not plan.variables or (not of.same_operator and own is not None and own.variables):
            continue
        variables = []
        for variable in plan.variables:
            binds = tuple(dict.fromkeys(a for a, t in of.slots if t in variable.binds))
            if binds:
                evidence = (Evidence(ALIASES, of.why, variable.dtypes, binds),)
                variables.append(replace(variable, binds=binds, evidence=evidence))
        bound = [slot for v in variables for slot in v.binds]
        if variables and len(bound) == len(set(bound)):
            promotion = plan.promotion if of.same_operator else _forwarded(plan.promotion, of)
            carried = plan.followed_within(variables, same_schema=alias == of.target)  # an OpInfo alias of its own overload keeps its arguments
            taken[alias] = OverloadPlan(alias, carried, own.conflicts if own is not None else (), promotion=promotion)
    return taken


def _forwarded(promotion: Promotion | None, of: AliasOf) -> Promotion | None:
    """The target's promotion in the forwarding overload's argument names, where each promoting argument is passed on
    from exactly one of them (a tensor slot, or a Scalar of the same name); else None."""
    if promotion is None:
        return None
    pairs = (*of.slots, *of.numbers)
    mapped = [[a for a, t in pairs if t == arg] for arg in promotion.args]
    if any(len(names) != 1 for names in mapped) or len({names[0] for names in mapped}) != len(mapped):
        return None
    return Promotion(promotion.kind, tuple(names[0] for names in mapped))
