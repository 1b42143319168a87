"""The ``models`` source's recorder and capture, in a worker: the OpInfo recorders (``migrate.runtime.recorders``)
with what a model's calls add to a sample's.

``ModelRecording`` counts each call also by its 0-dim slots and the Python numbers its Scalar arguments held (what
ATen's promotion reads beside the dtypes); ``ModelCapture`` chooses, of each computing dtype, a call whose input
tensors mix dtypes first: what a model adds to OpInfo's samples is mostly such calls (a bfloat16 ``grad_out``
beside float32 statistics).

Importing this module imports torch.
"""

from __future__ import annotations

import collections
from typing import Any

import torch

from migrate.runtime import recorders

_SCALARS: dict[int, tuple[tuple[int, str, bool], ...]] = {}  # id(overload) -> its Scalar arguments (position, name, kwarg-only)


def numbers(func: Any, args: tuple, kwargs: dict) -> tuple[tuple[str, str], ...]:
    """The call's Scalar arguments that held a Python number, with its kind ('float')."""
    scalars = _SCALARS.get(id(func))
    if scalars is None:
        kinds = ((p, a, str(getattr(a, "real_type", a.type))) for p, a in enumerate(func._schema.arguments))
        scalars = _SCALARS[id(func)] = tuple((p, a.name, a.kwarg_only) for p, a, kind in kinds if kind in ("number", "Optional[number]"))
    found = []
    for position, name, keyword_only in scalars:
        value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
        if isinstance(value, (bool, int, float, complex)):
            found.append((name, type(value).__name__))
    return tuple(found)


def mixed(dtypes: tuple[Any, ...]) -> bool:
    """Whether a call's slots (a list's elements included) hold more than one dtype."""
    found = {d for value in dtypes for d in (value if isinstance(value, tuple) else (value,)) if d is not None}
    return len(found) > 1


def _named(value: Any) -> Any:
    if isinstance(value, tuple):
        return [None if d is None else recorders.dtype_name(d) for d in value]
    return None if value is None else recorders.dtype_name(value)


class ModelRecording(recorders.Recording):
    """A Recording that also counts each call by its 0-dim slots and Python numbers (``records.ModelCall``)."""

    def __init__(self, capture: recorders.CallCapture | None = None, cast_by_autocast: frozenset[str] = frozenset()) -> None:
        super().__init__(capture)
        self.calls: collections.Counter[tuple[Any, ...]] = collections.Counter()
        self.cast_by_autocast = cast_by_autocast

    def add(self, func: Any, args: tuple, kwargs: dict, out: Any, direct: bool, before: tuple | None = None) -> None:
        # Under autocast, an overload autocast casts for is seen with the dtypes it was given, not those its kernel gets
        # (linear of a bfloat16 input beside a float32 weight): it is counted, neither observed nor probed.
        if func.name() not in self.cast_by_autocast:
            super().add(func, args, kwargs, out, direct, before)
        slots = self._slots_of(func)
        values = tuple(recorders.slot_values(slots, args, kwargs, out))
        names = [name for _, name, _, _ in slots.arguments] + [name for _, name, _ in slots.returns]
        zero_dim = tuple(name for name, (value, _) in zip(names, values) if isinstance(value, torch.Tensor) and value.dim() == 0)
        dtypes = tuple(recorders.dtypes_of(value, holds_list) for value, holds_list in values)
        nonempty = all(recorders.has_elements(value) for value, _ in values)
        self.calls[id(func), direct, dtypes, zero_dim, numbers(func, args, kwargs), nonempty] += 1

    def call_reports(self) -> list[list[Any]]:
        """Each distinct call as ``ModelCall.from_report`` reads it, sorted (a deterministic order)."""
        found = []
        for (key, direct, dtypes, zero_dim, scalars, nonempty), count in self.calls.items():
            slots = self._slots[key]
            names = [name for _, name, _, _ in slots.arguments] + [name for _, name, _ in slots.returns]
            named = [[name, _named(d)] for name, d in zip(names, dtypes)]
            found.append([slots.name, named, list(zero_dim), [list(n) for n in scalars], direct, count, nonempty])
        return sorted(found, key=repr)


class ModelCapture(recorders.CallCapture):
    """A CallCapture whose choice takes, of each computing dtype, a call whose input tensors mix dtypes first."""

    def chosen(self) -> list[recorders.CapturedCall]:
        for calls in self._kept.values():
            calls.sort(key=lambda call: not mixed(call.dtypes[: len(call.slots.arguments)]))
        return super().chosen()
