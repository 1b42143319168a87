"""Dependent constraints from probes: slots whose accepted dtypes change with another variable's dtype.

A slot probed alone beside two or more dtypes of a group of other slots (the calls
``migrate.evidence.probe.contexts`` makes again) follows that group when, beside each dtype
``d`` of the group, ATen accepted exactly the dtypes it accepted beside every one, plus ``d``
itself: ``attn_mask`` takes bool and float32 beside any query, and the query's own dtype.
Slots cast together, at one dtype, follow a group the same way: ``native_layer_norm``'s
``weight`` and ``bias`` take float32 beside a float16, bfloat16 or float32 input, and the input's own dtype.
Every observation and accepted probe of the overload must agree (the slots' dtype is one of
those, or the group's); anything else is no such rule, and no fact is made.

Where what they take beside each dtype ``d`` is ``d`` and the dtype ATen computes ``d`` in (``opmath``), and a
call refused the group at a dtype ``g`` beside the slots at such a dtype that is neither ``g`` nor ``opmath(g)``
(``native_layer_norm``'s input cast to float64 beside a float32 weight: "mixed dtype (CPU): all inputs must
share same datatype"), they follow the group's computation dtype rather than that constant: the weight is
float32 beside a float16 input, float64 beside a float64 one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from migrate.runtime.runs import Observation, ProbedCall, effective, overload_key
from migrate.model.dtypes import DType, canonical, format_set, opmath
from migrate.model.plan import PROBE, Evidence

Context = tuple[tuple[str, DType], ...]  # the other input slots of a call, with their dtypes
Refusal = tuple[frozenset[str], DType, dict[str, DType], str]  # slots cast, to a dtype ATen refused, beside the others' dtypes; its message


@dataclass(frozen=True)
class Follows:
    """Slots (one, or several at one dtype) that take ``dtypes`` beside any dtype of the slots ``on`` (which share one),
    and also the dtype they have, and with ``opmath`` the dtype ATen computes that one in."""

    slots: tuple[str, ...]
    on: tuple[str, ...]
    dtypes: tuple[DType, ...]
    evidence: Evidence  # the dtypes it accepted beside each dtype of ``on``
    opmath: bool = False


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
    refusals: list[Refusal] = []
    for call in calls:
        inputs = {name: _single(d) for name, d in call.slots if not name.startswith("return.")}
        for probe in call.probes:
            held = {inputs.get(slot) for slot in probe.cast}
            if len(held) != 1 or None in held:
                continue  # the cast slots had no one dtype as recorded
            accepted = {d for d, _ in probe.accepted} | held
            others = {name: d for name, d in inputs.items() if name not in probe.cast and d is not None}
            refusals += [(frozenset(probe.cast), d, others, message) for d, message in probe.rejected]
            for dtype in set(others.values()):
                group = tuple(name for name in names if others.get(name) == dtype)
                rest = tuple((name, d) for name, d in others.items() if name not in group)
                families[probe.cast, group, rest][dtype] |= accepted
    rows = observed + [tuple(_single(d) for d in row) for call in calls for row in call.accepted_rows()]
    by_rule: dict[tuple[tuple[str, ...], tuple[str, ...]], list[dict[DType, set[DType]]]] = defaultdict(list)
    for (slots, group, _), family in families.items():
        by_rule[slots, group].append(family)
    for (slots, group), found in sorted(by_rule.items()):
        beside_two = [f for f in found if len(f) > 1]  # a family seen beside one dtype of the group says nothing of a rule
        fact = _rule(slots, group, beside_two, rows, names)
        if fact is not None:
            yield _computed(fact, beside_two, rows, names, refusals) or fact


def _computed(fact: Follows, families: list[dict[DType, set[DType]]], rows: list[tuple], names: list[str], refusals: list[Refusal]) -> Follows | None:
    """The fact as following the group's computation dtype, where every family and row fits that and a refused call
    contradicts the constant (None: it stays as it is)."""
    contexts = {d for family in families for d in family}
    own = tuple(d for d in fact.dtypes if d not in {opmath(c) for c in contexts})
    if own == fact.dtypes or any(accepted != {*own, d, opmath(d)} for family in families for d, accepted in family.items()):
        return None
    at, among = [names.index(slot) for slot in fact.slots], [names.index(name) for name in fact.on]
    for row in rows:
        held, theirs = {row[i] for i in at} - {None}, {row[i] for i in among}
        if held and len(theirs) == 1 and None not in theirs and not held <= {*own, *theirs, *map(opmath, theirs)}:
            return None
    taken = {row[among[0]] for row in rows if len({row[i] for i in among}) == 1} - {None}  # dtypes the group ran at
    for cast, refused, others, message in refusals:
        beside = {others.get(slot) for slot in fact.slots}
        if cast != set(fact.on) or refused not in taken or len(beside) != 1:
            continue
        (constant,) = beside
        if constant in fact.dtypes and constant not in own and constant not in (refused, opmath(refused)):
            break
    else:
        return None
    said = f"{', '.join(fact.on)} cast to {refused.name} beside {', '.join(fact.slots)} at {constant.name} refused ({message.splitlines()[0] if message else 'no message'})"
    took = f"{format_set(own)}, their dtype" if own else "their dtype"
    where = f"{_probed_beside(fact.slots, fact.on, families)}: {took} and the dtype it computes in; {said}"
    return Follows(fact.slots, fact.on, own, Evidence(PROBE, where, own, fact.slots, fact.evidence.count), opmath=True)


def _probed_beside(slots: tuple[str, ...], group: tuple[str, ...], families: list[dict[DType, set[DType]]]) -> str:
    """How the evidence names the probes a fact rests on: what the slots took beside each dtype of the group."""
    beside = "; ".join(f"at {d.name}: {format_set(family[d])}" for family in families for d in canonical(family))
    cast = f"{slots[0]} cast alone" if len(slots) == 1 else f"{', '.join(slots)} cast together"
    return f"{cast} with {', '.join(group)} at each dtype ({beside})"


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
    where = f"{_probed_beside(slots, group, families)}: {format_set(own)} and their dtype"
    return Follows(slots, group, canonical(own), Evidence(PROBE, where, canonical(own), slots, sum(len(f) for f in families)))
