"""Worker processes with crash containment and a hard timeout, forked from a fork server.

Each job runs in a fresh process forked from a fork server that has torch and the
OpInfo database already imported: a crash or a hang takes down only that process (the
parent kills one that runs over its timeout, which no code inside can catch), and no
state leaks from one job to the next. A worker sends reports as it goes, so a timeout
keeps what was sent before it. The OpInfo sweep, probing and ``verify`` run in them.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import multiprocessing
import multiprocessing.forkserver
import os
import re
import signal
import sys
import tempfile
import threading
import time
import types
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from tqdm import tqdm

DEFAULT_TIMEOUT = 300.0  # seconds per OpInfo: the slowest (grid_sampler_3d) takes about 5 s on one core
PRELOAD = (  # imported once by the fork server: every worker starts with them
    "torch",
    "torch.testing._internal.common_methods_invocations",
    "migrate.runtime.samples",
    "migrate.runtime.recorders",
    "migrate.evidence.probe.preloaded",
    # what most workers' jobs import beside them: each worker would import it again
    "migrate.model.plan",
    "migrate.evidence.opinfo.observations",
    "migrate.evidence.probe.catalogue_calls",
    "migrate.evidence.torch_stages",
    "migrate.audit.verify",
)

CPU_CAPABILITY = "default"  # the one ATen CPU capability every CPU has (reference_cpu_paths)
CPU_CAPABILITY_VARIABLE = "ATEN_CPU_CAPABILITY"
_SLOT_POLL = 0.05  # seconds between looks for a shared slot while this call's own workers run
_MAIN_SWAP = threading.Lock()  # held while __main__ is hidden (_main_module_hidden)

# How a job ended.
DONE = "done"
TIMEOUT = "timeout"
CRASH = "crash"


@dataclass(frozen=True)
class Job:
    """Work for one worker process: ``target(argument)`` yields reports, sent to the parent one by one.

    ``target`` must be a module-level function of an importable module (not ``__main__``):
    the worker imports it by name.
    """

    target: Callable[[Any], Iterator[Any]]
    argument: Any
    label: str


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended (DONE, TIMEOUT or CRASH), the reports it sent before that, and why."""

    job: Job
    status: str
    reports: tuple[Any, ...]
    seconds: float
    cpu_seconds: float  # as the worker measured it; 0 when it did not finish
    reason: str = ""


@functools.cache
def _context() -> multiprocessing.context.BaseContext:
    """Workers fork from a server that imported torch, the OpInfo database, the recorders and the prober once, at
    the pinned CPU capability (the server, started after this, inherits it)."""
    os.environ[CPU_CAPABILITY_VARIABLE] = CPU_CAPABILITY
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def worker_environment() -> dict[str, str]:
    """The environment of a worker started as a command: at the pinned CPU capability."""
    return {**os.environ, CPU_CAPABILITY_VARIABLE: CPU_CAPABILITY}


@contextlib.contextmanager
def reference_cpu_paths() -> Iterator[None]:
    """Inside it, the CPU kernels take their reference paths, which every host has.

    ATen's CPU kernels take oneDNN's paths where the host's CPU has the instructions for them: on AMX hardware
    ``_scaled_mm`` refuses the float64 bias its reference kernel takes. A worker runs with oneDNN off and at
    ``CPU_CAPABILITY`` (set for the fork server), so the evidence, and a run's bytes, never depend on the host;
    ``migrate.evidence.probe.host_paths`` asks the host's own paths, for ``--report``.
    """
    import torch  # here: the parent imports this module without torch (the --op fast path); workers have it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # entering the flags warns that oneDNN's TF32 is for Intel GPUs
        flags = torch.backends.mkldnn.flags(enabled=False)
        flags.__enter__()
    try:
        yield
    finally:
        flags.__exit__(None, None, None)


@dataclass
class _Running:
    """A job's worker while it runs (mutable: the parent's own bookkeeping)."""

    job: Job
    process: Any
    connection: Any
    log: Path
    started: float
    reports: list[Any] = field(default_factory=list)
    done: bool = False
    cpu_seconds: float = 0.0


def start_server() -> None:
    """Start the fork server now rather than at the first worker: its imports (torch, the OpInfo database) take
    seconds, which the caller's other work can hide."""
    _context()

    multiprocessing.forkserver.ensure_running()


class _Slots:
    """The workers a run may have at once, shared by the threads that start them. A freed slot goes to the thread
    that has waited longest: a thread that frees one and takes one again at once would otherwise keep its slots
    for as long as it has jobs."""

    def __init__(self, count: int):
        self._free = count
        self._waiting: deque[object] = deque()
        self._changed = threading.Condition()

    def take(self, wait: bool) -> bool:
        """Take a slot: wait for one (``wait``), else only if one is free and no thread waits for it."""
        with self._changed:
            if not wait:
                if self._free and not self._waiting:
                    self._free -= 1
                    return True
                return False
            ticket = object()
            self._waiting.append(ticket)
            self._changed.wait_for(lambda: self._free > 0 and self._waiting[0] is ticket)
            self._waiting.popleft()
            self._free -= 1
            self._changed.notify_all()
            return True

    def give(self) -> None:
        with self._changed:
            self._free += 1
            self._changed.notify_all()


_shared_slots: _Slots | None = None  # set by shared_workers


@contextlib.contextmanager
def shared_workers(jobs: int) -> Iterator[None]:
    """Within it, every ``run_in_workers`` of this process, in whichever thread, and every ``worker_slot``, share
    ``jobs`` workers at once: work that needs no other can run beside the sweep in a thread of its own and fill the
    workers the sweep leaves idle, and ``-j`` still bounds the workers of the run."""
    global _shared_slots
    previous, _shared_slots = _shared_slots, _Slots(jobs)
    try:
        yield
    finally:
        _shared_slots = previous


@contextlib.contextmanager
def worker_slot() -> Iterator[None]:
    """One of the shared workers (see ``shared_workers``), for a process started otherwise than by ``run_in_workers``."""
    slots = _shared_slots
    if slots is not None:
        slots.take(wait=True)
    try:
        yield
    finally:
        if slots is not None:
            slots.give()


def worker_count(jobs: int | None) -> int:
    """The workers a run uses: ``-j``, else one per core."""
    return jobs or os.cpu_count() or 1


def run_in_workers(
    work: Iterable[Job],
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    unit: str = "OpInfo",
    desc: str = "OpInfo samples",
) -> Iterator[JobOutcome]:
    """Run each job in a fresh worker process, at most ``jobs`` at once; yield each outcome as it ends.

    A worker still running ``timeout`` seconds after its start is killed (SIGKILL: nothing
    inside can catch it); one that dies is reported as a crash with its exit signal and
    last line of output. Either way the other jobs go on.
    """
    waiting = deque(work)
    if not waiting:
        return
    context = _context()
    jobs = max(1, min(worker_count(jobs), len(waiting)))
    slots = _shared_slots or _Slots(jobs)  # this call's own, when no run shares its workers
    running: dict[Any, _Running] = {}
    bar = _progress_bar(len(waiting), progress, unit, desc)
    try:
        while waiting or running:
            while waiting and len(running) < jobs and slots.take(wait=not running):
                try:
                    worker = _start(context, waiting.popleft())
                except BaseException:
                    slots.give()
                    raise
                running[worker.connection] = worker
            next_deadline = min(worker.started for worker in running.values()) + timeout
            if waiting and len(running) < jobs:  # look again soon for a slot another thread frees
                next_deadline = min(next_deadline, time.monotonic() + _SLOT_POLL)
            handles = [*running, *(worker.process.sentinel for worker in running.values())]
            ready = set(wait(handles, max(0.0, next_deadline - time.monotonic())))
            for connection, worker in list(running.items()):
                overdue = time.monotonic() >= worker.started + timeout
                outcome = None
                if connection in ready or worker.process.sentinel in ready or overdue:
                    outcome = _collect(worker)
                if outcome is None and overdue:
                    worker.process.kill()
                    outcome = _finish(worker, TIMEOUT, f"ran over the {timeout:g} s timeout and was killed")
                if outcome is not None:
                    del running[connection]
                    slots.give()
                    if bar is not None:
                        bar.set_postfix_str(worker.job.label, refresh=False)
                        bar.update(1)
                    yield outcome
    finally:
        for worker in running.values():
            worker.process.kill()
            _finish(worker, CRASH, "interrupted")
            slots.give()
        if bar is not None:
            bar.close()


def _progress_bar(total: int, progress: bool | None, unit: str, desc: str) -> Any:
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True)


def _start(context: Any, job: Job) -> _Running:
    receive, send = context.Pipe(duplex=False)
    fd, log = tempfile.mkstemp(prefix="dtype-migrate-worker-", suffix=".log")
    os.close(fd)
    process = context.Process(target=_worker_main, args=(send, job, log), daemon=True)
    try:
        with _main_module_hidden():
            process.start()
    except BaseException:
        receive.close()
        Path(log).unlink()
        raise
    finally:
        send.close()
    return _Running(job, process, receive, Path(log), time.monotonic())


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Keep multiprocessing from running the parent's main script again in the worker.

    It does so in every process it starts, for functions pickled from ``__main__``; a
    job's target never is one, and the script may be a whole command line (0.4 s of
    imports per OpInfo). A main module with neither a file nor a spec is one that
    multiprocessing leaves alone.
    """
    with _MAIN_SWAP:  # threads that start workers at once must each put back the real one
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


def _collect(worker: _Running) -> JobOutcome | None:
    """Read what the worker sent; its outcome once it has finished or died, else None."""
    _drain(worker)
    if not worker.done and not worker.process.is_alive():
        _drain(worker)  # what it sent between the first read and its end
    if worker.done:
        return _finish(worker, DONE, "")
    if worker.process.is_alive():
        return None
    return _finish(worker, CRASH, _crash_reason(worker))


def _drain(worker: _Running) -> None:
    with contextlib.suppress(EOFError, OSError):
        while worker.connection.poll():
            kind, report = worker.connection.recv()
            if kind == DONE:
                worker.done, worker.cpu_seconds = True, report
            else:
                worker.reports.append(report)


def _crash_reason(worker: _Running) -> str:
    worker.process.join()
    code = worker.process.exitcode
    how = f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited with code {code}"
    try:
        lines = [line.strip() for line in worker.log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return f"the worker {how}" + (f": {lines[-1][:300]}" if lines else "")


def _finish(worker: _Running, status: str, reason: str) -> JobOutcome:
    worker.process.join(5)
    if worker.process.is_alive():  # finished its work but hangs on the way out
        worker.process.kill()
        worker.process.join()
    worker.connection.close()
    worker.log.unlink(missing_ok=True)
    seconds = time.monotonic() - worker.started
    return JobOutcome(worker.job, status, tuple(worker.reports), seconds, worker.cpu_seconds, reason)


def _worker_main(connection: Any, job: Job, log: str) -> None:
    """A worker's body: output to a log (read only if it crashes), no warnings, one thread."""
    import torch  # here: the parent imports this module without torch; the worker has it from the fork server

    with open(log, "wb") as output:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    faulthandler.enable()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    with reference_cpu_paths():
        for report in job.target(job.argument):
            connection.send(("report", report))
    connection.send((DONE, time.process_time()))
    connection.close()


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def one_line(exc: BaseException) -> str:
    """An exception as one deterministic line (memory addresses removed)."""
    text = str(exc).strip().splitlines()
    return _ADDRESS.sub("0x…", f"{type(exc).__name__}: {text[0] if text else ''}".strip())[:300]


def forked(compute: Callable[[], Any]) -> Callable[[], Any]:
    """``compute`` started in a child forked from this process (it reads the parent's objects as they are, unpickled),
    so that pure-Python work runs on a second core; the callable returned waits for its value. Where the platform
    cannot fork, or the child dies, the value is computed here instead: the same value, later."""
    try:
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
    except (ValueError, OSError):
        return compute

    def child() -> None:
        try:
            send.send((True, compute()))
        except BaseException as exc:  # the parent computes it again and meets the error itself
            send.send((False, repr(exc)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork beside the run's threads: the child touches none of their locks
        process = context.Process(target=child, daemon=True)
        process.start()
    send.close()

    def value() -> Any:
        try:
            done, found = receive.recv()
        except (EOFError, OSError):
            done, found = False, None
        finally:
            receive.close()
            process.join()
        return found if done else compute()

    return value
