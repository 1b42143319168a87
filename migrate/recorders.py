"""Two dispatch-mode recorders that see the dtypes of every ATen overload a piece of code calls.

A mode on the Python key sees the overloads that reach a kernel; an overload with
only a CompositeImplicitAutograd kernel (``linear``, ``scaled_dot_product_attention``)
has decomposed by then and is seen only through its parts. A second mode on the
PreDispatch key sees every call made from Python first, at its own name, and then
runs it with the Python dispatcher off, so that the kernel-level recorder below sees
exactly what a plain run does. A call both see (an overload with a kernel, called
from Python) is counted once, as a direct call.

Importing this module imports torch; the sweep's workers are the ones that do.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Union

import torch

from migrate import torch_private

SlotDType = Union[str, tuple[Union[str, None], ...], None]
"""A slot's dtype in one call: a dtype name ('float32'), a list's element dtype names
(``None`` for a hole of a ``Tensor?[]``), or None when no tensor was passed."""


@dataclass(frozen=True)
class RawObservation:
    """Calls of one overload with one dtype per slot: the recorder's own output, before provenance."""

    overload: str  # 'aten::add.Tensor'
    slots: tuple[tuple[str, SlotDType], ...]  # every tensor slot of the schema, in schema order
    direct: bool  # called from Python (the sample's own code), not from inside another overload
    count: int


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def _dtypes_of(value: Any, holds_list: bool) -> Any:
    """The dtype (or, for a list, element dtypes) of a slot's value; None when it holds no tensor."""
    if isinstance(value, torch.Tensor):
        return value.dtype
    if holds_list and isinstance(value, (list, tuple)) and value:
        return tuple(v.dtype if isinstance(v, torch.Tensor) else None for v in value)
    return None


class Recording:
    """Counts of calls per (overload, dtype of each slot, direct or not) while ``active()``."""

    def __init__(self) -> None:
        self._counts: collections.Counter[tuple[Any, bool, tuple[Any, ...]]] = collections.Counter()
        self._direct_call: Any = None  # the overload the PreDispatch recorder is running right now

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with _KernelRecorder(self), torch_private.pre_dispatch_mode_active(_PreDispatchRecorder(self)):
            yield

    def add(self, func: Any, args: tuple, kwargs: dict, out: Any, direct: bool) -> None:
        slots = torch_private.overload_slots(func)
        values = []
        for position, name, keyword_only, holds_list in slots.arguments:
            value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
            values.append(_dtypes_of(value, holds_list))
        outs = out if slots.returns_tuple else (out,)
        for position, _, holds_list in slots.returns:
            values.append(_dtypes_of(outs[position], holds_list))
        self._counts[func, direct, tuple(values)] += 1

    def observations(self) -> list[RawObservation]:
        """What was recorded, with names instead of torch objects, sorted (a deterministic order)."""
        found = []
        for (func, direct, values), count in self._counts.items():
            slots = torch_private.overload_slots(func)
            names = [name for _, name, _, _ in slots.arguments] + [name for _, name, _ in slots.returns]
            found.append(RawObservation(slots.name, tuple(zip(names, map(_named, values))), direct, count))
        return sorted(found, key=lambda o: (o.overload, not o.direct, repr(o.slots)))


def _named(value: Any) -> SlotDType:
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(None if d is None else dtype_name(d) for d in value)
    return dtype_name(value)


class _KernelRecorder(torch_private.kernel_mode_base()):
    """On the Python key: every call that reaches a kernel, including calls from inside other overloads."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        recording = self.recording
        seen_above = recording._direct_call is func  # the first kernel call under a direct call is that call
        recording._direct_call = None
        out = func(*args, **kwargs)
        if not seen_above:
            recording.add(func, args, kwargs, out, direct=False)
        return out


class _PreDispatchRecorder(torch_private.pre_dispatch_mode_base()):
    """On the PreDispatch key: every call made from Python, at its own name, before it decomposes."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.recording._direct_call = func
        try:
            out = torch_private.plain_dispatch(func, args, kwargs)
        finally:
            self.recording._direct_call = None
        self.recording.add(func, args, kwargs, out, direct=True)
        return out


def check_recorders() -> None:
    """Fail with a clear error unless both recorders see a small known call as they should.

    A torch whose dispatch internals changed may not raise anywhere and yet record
    nothing; this catches that once, before a sweep trusts the recorders.
    """
    query = torch.ones(1, 1, 2, 2)
    recording = Recording()
    with recording.active():
        torch.nn.functional.scaled_dot_product_attention(query, query, query)
    seen = {(o.overload, o.direct) for o in recording.observations()}
    if ("aten::scaled_dot_product_attention", True) not in seen:
        raise torch_private.TorchAPIChanged(
            f"torch {torch_private.torch_version()}: the PreDispatch recorder did not see"
            f" aten::scaled_dot_product_attention (saw {sorted(seen)}); tested on torch {torch_private.TESTED_TORCH}"
        )
    if not any(not direct for _, direct in seen):
        raise torch_private.TorchAPIChanged(
            f"torch {torch_private.torch_version()}: the kernel recorder saw nothing under"
            f" aten::scaled_dot_product_attention; tested on torch {torch_private.TESTED_TORCH}"
        )
