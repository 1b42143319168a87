"""Which values of an argument refuse dtypes that another value of it takes (``migrate.model.values``).

The calls ``migrate.evidence.probe.value_calls`` built at each value were probed dtype by dtype; their acceptances
already widen the sets (a set is the union over the values). Here, per overload and slots cast, a dtype one value's
call took and another value's refused, naming a dtype (``"div_floor_cpu" not implemented for 'ComplexFloat'``), is a
refusal of that value: an index out of range or a value the overload does not know says nothing of dtypes. Each
dtype is said once per value, at the widest cast that shows it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from migrate.evidence.probe.value_calls import ARGUMENT, VALUE
from migrate.model.dtypes import DType, canonical
from migrate.model.values import ValueRefusal
from migrate.model.verdict import names_a_dtype, one_per_dtype
from migrate.runtime.runs import SCHEMA_CALL, ProbedCall, overload_key

Cast = tuple[str, ...]


def _outcomes(calls: dict[str | None, ProbedCall]) -> tuple[dict[Cast, dict[DType, list[str | None]]], dict[tuple[str | None, Cast], dict[DType, str]]]:
    """Per cast, each dtype with the values that took it; per (value, cast), the dtypes refused naming a dtype."""
    taken: dict[Cast, dict[DType, list[str | None]]] = {}
    refused: dict[tuple[str | None, Cast], dict[DType, str]] = {}
    for value, call in calls.items():
        if call.refused_again or not call.nonempty:
            continue
        for probe in call.probes:
            for dtype in [d for d, _ in probe.accepted] + [d for d, _, _ in probe.gated]:
                taken.setdefault(probe.cast, {}).setdefault(dtype, []).append(value)
            for dtype, message in probe.rejected:
                if names_a_dtype(message):
                    refused.setdefault((value, probe.cast), {})[dtype] = message
    return taken, refused


def _refusals(name: str, argument: str, calls: dict[str | None, ProbedCall]) -> list[ValueRefusal]:
    taken, refused = _outcomes(calls)
    found = []
    for value in calls:
        said: set[DType] = set()
        for cast in sorted({c for v, c in refused if v == value}, key=lambda c: (-len(c), c)):
            mine = {d: m for d, m in refused[value, cast].items() if d not in said and any(v != value for v in taken.get(cast, {}).get(d, ()))}
            if not mine:
                continue
            said |= mine.keys()
            dtypes = canonical(mine)
            others = tuple(dict.fromkeys(v for d in dtypes for v in taken[cast][d] if v != value))
            found.append(ValueRefusal(name, argument, value, cast, dtypes, one_per_dtype([mine[d] for d in dtypes]), others))
    return found


def value_refusals(reports: Iterable[dict[str, Any]]) -> tuple[ValueRefusal, ...]:
    """Every value's refusals of dtypes another value took, by overload name, then value as tried."""
    by_overload: dict[tuple[str, str], dict[str | None, ProbedCall]] = {}
    for report in reports:
        name = overload_key(report["overload"])
        if name is not None:
            by_overload.setdefault((name, report[ARGUMENT]), {})[report[VALUE]] = ProbedCall.from_report(SCHEMA_CALL, report)
    return tuple(r for (name, argument) in sorted(by_overload) for r in _refusals(name, argument, by_overload[name, argument]))
