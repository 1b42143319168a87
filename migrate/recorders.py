"""Two dispatch-mode recorders that see the dtypes of every ATen overload a piece of code calls.

A mode on the Python key sees the overloads that reach a kernel; an overload with
only a CompositeImplicitAutograd kernel (``linear``, ``scaled_dot_product_attention``)
has decomposed by then and is seen only through its parts. A second mode on the
PreDispatch key sees every call made from Python first, at its own name, and then
runs it with the Python dispatcher off, so that the kernel-level recorder below sees
exactly what a plain run does. A call both see (an overload with a kernel, called
from Python) is counted once, as a direct call. torch finds a PreDispatch mode's
handler anew on every call; a Recording memoises it per overload, which makes a
recorded call several times cheaper (see ``torch_private.memoise_pre_dispatch_handler``).

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
    """Counts of calls per (overload, dtype of each slot, direct or not), made while ``active()``.

    Use it as a context manager: its PreDispatch handlers, memoised per overload for
    speed (``torch_private.memoise_pre_dispatch_handler``), are forgotten on exit.
    """

    def __init__(self) -> None:
        # Keyed by id(overload): an OpOverload's hash is computed in Python, and this is the hot path.
        self._counts: collections.Counter[tuple[int, bool, tuple[Any, ...]]] = collections.Counter()
        self._slots: dict[int, torch_private.OverloadSlots] = {}
        self._running_direct: Any = None  # the overload a direct call is running right now
        self._memoised: list[Any] = []
        self._kernel_recorder = _KernelRecorder(self)
        self._pre_dispatch_recorder = _PreDispatchRecorder(self)

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        """Forget the memoised handlers: another PreDispatch mode may be pushed next."""
        torch_private.forget_pre_dispatch_handlers(self._memoised)
        self._memoised.clear()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with self._kernel_recorder, torch_private.pre_dispatch_mode_active(self._pre_dispatch_recorder):
            yield

    def direct_call(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A call made from Python: run it as a plain run would, then record it as direct."""
        self._running_direct = func
        try:
            out = torch_private.plain_dispatch(func, args, kwargs)
        finally:
            self._running_direct = None
        self.add(func, args, kwargs, out, direct=True)
        return out

    def first_direct_call(self, func: Any, args: tuple, kwargs: dict, mode: Any) -> Any:
        """A direct call that came through torch's handling of ``mode``; later ones of ``func`` skip it."""
        torch_private.memoise_pre_dispatch_handler(func, mode, self.direct_call)
        self._memoised.append(func)
        return self.direct_call(func, args, kwargs)

    def kernel_call(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A call that reached a kernel; the first one under a direct call is that call, already recorded."""
        seen_above = self._running_direct is func
        self._running_direct = None
        out = func(*args, **kwargs)
        if not seen_above:
            self.add(func, args, kwargs, out, direct=False)
        return out

    def add(self, func: Any, args: tuple, kwargs: dict, out: Any, direct: bool) -> None:
        key = id(func)  # overloads live as long as torch.ops: their ids are stable
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = torch_private.overload_slots(func)
        values = []
        for position, name, keyword_only, holds_list in slots.arguments:
            value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
            values.append(_dtypes_of(value, holds_list))
        outs = out if slots.returns_tuple else (out,)
        for position, _, holds_list in slots.returns:
            values.append(_dtypes_of(outs[position], holds_list))
        self._counts[key, direct, tuple(values)] += 1

    def observations(self) -> list[RawObservation]:
        """What was recorded, with names instead of torch objects, sorted (a deterministic order)."""
        found = []
        for (key, direct, values), count in self._counts.items():
            slots = self._slots[key]
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
        return self.recording.kernel_call(func, args, kwargs or {})


class _PreDispatchRecorder(torch_private.pre_dispatch_mode_base()):
    """On the PreDispatch key: every call made from Python, at its own name, before it decomposes."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.recording.first_direct_call(func, args, kwargs or {}, self)


def check_recorders() -> None:
    """Fail with a clear error unless both recorders see a small known call as they should.

    A torch whose dispatch internals changed may not raise anywhere and yet record
    nothing; this catches that once, before a sweep trusts the recorders.
    """
    query = torch.ones(1, 1, 2, 2)
    with Recording() as recording:
        for _ in range(2):  # the second call takes the memoised handler
            with recording.active():
                torch.nn.functional.scaled_dot_product_attention(query, query, query)
    counts = {(o.overload, o.direct): o.count for o in recording.observations()}
    if counts.get(("aten::scaled_dot_product_attention", True)) != 2:
        raise torch_private.api_changed(
            "the PreDispatch recorder (torch._C._EnablePythonDispatcher, _push_mode)",
            "did not see both calls of aten::scaled_dot_product_attention",
        )
    if not any(not direct for _, direct in counts):
        raise torch_private.api_changed(
            "the kernel recorder (TorchDispatchMode)", "saw no kernel under aten::scaled_dot_product_attention"
        )
