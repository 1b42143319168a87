"""Two recorders on ``migrate.runtime.dispatch``'s modes that see the dtypes of every ATen overload a piece of code calls.

A mode on the Python key sees the overloads that reach a kernel; an overload with
only a CompositeImplicitAutograd kernel (``linear``, ``scaled_dot_product_attention``)
has decomposed by then and is seen only through its parts. A second mode on the
PreDispatch key sees every call made from Python first, at its own name, and then
runs it with the Python dispatcher off, so that the kernel-level recorder below sees
exactly what a plain run does. A call both see (an overload with a kernel, called
from Python) is counted once, as a direct call. torch finds a PreDispatch mode's
handler anew on every call; a Recording memoises it per overload, which makes a
recorded call several times cheaper (see ``torch_private.memoise_pre_dispatch_handler``).

A Recording can also keep copies of calls for probing (``CallCapture``): calls of each
overload with input dtypes no kept call had, cloned right after the call (or, for an
overload that writes to an argument, right before it), of which a few are chosen for
``migrate.evidence.probe.prober`` to call again with other dtypes, outside any recording.

Importing this module imports torch; the sweep's workers are the ones that do.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Union

import torch

from migrate.runtime import torch_private
from migrate.runtime.dispatch import TwoKeyObserver, has_elements

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
    nonempty: bool = True  # every tensor argument and return had an element (see ``has_elements``)


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def dtypes_of(value: Any, holds_list: bool) -> Any:
    """The dtype (or, for a list, element dtypes) of a slot's value; None when it holds no tensor."""
    if isinstance(value, torch.Tensor):
        return value.dtype
    if holds_list and isinstance(value, (list, tuple)) and value:
        return tuple(v.dtype if isinstance(v, torch.Tensor) else None for v in value)
    return None


@dataclass(frozen=True)
class CapturedCall:
    """A recorded call kept for probing: the overload, clones of its arguments, and its dtypes as recorded."""

    func: Any  # the OpOverload
    slots: torch_private.OverloadSlots
    args: tuple
    kwargs: dict
    dtypes: tuple[Any, ...]  # per slot of ``slots`` (arguments, then returns), as ``dtypes_of`` gives them
    direct: bool
    sample_dtype: str
    nonempty: bool = True  # every tensor argument and return had an element: what its probes accept counts


def slot_values(slots: torch_private.OverloadSlots, args: tuple | list, kwargs: dict, out: Any) -> Iterator[tuple[Any, bool]]:
    """Each slot's value in one call and whether it holds lists: its arguments as given, then its returns."""
    for position, name, keyword_only, holds_list in slots.arguments:
        yield (kwargs.get(name) if keyword_only or position >= len(args) else args[position]), holds_list
    outs = out if slots.returns_tuple else (out,)
    for position, _, holds_list in slots.returns:
        yield outs[position], holds_list


def slot_dtypes(slots: torch_private.OverloadSlots, args: tuple | list, kwargs: dict, out: Any) -> tuple[Any, ...]:
    """Each slot's dtypes in one call (``dtypes_of``): its arguments as given, then its returns."""
    return tuple(dtypes_of(value, holds_list) for value, holds_list in slot_values(slots, args, kwargs, out))


def call_has_elements(slots: torch_private.OverloadSlots, args: tuple | list, kwargs: dict, out: Any) -> bool:
    """Whether every tensor argument and return of one call has an element (``has_elements``)."""
    return all(has_elements(value) for value, _ in slot_values(slots, args, kwargs, out))


def cloned(value: Any) -> Any:
    """A value with every tensor in it replaced by a detached copy (probes must not touch the sample's tensors)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(cloned(v) for v in value)
    if isinstance(value, dict):
        return {key: cloned(v) for key, v in value.items()}
    return value


CANDIDATES = 32  # calls kept per overload, each with input dtypes no other kept call had
SAMPLE_DTYPE_PRIORITY = ("float32", "int64", "bool")  # probed first: the contexts most dtypes combine with


class CallCapture:
    """Calls of each overload with distinct input dtypes, kept across Recordings, and the few chosen to probe.

    One per OpInfo run: a Recording of each sample dtype adds to it (``sample_dtype`` says
    which dtype is running); ``chosen()`` is probed once every sample has run.
    ``budget(overload, direct)`` says how many calls of an overload to probe ('aten::add.Tensor';
    ``direct``: called by the sample's own code); asked once per overload and directness.
    """

    def __init__(self, budget: Callable[[str, bool], int]) -> None:
        self.sample_dtype = ""
        self._budget = budget
        self._limits: dict[tuple[int, bool], int] = {}
        self._kept: dict[int, list[CapturedCall]] = {}  # by id(overload), in the order first seen
        self._signatures: set[tuple[int, tuple[Any, ...]]] = set()

    def _open(self, key: int, slots: torch_private.OverloadSlots, direct: bool) -> bool:
        """Whether calls of the overload (of this directness) are probed at all, and there is room for one more."""
        limit = self._limits.get((key, direct))
        if limit is None:
            limit = self._limits[key, direct] = self._budget(slots.name, direct)
        return limit > 0 and len(self._kept.get(key, ())) < CANDIDATES

    def before(self, key: int, slots: torch_private.OverloadSlots, args: tuple, kwargs: dict, direct: bool) -> tuple | None:
        """Clones taken before a call of an overload that writes to an argument, if it is one to keep."""
        if not self._open(key, slots, direct):
            return None
        inputs = tuple(dtypes_of(argument_of(args, kwargs, slot), slot[3]) for slot in slots.arguments)
        nonempty = all(has_elements(argument_of(args, kwargs, slot)) for slot in slots.arguments)
        if (key, inputs, nonempty) in self._signatures:
            return None
        try:
            return cloned(args), cloned(kwargs)
        except Exception:  # a tensor that cannot be copied (an exotic layout): not probed
            return None

    def keep(
        self, func: Any, key: int, slots: torch_private.OverloadSlots, call: tuple, values: tuple, direct: bool, nonempty: bool
    ) -> None:
        """Keep a call that returned (``call``: its arguments, already cloned for an overload that mutates)."""
        inputs = values[: len(slots.arguments)]
        signature = (key, inputs, nonempty)
        if not self._open(key, slots, direct) or signature in self._signatures or all(v is None for v in inputs):
            return
        args, kwargs = call
        if not slots.mutates:
            try:
                args, kwargs = cloned(args), cloned(kwargs)
            except Exception:  # a tensor that cannot be copied: not probed
                return
        self._signatures.add(signature)
        self._kept.setdefault(key, []).append(CapturedCall(func, slots, args, kwargs, values, direct, self.sample_dtype, nonempty))

    def chosen(self) -> list[CapturedCall]:
        """The calls to probe, overload by overload: up to its budget, as varied as the kept calls allow.

        Calls on tensors with elements come first (only their probes can accept a dtype);
        among them, first one call per pattern of absent slots and list lengths (a mask passed or
        not; ``einsum`` of one tensor, a reduction, or of two, an outer product), then one per
        sample dtype in turn, float32, int64 and bool first: a slot cast alone is judged
        beside the others' dtypes, and those are the ones most dtypes combine with.
        """
        chosen = []
        for key, calls in self._kept.items():
            limit = max(self._limits.get((key, direct), 0) for direct in (False, True))
            rank = {name: i for i, name in enumerate(SAMPLE_DTYPE_PRIORITY)}
            ranked = sorted(calls, key=lambda c: (not c.nonempty, rank.get(c.sample_dtype, len(rank))))  # stable: then in the order run
            picked: dict[int, CapturedCall] = {}
            patterns = set()
            for call in ranked:
                pattern = tuple(None if d is None else len(d) if isinstance(d, tuple) else 0 for d in call.dtypes[: len(call.slots.arguments)])
                if pattern not in patterns:
                    patterns.add(pattern)
                    picked[id(call)] = call
            by_sample: dict[str, list[CapturedCall]] = {}
            for call in ranked:
                by_sample.setdefault(call.sample_dtype, []).append(call)
            for turn in itertools.zip_longest(*by_sample.values()):
                picked.update((id(call), call) for call in turn if call is not None and id(call) not in picked)
            picked = {i: call for nonempty in (True, False) for i, call in picked.items() if call.nonempty == nonempty}
            chosen.extend(list(picked.values())[:limit])
        return chosen


def argument_of(args: tuple, kwargs: dict, slot: tuple[int, str, bool, bool]) -> Any:
    """The value a call passed for a slot (``OverloadSlots.arguments``'s entry), positional or by keyword."""
    position, name, keyword_only, _ = slot
    return kwargs.get(name) if keyword_only or position >= len(args) else args[position]


class Recording(TwoKeyObserver):
    """Counts of calls per (overload, dtype of each slot, direct or not), made while ``active()``.

    Use it as a context manager: its PreDispatch handlers, memoised per overload for
    speed (``torch_private.memoise_pre_dispatch_handler``), are forgotten on exit.
    With a ``capture``, calls are also kept for probing (see ``CallCapture``).
    """

    def __init__(self, capture: CallCapture | None = None) -> None:
        # Keyed by id(overload): an OpOverload's hash is computed in Python, and this is the hot path.
        self._counts: collections.Counter[tuple[int, bool, tuple[Any, ...], bool]] = collections.Counter()
        self._slots: dict[int, torch_private.OverloadSlots] = {}
        self._capture = capture
        super().__init__()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._forget_handlers()

    def active(self) -> contextlib.AbstractContextManager[None]:
        return self._modes_active()

    def direct_call(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A call made from Python: run it as a plain run would, then record it as direct."""
        before = self._before(func, args, kwargs, direct=True)
        out = self.run_direct(func, args, kwargs)
        self.add(func, args, kwargs, out, direct=True, before=before)
        return out

    def kernel_call(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A call that reached a kernel; the first one under a direct call is that call, already recorded."""
        seen_above = self.is_the_direct_call(func)
        before = None if seen_above else self._before(func, args, kwargs, direct=False)
        out = func(*args, **kwargs)
        if not seen_above:
            self.add(func, args, kwargs, out, direct=False, before=before)
        return out

    def _slots_of(self, func: Any) -> torch_private.OverloadSlots:
        slots = self._slots.get(id(func))  # overloads live as long as torch.ops: their ids are stable
        if slots is None:
            slots = self._slots[id(func)] = torch_private.overload_slots(func)
        return slots

    def _before(self, func: Any, args: tuple, kwargs: dict, direct: bool) -> tuple | None:
        """Clones of the arguments of a call about to write to them, when the capture wants the call."""
        if self._capture is None:
            return None
        slots = self._slots_of(func)
        return self._capture.before(id(func), slots, args, kwargs, direct) if slots.mutates else None

    def add(self, func: Any, args: tuple, kwargs: dict, out: Any, direct: bool, before: tuple | None = None) -> None:
        key = id(func)
        slots = self._slots_of(func)
        values = tuple(slot_values(slots, args, kwargs, out))
        dtypes = tuple(dtypes_of(value, holds_list) for value, holds_list in values)
        nonempty = all(has_elements(value) for value, _ in values)
        signature = (key, direct, dtypes, nonempty)
        self._counts[signature] += 1
        if self._capture is not None and self._counts[signature] == 1:
            call = before if slots.mutates else (args, kwargs)
            if call is not None:
                self._capture.keep(func, key, slots, call, dtypes, direct, nonempty)

    def observations(self) -> list[RawObservation]:
        """What was recorded, with names instead of torch objects, sorted (a deterministic order)."""
        found = []
        for (key, direct, values, nonempty), count in self._counts.items():
            slots = self._slots[key]
            names = [name for _, name, _, _ in slots.arguments] + [name for _, name, _ in slots.returns]
            found.append(RawObservation(slots.name, tuple(zip(names, map(_named, values))), direct, count, nonempty))
        return sorted(found, key=lambda o: (o.overload, not o.direct, repr(o.slots), not o.nonempty))


def _named(value: Any) -> SlotDType:
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(None if d is None else dtype_name(d) for d in value)
    return dtype_name(value)


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
