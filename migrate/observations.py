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

Dtypes an OpInfo declares for other devices (CUDA, ...) are attached as
``declared`` evidence to the overloads it is about (by name, called from the
sample's own code), on the slots that carried the sample dtype in every such call;
they do not widen the observed set (merging the sources is a later stage's decision).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrate.dtypes import DType, canonical
from migrate.plan import DECLARED, OPINFO, Evidence, OverloadPlan, Variable
from migrate.sweep import CatalogueEntry, Observation, OpInfoId, SlotDTypes, SweepResult

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
    return plans_from_observations(result.observations, result.catalogue)


def plans_from_observations(
    observations: Iterable[Observation], catalogue: Iterable[CatalogueEntry] = ()
) -> dict[str, OverloadPlan]:
    """One OverloadPlan per observed aten overload ('add.Tensor'), sorted by name.

    ``catalogue`` supplies the dtypes OpInfos declare for other devices.
    """
    by_overload: dict[str, list[Observation]] = {}
    for observation in observations:
        key = overload_key(observation.overload)
        if key is not None:
            by_overload.setdefault(key, []).append(observation)
    entries = {entry.opinfo: entry for entry in catalogue}
    return {key: _plan(key, by_overload[key], entries) for key in sorted(by_overload)}


def _plan(name: str, observations: list[Observation], catalogue: Mapping[OpInfoId, CatalogueEntry]) -> OverloadPlan:
    slots = tuple(slot for slot, _ in observations[0].slots)
    effective = [tuple(_effective(d) for _, d in o.slots) for o in observations]
    mixed = {slots[i] for row in effective for i, d in enumerate(row) if d == MIXED}
    rows = [
        _Row(o, tuple(None if slots[i] in mixed else d for i, d in enumerate(row)))
        for o, row in zip(observations, effective)
    ]
    classes = _variables(slots, rows)
    variables = []
    for number, members in enumerate(classes):
        indices = [slots.index(slot) for slot in members]
        seen = {row.dtypes[i] for row in rows for i in indices} - {None}
        evidence = _observed_evidence(slots, members, rows) + _declared_evidence(name, slots, members, seen, rows, catalogue)
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
    name: str,
    slots: tuple[str, ...],
    members: tuple[str, ...],
    seen: set[DType],
    rows: list[_Row],
    catalogue: Mapping[OpInfoId, CatalogueEntry],
) -> tuple[Evidence, ...]:
    """Other devices' dtypes, declared by the OpInfos about this overload, for the slots that follow the sample dtype."""
    operator = name.split(".", 1)[0]
    confirmed: dict[OpInfoId, set[str]] = {}
    broken: dict[OpInfoId, set[str]] = {}
    for row in rows:
        observation = row.observation
        entry = catalogue.get(observation.opinfo)
        if observation.direct and entry is not None and operator in entry.operator_names:
            for slot, dtype in zip(slots, row.dtypes):
                if dtype is not None:
                    side = confirmed if dtype == observation.sample_dtype else broken
                    side.setdefault(observation.opinfo, set()).add(slot)
    evidence = []
    for opinfo, following in confirmed.items():
        bound = tuple(slot for slot in members if slot in following - broken.get(opinfo, set()))
        if not bound:
            continue
        devices_by_dtypes: dict[tuple[DType, ...], list[str]] = {}
        for device, dtypes in catalogue[opinfo].declared:
            if set(dtypes) - seen:
                devices_by_dtypes.setdefault(dtypes, []).append(device)
        for dtypes, devices in devices_by_dtypes.items():
            evidence.append(Evidence(DECLARED, f"OpInfo {opinfo} declares for {', '.join(devices)}", dtypes, bound))
    return tuple(evidence)
