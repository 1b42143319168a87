"""One call of ATen, as every source that calls it makes it: seeded, bounded by a timer, its refusal caught.

The probes of recorded and built calls, the calls built from schemas and from the argument catalogue, the
``dtype=`` calls and the promotion calls all make a call the same way: the default generator seeded (the same
seed, the same values of a random kernel), ``SIGALRM`` armed for the call's timeout (its default action ends the
worker even inside a kernel that never returns to Python, under ``bounded``), the call,
and ATen's refusal kept as one deterministic line (``processes.one_line``). ``Called`` is the outcome: what the
call returned, or ATen's refusal; what ATen did with a dtype is judged from it (``migrate.model.verdict``).
"""

from __future__ import annotations

import contextlib
import resource
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from migrate.runtime.processes import one_line

PROBE_TIMEOUT = 30.0  # seconds per call; the slowest accepted probes take well under a second
MEMORY_HEADROOM = 6 << 30  # bytes of address space a worker may add while calling


@dataclass(frozen=True)
class Called:
    """What ATen did with one call: ``returned`` what it returned, or ``refusal``, its message as one line."""

    returned: Any = None
    refusal: str = ""

    @property
    def refused(self) -> bool:
        return bool(self.refusal)


def call_aten(call: Callable[[], Any], timeout: float, seed: int | None = None) -> Called:
    """``call()`` (it makes its arguments and calls the overload) with the default generator seeded (None: as it is),
    ended by ``SIGALRM`` after ``timeout`` seconds; an exception it raises is ATen's refusal (a tensor that could not
    take a dtype too)."""
    if seed is not None:
        import torch  # here: the parent imports the stages' modules without torch (the --op fast path); workers call

        torch.default_generator.manual_seed(seed)  # torch.manual_seed also seeds absent GPUs, recording a stack trace each time
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return Called(call())
    except Exception as exc:
        return Called(refusal=one_line(exc))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def bounded() -> Iterator[None]:
    """SIGALRM ends the worker (its default action), and the address space may grow by MEMORY_HEADROOM only."""
    previous_alarm = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    previous_limit = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as statm:  # Linux; elsewhere the address space stays as it is
            in_use = int(statm.read().split()[0]) * resource.getpagesize()
    except OSError:
        in_use = None
    hard = previous_limit[1]
    if in_use is not None:
        wanted = in_use + MEMORY_HEADROOM
        resource.setrlimit(resource.RLIMIT_AS, (wanted if hard == resource.RLIM_INFINITY else min(hard, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, previous_limit)
        signal.signal(signal.SIGALRM, previous_alarm)
