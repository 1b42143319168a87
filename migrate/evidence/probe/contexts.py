"""Probing a slot again beside other dtypes of the variable it may follow, in a sweep worker.

Some slots accept a dtype only when another variable has it too: ``scaled_dot_product_attention``
takes a float16 mask beside a float16 query, not beside a float32 one (``Expected attn_mask
dtype to be bool or float or to match query dtype``). The probes of one call show the hint:
a slot cast alone (the others as recorded) is refused a dtype that it was accepted with when
cast together with the slots that share its recorded dtype. For such a slot, the call is made
again with those other slots (the ones no dtype could be cast to alone: the query, key and
value) cast to each dtype they were accepted with, and the slot cast alone to every dtype
beside each. Each is reported as a probed call of its own, whose recorded dtypes are those of
the call made again, so ``migrate.evidence.probe.follows`` can compare what the slot accepted
beside each dtype of the others. Nothing is probed again for a slot with no such hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Prober = Callable[[dict[int, Any]], tuple[tuple[Any, ...] | None, str]]


def context_reports(call: Any, report: dict[str, Any], prober: Prober, universe: tuple[Any, ...], dtype_name: Callable[[Any], str]) -> Iterator[dict[str, Any]]:
    """Probed-call reports (``migrate.evidence.probe.prober.probe_call``'s form) of ``call`` made again with a
    tied group of its slots at each other dtype they were accepted with, one hinted slot probed alone beside them."""
    if report["again"]:
        return
    arguments = [name for _, name, _, _ in call.slots.arguments]
    recorded = dict(report["slots"])
    by_name = {dtype_name(d): d for d in universe}
    alone = {cast[0]: {d for d, _ in accepted} for cast, accepted, _, _ in report["probes"] if len(cast) == 1}
    for cast, accepted, _, _ in report["probes"]:
        core = [name for name in cast if not alone.get(name)]
        if len(cast) < 2 or not core or any(not isinstance(recorded[name], str) for name in cast):
            continue
        together = [d for d, _ in accepted]
        for slot in (name for name in cast if alone.get(name)):
            original = recorded[slot]
            if original not in by_name or not set(together) - alone[slot] - {original}:
                continue
            for dtype in together:
                if dtype != original:
                    found = _beside(call, report, prober, universe, arguments, core, by_name[dtype], slot, by_name[original], dtype_name)
                    if found is not None:
                        yield found


def _beside(call, report, prober: Prober, universe, arguments: list[str], core: list[str], dtype, slot: str, original, dtype_name) -> dict[str, Any] | None:
    """The call with ``core`` cast to ``dtype`` and ``slot`` cast alone to every other dtype; None when it fails as it is."""
    base = {arguments.index(name): dtype for name in core}
    returns, message = prober(base)
    if message:
        return None
    accepted, refused = [], []
    for other in universe:
        if other is not original:
            returned, message = prober({**base, arguments.index(slot): other})
            if returned is None:
                refused.append([dtype_name(other), message])
            else:
                accepted.append([dtype_name(other), returned])
    inputs = [[name, dtype_name(dtype) if name in core else d] for name, d in report["slots"][: len(arguments)]]
    outputs = [[name, d] for (name, _), d in zip(report["slots"][len(arguments) :], returns)]
    return {**report, "slots": inputs + outputs, "again": "", "probes": [[[slot], accepted, refused, []]]}
