"""A variable that follows another except on a path of the kernel a named condition singles out (``type_exceptions:``).

``index_put``'s ``values`` cast alone is accepted at ``self``'s dtype alone, beside int64 indices and beside a
bool mask, while the same values as a 0-dim tensor beside a bool mask (the probe's 0-dim gate) are accepted at
nearly every dtype: ATen sends one bool mask and a one-element value to ``masked_fill_(mask, values.item())``.
Where an overload's probes say exactly that, ``values`` follows ``self`` (``[self.dtype]``) and keeps the dtypes
it had under the ``masked_fill`` condition.
"""

from __future__ import annotations

from dataclasses import replace

from migrate.model.exceptions import MASKED_FILL, TypeException
from migrate.model.plan import PROBE, OverloadPlan
from migrate.model.schema import TypedSchema

_VALUE, _MASK, _DESTINATION = "values", "indices", "self"
_ONE_ELEMENT_GATE = f"{_VALUE} 0-dim"  # the probe's gate: the cast tensor as a 0-dim one


def with_masked_fill(plan: OverloadPlan, schema: TypedSchema) -> OverloadPlan:
    """The plan with ``values`` following ``self`` but under ``masked_fill``, where its own probes show that rule; else
    as it was."""
    if MASKED_FILL.missing({s.name for s in schema.slots}) is not None:
        return plan
    values, destination = plan.variable_of(_VALUE), plan.variable_of(_DESTINATION)
    if values is None or destination is None or values is destination or values.binds != (_VALUE,) or values.listed:
        return plan
    own, masked = [], set()
    for evidence in values.evidence:
        site = evidence.verdict.site if evidence.verdict is not None else None
        if evidence.source != PROBE or evidence.refused or site is None or site.cast != (_VALUE,):
            continue
        if site.gate == _ONE_ELEMENT_GATE and site.beside_dtype(_MASK) == "bool":
            masked |= set(evidence.dtypes)
        elif not site.gate and site.beside_dtype(_DESTINATION):
            own.append({d.name for d in evidence.dtypes} == {site.beside_dtype(_DESTINATION)})
        else:
            return plan  # accepted beside another mask or on another path: no such rule
    if not own or not all(own) or len(masked) < 2:
        return plan
    excepted = TypeException(MASKED_FILL.name, values.dtypes)
    return replace(plan, variables=tuple(replace(v, dtypes=(), follows=(destination.name,), exceptions=(excepted,)) if v is values else v for v in plan.variables))
