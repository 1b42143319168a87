"""One kernel, one claim: OpInfo's claims for a device no call ran on speak for the whole kernel family.

A functional overload, its in-place and its out= siblings (torchgen's group of one signature) run one kernel per
backend. OpInfo claims dtypes for CUDA through the functional's samples only (complex32 ``cos``), so a sibling whose
own calls typed it lacked them, and ``cos_`` and ``cos.out`` refused on CUDA what ``cos`` takes. Here each sibling's
variable takes, as other-device verdicts, the claims of the functional's variables at the slots it shares with
them: an input by its name, the out= argument and the return as the functional's return. A claim whose result is a
variable of its own is left out: whether it casts back into the in-place ``self`` or the ``out`` no call shows.
"""

from __future__ import annotations

from dataclasses import replace

from migrate.infer.structure import sibling_slot
from migrate.model.dtypes import canonical
from migrate.model.native import NativeFunctions
from migrate.model.plan import DECLARED, FAMILY_CLAIM, Evidence, OverloadPlan, Variable


def _functional_claims(functional: OverloadPlan) -> dict[str, frozenset]:
    """Per slot of the functional, the dtypes its variable holds as other-device verdicts (OpInfo's claims), where
    that variable's inputs and return are one variable (the result is the claimed dtype itself)."""
    found: dict[str, frozenset] = {}
    returns = any(slot.startswith("return.") for v in functional.variables for slot in v.binds)
    for variable in functional.variables:
        if variable.verdicts is None or not variable.verdicts.other_device:
            continue
        if any(slot.startswith("return.") for slot in variable.binds) or not returns:
            found.update(dict.fromkeys(variable.binds, frozenset(variable.verdicts.other_device)))
    return found


def _claimed(variable: Variable, claims: dict[str, frozenset], functional_of: dict[str, str]) -> tuple:
    """The claimed dtypes every slot of this sibling variable shares with the functional (none where one slot lacks them)."""
    shared = [claims.get(functional_of[slot], frozenset()) for slot in variable.binds if slot in functional_of]
    return canonical(frozenset.intersection(*shared) - set(variable.dtypes)) if shared else ()


def family_claims(native: NativeFunctions, plans: dict[str, OverloadPlan]) -> dict[str, OverloadPlan]:
    """Siblings' plans with their functional's claims for other devices at the slots they share."""
    taken = {}
    for name, plan in sorted(plans.items()):
        group = native.groups.get(name)
        if group is None or name not in group.of_kind("functional"):
            continue
        claims = _functional_claims(plan)
        if not claims:
            continue
        functional = native.by_name[name].schema
        for sibling_name in group.names:
            own = plans.get(sibling_name)
            if sibling_name == name or own is None or not own.variables:
                continue
            sibling = native.by_name[sibling_name].schema
            functional_of = {s: slot for slot in claims for s in sibling_slot(slot, sibling, functional)}
            variables, changed = [], False
            for variable in own.variables:
                claimed = _claimed(variable, claims, functional_of)
                if claimed and variable.verdicts is not None:
                    evidence = (*variable.evidence, Evidence(DECLARED, f"{FAMILY_CLAIM}, from {name}", claimed, variable.binds))
                    verdicts = replace(variable.verdicts, other_device=(*variable.verdicts.other_device, *claimed))
                    variable = replace(variable, dtypes=canonical({*variable.dtypes, *claimed}), evidence=evidence, verdicts=verdicts)
                    changed = True
                variables.append(variable)
            if changed:
                taken[sibling_name] = replace(own, variables=tuple(variables))
    return taken
