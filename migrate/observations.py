"""Type variables from OpInfo observations: which slots of an overload carry one dtype per call.

Slots whose dtypes are equal in every observation where both occur form one
variable, and its dtypes are the union of what was seen. Observations of every
OpInfo count, not only those of the overload's own: one mixed-dtype call anywhere
(``add.Tensor`` inside conv samples) is proof that two slots are not one variable.
A slot never seen with a tensor, or a list seen with mixed element dtypes, binds no
variable and stays ``Tensor``. Two slots never seen together are not merged: no
observation says they are equal. The relation is not transitive, so slots are
merged greedily in schema order, each merge kept only while every observation still
agrees, which makes the result deterministic.

Dtypes an OpInfo declares for other devices (CUDA, ...) are attached to the
variables of its own overloads as ``declared`` evidence; they do not widen the
observed set (merging the sources is a later stage's decision).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrate.dtypes import DType, canonical
from migrate.plan import DECLARED, OPINFO, Evidence, OverloadPlan, Variable
from migrate.sweep import Observation, OpInfoId, SlotDTypes, SweepResult

ATEN = "aten::"
MIXED = "mixed"  # a list slot seen with more than one element dtype in one call


def overload_key(recorded: str) -> str | None:
    """'aten::add.Tensor' -> 'add.Tensor', 'aten::add' -> 'add'; None outside the aten namespace."""
    return recorded[len(ATEN) :] if recorded.startswith(ATEN) else None


def _effective(dtypes: SlotDTypes) -> DType | str | None:
    """One dtype for the slot in this call, MIXED for a list of several, None when no tensor was passed."""
    if not isinstance(dtypes, tuple):
        return dtypes
    elements = {d for d in dtypes if d is not None}
    if len(elements) > 1:
        return MIXED
    return next(iter(elements), None)


@dataclass(frozen=True)
class _Row:
    """One observation as the variable search sees it: an effective dtype per slot."""

    observation: Observation
    dtypes: tuple[DType | None, ...]


def plans_from_sweep(result: SweepResult) -> dict[str, OverloadPlan]:
    return plans_from_observations(result.observations, result.declared)


def plans_from_observations(
    observations: Iterable[Observation],
    declared: Mapping[OpInfoId, tuple[tuple[str, tuple[DType, ...]], ...]] | None = None,
) -> dict[str, OverloadPlan]:
    """One OverloadPlan per observed aten overload ('add.Tensor'), sorted by name."""
    by_overload: dict[str, list[Observation]] = {}
    for observation in observations:
        key = overload_key(observation.overload)
        if key is not None:
            by_overload.setdefault(key, []).append(observation)
    return {key: _plan(key, by_overload[key], declared or {}) for key in sorted(by_overload)}


def _plan(name: str, observations: list[Observation], declared: Mapping[OpInfoId, tuple]) -> OverloadPlan:
    slots = tuple(slot for slot, _ in observations[0].slots)
    effective = [tuple(_effective(d) for _, d in o.slots) for o in observations]
    mixed = {slots[i] for row in effective for i, d in enumerate(row) if d == MIXED}
    rows = [
        _Row(o, tuple(None if slots[i] in mixed else d for i, d in enumerate(row))) for o, row in zip(observations, effective)
    ]
    classes = _variables(slots, rows)
    variables = []
    for number, members in enumerate(classes):
        indices = [slots.index(slot) for slot in members]
        seen = {row.dtypes[i] for row in rows for i in indices} - {None}
        evidence = _observed_evidence(slots, members, rows) + _declared_evidence(slots, members, seen, rows, declared)
        variables.append(Variable(f"T{number}", tuple(seen), members, evidence))
    return OverloadPlan(name, tuple(variables))


def _variables(slots: tuple[str, ...], rows: list[_Row]) -> list[tuple[str, ...]]:
    """Slots grouped into variables: greedy merges in schema order, each one agreed by every row."""
    distinct = {row.dtypes for row in rows}
    classes = [[i] for i in range(len(slots)) if any(dtypes[i] is not None for dtypes in distinct)]

    def agree(members: list[int]) -> bool:
        return all(len({dtypes[i] for i in members} - {None}) <= 1 for dtypes in distinct)

    def together(left: list[int], right: list[int]) -> bool:
        return any(
            any(dtypes[i] is not None for i in left) and any(dtypes[j] is not None for j in right) for dtypes in distinct
        )

    merged: list[list[int]] = []
    for candidate in classes:
        for group in merged:
            if together(group, candidate) and agree(group + candidate):
                group.extend(candidate)
                break
        else:
            merged.append(candidate)
    return [tuple(slots[i] for i in sorted(group)) for group in merged]


def _observed_evidence(slots: tuple[str, ...], members: tuple[str, ...], rows: list[_Row]) -> tuple[Evidence, ...]:
    """One piece of evidence per OpInfo (and whether it called the overload itself), in the order seen."""
    indices = [slots.index(slot) for slot in members]
    groups: dict[tuple[OpInfoId, bool], list[_Row]] = {}
    for row in rows:
        if any(row.dtypes[i] is not None for i in indices):
            groups.setdefault((row.observation.opinfo, row.observation.direct), []).append(row)
    evidence = []
    for (opinfo, direct), group in groups.items():
        samples = ", ".join(d.name for d in canonical(row.observation.sample_dtype for row in group))
        how = "" if direct else ", inside other overloads"
        dtypes = {row.dtypes[i] for row in group for i in indices} - {None}
        present = tuple(slots[i] for i in indices if any(row.dtypes[i] is not None for row in group))
        count = sum(row.observation.count for row in group)
        evidence.append(Evidence(OPINFO, f"OpInfo {opinfo} ({samples}){how}", canonical(dtypes), present, count))
    return tuple(evidence)


def _declared_evidence(
    slots: tuple[str, ...],
    members: tuple[str, ...],
    seen: set[DType],
    rows: list[_Row],
    declared: Mapping[OpInfoId, tuple],
) -> tuple[Evidence, ...]:
    """Other devices' declared dtypes, for the slots that carried the sample dtype whenever the OpInfo called the overload."""
    confirmed: dict[OpInfoId, set[str]] = {}
    broken: dict[OpInfoId, set[str]] = {}
    for row in rows:
        observation = row.observation
        if observation.direct and observation.opinfo in declared:
            for slot, dtype in zip(slots, row.dtypes):
                if dtype is not None:
                    side = confirmed if dtype == observation.sample_dtype else broken
                    side.setdefault(observation.opinfo, set()).add(slot)
    followers = {opinfo: slots_ - broken.get(opinfo, set()) for opinfo, slots_ in confirmed.items()}
    evidence = []
    for opinfo, following in followers.items():
        bound = tuple(slot for slot in members if slot in following)
        if not bound:
            continue
        for device, dtypes in declared[opinfo]:
            if set(dtypes) - seen:
                evidence.append(Evidence(DECLARED, f"OpInfo {opinfo} declares for {device}", dtypes, bound))
    return tuple(evidence)
