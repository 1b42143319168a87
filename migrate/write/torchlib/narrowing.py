"""Which dtypes a torchlib annotation may lose or gain, from ATen's rejections and real exports.

An annotation claims the dtypes its ONNX function handles; onnxscript's tests skip every
dtype it lacks. So a dtype leaves an annotation only on proof: ATen refused it (a probe's
rejection message), or its export failed (``export-error``, ``invalid-model``,
``mismatch``). A dtype joins only when its export is ``ok``: every call of every value
(the arguments that change the graph: ``reduce='amax'``, ``min=number``) exports and matches,
since a user's model at any of them would otherwise fail (a ``partial`` or ``no-kernel`` value
blocks it); a ``no-kernel`` or ``partial`` dtype of the original stays (some call exports;
for ``no-kernel`` the ONNX function is valid, onnxruntime's CPU provider lacks a kernel). A variable's verdict for a dtype combines its own case and the diagonal
holding it (``partial`` when they disagree). A failure every dtype shares is the function's
or the calls', not a dtype's: it removes nothing. A complex dtype's export settles nothing either
way: the exporter sends complex inputs to a ``complex=True`` function or a decomposition,
never to the function annotated (``aten_expand``'s complex64 export fails with "No ONNX
function found", which says nothing of ``aten_expand``). Absence of evidence changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrate.model.dtypes import DType, canonical, named
from migrate.model.export_status import FAILED, HANDLED, OK, PARTIAL, combined
from migrate.model.plan import Variable
from migrate.model.schema import RETURN_PREFIX

ANY_TENSOR = named(
    *("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64"),
    *("complex64", "complex128", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"),
)  # what an annotation of any tensor (``TensorType``) claims: the dtypes a declaration can name
JOINING = (OK, PARTIAL)  # some call really exports and matches: a failure of another dtype then tells of that dtype
ADDING = (OK,)  # a dtype the original annotation lacks joins only when every call, of every value, exports and matches
EXPORT_JUDGE = "export"  # a case exported with torch.onnx.export, about the functions the exporter ran for the overload
FUNCTION_JUDGE = "function"  # a case of the function called directly (a one-function model): for functions the exporter does not reach
JUDGE_NAMES = {EXPORT_JUDGE: "export", FUNCTION_JUDGE: "function-level judge"}  # as a note says which judge settled a dtype


def rejected_dtypes(variable: Variable) -> dict[DType, str]:
    """Dtypes ATen refused at the variable's slots, each with its message; never a dtype the variable declares.

    The plan's verdicts when inference gave them (``rejected``: no call with elements ran, at any
    setting of a gating argument, and one raised); else the probe evidence's refusals.
    """
    if variable.verdicts is not None:
        return {dtype: message for dtype, message in variable.verdicts.rejected if dtype not in variable.dtypes}
    found: dict[DType, str] = {}
    for evidence in variable.evidence:
        if evidence.refused:
            for dtype, message in evidence.messages.items():
                if dtype not in variable.dtypes:
                    found.setdefault(dtype, message)
    return {dtype: found[dtype] for dtype in canonical(found)}


@dataclass(frozen=True)
class ExportStatus:
    """What export-check found for one overload's slots cast to one dtype at one value: the case's status and message,
    each call's (the slots it passed a tensor to, its status and message, the torchlib functions that ran for
    the overload), and the judge (``export``, or ``function``: the function called directly)."""

    cast: tuple[str, ...]
    dtype: DType
    status: str
    message: str
    calls: tuple[tuple[tuple[str, ...], str, str, tuple[str, ...]], ...] = ()
    judge: str = EXPORT_JUDGE
    value: str = ""  # the calls' arguments that change the graph ("reduce='amax'"); a case per value


@dataclass(frozen=True)
class Change:
    """A dtype an annotation gains or loses, and why (the export's status and message, or ATen's rejection)."""

    dtype: DType
    why: str


@dataclass(frozen=True)
class Settled:
    """An annotation's dtypes after the rule, and what changed from the original."""

    dtypes: tuple[DType, ...]
    added: tuple[Change, ...]
    removed: tuple[Change, ...]


def settle(
    declared: Iterable[DType],
    original: Iterable[DType],
    exported: Mapping[DType, tuple[str, ...]],
    rejected: Mapping[DType, str],
) -> Settled:
    """The annotation of a variable (ONNX dtypes): the rule of this module applied to each declared or original dtype.

    ``exported``: per dtype, the export's status, message and judge (``export`` or ``function``; empty without results);
    ``rejected``: per dtype, ATen's rejection message. A failure tells of its dtype only when some
    other dtype's export worked: when none did, it is the function's or the calls' (``bincount``
    raises for any ``weights``, ``all.dim``'s one sampled call is 0-dim), and removes nothing.
    """
    declared, original = set(declared), set(original)
    exported = {dtype: outcome for dtype, outcome in exported.items() if not exported_elsewhere(dtype)}
    telling = any(outcome[0] in JOINING for outcome in exported.values())
    kept, added, removed = [], [], []
    for dtype in canonical(declared | original):
        status, message, *judge = exported.get(dtype, ("", ""))
        said = " and ".join(JUDGE_NAMES[j] for j in (judge[0] if judge else EXPORT_JUDGE).split("+"))
        why = f"{said} {status}: {message}" if message else f"{said} {status}"
        if status in ADDING or (status in HANDLED and dtype in original):
            kept.append(dtype)
            if dtype not in original:
                added.append(Change(dtype, why))
        elif status in FAILED and telling:
            if dtype in original:
                removed.append(Change(dtype, why))
        elif dtype in original and dtype not in declared and dtype in rejected:
            removed.append(Change(dtype, f"ATen rejects it: {rejected[dtype]}"))
        elif dtype in original:
            kept.append(dtype)
    return Settled(tuple(kept), tuple(added), tuple(removed))


def exported_elsewhere(dtype: DType) -> bool:
    """The exporter sends complex inputs to a ``complex=True`` function (or a decomposition), never to the
    function being annotated: its export proves nothing about that function, ok or failed."""
    return dtype.name.startswith("complex")


def by_dtype(statuses: Iterable[ExportStatus], cast: tuple[str, ...], function: str | None = None) -> dict[DType, list[tuple[str, str, str]]]:
    """Per dtype, the outcomes (status, message, judge) of the calls that cast these slots: those of the variable's
    own case and of the diagonal holding it, that pass a tensor to every one of the slots (a call without weights
    says nothing of them) and, for a ``function``, that ran it (an export the exporter decomposed, or sent to
    another function, says nothing of it)."""
    found: dict[DType, list[tuple[str, str, str]]] = {}
    for status in statuses if cast else ():  # a variable of returns only has no case
        if not set(cast) <= set(status.cast):
            continue
        if status.calls:
            outcomes = [
                (outcome, message, status.judge)
                for slots, outcome, message, ran in status.calls
                if set(cast) <= set(slots) and (function is None or function in ran)
            ]
        else:
            outcomes = [(status.status, status.message, status.judge)]
        if outcomes:
            found.setdefault(status.dtype, []).extend(outcomes)
    return found


def tied_statuses(
    exported: Mapping[str, tuple[ExportStatus, ...]],
    slots: Iterable[str],
    declared: Mapping[str, Iterable[tuple[str, ...]]],
    function: str | None = None,
) -> dict[DType, tuple[str, str, str]]:
    """Per dtype, the verdict (status, message, the judges that gave it) of the slots one annotation of ``function``
    ties, over the overloads it serves (``declared``: each overload and the slots each of its declared variables
    binds). An overload's calls judge its own slots among them, with the slots its declaration ties to those: for
    ``aten_le``'s ``self, other``, le.Tensor's ``self`` and ``other`` but le.Scalar's ``self`` alone (its ``other`` is
    a Scalar, so its cases cast ``self``); for a return torchlib annotates alone, the parameters the yaml ties to it.
    A dtype is judged by the calls that give it to every one of these slots of the overload: ``indices`` and
    ``offsets`` under one TypeVar are proven by a call with both int32, not by int32 indices beside int64
    offsets; and by the calls that ran the function for the overload (the export's where the exporter
    dispatched to it, the function-level judge's where it did not)."""
    tied = set(slots)
    found: dict[DType, list[tuple[str, str, str]]] = {}
    for overload, variables in declared.items():
        cast: list[str] = []
        for binds in variables:
            if tied & set(binds):
                cast.extend(s for s in binds if not s.startswith(RETURN_PREFIX) and s not in cast)
        for dtype, outcomes in by_dtype(exported.get(overload, ()), tuple(cast), function).items():
            found.setdefault(dtype, []).extend(outcomes)
    return {dtype: (*combined(o[:2] for o in outcomes), judges(outcomes)) for dtype, outcomes in found.items()}


def judges(outcomes: Iterable[tuple[str, str, str]]) -> str:
    """The judges some outcomes come from: ``export``, ``function`` or ``export+function``."""
    return "+".join(dict.fromkeys(sorted(judge for _, _, judge in outcomes)))
