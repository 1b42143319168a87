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

Evidence keeps the detail: per set of slots cast and dtypes of the other slots, which
dtypes ATen accepted (``...: accepted``), and per message, which it refused
(``...: rejected: <message>``), with the OpInfos and calls behind each. Messages that
differ only in the dtype they name share one piece, the differing part listed per dtype
in the evidence's order (``... with dtype {Char|Short|Float}``): each dtype's message is
kept word for word, and a report stays a few megabytes.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from migrate.runtime.runs import MIXED, SCHEMA_CALL, Observation, OpInfoId, ProbedCall, SweepResult, effective, overload_key
from migrate.runtime.variables import variables_of
from migrate.model.dtypes import DType, canonical
from migrate.model.plan import DECLARED, EMPTY, OPINFO, PROBE, Conflict, Evidence, OverloadPlan, Plan, Variable
from migrate.model.rejection import DTYPE_SPELLING, REJECTED, is_rejection, names_a_dtype, rejection_messages

ACCEPTED = ": accepted"  # ends the ``where`` of probe evidence for dtypes ATen accepted
ON_EMPTY = ", on empty tensors"  # in the ``where`` of evidence from probing a call with an empty tensor
RETURNED = "returned by accepted probes"  # begins the ``where`` of the dtypes probes' calls returned
PYTHON_NUMBER = "a Python "  # in the ``where`` of probe evidence: 'other a Python float', a Scalar argument as recorded
SCHEMA_CALL_WHERE = "a call built from the schema"  # in the ``where`` of probe evidence from migrate.evidence.probe.schema_calls
SPLIT = "probe-split"  # conflict: probing split a variable the observations alone would have declared
JOINED = "probe-joined"  # conflict: probing joined variables the observations alone would have kept apart
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
    raw.update(row for call in calls for row in call.accepted_rows())
    rows = [tuple(map(effective, row)) for row in raw]
    mixed = {i for row in rows for i, d in enumerate(row) if d == MIXED}
    rows = [tuple(None if i in mixed else d for i, d in enumerate(row)) for row in rows]
    tied = sorted({tie for call in calls for tie in _tied(call)})
    classes = variables_of(slots, rows, [tuple(slots.index(s) for s in tie) for tie in tied])
    variables = []
    for number, members in enumerate(classes):
        indices = [slots.index(slot) for slot in members]
        dtypes = {row[i] for row in rows for i in indices} - {None}
        evidence = tuple(_evidence(members, calls)) + tuple(replace(e, source=EMPTY) for e in _evidence(members, empty, ON_EMPTY))
        variables.append(Variable(f"P{number}", tuple(dtypes), members, evidence))
    return OverloadPlan(name, tuple(variables))


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
        self.opinfos[opinfo] = None
        self.calls.add(call)


def _evidence(members: tuple[str, ...], calls: list[ProbedCall], note: str = "") -> Iterator[Evidence]:
    """Per slots cast and context, what ATen accepted; per slots cast and message, what it refused; what it returned.

    Dtypes accepted only with a gating argument set (``dtype=torch.float32``) are a piece of their own, which says so.
    """
    accepted: dict[tuple[str, str], _Gathered] = {}
    rejected: dict[tuple[str, str], _Gathered] = {}
    returned = _Gathered()
    if not calls:
        return
    return_names = [name for name, _ in calls[0].slots if name.startswith("return.")]
    returns = [(i, name) for i, name in enumerate(return_names) if name in members]  # positions in a probe's returns
    for number, call in enumerate(calls):
        original = dict(call.slots)
        for probe in call.probes:
            bound = [name for name in probe.cast if name in members]
            if bound:  # the call as recorded ran, whatever its casts did
                context = _context(call, probe.cast)
                recorded = {_single(original[name]) for name in probe.cast}
                gated = {dtype: gate for dtype, gate, _ in probe.gated}
                gathered = accepted.setdefault((_subject(probe.cast), context), _Gathered())
                gathered.add((dtype for dtype, _ in probe.accepted if dtype not in gated), bound, call.opinfo, number)
                if len(recorded) == 1 and None not in recorded:
                    gathered.dtypes.update(recorded)  # the call as recorded: accepted too
                for dtype, gate in gated.items():
                    accepted.setdefault((_subject(probe.cast), f"{context} and {gate}"), _Gathered()).add((dtype,), bound, call.opinfo, number)
            # a gated dtype was refused as recorded too: the gate let it in, and the refusal speaks of the call as it was
            refusals = [*probe.rejected, *((dtype, message) for dtype, _, message in probe.gated)]
            for dtype, message in refusals if bound else ():
                gathered = rejected.setdefault((_subject(probe.cast) + _numbers(call), _template(message)), _Gathered())
                gathered.add((dtype,), bound, call.opinfo, number)
                gathered.messages.setdefault(dtype, message)
            for i, name in returns:
                found = {_single(returned_dtypes[i]) for _, returned_dtypes in probe.accepted} - {None}
                if found:
                    returned.add(found, (name,), call.opinfo, number)
    order = {name: i for i, name in enumerate(members)}
    for (subject, context), gathered in accepted.items():
        if gathered.dtypes:
            yield _made(gathered, f"{subject}{context}, {_sources(gathered)}{note}{ACCEPTED}", order)
    for (subject, _), gathered in rejected.items():
        messages = _one_per_dtype([gathered.messages[d] for d in canonical(gathered.messages)])
        yield _made(gathered, f"{subject}, {_sources(gathered)}{note}{REJECTED}{messages}", order)
    if returned.slots:
        yield _made(returned, f"{RETURNED}, {_sources(returned)}{note}", order)


def _one_per_dtype(messages: list[str]) -> str:
    """Messages that differ only where they name a dtype, as one text: 'got dtype {Char|Short|Float}'.

    The alternatives follow the evidence's dtypes in order, so each dtype's own message
    is in it word for word.
    """
    if len(set(messages)) == 1:
        return messages[0]
    prefix = os.path.commonprefix(messages)
    prefix = prefix[: max(prefix.rfind(c) for c in " :'\"(<") + 1]  # whole words only
    suffix = os.path.commonprefix([m[len(prefix) :][::-1] for m in messages])[::-1]
    cut = [i for i, c in enumerate(suffix) if not (c.isalnum() or c == "_")]
    suffix = suffix[cut[0] :] if cut else ""
    middles = [m[len(prefix) : len(m) - len(suffix)] for m in messages]
    return f"{prefix}{{{'|'.join(middles)}}}{suffix}"


def _subject(cast: tuple[str, ...]) -> str:
    return f"{', '.join(cast)} cast {'alone' if len(cast) == 1 else 'together'}"


def _context(call: ProbedCall, cast: tuple[str, ...]) -> str:
    """' with query float16, key float16, scale a Python float': the other inputs as recorded, on which ATen's
    answer may depend."""
    others = [
        f"{name} {_spelled(dtypes)}"
        for name, dtypes in call.slots
        if name not in cast and not name.startswith("return.") and effective(dtypes) is not None
    ]
    return _with(others + spelled_numbers(call.numbers))


def _numbers(call: ProbedCall) -> str:
    """' with other a Python float': the call's Scalar arguments, by which a refusal's dtype may have moved."""
    return _with(spelled_numbers(call.numbers))


def _with(items: list[str]) -> str:
    return f" with {', '.join(items)}" if items else ""


_REFUSAL = re.compile(rf"^(?P<cast>.*?) cast (?:alone|together)(?: with (?P<context>.*?))?, (?:OpInfo |{SCHEMA_CALL_WHERE})")


def refused_without_companions(variable: Variable) -> set[DType]:
    """Dtypes ATen refused at every input slot of the variable, by a message naming a dtype, in calls whose other
    arguments held no tensor, only Python numbers, and no other evidence accepted: the dtype itself was refused,
    not a companion beside it or the call's data (``bitwise_and.Scalar(float32 tensor, 1)``: ``"bitwise_and_cpu"
    not implemented for 'Float'``; ``lstm``'s built call at float64 takes another path, refused with ``t() expects
    a tensor with <= 2 dimensions``, which names none)."""
    inputs = {s for s in variable.binds if not s.startswith("return.")}
    refused, accepted = set(), set()
    for piece in variable.evidence:
        found = _REFUSAL.match(piece.where) if piece.source == PROBE else None
        if not is_rejection(piece):
            accepted.update(piece.dtypes)
        elif found and inputs <= set(found["cast"].split(", ")):
            context = found["context"].split(", ") if found["context"] else []
            if all(PYTHON_NUMBER in item for item in context):
                refused.update(d for d, message in rejection_messages(piece).items() if names_a_dtype(message))
    return refused - accepted


def spelled_numbers(numbers: Iterable[tuple[str, str]]) -> list[str]:
    """['other a Python float']: Scalar arguments by the kind of Python number they held."""
    return [f"{name} {PYTHON_NUMBER}{kind}" for name, kind in numbers]


def _spelled(dtypes: object) -> str:
    found = effective(dtypes)
    return found.name if isinstance(found, DType) else f"{found} list"


def _sources(gathered: _Gathered) -> str:
    calls = len(gathered.calls)
    counted = f"({calls} call{'s' if calls > 1 else ''})"
    if list(gathered.opinfos) == [SCHEMA_CALL]:
        return f"{SCHEMA_CALL_WHERE} {counted}"
    names = [str(opinfo) for opinfo in gathered.opinfos]
    more = f" and {len(names) - _OPINFOS_NAMED} more" if len(names) > _OPINFOS_NAMED else ""
    return f"OpInfo {', '.join(names[:_OPINFOS_NAMED])}{more} {counted}"


def _made(gathered: _Gathered, where: str, order: dict[str, int]) -> Evidence:
    slots = tuple(sorted(gathered.slots, key=order.__getitem__))
    return Evidence(PROBE, where, canonical(gathered.dtypes), slots, len(gathered.calls))


@dataclass(frozen=True)
class ProbeSummary:
    """What probing changed in a plan (the run summary's ``probe`` section)."""

    slots_widened: int
    variables_split: int
    variables_joined: int
    overloads_from_built_calls: int

    def to_json(self) -> dict[str, int]:
        return {
            "slots_widened": self.slots_widened,
            "variables_split": self.variables_split,
            "variables_joined": self.variables_joined,
            "overloads_from_built_calls": self.overloads_from_built_calls,
        }

    def lines(self) -> list[str]:
        return [
            f"probe: {self.slots_widened} slots widened, {self.variables_split} variables split, {self.variables_joined} joined; "
            f"{self.overloads_from_built_calls} overloads no sample reaches typed by a call built from the schema"
        ]


def probe_summary(plan: Plan) -> ProbeSummary:
    """What probing changed in a plan, read from its evidence and conflicts (so a ``--report`` file gives the same).

    Slots widened: observed slots where ATen accepted dtypes that were neither observed
    nor declared for other devices; variables split and joined: the conflicts saying so;
    overloads from built calls: those probing a call built from the schema typed.
    """
    widened = 0
    for overload in plan.overloads:
        for variable in overload.variables:
            for slot in variable.binds:
                pieces = [e for e in variable.evidence if slot in e.slots and not is_rejection(e)]
                observed = {d for e in pieces if e.source == OPINFO for d in e.dtypes}
                known = observed | {d for e in pieces if e.source == DECLARED for d in e.dtypes}
                probed = {d for e in pieces if e.source == PROBE for d in e.dtypes}
                widened += bool(observed) and bool(probed - known)
    kinds = [c.kind for overload in plan.overloads for c in overload.conflicts]
    built = sum(
        1
        for o in plan.overloads
        if any(SCHEMA_CALL_WHERE in e.where for v in o.variables for e in v.evidence if e.source == PROBE)
        and not any(e.source == OPINFO for v in o.variables for e in v.evidence)
    )
    return ProbeSummary(widened, kinds.count(SPLIT), kinds.count(JOINED), built)


def split_and_joined(observed: tuple[Variable, ...], probed: tuple[Variable, ...]) -> list[Conflict]:
    """Conflicts for each observed variable probing split, and each probed variable that joins observed ones."""
    conflicts = []
    for variable in observed:
        parts = [p for p in probed if set(p.binds) & set(variable.binds)]
        if len(parts) > 1:
            pieces = "; ".join(", ".join(s for s in p.binds if s in variable.binds) for p in parts)
            message = (
                f"observations alone would tie {', '.join(variable.binds)}; ATen accepted them with different dtypes "
                f"when probed, so they are split: {pieces}"
            )
            conflicts.append(Conflict(SPLIT, variable.binds, (), message))
    for variable in probed:
        parts = [o for o in observed if set(o.binds) & set(variable.binds)]
        if len(parts) > 1:
            pieces = "; ".join(", ".join(o.binds) for o in parts)
            message = f"probed and observed calls together tie {', '.join(variable.binds)}, which observations alone kept apart: {pieces}"
            conflicts.append(Conflict(JOINED, variable.binds, (), message))
    return conflicts
