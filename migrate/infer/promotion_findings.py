"""Whether ATen promotes an overload's arguments, from what torch's refs declare and what its calls showed.

- Declared: the refs' ``elementwise_type_promotion_wrapper`` (the source of torch.onnx's table).
- Observed: the first candidate set of arguments whose mixed calls all ran and whose calls (mixed and
  diagonal) agree with one promotion kind of torch's rules (``migrate.evidence.promotion.calls.consistent_kinds``).

- Observed for a reduction: its calls with ``dtype=None`` returned int64 for bool and integer tensors and the
  tensor's own dtype for the rest (``reduction_findings``): ``int_to_long``, which no ref declares.

Both agree: the promotion is written. Observation alone also writes it. Where they disagree the
observation settles it, and the disagreement is a ``type-promotion`` conflict in ``--report``:
the refs declare ``lerp`` promoting, but ATen refuses ``lerp(float32, float64, float32)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from migrate.evidence.probe.dtype_arguments import DtypeArgument
from migrate.evidence.sites import seen_on
from migrate.evidence.promotion.calls import consistent_kinds, own_dtype
from migrate.runtime.runs import overload_key
from migrate.model.dtypes import DType, canonical
from migrate.model.native import NativeFunctions
from migrate.model.plan import PROBE, Conflict, Evidence
from migrate.model.promotion import INT_TO_LONG, KEEP_OWN_DTYPE, Promotion, computation_dtype
from migrate.model.verdict import ACCEPTED, DTYPE_ARGUMENT, PROMOTION_CALL, REJECTED, Site, Verdict

CONFLICT = "type-promotion"  # the refs and ATen's calls disagree on an overload's promotion
WHERE = "a call built for promotion"  # names the diagonal calls, in their evidence's call


@dataclass(frozen=True)
class PromotionFinding:
    """One overload's promotion as decided, the conflict if the sources disagree, and its diagonal calls' evidence."""

    name: str  # 'add.Tensor'
    promotion: Promotion | None  # None: ATen does not promote (whatever the refs declare)
    tensors: tuple[str, ...] = ()  # the promoted tensor arguments (the promotion's args less its Scalars)
    conflicts: tuple[Conflict, ...] = ()
    diagonal: tuple[Evidence, ...] = ()  # the calls built for promotion with every promoted tensor at one dtype
    returned: tuple[Evidence, ...] = ()  # where only numbers promote: the dtypes those calls returned (``numbers_returned``)

    def kept(self, arguments: set[str]) -> PromotionFinding | None:
        """The finding for a file whose schema has these arguments; None when one of its arguments is missing."""
        args = self.promotion.args if self.promotion else ()
        return self if set(args) <= arguments else None


def _call_text(name: str, call: list[Any]) -> str:
    text, _, message, _ = call
    return f"{name}({text}): {message}"


def _contradicting(report: dict[str, Any], declared: Promotion) -> list[Any] | None:
    """The first refused mixed call of the declared arguments where the kernel runs both its promoted arguments'
    own dtype and its computation dtype (``consistent_kinds``' reason to rule promotion out), if any."""
    for tried in report["tried"]:
        if tried["args"] == list(declared.args):
            ran = {dtype for dtype, returned, _, _ in tried["diagonal"] if returned is not None}
            for call in tried["mixed"]:
                predicted = call[3].get(declared.kind)
                if call[1] is None and predicted and predicted[0] in ran and own_dtype(call[0]) in ran:
                    return call
    return None


def _identity(promotion: Promotion, tried: dict[str, Any]) -> bool:
    """A promotion of one tensor alone into its own dtype (``default`` or ``no_opmath`` of ``self``: no mixed call can
    be made) computes in the dtype the tensor has: its line would say no more than the variable, so none is written."""
    return promotion.kind in KEEP_OWN_DTYPE and len(promotion.args) == 1 and len(tried["tensors"]) == 1 and not tried["mixed"]


def finding_of(report: dict[str, Any]) -> PromotionFinding:
    """The decision for one overload's report (``migrate.evidence.promotion.calls.promotion_reports``)."""
    name = overload_key(report["overload"])
    declared = Promotion(report["declared"]["kind"], tuple(report["declared"]["args"])) if report["declared"] else None
    chosen, kinds = None, []
    for tried in report["tried"]:
        kinds = consistent_kinds(tried)
        if kinds:
            chosen = tried
            break
    promotion = None
    if chosen is not None:
        args = tuple(chosen["args"])
        agreeing = declared is not None and declared.args == args and declared.kind in kinds
        promotion = Promotion(declared.kind if agreeing else kinds[0], args)
    identity = promotion is not None and _identity(promotion, chosen)
    conflicts = ()
    if declared is not None and promotion != declared:
        if identity:
            message = f"torch's refs declare {name} promoting {declared}; ATen's calls compute in the tensor's own dtype ({promotion}), which says no more than its variable: no promotion written"
        elif promotion is None:
            refused = _contradicting(report, declared)
            why = (
                f"ATen refused {_call_text(name, refused)}"
                if refused
                else "no promotion kind agrees with its calls (a promoted argument never ran promoted, or diagonal calls ran in one dtype)"
            )
            message = f"torch's refs declare {name} promoting {declared}; {why}: no promotion written"
        else:
            message = f"torch's refs declare {name} promoting {declared}; ATen's calls agree with {promotion}, which is written"
        conflicts = (Conflict(CONFLICT, declared.args, (), message),)
    if promotion is None or identity:
        return PromotionFinding(name, None, (), conflicts)
    tensors = tuple(a for a in promotion.args if a in chosen["tensors"])
    returned = () if tensors else numbers_returned(chosen)
    return PromotionFinding(name, promotion, tensors, conflicts, _diagonal(chosen, tensors), returned)


def numbers_returned(tried: dict[str, Any]) -> tuple[Evidence, ...]:
    """Where every promoted argument is a number, the dtypes the calls built for promotion returned, at ``return.0``:
    the numbers' kinds set it (``where.Scalar(cond, True, False)`` is bool, with ``1`` and ``2`` int64)."""
    returned = canonical(DType(r) for _, r, _, _ in tried["diagonal"] if r is not None)
    site = seen_on(PROMOTION_CALL, f"{', '.join(tried['args'])} Python numbers of each kind, {WHERE}")
    return (Evidence(PROBE, "", returned, ("return.0",), verdict=Verdict(ACCEPTED, site)),) if returned else ()


def _diagonal(tried: dict[str, Any], tensors: tuple[str, ...]) -> tuple[Evidence, ...]:
    """The dtypes the diagonal calls ran in, and the refused ones by message (input dtypes: ``promotion_sets`` maps
    them to computation dtypes by the kind it writes)."""
    accepted, refused = set(), {}
    for dtype, returned, message, _ in tried["diagonal"]:
        if returned is not None:
            accepted.add(DType(dtype))
        else:
            refused.setdefault(message, []).append(DType(dtype))
    site = diagonal_site(tensors)
    evidence = [Evidence(PROBE, "", canonical(accepted), tensors, verdict=Verdict(ACCEPTED, site))] if accepted else []
    evidence += [
        Evidence(PROBE, "", canonical(dtypes), tensors, verdict=Verdict(REJECTED, site, tuple(dict.fromkeys(dtypes, message).items())))
        for message, dtypes in sorted(refused.items())
    ]
    return tuple(evidence)


def diagonal_site(tensors: tuple[str, ...]) -> Site:
    """Where the diagonal calls' verdicts were seen: calls built for promotion, the tensors at one dtype."""
    return seen_on(PROMOTION_CALL, f"{', '.join(tensors)} at one dtype, {WHERE}")


def findings(reports: Iterable[dict[str, Any]]) -> dict[str, PromotionFinding]:
    """Per overload ('add.Tensor'), the finding of every overload the refs declare promoting or whose calls promote."""
    found = {}
    for report in reports:
        finding = finding_of(report)
        if finding.promotion is not None or finding.conflicts:
            found[finding.name] = finding
    return found


def promotion_findings(native: NativeFunctions, reports: Mapping[str, dict[str, Any]]) -> dict[str, PromotionFinding]:
    """Per overload of the file, its finding from its report (``Sources.promotions``), kept where the file's schema has
    its arguments."""
    found = {}
    for name, finding in findings(reports.values()).items():
        entry = native.by_name.get(name)
        kept = finding.kept({s.name for s in entry.schema.slots if not s.is_return}) if entry is not None else None
        if kept is not None:
            found[name] = kept
    return found


def reduction_findings(native: NativeFunctions, facts: Mapping[str, DtypeArgument]) -> dict[str, PromotionFinding]:
    """Per overload whose ``dtype`` argument left None makes it compute as ``int_to_long``, its finding: the calls with
    one tensor cast to each dtype (``migrate.evidence.probe.dtype_arguments``) each returned that rule's dtype, in two
    dtypes or more and somewhere not the tensor's own (``sum`` of int8 is int64, of float16 float16; ``cumsum`` too).
    Its in-place and out= siblings compute in the tensor they write into, so they take none."""
    found = {}
    for name, fact in sorted(facts.items()):
        if name not in native.by_name or fact.argument != "dtype" or len(fact.unset_cast) != 1 or fact.returns != ("return.0",):
            continue
        (tensor,) = fact.unset_cast
        ran = [(cast, returned[0]) for cast, returned in fact.unset if returned[0] is not None]
        if not all(returned.name == computation_dtype(INT_TO_LONG, cast.name) for cast, returned in ran):
            continue
        if len({returned for _, returned in ran}) < 2 or all(cast == returned for cast, returned in ran):
            continue
        site = seen_on(DTYPE_ARGUMENT, f"{fact.argument} None, {tensor} at each dtype, a call built from the schema (what it returned)")
        diagonal = (Evidence(PROBE, "", canonical(cast for cast, _ in ran), (tensor,), len(ran), Verdict(ACCEPTED, site)),)
        found[name] = PromotionFinding(name, Promotion(INT_TO_LONG, (tensor,)), (tensor,), (), diagonal)
    return found
