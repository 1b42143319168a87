"""The two dispatch modes the OpInfo recorders and the runtime checker sit on, and what they share.

A mode on the Python key sees every call that reaches a kernel; a mode on the
PreDispatch key sees every call made from Python, at its own name, before it
decomposes. ``migrate.runtime.recorders`` records calls through them and
``migrate.check.checker`` checks calls through them: this module sits below both,
so that the checker, which users run in their own code, imports no evidence.

Importing this module imports torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from migrate.runtime import torch_private


class TwoKeyObserver:
    """What the recorders and the checker share: a mode on each key forwarding to them, the
    PreDispatch handlers memoised per overload (and forgotten afterwards: another
    PreDispatch mode may be pushed next), and the kernel call under a direct call known
    as that same call, so that a call both keys see counts once.

    Subclasses define ``direct_call(func, args, kwargs)`` and ``kernel_call(func, args, kwargs)``.
    """

    def __init__(self) -> None:
        self._running_direct: Any = None  # the overload a direct call is running right now
        self._memoised: list[Any] = []
        self._kernel_mode = KernelMode(self)
        self._pre_dispatch_mode = PreDispatchMode(self)

    @contextlib.contextmanager
    def _modes_active(self) -> Iterator[None]:
        with self._kernel_mode, torch_private.pre_dispatch_mode_active(self._pre_dispatch_mode):
            yield

    def _forget_handlers(self) -> None:
        torch_private.forget_pre_dispatch_handlers(self._memoised)
        self._memoised.clear()

    def run_direct(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """Run a direct call as a plain run would, marked so that its kernel call is known as the same call."""
        self._running_direct = func
        try:
            return torch_private.plain_dispatch(func, args, kwargs)
        finally:
            self._running_direct = None

    def first_direct_call(self, func: Any, args: tuple, kwargs: dict, mode: Any) -> Any:
        """A direct call that came through torch's handling of ``mode``; later ones of ``func`` skip it."""
        torch_private.memoise_pre_dispatch_handler(func, mode, self.direct_call)
        self._memoised.append(func)
        return self.direct_call(func, args, kwargs)

    def is_the_direct_call(self, func: Any) -> bool:
        """Whether a kernel call is the direct call running right now (already seen above); asked once per kernel call."""
        seen = self._running_direct is func
        self._running_direct = None
        return seen


class KernelMode(torch_private.kernel_mode_base()):
    """On the Python key: every call that reaches a kernel, including calls from inside other overloads.

    Forwards each call to its owner (a Recording, a Checker): ``owner.kernel_call(func, args, kwargs)``.
    """

    def __init__(self, owner: Any) -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.owner.kernel_call(func, args, kwargs or {})


class PreDispatchMode(torch_private.pre_dispatch_mode_base()):
    """On the PreDispatch key: every call made from Python, at its own name, before it decomposes.

    Forwards each call to its owner: ``owner.first_direct_call(func, args, kwargs, mode)``.
    """

    def __init__(self, owner: Any) -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.owner.first_direct_call(func, args, kwargs or {}, self)


def has_elements(value: Any) -> bool:
    """Whether a slot's tensors (a list's elements) all have an element: ATen returns before its dtype
    dispatch on an empty tensor (``mm`` of (0, 2) and (2, 3) bool tensors runs), so only such calls
    say that a dtype is accepted."""
    if isinstance(value, torch.Tensor):
        try:
            return value.numel() > 0
        except Exception:  # a tensor whose size cannot be read (an exotic layout): nothing proves it empty
            return True
    if isinstance(value, (list, tuple)):
        return all(has_elements(v) for v in value if isinstance(v, torch.Tensor))
    return True
