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

A call with an empty tensor (an argument or a return with no element) proves nothing:
ATen returns before its dtype dispatch (``mm`` of (0, 2) and (2, 3) bool tensors runs).
Such observations neither give dtypes nor tell slots apart; they are kept as ``empty``
evidence on the variable of their slots, for the report.

Dtypes an OpInfo declares for CUDA (PyTorch's CI tests that claim) are attached as
``declared`` evidence to the overloads it is about (by name, called from the
sample's own code), on the slots that carried the sample dtype in every such call;
they do not widen the observed set (merging the sources is a later stage's decision).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrate.evidence.sites import claimed_for
from migrate.runtime.runs import MIXED, CatalogueEntry, Observation, OpInfoId, SweepResult, effective, overload_key
from migrate.runtime.variables import variables_of
from migrate.model.dtypes import DType, canonical
from migrate.model.plan import DECLARED, EMPTY, OPINFO, Evidence, OverloadPlan, Variable
from migrate.model.verdict import OTHER_DEVICE, Verdict


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
    by_overload = _by_overload(observations)
    entries = {entry.opinfo: entry for entry in catalogue}
    return {key: _plan(key, by_overload[key], entries) for key in sorted(by_overload)}


def _by_overload(observations: Iterable[Observation]) -> dict[str, list[Observation]]:
    """The observations of each aten overload ('add.Tensor'), in the order seen; other namespaces left out."""
    found: dict[str, list[Observation]] = {}
    for observation in observations:
        key = overload_key(observation.overload)
        if key is not None:
            found.setdefault(key, []).append(observation)
    return found


def _rows(observations: list[Observation]) -> tuple[tuple[str, ...], list[_Row], list[_Row]]:
    """The overload's slots, and its observations' rows: those with an element in every tensor, and the rest."""
    slots = tuple(slot for slot, _ in observations[0].slots)
    found = [tuple(effective(d) for _, d in o.slots) for o in observations]
    mixed = {slots[i] for row in found for i, d in enumerate(row) if d == MIXED}
    all_rows = [
        _Row(o, tuple(None if slots[i] in mixed else d for i, d in enumerate(row))) for o, row in zip(observations, found)
    ]
    return slots, [row for row in all_rows if row.observation.nonempty], [row for row in all_rows if not row.observation.nonempty]


def _plan(name: str, observations: list[Observation], catalogue: Mapping[OpInfoId, CatalogueEntry]) -> OverloadPlan:
    slots, rows, empty = _rows(observations)
    classes = variables_of(slots, [row.dtypes for row in rows])
    variables = []
    for number, members in enumerate(classes):
        indices = [slots.index(slot) for slot in members]
        seen = {row.dtypes[i] for row in rows for i in indices} - {None}
        evidence = _observed_evidence(slots, members, rows) + _declared_evidence(name, slots, members, seen, rows, catalogue)
        evidence += _observed_evidence(slots, members, empty, EMPTY)
        variables.append(Variable(f"T{number}", tuple(seen), members, evidence))
    return OverloadPlan(name, tuple(variables))


def _observed_evidence(slots: tuple[str, ...], members: tuple[str, ...], rows: list[_Row], source: str = OPINFO) -> tuple[Evidence, ...]:
    """Evidence per OpInfo (and whether it called the overload itself), in the order seen.

    ``source`` is ``empty`` for the calls with an empty tensor: kept, said so, never acceptance.

    Slots of the variable seen with different dtype sets (an optional slot passed in
    fewer samples) get one piece each, so that every piece's dtypes hold for each of its
    slots: a later stage may split the variable and keep each slot's own evidence.
    """
    indices = [slots.index(slot) for slot in members]
    groups: dict[tuple[OpInfoId, bool], list[_Row]] = {}
    for row in rows:
        if any(row.dtypes[i] is not None for i in indices):
            groups.setdefault((row.observation.opinfo, row.observation.direct), []).append(row)
    evidence = []
    for (opinfo, direct), group in groups.items():
        samples = ", ".join(d.name for d in canonical(row.observation.sample_dtype for row in group))
        how = ("" if direct else ", inside other overloads") + (", on empty tensors" if source == EMPTY else "")
        by_dtypes: dict[tuple[DType, ...], list[int]] = {}
        for i in indices:
            dtypes = canonical({row.dtypes[i] for row in group} - {None})
            if dtypes:
                by_dtypes.setdefault(dtypes, []).append(i)
        for dtypes, present in by_dtypes.items():
            count = sum(row.observation.count for row in group if any(row.dtypes[i] is not None for i in present))
            where = f"{opinfo.label} ({samples}){how}"
            evidence.append(Evidence(source, where, dtypes, tuple(slots[i] for i in present), count))
    return tuple(evidence)


def _declared_evidence(
    name: str,
    slots: tuple[str, ...],
    members: tuple[str, ...],
    seen: set[DType],
    rows: list[_Row],
    catalogue: Mapping[OpInfoId, CatalogueEntry],
) -> tuple[Evidence, ...]:
    """CUDA's dtypes, claimed by the OpInfos whose own op this overload is, for the slots that follow the sample dtype."""
    evidence = []
    for opinfo, following in _claiming(name, slots, rows, catalogue).items():
        bound = tuple(slot for slot in members if slot in following)
        if not bound:
            continue
        devices_by_dtypes: dict[tuple[DType, ...], list[str]] = {}
        for device, dtypes in catalogue[opinfo].declared:
            if set(dtypes) - seen:
                devices_by_dtypes.setdefault(dtypes, []).append(device)
        for dtypes, devices in devices_by_dtypes.items():
            site = claimed_for(devices, f"OpInfo {opinfo} declares for {', '.join(devices)}")
            evidence.append(Evidence(DECLARED, "", dtypes, bound, verdict=Verdict(OTHER_DEVICE, site, claimed_by=f"OpInfo {opinfo}")))
    return tuple(evidence)


def _claiming(name: str, slots: tuple[str, ...], rows: list[_Row], catalogue: Mapping[OpInfoId, CatalogueEntry]) -> dict[OpInfoId, set[str]]:
    """The OpInfos whose own op this overload is (called directly by their samples), each with the slots that
    always had its sample dtype: the slots its claims for other devices speak of."""
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
    return {opinfo: following - broken.get(opinfo, set()) for opinfo, following in confirmed.items()}


Claims = tuple[tuple[str, tuple[DType, ...], tuple[DType, ...]], ...]
"""(slot, CPU's dtypes, CUDA's dtypes) of one overload: what its own OpInfos claim at each slot, in schema order."""


def cuda_claims(observations: Iterable[Observation], catalogue: Iterable[CatalogueEntry] = ()) -> dict[str, Claims]:
    """Per observed overload, the dtypes its own OpInfos claim for CPU and for CUDA (``supported_dtypes``) at each
    slot that follows their sample dtype, several OpInfos' claims joined: where they tell CUDA from CPU."""
    by_overload = _by_overload(observations)
    entries = {entry.opinfo: entry for entry in catalogue}
    found: dict[str, Claims] = {}
    for name in sorted(by_overload):
        slots, rows, _ = _rows(by_overload[name])
        claimed: dict[str, tuple[set[DType], set[DType]]] = {}
        for opinfo, following in _claiming(name, slots, rows, entries).items():
            entry = entries[opinfo]
            for slot in following:
                cpu, cuda = claimed.setdefault(slot, (set(), set()))
                cpu.update(entry.cpu_dtypes)
                cuda.update(dict(entry.declared).get("cuda", ()))
        if claimed:
            found[name] = tuple((slot, canonical(claimed[slot][0]), canonical(claimed[slot][1])) for slot in slots if slot in claimed)
    return found
