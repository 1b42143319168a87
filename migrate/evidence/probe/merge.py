"""Evidence by probing: which dtypes ATen accepts at each slot, and which slots must agree.

The sweep's workers call recorded calls again with tensor slots cast to other dtypes
(``migrate.evidence.probe.prober``). Here those results become plan terms, per overload:

- every accepted probe is a call ATen accepted, like an observation: together with the
  observations of every OpInfo they decide the variables, by the rule of
  ``migrate.evidence.opinfo.observations`` (slots equal wherever they meet form one variable), so a
  probe that ATen accepted with two slots apart splits them, and nothing a probe did
  can join slots an observation saw apart (a probe rejection never overrides an
  observation);
- slots shown to be tied (no dtype could be cast to alone, one could be cast to
  together: ``query``, ``key`` and ``value``) are merged first, before the greedy
  merges in schema order that could otherwise tie one of them elsewhere;
- a call with an empty tensor (``nonempty`` false) accepts nothing and ties nothing: ATen
  returns before its dtype dispatch there; its probes are kept as ``empty`` evidence;
- a variable's dtypes are everything seen at its slots, observed or accepted when
  probed: the sound union where ATen's rule depends on another argument (a mask may be
  bool, float32 or the query's dtype); each context stays in its own evidence.

Evidence keeps the detail, each piece with its verdict record (``migrate.model.verdict``): per
set of slots cast and dtypes of the other slots, which dtypes ATen accepted, and per message
(its dtypes blanked), which it refused, each dtype's message word for word, with the OpInfos and
calls behind each.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from migrate.evidence.sites import seen_on
from migrate.runtime.runs import MIXED, RUN_KINDS, SCHEMA_CALL, Observation, OpInfoId, ProbedCall, SweepResult, effective, overload_key
from migrate.runtime.variables import variables_of
from migrate.model.dtypes import DType, canonical
from migrate.model.plan import EMPTY, PROBE, Evidence, OverloadPlan, Variable
from migrate.model.verdict import (
    ACCEPTED,
    DTYPE_ARGUMENT,
    DTYPE_SPELLING,
    PROBE_CALL,
    REJECTED,
    RETURNED,
    SCHEMA_CALL as SCHEMA_CALL_KIND,
    Site,
    Verdict,
)

ON_EMPTY = ", on empty tensors"  # ends the call of evidence from probing a call with an empty tensor
RETURNS_LABEL = "returned by accepted probes"  # opens the call of the dtypes probes' calls returned
PYTHON_NUMBER = "a Python "  # a Scalar argument as recorded, in a probe's call: 'other a Python float'
SCHEMA_CALL_LABEL = "a call built from the schema"  # the calls of migrate.evidence.probe.schema_calls, as a probe's call names them
_OPINFOS_NAMED = 3  # OpInfos named in one piece of evidence; the rest are counted


def probe_plans_from_sweep(result: SweepResult) -> dict[str, OverloadPlan]:
    return probe_plans(result.probes, result.observations)


def probe_plans(probed: Iterable[ProbedCall], observations: Iterable[Observation] = ()) -> dict[str, OverloadPlan]:
    """One OverloadPlan per probed aten overload ('where.self'), sorted by name.

    ``observations`` (of every OpInfo) take part in deciding the variables, as accepted calls.
    """
    calls: dict[str, list[ProbedCall]] = {}
    for call in probed:
        key = overload_key(call.overload)
        if key is not None:
            calls.setdefault(key, []).append(call)
    observed: dict[str, list[Observation]] = {}
    for observation in observations:
        key = overload_key(observation.overload)
        if key in calls:
            observed.setdefault(key, []).append(observation)
    return {key: _plan(key, calls[key], observed.get(key, [])) for key in sorted(calls)}


def _plan(name: str, calls: list[ProbedCall], observations: list[Observation]) -> OverloadPlan:
    slots = tuple(slot for slot, _ in calls[0].slots)
    empty = [call for call in calls if not call.nonempty]  # kept as ``empty`` evidence: never acceptance
    calls = [call for call in calls if call.nonempty]
    raw = {tuple(d for _, d in o.slots) for o in observations if o.nonempty}
    raw.update(tuple(d for _, d in call.slots) for call in calls)
    rows = {tuple(map(effective, row)) for row in raw}
    rows.update(row for call in calls for row in _accepted_rows(call))
    mixed = {i for row in rows for i, d in enumerate(row) if d == MIXED}
    rows = [tuple(None if i in mixed else d for i, d in enumerate(row)) for row in rows]
    tied = sorted({tie for call in calls for tie in _tied(call)})
    classes = variables_of(slots, rows, [tuple(slots.index(s) for s in tie) for tie in tied])
    nonempty, on_empty = _evidence(classes, calls), _evidence(classes, empty, ON_EMPTY)
    variables = []
    for number, members in enumerate(classes):
        indices = [slots.index(slot) for slot in members]
        dtypes = {row[i] for row in rows for i in indices} - {None}
        evidence = nonempty[number] + tuple(replace(e, source=EMPTY) for e in on_empty[number])
        variables.append(Variable(f"P{number}", tuple(dtypes), members, evidence))
    return OverloadPlan(name, tuple(variables))


def _accepted_rows(call: ProbedCall) -> Iterator[tuple[DType | str | None, ...]]:
    """``ProbedCall.accepted_rows``, each slot's dtype as ``effective`` gives it: the slots a probe leaves are built once
    per probe, not once per dtype it accepted."""
    recorded = [effective(dtypes) for _, dtypes in call.slots]
    returns = [i for i, (name, _) in enumerate(call.slots) if name.startswith("return.")]
    for probe in call.probes:
        if not probe.accepted:
            continue
        cast = [
            i
            for i, (name, dtypes) in enumerate(call.slots)
            if name in probe.cast and not name.startswith("return.") and not (isinstance(dtypes, tuple) and recorded[i] is None)  # a list of holes stays one
        ]
        row = list(recorded)
        for dtype, returned in probe.accepted:
            for i in cast:
                row[i] = dtype
            for i, dtypes in zip(returns, returned):
                row[i] = effective(dtypes)
            yield tuple(row)


def _single(dtypes: object) -> DType | None:
    found = effective(dtypes)
    return found if isinstance(found, DType) else None


def _tied(call: ProbedCall) -> Iterator[tuple[str, ...]]:
    """Slots of one call that must agree: one dtype as recorded, none castable alone, castable together."""
    original = {name: _single(d) for name, d in call.slots if not name.startswith("return.")}
    movable = {p.cast[0] for p in call.probes if p.accepted and len(p.cast) == 1}
    jointly = [p for p in call.probes if p.accepted and len(p.cast) > 1]
    groups: dict[DType, list[str]] = {}
    for name, dtype in original.items():
        if dtype is not None:
            groups.setdefault(dtype, []).append(name)
    for members in groups.values():
        core = tuple(name for name in members if name not in movable)
        if len(core) > 1 and any(set(core) <= set(p.cast) <= set(members) for p in jointly):
            yield core


@functools.lru_cache(maxsize=None)
def _template(message: str) -> str:
    """A rejection message with the dtypes it names blanked: messages that differ only there share one."""
    return DTYPE_SPELLING.sub("<dtype>", message)


@dataclass
class _Gathered:
    """Evidence being gathered: its dtypes, slots, OpInfos, calls and messages (the builder's own bookkeeping)."""

    dtypes: set[DType] = field(default_factory=set)
    slots: set[str] = field(default_factory=set)
    opinfos: dict[OpInfoId, None] = field(default_factory=dict)
    calls: set[int] = field(default_factory=set)
    messages: dict[DType, str] = field(default_factory=dict)

    def add(self, dtypes: Iterable[DType], slots: Iterable[str], opinfo: OpInfoId, call: int) -> None:
        self.dtypes.update(dtypes)
        self.slots.update(slots)
        if call not in self.calls:  # a call's probes share its OpInfo
            self.opinfos[opinfo] = None
            self.calls.add(call)


class _Pieces:
    """One variable's evidence being gathered, per kind of verdict and its context."""

    def __init__(self, members: tuple[str, ...]):
        self.members = members
        self.accepted: dict[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...], str], _Gathered] = {}
        self.rejected: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...], str], _Gathered] = {}
        self.returned = _Gathered()
        self.returns: list[tuple[int, str]] = []  # (position in a probe's returns, return slot) of this variable's returns

    def evidence(self, note: str) -> tuple[Evidence, ...]:
        order = {name: i for i, name in enumerate(self.members)}
        found = []
        for (cast, beside, numbers, gate), gathered in self.accepted.items():
            if gathered.dtypes:
                site = probe_site(cast, _sources(gathered) + note, _built(gathered), beside, numbers, gate)
                found.append(_made(gathered, Verdict(ACCEPTED, site), order))
        for (cast, numbers, _), gathered in self.rejected.items():
            site = probe_site(cast, _sources(gathered) + note, _built(gathered), numbers=numbers)  # the Scalars may have moved its dtype
            found.append(_made(gathered, Verdict(REJECTED, site, tuple(gathered.messages.items())), order))
        if self.returned.slots:
            kind = SCHEMA_CALL_KIND if _built(self.returned) else PROBE_CALL
            found.append(_made(self.returned, Verdict(RETURNED, seen_on(kind, f"{RETURNS_LABEL}, {_sources(self.returned)}{note}")), order))
        return tuple(found)


def _evidence(classes: list[tuple[str, ...]], calls: list[ProbedCall], note: str = "") -> list[tuple[Evidence, ...]]:
    """Per variable (its slots), per slots cast and context, what ATen accepted; per slots cast and message, what it
    refused; what it returned. One pass over the calls serves every variable.

    Dtypes accepted only with a gating argument set (``dtype=torch.float32``) are a piece of their own, which says so.
    """
    pieces = [_Pieces(members) for members in classes]
    if not calls:
        return [() for _ in classes]
    of_slot = {name: number for number, piece in enumerate(pieces) for name in piece.members}  # the variable each slot is in
    return_names = [name for name, _ in calls[0].slots if name.startswith("return.")]
    for i, name in enumerate(return_names):
        if name in of_slot:
            pieces[of_slot[name]].returns.append((i, name))
    returning = [piece for piece in pieces if piece.returns]
    for number, call in enumerate(calls):
        original = dict(call.slots)
        for probe in call.probes:
            bound: dict[int, list[str]] = {}  # per variable, the slots of it this probe cast
            for name in probe.cast:
                if name in of_slot:
                    bound.setdefault(of_slot[name], []).append(name)
            if bound:  # the call as recorded ran, whatever its casts did
                beside = _beside(call, probe.cast)
                recorded = {_single(original[name]) for name in probe.cast}
                gated = {dtype: gate for dtype, gate, _ in probe.gated}
                ungated = [dtype for dtype, _ in probe.accepted if dtype not in gated]
                # a gated dtype was refused as recorded too: the gate let it in, and the refusal speaks of the call as it was
                refusals = [*probe.rejected, *((dtype, message) for dtype, _, message in probe.gated)]
                for index, names in bound.items():
                    piece = pieces[index]
                    gathered = piece.accepted.setdefault((probe.cast, beside, call.numbers, ""), _Gathered())
                    gathered.add(ungated, names, call.opinfo, number)
                    if len(recorded) == 1 and None not in recorded:
                        gathered.dtypes.update(recorded)  # the call as recorded: accepted too
                    for dtype, gate in gated.items():
                        piece.accepted.setdefault((probe.cast, beside, call.numbers, gate), _Gathered()).add((dtype,), names, call.opinfo, number)
                    for dtype, message in refusals:
                        gathered = piece.rejected.setdefault((probe.cast, call.numbers, _template(message)), _Gathered())
                        gathered.add((dtype,), names, call.opinfo, number)
                        gathered.messages.setdefault(dtype, message)
            for piece in returning:
                for i, name in piece.returns:
                    found = {_single(returned_dtypes[i]) for _, returned_dtypes in probe.accepted} - {None}
                    if found:
                        piece.returned.add(found, (name,), call.opinfo, number)
    return [piece.evidence(note) for piece in pieces]


def probe_site(
    cast: tuple[str, ...],
    made_by: str,
    built: bool = False,
    beside: tuple[str, ...] = (),
    numbers: tuple[tuple[str, str], ...] = (),
    gate: str = "",
) -> Site:
    """Where a probe's verdict was seen: the slots it cast beside the other inputs as recorded, the gate that let a dtype
    in, and the calls it was made from (``made_by``: 'OpInfo add (3 calls)'; ``built``: calls built from the schema)."""
    context = _with(list(beside) + spelled_numbers(numbers)) + (f" and {gate}" if gate else "")
    kind = SCHEMA_CALL_KIND if built else PROBE_CALL
    return seen_on(kind, f"{_subject(cast)}{context}, {made_by}", cast=cast, beside=beside, numbers=numbers, gate=gate)


def _built(gathered: _Gathered) -> bool:
    return list(gathered.opinfos) == [SCHEMA_CALL]


def _subject(cast: tuple[str, ...]) -> str:
    return f"{', '.join(cast)} cast {'alone' if len(cast) == 1 else 'together'}"


def _beside(call: ProbedCall, cast: tuple[str, ...]) -> tuple[str, ...]:
    """('query float16', 'key float16'): the other tensor inputs as recorded, on which ATen's answer may depend."""
    return tuple(
        f"{name} {_spelled(dtypes)}"
        for name, dtypes in call.slots
        if name not in cast and not name.startswith("return.") and effective(dtypes) is not None
    )


def _with(items: list[str]) -> str:
    return f" with {', '.join(items)}" if items else ""


def built_from_schema(evidence: Evidence) -> bool:
    """Probe evidence of calls built from the schema (or the catalogue), a dtype argument's among them."""
    verdict = evidence.verdict
    return evidence.source == PROBE and verdict is not None and verdict.site.kind in (SCHEMA_CALL_KIND, DTYPE_ARGUMENT)


def spelled_numbers(numbers: Iterable[tuple[str, str]]) -> list[str]:
    """['other a Python float']: Scalar arguments by the kind of Python number they held."""
    return [f"{name} {PYTHON_NUMBER}{kind}" for name, kind in numbers]


def _spelled(dtypes: object) -> str:
    found = effective(dtypes)
    return found.name if isinstance(found, DType) else f"{found} list"


def _sources(gathered: _Gathered) -> str:
    calls = len(gathered.calls)
    counted = f"({calls} call{'s' if calls > 1 else ''})"
    if _built(gathered):
        return f"{SCHEMA_CALL_LABEL} {counted}"
    by_kind = {kind: [opinfo.short for opinfo in gathered.opinfos if opinfo.kind == kind] for kind in RUN_KINDS}
    return f"{'; '.join(f'{kind} {_few(names)}' for kind, names in by_kind.items() if names)} {counted}"


def _few(names: list[str]) -> str:
    more = f" and {len(names) - _OPINFOS_NAMED} more" if len(names) > _OPINFOS_NAMED else ""
    return f"{', '.join(names[:_OPINFOS_NAMED])}{more}"


def _made(gathered: _Gathered, verdict: Verdict, order: dict[str, int]) -> Evidence:
    slots = tuple(sorted(gathered.slots, key=order.__getitem__))
    return Evidence(PROBE, "", canonical(gathered.dtypes), slots, len(gathered.calls), verdict)
