"""Alias overloads take the constraints of the overload they stand for (provenance ``aliases``).

An alias such as ``clip`` is CompositeImplicitAutograd: it forwards to ``clamp`` above the
dispatcher level the recorders see, so samples never show it. The OpInfo alias lists (read
from torch by the catalogue, never hand-listed) tie it to its target; the overload pairs are
those with the same overload name and the same tensor slots.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from migrate.model.native import NativeFunctions
from migrate.model.plan import ALIASES, Evidence, OverloadPlan, Variable


def _tensor_slots(native: NativeFunctions, name: str) -> tuple[str, ...]:
    return tuple(s.name for s in native.by_name[name].schema.slots if s.is_tensor)


def alias_overloads(native: NativeFunctions, pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Alias overload -> target overload ('clip.Tensor' -> 'clamp.Tensor') where both exist with equal tensor slots."""
    targets: dict[str, str] = {}
    for alias, target in sorted(set(pairs)):
        for name in native.by_name:
            operator, _, overload = name.partition(".")
            if operator != alias:
                continue
            wanted = f"{target}.{overload}" if overload else target
            if wanted in native.by_name and _tensor_slots(native, name) == _tensor_slots(native, wanted):
                targets.setdefault(name, wanted)
    return targets


def alias_plans(targets: Mapping[str, str], plans: Mapping[str, OverloadPlan]) -> dict[str, OverloadPlan]:
    """Plans for alias overloads with no evidence of their own, from their target's plan."""
    taken = {}
    for alias, target in sorted(targets.items()):
        plan = plans.get(target)
        if plan is None or not plan.variables or (alias in plans and plans[alias].variables):
            continue
        variables = tuple(
            Variable(v.name, v.dtypes, v.binds, (Evidence(ALIASES, f"alias of {target}", v.dtypes, v.binds),)) for v in plan.variables
        )
        taken[alias] = OverloadPlan(alias, variables)
    return taken
