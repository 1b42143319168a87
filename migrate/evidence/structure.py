"""A sibling's own evidence first, and its functional overload's constraints only where none of its own speaks.

In-place and out= overloads are called on calls built from their functional sibling's accepted
ones (``migrate.evidence.probe.siblings``), so their verdicts stand on their own. What those
calls never reach (an optional tensor no call passed, a sibling no call could be built for) still
takes the functional overload's constraints, as the ``groups`` source always gave them.
"""

from __future__ import annotations

from dataclasses import replace

from migrate.model.plan import OverloadPlan, Variable

FALLBACK_SUFFIX = "~group"  # appended to a carried variable's name where the sibling's own variables use it


def with_fallback(own: OverloadPlan, carried: tuple[Variable, ...]) -> OverloadPlan:
    """``own`` (a sibling's plan from its own calls, maybe empty) with the ``carried`` variables at slots it leaves free.

    A carried variable whose name one of its own has is renamed (the names are the sources' own until
    ``name_variables``), together with the lists of the carried variables that follow it.
    """
    taken = {v.name for v in own.variables}
    renamed = {v.name: f"{v.name}{FALLBACK_SUFFIX}" if v.name in taken else v.name for v in carried}
    variables = tuple(replace(v, name=renamed[v.name], follows=tuple(renamed.get(n, n) for n in v.follows)) for v in carried)
    return replace(own, variables=own.variables + variables)
