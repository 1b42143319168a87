"""Dependent constraints from probes: slots whose accepted dtypes change with another variable's dtype.

A slot probed alone beside two or more dtypes of a group of other slots (the calls
``migrate.evidence.probe.contexts`` makes again) follows that group when, beside each dtype
``d`` of the group, ATen accepted exactly the dtypes it accepted beside every one, plus ``d``
itself: ``attn_mask`` takes bool and float32 beside any query, and the query's own dtype.
Slots cast together, at one dtype, follow a group the same way: ``native_layer_norm``'s
``weight`` and ``bias`` take float32 beside any input, and the input's own dtype.
Every observation and accepted probe of the overload must agree (the slots' dtype is one of
those, or the group's); anything else is no such rule, and no fact is made.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from migrate.runtime.runs import Observation, ProbedCall, effective, overload_key
from migrate.model.dtypes import DType, canonical, format_set
from migrate.model.plan import PROBE, Evidence

Context = tuple[tuple[str, DType], ...]  # the other input slots of a call, with their dtypes


@dataclass(frozen=True)
class Follows:
    """Slots (one, or several at one dtype) that take ``dtypes`` beside any dtype of the slots ``on`` (which share one),
    and also the dtype they have."""

    slots: tuple[str, ...]
    on: tuple[str, ...]
    dtypes: tuple[DType, ...]
    evidence: Evidence  # the dtypes it accepted beside each dtype of ``on``


def follows_facts(probed: Iterable[ProbedCall], observations: Iterable[Observation] = ()) -> dict[str, tuple[Follows, ...]]:
    """Per overload ('scaled_dot_product_attention'), the slots that follow another group of its slots, sorted by name."""
    calls: dict[str, list[ProbedCall]] = defaultdict(list)
    for call in probed:
        key = overload_key(call.overload)
        if key is not None:
            calls[key].append(call)
    seen: dict[str, list[tuple[DType | None, ...]]] = defaultdict(list)
    for observation in observations:
        key = overload_key(observation.overload)
        if key in calls:
            seen[key].append(tuple(_single(d) for _, d in observation.slots))
    facts = {}
    for key in sorted(calls):
        found = tuple(_facts(calls[key], seen[key]))
        if found:
            facts[key] = found
    return facts


def _single(dtypes: object) -> DType | None:
    found = effective(dtypes)
    return found if isinstance(found, DType) else None


def _facts(calls: list[ProbedCall], observed: list[tuple]) -> Iterator[Follows]:
    """The overload's slots that follow a group, from what each cast (alone, or with others at its dtype) accepted
    beside each dtype of it."""
    # (cast slots, group, the other slots' dtypes) -> the group's dtype -> dtypes the cast slots were accepted with
    families: dict[tuple[tuple[str, ...], tuple[str, ...], Context], dict[DType, set[DType]]] = defaultdict(lambda: defaultdict(set))
    names = [name for name, _ in calls[0].slots]
    for call in calls:
        inputs = {name: _single(d) for name, d in call.slots if not name.startswith("return.")}
        for probe in call.probes:
            held = {inputs.get(slot) for slot in probe.cast}
            if len(held) != 1 or None in held:
                continue  # the cast slots had no one dtype as recorded
            accepted = {d for d, _ in probe.accepted} | held
            others = {name: d for name, d in inputs.items() if name not in probe.cast and d is not None}
            for dtype in set(others.values()):
                group = tuple(name for name in names if others.get(name) == dtype)
                rest = tuple((name, d) for name, d in others.items() if name not in group)
                families[probe.cast, group, rest][dtype] |= accepted
    rows = observed + [tuple(_single(d) for d in row) for call in calls for row in call.accepted_rows()]
    by_rule: dict[tuple[tuple[str, ...], tuple[str, ...]], list[dict[DType, set[DType]]]] = defaultdict(list)
    for (slots, group, _), family in families.items():
        by_rule[slots, group].append(family)
    for (slots, group), found in sorted(by_rule.items()):
        fact = _rule(slots, group, [f for f in found if len(f) > 1], rows, names)
        if fact is not None:
            yield fact


def _rule(slots: tuple[str, ...], group: tuple[str, ...], families: list[dict[DType, set[DType]]], rows: list[tuple], names: list[str]) -> Follows | None:
    """The fact when every family says: beside ``d``, the dtypes accepted beside every dtype, and ``d``; and some ``d`` is not such a dtype."""
    if not families:
        return None
    own = set.intersection(*(accepted for family in families for accepted in family.values()))
    if any(d not in accepted or accepted - own - {d} for family in families for d, accepted in family.items()):
        return None
    if not own or all(d in own for family in families for d in family):
        return None  # only the group's dtype: one variable with it; every dtype of it whatever it had: it follows nothing
    at, among = [names.index(slot) for slot in slots], [names.index(name) for name in group]
    for row in rows:
        held, theirs = {row[i] for i in at} - {None}, {row[i] for i in among}
        if len(held) > 1:
            return None  # the slots took two dtypes in one call: they are no one variable
        if held and len(theirs) == 1 and None not in theirs and not held <= own | theirs:
            return None
    beside = "; ".join(f"at {d.name}: {format_set(family[d])}" for family in families for d in canonical(family))
    cast = f"{slots[0]} cast alone" if len(slots) == 1 else f"{', '.join(slots)} cast together"
    where = f"{cast} with {', '.join(group)} at each dtype ({beside}): {format_set(own)} and their dtype"
    return Follows(slots, group, canonical(own), Evidence(PROBE, where, canonical(own), slots, sum(len(f) for f in families)))
