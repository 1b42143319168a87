"""A sibling's own evidence first, and its functional overload's constraints only where none of its own speaks.

In-place and out= overloads are called on calls built from their functional sibling's accepted
ones (``migrate.evidence.probe.siblings``), so their verdicts stand on their own where they write:
the ``out`` tensor, the mutated ``self``, and the slots that share a variable with them. An input
they only read is judged on the functional overload's many calls instead (``index_put_``'s
``indices`` take a bool mask in the samples' calls; a sibling's call, built on an int64 index,
refuses one of the wrong shape). What their calls never reach (an optional tensor no call passed,
a sibling no call could be built for) takes the functional overload's constraints too, as the
``groups`` source always gave them.
"""

from __future__ import annotations

from dataclasses import replace

from migrate.model.plan import OverloadPlan, Variable
from migrate.model.schema import TypedSchema

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


def written_by_own_calls(own: OverloadPlan, sibling: TypedSchema, covered: set[str]) -> OverloadPlan:
    """``own`` without the variables that bind only inputs the sibling reads (no return, no ``!`` argument)
    and the functional overload's constraints all cover: those take the functional's."""
    written = {s.name for s in sibling.slots if s.is_return or "!" in s.alias}
    kept = tuple(v for v in own.variables if set(v.binds) & written or not set(v.binds) <= covered)
    return own if kept == own.variables else replace(own, variables=kept)
