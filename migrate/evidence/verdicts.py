"""A verdict per dtype for each variable, read from its merged evidence (docs/evidence.md).

A maintainer trusts a written set only if each of its dtypes rests on something ATen did.
So every dtype a plain tensor can have gets one verdict per variable, the first that holds:

- ``accepted``: a call with an element in every tensor argument and return ran (an OpInfo
  observation, an accepted probe, a metadata-reading kernel on meta tensors); calls with an
  empty tensor are ``empty`` evidence and never count, since ATen returns before its dtype
  dispatch (``mm`` of (0, 2) and (2, 3) bool tensors runs);
- ``other-device``: the OpInfo of this very overload claims it for CUDA (PyTorch's CI tests
  that claim; the MPS, XPU and HPU sets OpInfo derives by default are no evidence);
- ``rejected``: a probe of such a call raised, with ATen's message; for a variable of returns only,
  also a dtype no accepted call returned although probing cast the inputs to every dtype
  (``NEVER_RETURNED``): a return takes what the inputs give it;
- ``promoted``: a diagonal call with every promoted tensor at this dtype ran, and the kernel computed
  in another dtype, as the overload's ``type_promotion:`` kind says (``acos`` of int64 computes in
  float32 under ``int_to_float``): settled, and not in the set of computation dtypes;
- ``unknown``: nothing says. A variable with unknown verdicts is ``incomplete``: its set is a
  lower bound, never a reason to narrow anything.

In-place, out= and alias overloads that take another overload's constraints take its verdicts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from migrate.evidence.probe.merge import built_from_schema
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.native import NativeFunctions
from migrate.model.plan import (
    DECLARED,
    EMPTY,
    EMPTY_ONLY,
    NO_CPU_KERNEL,
    NO_VALID_CALL,
    NOT_TRIED,
    UNKNOWN_REASONS,
    KERNEL,
    OPINFO,
    PROBE,
    OverloadPlan,
    Plan,
    Variable,
    Verdicts,
)
from migrate.model.verdict import ACCEPTED, OTHER_DEVICE, PROMOTED, REJECTED, RETURNED, VERDICTS


NEVER_RETURNED = "never returned: no accepted call returned this dtype, though probing cast the inputs to every dtype"


def returns_probed(variable: Variable) -> bool:
    """Only returns, and probes cast the inputs of its calls to every dtype: what they never returned, no call returns."""
    return all(slot.startswith("return.") for slot in variable.binds) and any(
        e.source == PROBE and e.outcome == RETURNED for e in variable.evidence
    )


def verdicts_of(variable: Variable, cpu_kernel: bool = True) -> Verdicts:
    """The verdicts its evidence gives (see the module's docstring), each unknown one with why (``UNKNOWN_REASONS``)."""
    accepted, other, rejected, empty, promoted = set(), set(), {}, set(), {}
    for evidence in variable.evidence:
        if evidence.source == PROBE and evidence.outcome == PROMOTED:
            for dtype in evidence.dtypes:
                promoted.setdefault(dtype, evidence.verdict.promotion_note)
        elif evidence.refused:
            for dtype, message in evidence.messages.items():
                rejected.setdefault(dtype, message)
        elif evidence.source in (OPINFO, PROBE, KERNEL):
            accepted.update(evidence.dtypes)
        elif evidence.source == DECLARED:
            other.update(evidence.dtypes)
        elif evidence.source == EMPTY:
            empty.update(evidence.dtypes)
    if returns_probed(variable):
        for dtype in TENSOR_DTYPES:
            if dtype not in accepted and dtype not in other:
                rejected.setdefault(dtype, NEVER_RETURNED)
    if not cpu_kernel:
        reason = dict.fromkeys(TENSOR_DTYPES, NO_CPU_KERNEL)
    elif not accepted:
        reason = dict.fromkeys(TENSOR_DTYPES, NO_VALID_CALL)
    else:
        reason = {d: EMPTY_ONLY if d in empty else NOT_TRIED for d in TENSOR_DTYPES}
    return Verdicts(tuple(accepted), tuple(other), tuple(rejected.items()), tuple(reason.items()), tuple(promoted.items()))


def with_verdicts(plan: OverloadPlan, cpu_kernel: bool = True) -> OverloadPlan:
    """The plan with each variable's verdicts (``cpu_kernel``: whether a CPU call can reach the overload at all)."""
    return replace(plan, variables=tuple(replace(v, verdicts=verdicts_of(v, cpu_kernel)) for v in plan.variables))


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
