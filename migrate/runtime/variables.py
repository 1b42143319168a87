"""Slots grouped into variables from the dtypes seen at them together, call by call.

The one rule the OpInfo observations and the probes share: slots form one variable
where every call that passes both agrees on their dtype.
"""

from __future__ import annotations

from collections.abc import Iterable

from migrate.model.dtypes import DType


def variables_of(
    slots: tuple[str, ...], rows: Iterable[tuple[DType | None, ...]], tied: Iterable[tuple[int, ...]] = ()
) -> list[tuple[str, ...]]:
    """Slots grouped into variables: greedy merges in schema order, each one agreed by every row.

    ``tied`` groups of slot indices (known to agree by other means: probing) are merged
    first, each only if every row agrees with it.
    """
    distinct = set(rows)
    classes = [[i] for i in range(len(slots)) if any(dtypes[i] is not None for dtypes in distinct)]

    def agree(members: list[int]) -> bool:
        return all(len({dtypes[i] for i in members} - {None}) <= 1 for dtypes in distinct)

    def together(left: list[int], right: list[int]) -> bool:
        return any(
            any(dtypes[i] is not None for i in left) and any(dtypes[j] is not None for j in right) for dtypes in distinct
        )

    for tie in tied:
        joined = [group for group in classes if set(group) & set(tie)]
        union = sorted(i for group in joined for i in group)
        if len(joined) > 1 and agree(union):
            classes = sorted([group for group in classes if group not in joined] + [union])
    merged: list[list[int]] = []
    for candidate in classes:
        for group in merged:
            if together(group, candidate) and agree(group + candidate):
                group.extend(candidate)
                break
        else:
            merged.append(candidate)
    return [tuple(slots[i] for i in sorted(group)) for group in merged]
