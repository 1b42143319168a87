"""Calls of in-place and out= overloads, built in a sweep worker from their functional sibling's accepted calls.

No OpInfo sample calls ``add.out`` or ``add_.Tensor``, yet each call of ``add.Tensor`` that ATen
accepted gives one of each: the same inputs with ``out=`` tensors shaped as the functional call's
returns (``add(a, b, out=torch.empty_like(a + b))``), and the first input mutated in place
(``a.add_(b)``). Such a call is probed as a recorded one is (``migrate.evidence.probe.prober``),
but only what it writes is cast alone: the out tensor or the mutated ``self`` at every dtype, the
others as the accepted call had them; then the slots of one dtype together. An input the sibling
only reads is judged on the functional's own calls (``migrate.infer.own_calls``). So the
sibling's verdicts stand on their own where it writes: ATen refuses ``add(float32, float32, out=int64)`` with ``result type
Float can't be cast to the desired output type Long``, and that message is kept.

A sibling is found from the installed torch's schemas: the in-place overload is ``<name>_`` with
the functional's overload name and arguments; an out= overload of the same operator has the
functional's arguments and one keyword-only written tensor per return. Per OpInfo, and only from
the calls it is about (its samples made them, or the op is its own: ``prober.about``), each sibling
is built from the first ``SIBLING_CALLS`` of the functional's chosen calls (calls on tensors with
elements first, then float32, int64 and bool samples in turn: a written tensor is judged beside
the inputs' dtype, and ``a.add_(b)`` takes a uint16 ``a`` beside an int64 ``b``, not beside a
float32 one) that it runs as built; one that runs from none is not probed (broadcasting into ``self``:
``a.add_(b)`` of a (1,) ``a`` and a (3,) ``b`` is refused, ``add(a, b)`` is not).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from migrate.runtime import torch_private
from migrate.runtime.recorders import CapturedCall, call_has_elements, cloned, slot_dtypes

SIBLING_CALLS = 2  # built calls per sibling overload and OpInfo, each from another functional call (float32 first, then int64: chosen order)


def _written(argument: Any) -> bool:
    return argument.alias_info is not None and argument.alias_info.is_write


def _inputs(schema: Any, skip: Iterable[str] = ()) -> list[tuple[str, str]]:
    """The arguments by name and type (alias annotations aside), ``skip`` left out."""
    skipped = set(skip)
    return [(a.name, str(a.type)) for a in schema.arguments if a.name not in skipped]


def _overload(operator: str, overload: str) -> Any | None:
    try:
        return torch_private.aten_overload(f"aten::{operator}.{overload}" if overload else f"aten::{operator}")
    except (AttributeError, RuntimeError):
        return None


@functools.cache
def siblings(func: Any) -> tuple[tuple[Any, tuple[str, ...]], ...]:
    """The in-place and out= overloads of a functional overload, each with its out= arguments in return order."""
    schema = func._schema
    if any(_written(a) for a in schema.arguments) or not schema.name.startswith("aten::"):
        return ()
    operator = schema.name.removeprefix("aten::")
    found = []
    inplace = _overload(f"{operator}_", schema.overload_name)
    if inplace is not None and _inputs(inplace._schema) == _inputs(schema) and _written(inplace._schema.arguments[0]):
        found.append((inplace, ()))
    try:
        names = sorted(getattr(torch.ops.aten, operator).overloads())
    except (AttributeError, RuntimeError):
        names = []
    for name in names:
        candidate = _overload(operator, "" if name == "default" else name)
        if candidate is None or candidate is func:
            continue
        outs = tuple(a.name for a in candidate._schema.arguments if a.kwarg_only and _written(a))
        if outs and len(outs) == len(schema.returns) and _inputs(candidate._schema, outs) == _inputs(schema):
            found.append((candidate, outs))
    return tuple(found)


def _built(sibling: Any, outs: tuple[str, ...], call: CapturedCall) -> CapturedCall | None:
    """The sibling's call from the functional's accepted one, if ATen runs it as built."""
    args, kwargs = cloned(list(call.args)), cloned(dict(call.kwargs))
    try:
        if outs:
            returned = call.func(*cloned(args), **cloned(kwargs))
            returned = returned if isinstance(returned, tuple) else (returned,)
            if len(returned) != len(outs) or not all(isinstance(r, torch.Tensor) for r in returned):
                return None
            kwargs.update({name: torch.empty_like(r) for name, r in zip(outs, returned)})
        slots = torch_private.overload_slots(sibling)
        kept = cloned((args, kwargs))
        out = sibling(*args, **kwargs)
    except Exception:  # not a call this sibling takes (a shape it cannot write into): another call may be
        return None
    args, kwargs = kept
    dtypes = slot_dtypes(slots, args, kwargs, out)
    return CapturedCall(sibling, slots, tuple(args), kwargs, dtypes, False, call.sample_dtype, call_has_elements(slots, args, kwargs, out))


def sibling_calls(calls: Iterable[CapturedCall]) -> Iterator[CapturedCall]:
    """Per functional overload among ``calls`` (in their order), a built call of each sibling, up to SIBLING_CALLS."""
    made: dict[str, int] = {}
    for call in calls:
        if call.slots.mutates or not call.nonempty:
            continue
        for sibling, outs in siblings(call.func):
            name = torch_private.overload_slots(sibling).name
            if made.get(name, 0) < SIBLING_CALLS and (built := _built(sibling, outs, call)) is not None and built.nonempty:
                made[name] = made.get(name, 0) + 1
                yield built


def written_slots(call: CapturedCall) -> frozenset[int]:
    """The indices (in ``call.slots.arguments``) of the tensor arguments the call writes: ``out``, the mutated ``self``."""
    arguments = call.func._schema.arguments
    return frozenset(i for i, (position, _, _, _) in enumerate(call.slots.arguments) if _written(arguments[position]))
