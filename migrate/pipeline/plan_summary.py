"""The run summary's sections counted over the applied plan: what probing changed in it (``probe``) and each
variable's verdicts (``verdicts``). They read the plan's evidence and conflicts, so a ``--report`` file gives the same."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from migrate.evidence.probe.merge import built_from_schema
from migrate.infer.probe_conflicts import JOINED, SPLIT
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.native import NativeFunctions
from migrate.model.plan import DECLARED, EMPTY, NOT_TRIED, OPINFO, PROBE, UNKNOWN_REASONS, Plan, Variable
from migrate.model.values import ValueRefusal
from migrate.model.verdict import ACCEPTED, OTHER_DEVICE, REJECTED, VERDICTS


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
                pieces = [e for e in variable.evidence if slot in e.slots and not e.refused]
                observed = {d for e in pieces if e.source == OPINFO for d in e.dtypes}
                known = observed | {d for e in pieces if e.source == DECLARED for d in e.dtypes}
                probed = {d for e in pieces if e.source == PROBE for d in e.dtypes}
                widened += bool(observed) and bool(probed - known)
    kinds = [c.kind for overload in plan.overloads for c in overload.conflicts]
    built = sum(
        1
        for o in plan.overloads
        if any(built_from_schema(e) for v in o.variables for e in v.evidence)
        and not any(e.source == OPINFO for v in o.variables for e in v.evidence)
    )
    return ProbeSummary(widened, kinds.count(SPLIT), kinds.count(JOINED), built)


def overload_kind(native: NativeFunctions, name: str) -> str:
    """'backward' for a ``*_backward`` overload, else its kind in its group (functional, inplace, out, mutable, ...)."""
    if name.split(".")[0].endswith("_backward"):
        return "backward"
    group = native.groups.get(name) if name in native.by_name else None
    kind = next((kind for kind, names in group.members if name in names), None) if group is not None else None
    return kind or "ungrouped"


def empty_only(variable: Variable) -> tuple[int, int]:
    """Dtypes only calls with an empty tensor showed at this variable: (counted as accepted before, still in its set).

    The first are the dtypes the rule "an empty call proves nothing" removed; the second are those it
    would have to (0 when the rule holds).
    """
    if variable.verdicts is None:
        return 0, 0
    shown = {d for e in variable.evidence if e.source == EMPTY and e.outcome != REJECTED for d in e.dtypes}
    other = {d for e in variable.evidence if e.source != EMPTY and not e.refused for d in e.dtypes}
    only = {d for d in shown if variable.verdicts.of(d) not in (ACCEPTED, OTHER_DEVICE)}
    return len(only), len({d for d in only if d in variable.dtypes and d not in other})


@dataclass(frozen=True)
class VerdictSummary:
    """Verdicts counted over a plan's variables (the run summary's ``verdicts`` section)."""

    variables: int
    incomplete_variables: int
    by_verdict: dict[str, int]
    unknown_by_kind: dict[str, int]  # most unknown verdicts first
    empty_call_dtypes: dict[str, int]  # before, now (``empty_only``)
    observed_probed_on_built_calls: int
    unknown_by_reason: dict[str, int] = field(default_factory=dict)  # in ``UNKNOWN_REASONS`` order
    unknown_by_kind_and_reason: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "variables": self.variables,
            "incomplete_variables": self.incomplete_variables,
            "by_verdict": dict(self.by_verdict),
            "unknown_by_kind": dict(self.unknown_by_kind),
            "unknown_by_reason": dict(self.unknown_by_reason),
            "unknown_by_kind_and_reason": {kind: dict(reasons) for kind, reasons in self.unknown_by_kind_and_reason.items()},
            "empty_call_dtypes": dict(self.empty_call_dtypes),
            "observed_probed_on_built_calls": self.observed_probed_on_built_calls,
        }

    def lines(self) -> list[str]:
        by_verdict = ", ".join(f"{verdict} {count}" for verdict, count in self.by_verdict.items())
        kinds = ", ".join(f"{kind} {count}" for kind, count in self.unknown_by_kind.items()) or "none"
        reasons = ", ".join(f"{reason} {count}" for reason, count in self.unknown_by_reason.items()) or "none"
        empty = self.empty_call_dtypes
        return [
            f"verdicts: {by_verdict} (per variable and dtype); {self.incomplete_variables} of {self.variables} variables incomplete",
            f"unknown verdicts by overload kind: {kinds}",
            f"unknown verdicts by reason: {reasons}",
            f"dtypes only calls on empty tensors showed: {empty['before']} counted as accepted before, {empty['now']} declared now; "
            f"{self.observed_probed_on_built_calls} observed overloads also probed on a call built from the schema",
        ]


def dtype_verdict_summary(native: NativeFunctions, plan: Plan) -> VerdictSummary:
    """Verdicts counted over the plan's variables, unknown ones by overload kind, and the dtypes from empty calls."""
    counts: Counter[str] = Counter()
    unknown_by_kind: Counter[str] = Counter()
    unknown_by_reason: Counter[str] = Counter()
    by_kind_and_reason: Counter[tuple[str, str]] = Counter()
    incomplete = variables = before = now = 0
    observed_built = sum(
        1
        for o in plan.overloads
        if any(e.source == OPINFO for v in o.variables for e in v.evidence)
        and any(built_from_schema(e) for v in o.variables for e in v.evidence)
    )
    for overload in plan.overloads:
        for variable in overload.variables:
            if variable.verdicts is None:
                continue
            variables += 1
            incomplete += variable.incomplete
            for dtype in TENSOR_DTYPES:
                counts[variable.verdicts.of(dtype)] += 1
            kind = overload_kind(native, overload.name)
            unknown_by_kind[kind] += len(variable.verdicts.unknown)
            for dtype in variable.verdicts.unknown:
                reason = variable.verdicts.reason_of(dtype) or NOT_TRIED
                unknown_by_reason[reason] += 1
                by_kind_and_reason[kind, reason] += 1
            removed, kept = empty_only(variable)
            before, now = before + removed, now + kept
    return VerdictSummary(
        variables,
        incomplete,
        {verdict: counts[verdict] for verdict in VERDICTS},
        dict(sorted(unknown_by_kind.items(), key=lambda item: (-item[1], item[0]))),
        {"before": before, "now": now},
        observed_built,
        {reason: unknown_by_reason[reason] for reason in UNKNOWN_REASONS if unknown_by_reason[reason]},
        {
            kind: {reason: by_kind_and_reason[kind, reason] for reason in UNKNOWN_REASONS if by_kind_and_reason[kind, reason]}
            for kind in sorted(unknown_by_kind, key=lambda k: (-unknown_by_kind[k], k))
        },
    )


@dataclass(frozen=True)
class ValuesSummary:
    """The run summary's ``values`` section: every value's refusals of dtypes another value took."""

    refusals: tuple[ValueRefusal, ...]

    def to_json(self) -> dict[str, Any]:
        return {"overloads": len({r.overload for r in self.refusals}), "refusals": [r.to_json() for r in self.refusals]}

    def lines(self) -> list[str]:
        if not self.refusals:
            return ["value-dependent dtypes: no value of a string argument refuses a dtype another value takes"]
        pairs = sum(len(r.dtypes) for r in self.refusals)
        first = self.refusals[0]
        return [
            f"value-dependent dtypes: {len({r.overload for r in self.refusals})} overloads refuse, at some value of a string argument,"
            f" dtypes another value takes ({pairs} (value, dtype) pairs, e.g. {first.overload} {first.spelled_value}:"
            f" {', '.join(str(d).removeprefix('torch.') for d in first.dtypes)}); the sets keep the union (listed in --report)"
        ]
