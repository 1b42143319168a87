"""What the sweep records: per OpInfo, the calls its samples made (observations), the calls
probed again, and what failed; with their compact JSON form (the cache files).

Plain data, shared by the parent (which caches and merges runs) and the workers (which report them).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Union

from migrate.model.dtypes import DType
from migrate.model.names import OverloadName


# Failure kinds.
NO_CPU_DTYPES = "no-cpu-dtypes"  # the OpInfo declares no CPU dtypes: nothing to run
SAMPLE_INPUTS_RAISED = "sample-inputs-raised"  # making the samples of a dtype raised
CALL_RAISED = "call-raised"  # running a sample raised
BACKWARD_RAISED = "backward-raised"  # running backward from a sample's outputs raised
PROBE_TIMEOUT = "probe-timeout"  # a probe call ran over its own timeout (the samples had all run)
PROBE_CRASH = "probe-crash"  # the worker died while probing (the samples had all run)

MIXED = "mixed"  # a list slot seen with more than one element dtype in one call

SlotDTypes = Union[DType, tuple[Union[DType, None], ...], None]
"""A slot's dtype in one call: a DType, a list's element DTypes (None for a hole), or None (no tensor)."""


MODEL_RUN = "model"  # the name of a tiny model's run (``migrate.evidence.models``): OpInfoId('model', 'llama')
RUN_KINDS = ("OpInfo", MODEL_RUN)  # what made a run, as evidence names it, in the order it names them


@dataclass(frozen=True, order=True)
class OpInfoId:
    """An OpInfo's identity: its name and variant_test_name."""

    name: str
    variant: str = ""

    def __str__(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name

    @property
    def kind(self) -> str:
        """What made the run (one of ``RUN_KINDS``): an OpInfo's samples, or a tiny model."""
        return MODEL_RUN if self.name == MODEL_RUN else "OpInfo"

    @property
    def short(self) -> str:
        """The run's name after its kind: 'add', 'llama'."""
        return self.variant if self.name == MODEL_RUN else str(self)

    @property
    def label(self) -> str:
        """The run as evidence names it for a reader: 'OpInfo add', and a tiny model's 'model llama'."""
        return f"{self.kind} {self.short}"

    @property
    def file_stem(self) -> str:
        """A file name stem unique to this OpInfo, readable, safe on every file system, with no dot."""
        digest = hashlib.sha256(f"{self.name}\0{self.variant}".encode()).hexdigest()[:10]
        return re.sub(r"[^A-Za-z0-9_-]", "_", str(self)) + f"-{digest}"


SCHEMA_CALL = OpInfoId("<schema>")  # stands for the OpInfo of a call built from the schema (migrate.evidence.probe.schema_calls)


@dataclass(frozen=True)
class Observation:
    """Calls of one overload with one dtype per tensor slot, from one OpInfo's samples of one dtype."""

    overload: str  # 'aten::add.Tensor'; 'aten::add' for a default overload
    slots: tuple[tuple[str, SlotDTypes], ...]  # every tensor slot of the schema, in order
    opinfo: OpInfoId
    sample_dtype: DType
    direct: bool  # called by the sample's own code, not from inside another overload
    count: int
    nonempty: bool = True  # every tensor argument and return had an element; else the call proves no dtype accepted


@dataclass(frozen=True)
class Probe:
    """A recorded call made again with some tensor slots cast together to each other dtype, and what ATen did."""

    cast: tuple[str, ...]  # the argument slots cast
    accepted: tuple[tuple[DType, tuple[SlotDTypes, ...]], ...]  # per dtype ATen accepted: each return slot's dtype
    rejected: tuple[tuple[DType, str], ...]  # per dtype ATen refused: its message
    # accepted dtypes refused as recorded: the gating argument's setting ('dtype=torch.float32') and the refusal
    gated: tuple[tuple[DType, str, str], ...] = ()


@dataclass(frozen=True)
class ProbedCall:
    """One recorded call of an overload (as in an Observation) and the probes made from it."""

    overload: str
    slots: tuple[tuple[str, SlotDTypes], ...]  # every tensor slot of the schema, as recorded
    opinfo: OpInfoId
    sample_dtype: DType
    direct: bool
    probes: tuple[Probe, ...]
    refused_again: str = ""  # why the unmodified call failed when made again; then nothing was probed
    nonempty: bool = True  # the call as recorded had an element in every tensor; else its probes accept nothing
    numbers: tuple[tuple[str, str], ...] = ()  # its Scalar arguments holding Python numbers: (name, 'bool'|'int'|'float'|'complex')

    @classmethod
    def from_report(cls, opinfo: OpInfoId, report: dict[str, Any]) -> ProbedCall:
        """The call as a probing worker reports it (``migrate.evidence.probe.prober.probe_call``)."""
        probes = tuple(
            Probe(
                tuple(cast),
                tuple((DType(d), tuple(map(load, returns))) for d, returns in accepted),
                tuple((DType(d), message) for d, message in rejected),
                tuple((DType(d), gate, message) for d, gate, message in gated),
            )
            for cast, accepted, rejected, gated in report["probes"]
        )
        slots = tuple((name, load(dtypes)) for name, dtypes in report["slots"])
        sample = DType(report["sample"])
        numbers = tuple((name, kind) for name, kind in report["numbers"])
        return cls(report["overload"], slots, opinfo, sample, report["direct"], probes, report["again"], report["nonempty"], numbers)

    def accepted_rows(self) -> Iterator[tuple[SlotDTypes, ...]]:
        """Each slot's dtype in each accepted probe: cast slots at the probe's dtype, returns as returned."""
        for probe in self.probes:
            for dtype, returns in probe.accepted:
                row, returned = [], iter(returns)
                for name, dtypes in self.slots:
                    if name.startswith("return."):
                        dtypes = next(returned)
                    elif name in probe.cast:
                        dtypes = tuple(None if d is None else dtype for d in dtypes) if isinstance(dtypes, tuple) else dtype
                    row.append(dtypes)
                yield tuple(row)


@dataclass(frozen=True)
class Failure:
    """Something that went wrong in one OpInfo, with its reason: never dropped, always listed."""

    opinfo: OpInfoId
    kind: str
    reason: str
    dtypes: tuple[DType, ...] = ()  # the sample dtypes it happened for
    count: int = 1  # samples it happened to


@dataclass(frozen=True)
class CatalogueEntry:
    """What the sweep knows of an OpInfo without running it."""

    opinfo: OpInfoId
    cpu_dtypes: tuple[DType, ...]
    declared: tuple[tuple[str, tuple[DType, ...]], ...]  # (device, dtypes) for devices other than the CPU
    operator_names: tuple[str, ...]  # names it is about: a cold `ops=` filter selects by these
    aliases: tuple[tuple[str, str], ...] = ()  # (alias, target) operator names from the OpInfo's alias list

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.opinfo.name,
            "variant": self.opinfo.variant,
            "cpu": [d.name for d in self.cpu_dtypes],
            "declared": {device: [d.name for d in dtypes] for device, dtypes in self.declared},
            "operators": list(self.operator_names),
            "aliases": [list(pair) for pair in self.aliases],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CatalogueEntry:
        return cls(
            OpInfoId(obj["name"], obj["variant"]),
            tuple(map(DType, obj["cpu"])),
            tuple((device, tuple(map(DType, names))) for device, names in obj["declared"].items()),
            tuple(obj["operators"]),
            tuple((alias, target) for alias, target in obj["aliases"]),
        )


@dataclass(frozen=True)
class OpInfoRun:
    """Everything one OpInfo's samples showed: the unit of running and of caching."""

    opinfo: OpInfoId
    observations: tuple[Observation, ...]
    failures: tuple[Failure, ...]
    samples: int
    complete: bool  # False after a timeout or a crash while samples ran; such runs are not cached
    seconds: float = field(default=0.0, compare=False)  # wall time of its worker
    cpu_seconds: float = field(default=0.0, compare=False)  # CPU time of its worker, which load does not inflate
    probes: tuple[ProbedCall, ...] = ()
    probe_seconds: float = field(default=0.0, compare=False)  # CPU time its worker spent probing

    @functools.cached_property
    def overloads(self) -> frozenset[str]:
        return frozenset(o.overload for o in self.observations)

    def to_json(self) -> dict[str, Any]:
        """The compact cache form: slot names once per overload, dtype names, counts per distinct call."""
        slot_names: dict[str, list[str]] = {}
        observations = []
        for o in self.observations:
            slot_names.setdefault(o.overload, [name for name, _ in o.slots])
            observed = [o.overload, o.sample_dtype.name, int(o.direct), o.count, [dump(d) for _, d in o.slots], int(o.nonempty)]
            observations.append(observed)
        failures = [[f.kind, f.reason, [d.name for d in f.dtypes], f.count] for f in self.failures]
        messages: dict[str, int] = {}  # each rejection message once: most recur across calls and slots
        probed = []
        for call in self.probes:
            names = slot_names.setdefault(call.overload, [name for name, _ in call.slots])
            probes = [
                [
                    [names.index(n) for n in p.cast],
                    [[d.name, [dump(r) for r in returns]] for d, returns in p.accepted],
                    [[d.name, messages.setdefault(message, len(messages))] for d, message in p.rejected],
                    [[d.name, gate, messages.setdefault(message, len(messages))] for d, gate, message in p.gated],
                ]
                for p in call.probes
            ]
            dtypes = [dump(d) for _, d in call.slots]
            numbers = [list(number) for number in call.numbers]
            probed.append([call.overload, call.sample_dtype.name, int(call.direct), dtypes, call.refused_again, probes, int(call.nonempty), numbers])
        return {
            "name": self.opinfo.name,
            "variant": self.opinfo.variant,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "probe_seconds": round(self.probe_seconds, 3),
            "slots": slot_names,
            "observations": observations,
            "failures": failures,
            "messages": list(messages),
            "probes": probed,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> OpInfoRun:
        opinfo = OpInfoId(obj["name"], obj["variant"])
        slot_names = obj["slots"]
        observations = tuple(
            Observation(
                overload,
                tuple(zip(slot_names[overload], map(load, dtypes))),
                opinfo,
                DType(sample),
                bool(direct),
                count,
                bool(nonempty),
            )
            for overload, sample, direct, count, dtypes, nonempty in obj["observations"]
        )
        failures = tuple(
            Failure(opinfo, kind, reason, tuple(map(DType, dtypes)), count)
            for kind, reason, dtypes, count in obj["failures"]
        )
        messages = obj["messages"]
        probed = []
        for overload, sample, direct, dtypes, refused_again, probes, nonempty, numbers in obj["probes"]:
            names = slot_names[overload]
            probed.append(
                ProbedCall(
                    overload,
                    tuple(zip(names, map(load, dtypes))),
                    opinfo,
                    DType(sample),
                    bool(direct),
                    tuple(
                        Probe(
                            tuple(names[i] for i in cast),
                            tuple((DType(d), tuple(map(load, returns))) for d, returns in accepted),
                            tuple((DType(d), messages[m]) for d, m in rejected),
                            tuple((DType(d), gate, messages[m]) for d, gate, m in gated),
                        )
                        for cast, accepted, rejected, gated in probes
                    ),
                    refused_again,
                    bool(nonempty),
                    tuple((name, kind) for name, kind in numbers),
                )
            )
        return cls(
            opinfo,
            observations,
            failures,
            obj["samples"],
            True,
            obj["seconds"],
            obj["cpu_seconds"],
            tuple(probed),
            obj["probe_seconds"],
        )


def dump(dtypes: SlotDTypes) -> Any:
    if isinstance(dtypes, tuple):
        return [None if d is None else d.name for d in dtypes]
    return None if dtypes is None else dtypes.name


def load(dumped: Any) -> SlotDTypes:
    """A slot's dtypes from a cache file (lists) or a worker's report (tuples)."""
    if isinstance(dumped, (list, tuple)):
        return tuple(None if d is None else DType(d) for d in dumped)
    return None if dumped is None else DType(dumped)


@dataclass(frozen=True)
class SweepStats:
    """How much a sweep did: what was selected, run, read from the cache, and how long it took."""

    opinfos: int  # selected
    ran: int
    from_cache: int
    samples: int
    seconds: float  # wall time of the sweep


@dataclass(frozen=True)
class SweepResult:
    """What the selected OpInfos showed, in catalogue order: observations and failures.

    The catalogue entries hold what each OpInfo declares, the dtypes for other devices included.
    """

    runs: tuple[OpInfoRun, ...]
    catalogue: tuple[CatalogueEntry, ...]  # the selected OpInfos
    stats: SweepStats = field(compare=False)

    @functools.cached_property
    def observations(self) -> tuple[Observation, ...]:
        return tuple(o for run in self.runs for o in run.observations)

    @functools.cached_property
    def probes(self) -> tuple[ProbedCall, ...]:
        return tuple(p for run in self.runs for p in run.probes)

    @functools.cached_property
    def failures(self) -> tuple[Failure, ...]:
        """Every failure, an OpInfo with no CPU dtypes included, in catalogue order."""
        by_opinfo = {run.opinfo: run.failures for run in self.runs}
        found: list[Failure] = []
        for entry in self.catalogue:
            if not entry.cpu_dtypes:
                found.append(Failure(entry.opinfo, NO_CPU_DTYPES, "the OpInfo declares no CPU dtypes"))
            found.extend(by_opinfo.get(entry.opinfo, ()))
        return tuple(found)


def overload_key(recorded: str) -> str | None:
    """'aten::add.Tensor' -> 'add.Tensor', 'aten::add' -> 'add'; None outside the aten namespace."""
    name = OverloadName.qualified_or_none(recorded)
    return str(name) if name is not None else None


def effective(dtypes: SlotDTypes) -> DType | str | None:
    """One dtype for the slot in this call, MIXED for a list of several, None when no tensor was passed."""
    if not isinstance(dtypes, tuple):
        return dtypes
    elements = {d for d in dtypes if d is not None}
    if len(elements) > 1:
        return MIXED
    return next(iter(elements), None)
