"""The OpInfo sweep: every OpInfo's CPU samples run under the recorders, in parallel, cached per OpInfo.

Each OpInfo runs in a fresh process forked from a fork server that has torch and the
OpInfo database already imported: a crash or a hang takes down only that process
(the parent kills one that runs over its timeout, which no code inside can catch),
and no state leaks from one OpInfo to the next, so the observations are the same
whatever ``jobs`` is. A worker reports after each sample dtype, so a timeout keeps
what was seen before it.

Once every sample has run, the worker probes (``migrate.probing``): a few
calls of each overload with distinct input dtypes are made again with
tensor slots cast to other dtypes, to learn what ATen accepts beyond what was sampled.
A probe that crashes or hangs ends the worker after its observations were reported;
that is recorded as a probe failure and the run still counts as complete.

Only complete runs are cached, one JSON file per OpInfo under
``<cache>/opinfo/<torch version>/``, next to a catalogue of the OpInfos (their dtypes,
the dtypes they declare for other devices, the operator names they are about), so a
warm run imports neither the OpInfo database nor the recorders.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import multiprocessing
import os
import random
import re
import signal
import sys
import tempfile
import time
import types
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Union

from migrate import torch_private
from migrate.cache import cache_root, store
from migrate.dtypes import DType, canonical

FORMAT = 4  # of the cache files; a file of another format is a miss
DEFAULT_TIMEOUT = 300.0  # seconds per OpInfo: the slowest (grid_sampler_3d) takes about 5 s on one core

# Failure kinds.
NO_CPU_DTYPES = "no-cpu-dtypes"  # the OpInfo declares no CPU dtypes: nothing to run
SAMPLE_INPUTS_RAISED = "sample-inputs-raised"  # making the samples of a dtype raised
CALL_RAISED = "call-raised"  # running a sample raised
TIMEOUT = "timeout"
CRASH = "crash"
PROBE_TIMEOUT = "probe-timeout"  # a probe call ran over its own timeout (the samples had all run)
PROBE_CRASH = "probe-crash"  # the worker died while probing (the samples had all run)

SlotDTypes = Union[DType, tuple[Union[DType, None], ...], None]
"""A slot's dtype in one call: a DType, a list's element DTypes (None for a hole), or None (no tensor)."""


@functools.cache
def _dtype(name: str) -> DType:
    """One shared DType per name: a cache holds hundreds of thousands of references to a few dozen."""
    return DType(name)


@dataclass(frozen=True, order=True)
class OpInfoId:
    """An OpInfo's identity: its name and variant_test_name."""

    name: str
    variant: str = ""

    def __str__(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name

    @property
    def file_name(self) -> str:
        """A file name unique to this OpInfo, readable, safe on every file system."""
        digest = hashlib.sha256(f"{self.name}\0{self.variant}".encode()).hexdigest()[:10]
        return re.sub(r"[^A-Za-z0-9_.-]", "_", str(self)) + f"-{digest}.json"


@dataclass(frozen=True)
class Observation:
    """Calls of one overload with one dtype per tensor slot, from one OpInfo's samples of one dtype."""

    overload: str  # 'aten::add.Tensor'; 'aten::add' for a default overload
    slots: tuple[tuple[str, SlotDTypes], ...]  # every tensor slot of the schema, in order
    opinfo: OpInfoId
    sample_dtype: DType
    direct: bool  # called by the sample's own code, not from inside another overload
    count: int


@dataclass(frozen=True)
class Probe:
    """A recorded call made again with some tensor slots cast together to each other dtype, and what ATen did."""

    cast: tuple[str, ...]  # the argument slots cast
    accepted: tuple[tuple[DType, tuple[SlotDTypes, ...]], ...]  # per dtype ATen accepted: each return slot's dtype
    rejected: tuple[tuple[DType, str], ...]  # per dtype ATen refused: its message


@dataclass(frozen=True)
class ProbedCall:
    """One recorded call of an overload (as in an Observation) and the probes made from it."""

    overload: str
    slots: tuple[tuple[str, SlotDTypes], ...]  # every tensor slot of the schema, as recorded
    opinfo: OpInfoId
    sample_dtype: DType
    direct: bool
    probes: tuple[Probe, ...]
    refused_again: str = ""  # why the unmodified call failed when made again; then nothing was probed

    def accepted_rows(self) -> Iterator[tuple[SlotDTypes, ...]]:
        """Each slot's dtype in each accepted probe: cast slots at the probe's dtype, returns as returned."""
        for probe in self.probes:
            for dtype, returns in probe.accepted:
                row, returned = [], iter(returns)
                for name, dtypes in self.slots:
                    if name.startswith("return."):
                        dtypes = next(returned)
                    elif name in probe.cast:
                        dtypes = tuple(None if d is None else dtype for d in dtypes) if isinstance(dtypes, tuple) else dtype
                    row.append(dtypes)
                yield tuple(row)


@dataclass(frozen=True)
class Failure:
    """Something that went wrong in one OpInfo, with its reason: never dropped, always listed."""

    opinfo: OpInfoId
    kind: str
    reason: str
    dtypes: tuple[DType, ...] = ()  # the sample dtypes it happened for
    count: int = 1  # samples it happened to


@dataclass(frozen=True)
class CatalogueEntry:
    """What the sweep knows of an OpInfo without running it."""

    opinfo: OpInfoId
    cpu_dtypes: tuple[DType, ...]
    declared: tuple[tuple[str, tuple[DType, ...]], ...]  # (device, dtypes) for devices other than the CPU
    operator_names: tuple[str, ...]  # names it is about: a cold `ops=` filter selects by these

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.opinfo.name,
            "variant": self.opinfo.variant,
            "cpu": [d.name for d in self.cpu_dtypes],
            "declared": {device: [d.name for d in dtypes] for device, dtypes in self.declared},
            "operators": list(self.operator_names),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CatalogueEntry:
        return cls(
            OpInfoId(obj["name"], obj["variant"]),
            tuple(map(_dtype, obj["cpu"])),
            tuple((device, tuple(map(_dtype, names))) for device, names in obj["declared"].items()),
            tuple(obj["operators"]),
        )


@dataclass(frozen=True)
class OpInfoRun:
    """Everything one OpInfo's samples showed: the unit of running and of caching."""

    opinfo: OpInfoId
    observations: tuple[Observation, ...]
    failures: tuple[Failure, ...]
    samples: int
    complete: bool  # False after a timeout or a crash while samples ran; such runs are not cached
    seconds: float = field(default=0.0, compare=False)  # wall time of its worker
    cpu_seconds: float = field(default=0.0, compare=False)  # CPU time of its worker, which load does not inflate
    probes: tuple[ProbedCall, ...] = ()
    probe_seconds: float = field(default=0.0, compare=False)  # CPU time its worker spent probing

    @functools.cached_property
    def overloads(self) -> frozenset[str]:
        return frozenset(o.overload for o in self.observations)

    def to_json(self) -> dict[str, Any]:
        """The compact cache form: slot names once per overload, dtype names, counts per distinct call."""
        slot_names: dict[str, list[str]] = {}
        observations = []
        for o in self.observations:
            slot_names.setdefault(o.overload, [name for name, _ in o.slots])
            observations.append([o.overload, o.sample_dtype.name, int(o.direct), o.count, [_dump(d) for _, d in o.slots]])
        failures = [[f.kind, f.reason, [d.name for d in f.dtypes], f.count] for f in self.failures]
        messages: dict[str, int] = {}  # each rejection message once: most recur across calls and slots
        probed = []
        for call in self.probes:
            names = slot_names.setdefault(call.overload, [name for name, _ in call.slots])
            probes = [
                [
                    [names.index(n) for n in p.cast],
                    [[d.name, [_dump(r) for r in returns]] for d, returns in p.accepted],
                    [[d.name, messages.setdefault(message, len(messages))] for d, message in p.rejected],
                ]
                for p in call.probes
            ]
            dtypes = [_dump(d) for _, d in call.slots]
            probed.append([call.overload, call.sample_dtype.name, int(call.direct), dtypes, call.refused_again, probes])
        return {
            "format": FORMAT,
            "name": self.opinfo.name,
            "variant": self.opinfo.variant,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "probe_seconds": round(self.probe_seconds, 3),
            "slots": slot_names,
            "observations": observations,
            "failures": failures,
            "messages": list(messages),
            "probes": probed,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> OpInfoRun:
        opinfo = OpInfoId(obj["name"], obj["variant"])
        slot_names = obj["slots"]
        observations = tuple(
            Observation(
                overload, tuple(zip(slot_names[overload], map(_load, dtypes))), opinfo, _dtype(sample), bool(direct), count
            )
            for overload, sample, direct, count, dtypes in obj["observations"]
        )
        failures = tuple(
            Failure(opinfo, kind, reason, tuple(map(_dtype, dtypes)), count)
            for kind, reason, dtypes, count in obj["failures"]
        )
        messages = obj["messages"]
        probed = []
        for overload, sample, direct, dtypes, refused_again, probes in obj["probes"]:
            names = slot_names[overload]
            probed.append(
                ProbedCall(
                    overload,
                    tuple(zip(names, map(_load, dtypes))),
                    opinfo,
                    _dtype(sample),
                    bool(direct),
                    tuple(
                        Probe(
                            tuple(names[i] for i in cast),
                            tuple((_dtype(d), tuple(map(_load, returns))) for d, returns in accepted),
                            tuple((_dtype(d), messages[m]) for d, m in rejected),
                        )
                        for cast, accepted, rejected in probes
                    ),
                    refused_again,
                )
            )
        return cls(
            opinfo,
            observations,
            failures,
            obj["samples"],
            True,
            obj["seconds"],
            obj["cpu_seconds"],
            tuple(probed),
            obj["probe_seconds"],
        )


def _dump(dtypes: SlotDTypes) -> Any:
    if isinstance(dtypes, tuple):
        return [None if d is None else d.name for d in dtypes]
    return None if dtypes is None else dtypes.name


def _load(dumped: Any) -> SlotDTypes:
    """A slot's dtypes from a cache file (lists) or a worker's report (tuples)."""
    if isinstance(dumped, (list, tuple)):
        return tuple(None if d is None else _dtype(d) for d in dumped)
    return None if dumped is None else _dtype(dumped)


@dataclass(frozen=True)
class SweepStats:
    """How much a sweep did: what was selected, run, read from the cache, and how long it took."""

    opinfos: int  # selected
    ran: int
    from_cache: int
    samples: int
    seconds: float  # wall time of the sweep


@dataclass(frozen=True)
class SweepResult:
    """What the selected OpInfos showed, in catalogue order: observations and failures.

    The catalogue entries hold what each OpInfo declares, the dtypes for other devices included.
    """

    runs: tuple[OpInfoRun, ...]
    catalogue: tuple[CatalogueEntry, ...]  # the selected OpInfos
    stats: SweepStats = field(compare=False)

    @functools.cached_property
    def observations(self) -> tuple[Observation, ...]:
        return tuple(o for run in self.runs for o in run.observations)

    @functools.cached_property
    def probes(self) -> tuple[ProbedCall, ...]:
        return tuple(p for run in self.runs for p in run.probes)

    @functools.cached_property
    def failures(self) -> tuple[Failure, ...]:
        """Every failure, an OpInfo with no CPU dtypes included, in catalogue order."""
        by_opinfo = {run.opinfo: run.failures for run in self.runs}
        found: list[Failure] = []
        for entry in self.catalogue:
            if not entry.cpu_dtypes:
                found.append(Failure(entry.opinfo, NO_CPU_DTYPES, "the OpInfo declares no CPU dtypes"))
            found.extend(by_opinfo.get(entry.opinfo, ()))
        return tuple(found)


# --- selection and caching ------------------------------------------------------------------------


def _overload_matcher(requested: Iterable[str]) -> tuple[Callable[[str], bool], set[str]]:
    """For `--op` spellings: a predicate on recorded overload names ('aten::add.Tensor'), and the operator names."""
    exact, families = set(), set()
    for text in requested:
        name = text.removeprefix("aten::")
        if name.endswith(".default"):  # the default overload, recorded as 'aten::name'
            exact.add(name.removesuffix(".default"))
        else:
            (exact if "." in name else families).add(name)

    def matches(overload: str) -> bool:
        if not overload.startswith("aten::"):
            return False
        name = overload[len("aten::") :]
        return name in exact or name.split(".", 1)[0] in families

    return matches, {name.split(".", 1)[0] for name in exact | families}


def sweep_cache_dir(cache_dir: Path | str | None) -> Path:
    return cache_root(cache_dir) / "opinfo" / torch_private.torch_version()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _store_json(path: Path, obj: Any) -> None:
    store(path, json.dumps(obj, separators=(",", ":")).encode())


def load_catalogue(cache_dir: Path | str | None = None, refresh: bool = False) -> tuple[CatalogueEntry, ...]:
    """Every OpInfo of the installed torch: from the cache, else read in a worker (and the recorders checked)."""
    path = sweep_cache_dir(cache_dir) / "catalogue.json"
    cached = None if refresh else _read_json(path)
    if not (isinstance(cached, dict) and cached.get("format") == FORMAT):
        (outcome,) = run_in_workers([Job(_catalogue_reports, None, "catalogue")], jobs=1, progress=False)
        if outcome.status != DONE:
            raise torch_private.TorchAPIChanged(f"reading the OpInfo database failed: {outcome.reason}")
        cached = {"format": FORMAT, "opinfos": outcome.reports[0]}
        _store_json(path, cached)
    return tuple(CatalogueEntry.from_json(obj) for obj in cached["opinfos"])


def load_cached_run(cache_dir: Path | str | None, opinfo: OpInfoId) -> OpInfoRun | None:
    """The OpInfo's cached run; None when there is none, or it is of another format or unreadable (a miss)."""
    obj = _read_json(sweep_cache_dir(cache_dir) / opinfo.file_name)
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        return None
    if (obj.get("name"), obj.get("variant")) != (opinfo.name, opinfo.variant):
        return None
    try:
        return OpInfoRun.from_json(obj)
    except (KeyError, TypeError, ValueError):
        return None


def run_sweep(
    jobs: int | None = None,
    cache_dir: Path | str | None = None,
    refresh: bool = False,
    ops: Iterable[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    limit: int | None = None,
) -> SweepResult:
    """Observations of every OpInfo (or of those that reach ``ops``), read from the cache or run.

    ``jobs`` worker processes (default: all cores), each OpInfo killed after ``timeout``
    seconds; a progress bar on stderr when ``progress`` (default: when stderr is a terminal).
    ``ops`` takes `--op` spellings (``aten::add.Tensor``, ``add.Tensor``, ``add``) and selects
    the OpInfos known to reach them: from their cached runs, or, for OpInfos not run yet,
    by the operator names they are about. ``refresh`` runs the selected OpInfos again.
    ``limit`` keeps only the first N OpInfos of the catalogue (benchmarks and tests).
    """
    started = time.monotonic()
    catalogue = load_catalogue(cache_dir, refresh)[:limit]
    cached = {entry.opinfo: load_cached_run(cache_dir, entry.opinfo) for entry in catalogue if entry.cpu_dtypes}
    if ops is not None:
        matches, families = _overload_matcher(ops)
        catalogue = tuple(
            entry
            for entry in catalogue
            if families & set(entry.operator_names)
            or (cached.get(entry.opinfo) is not None and any(map(matches, cached[entry.opinfo].overloads)))
        )
    to_run = [entry for entry in catalogue if entry.cpu_dtypes and (refresh or cached.get(entry.opinfo) is None)]
    fresh = {}
    for run in _runs(to_run, jobs, timeout, progress, record=True, probe=True):
        if run.complete:  # stored at once: an interrupted sweep keeps what it finished
            _store_json(sweep_cache_dir(cache_dir) / run.opinfo.file_name, run.to_json())
        fresh[run.opinfo] = run
    runs = tuple(fresh.get(e.opinfo) or cached[e.opinfo] for e in catalogue if e.cpu_dtypes)
    stats = SweepStats(
        opinfos=len(catalogue),
        ran=len(fresh),
        from_cache=len(runs) - len(fresh),
        samples=sum(run.samples for run in runs),
        seconds=time.monotonic() - started,
    )
    return SweepResult(runs, catalogue, stats)


# --- worker processes ------------------------------------------------------------------------------

DONE = "done"


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
    """Workers fork from a server that imported torch, the OpInfo database, the recorders and the prober once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        ["torch", "torch.testing._internal.common_methods_invocations", "migrate.sweep", "migrate.recorders", "migrate.probing"]
    )
    return context


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


def run_in_workers(
    work: Iterable[Job], jobs: int | None = None, timeout: float = DEFAULT_TIMEOUT, progress: bool | None = None
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
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(waiting)))
    running: dict[Any, _Running] = {}
    bar = _progress_bar(len(waiting), progress)
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                worker = _start(context, waiting.popleft())
                running[worker.connection] = worker
            next_deadline = min(worker.started for worker in running.values()) + timeout
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
                    if bar is not None:
                        bar.set_postfix_str(worker.job.label, refresh=False)
                        bar.update(1)
                    yield outcome
    finally:
        for worker in running.values():
            worker.process.kill()
            _finish(worker, CRASH, "interrupted")
        if bar is not None:
            bar.close()


def _progress_bar(total: int, progress: bool | None) -> Any:
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="OpInfo", desc="OpInfo samples", file=sys.stderr, dynamic_ncols=True)


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
    import faulthandler
    import warnings

    import torch

    with open(log, "wb") as output:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    faulthandler.enable()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    for report in job.target(job.argument):
        connection.send(("report", report))
    connection.send((DONE, time.process_time()))
    connection.close()


# --- the OpInfo jobs ------------------------------------------------------------------------------


def run_opinfos(
    entries: Iterable[CatalogueEntry],
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    record: bool = True,
    probe: bool = True,
) -> list[OpInfoRun]:
    """Run OpInfos' samples in workers, no cache involved.

    ``probe=False`` skips probing, ``record=False`` runs the samples bare (both: the benchmarks' baselines).
    """
    entries = list(entries)
    order = {entry.opinfo: index for index, entry in enumerate(entries)}
    return sorted(_runs(entries, jobs, timeout, progress, record, probe), key=lambda run: order[run.opinfo])


def _runs(
    entries: list[CatalogueEntry], jobs: int | None, timeout: float, progress: bool | None, record: bool, probe: bool
) -> Iterator[OpInfoRun]:
    """Each OpInfo's run as soon as its worker ends (not in catalogue order)."""
    work = [Job(_opinfo_reports, (entry.opinfo, record, record and probe), str(entry.opinfo)) for entry in entries]
    for outcome in run_in_workers(work, jobs, timeout, progress):
        yield _run_from_outcome(outcome.job.argument[0], outcome)


def _run_from_outcome(opinfo: OpInfoId, outcome: JobOutcome) -> OpInfoRun:
    """Merge a worker's reports into one run, a timeout or crash added as a failure.

    A worker that dies while probing (after its ``{"probing": ...}`` report, before the
    probes of that call) has reported every sample: the run is complete, with a probe
    failure naming the call; a SIGALRM is a probe call over its own timeout.
    """
    observations: list[Observation] = []
    probed: list[ProbedCall] = []
    samples = 0
    probing, probe_seconds = "", 0.0
    errors: dict[tuple[str, str], tuple[list[DType], list[int]]] = {}
    for report in outcome.reports:
        if "probing" in report:
            probing = report["probing"]
            continue
        if "probed" in report:
            probed.append(_probed_call(opinfo, report["probed"]))
            probing = ""
            continue
        if "probe_seconds" in report:
            probe_seconds = report["probe_seconds"]
            continue
        sample_dtype = _dtype(report["dtype"])
        samples += report["samples"]
        for overload, direct, count, slots in report["observations"]:
            named = tuple((name, _load(dtypes)) for name, dtypes in slots)
            observations.append(Observation(overload, named, opinfo, sample_dtype, direct, count))
        for kind, reason, count in report["errors"]:
            dtypes, counts = errors.setdefault((kind, reason), ([], []))
            dtypes.append(sample_dtype)
            counts.append(count)
    failures = [
        Failure(opinfo, kind, reason, tuple(dtypes), sum(counts)) for (kind, reason), (dtypes, counts) in errors.items()
    ]
    complete = outcome.status == DONE
    reason = f"probing {probing}: {outcome.reason}" if probing else outcome.reason
    if outcome.status == CRASH and probing:
        failures.append(Failure(opinfo, PROBE_TIMEOUT if "SIGALRM" in reason else PROBE_CRASH, reason))
        complete = True
    elif outcome.status != DONE:  # the OpInfo's own timeout is not cached, whatever it was doing
        failures.append(Failure(opinfo, outcome.status, reason))
    return OpInfoRun(
        opinfo,
        tuple(observations),
        tuple(failures),
        samples,
        complete,
        outcome.seconds,
        outcome.cpu_seconds,
        tuple(probed),
        probe_seconds,
    )


def _probed_call(opinfo: OpInfoId, report: dict[str, Any]) -> ProbedCall:
    probes = tuple(
        Probe(
            tuple(cast),
            tuple((_dtype(d), tuple(map(_load, returns))) for d, returns in accepted),
            tuple((_dtype(d), message) for d, message in rejected),
        )
        for cast, accepted, rejected in report["probes"]
    )
    slots = tuple((name, _load(dtypes)) for name, dtypes in report["slots"])
    return ProbedCall(report["overload"], slots, opinfo, _dtype(report["sample"]), report["direct"], probes, report["again"])


def _catalogue_reports(_: None) -> Iterator[list[dict[str, Any]]]:
    """The catalogue job: check the recorders work on this torch, then describe every OpInfo."""
    from migrate import recorders

    recorders.check_recorders()
    entries = []
    for op in torch_private.op_db():
        entry = CatalogueEntry(
            OpInfoId(*torch_private.opinfo_identity(op)),
            _canonical(torch_private.opinfo_cpu_dtypes(op)),
            tuple(sorted((device, _canonical(d)) for device, d in torch_private.opinfo_declared_dtypes(op).items())),
            tuple(sorted(torch_private.opinfo_operator_names(op))),
        )
        entries.append(entry.to_json())
    yield entries


def _canonical(dtypes: Iterable[Any]) -> tuple[DType, ...]:
    from migrate.recorders import dtype_name

    return canonical(_dtype(dtype_name(d)) for d in dtypes)


def _seed(opinfo: OpInfoId, dtype_name: str) -> None:
    """Every (OpInfo, dtype) starts from its own fixed seed: samples do not depend on what ran before."""
    import numpy
    import torch

    seed = zlib.crc32(f"{opinfo.name}\0{opinfo.variant}\0{dtype_name}".encode())
    torch.default_generator.manual_seed(seed)  # torch.manual_seed would also queue seeds for absent GPUs
    random.seed(seed)
    numpy.random.seed(seed)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _reason(exc: BaseException) -> str:
    """An exception as one deterministic line (memory addresses removed)."""
    text = str(exc).strip().splitlines()
    return _ADDRESS.sub("0x…", f"{type(exc).__name__}: {text[0] if text else ''}".strip())[:300]


def find_opinfo(opinfo: OpInfoId) -> Any:
    """This torch's OpInfo of that identity (a stale cached catalogue is an error)."""
    found = [op for op in torch_private.op_db() if torch_private.opinfo_identity(op) == (opinfo.name, opinfo.variant)]
    if not found:
        raise LookupError(f"this torch has no OpInfo {opinfo}: the cached catalogue is stale (refresh it)")
    return found[0]


def samples_by_dtype(op: Any, opinfo: OpInfoId) -> Iterator[tuple[str, list[Any], Counter[tuple[str, str]]]]:
    """Per CPU dtype, in canonical order and seeded as every run of the OpInfo is: its samples, and the errors making them."""
    from migrate import recorders

    for dtype in sorted(torch_private.opinfo_cpu_dtypes(op), key=lambda d: _dtype(recorders.dtype_name(d)).sort_key):
        name = recorders.dtype_name(dtype)
        _seed(opinfo, name)
        errors: Counter[tuple[str, str]] = Counter()
        samples: list[Any] = []
        try:
            samples.extend(torch_private.opinfo_samples(op, dtype))
        except Exception as exc:  # making the samples failed; those made before still run
            errors[SAMPLE_INPUTS_RAISED, _reason(exc)] += 1
        yield name, samples, errors


def call_samples(op: Any, samples: list[Any], errors: Counter[tuple[str, str]]) -> None:
    """Run each sample; one the op refuses is counted in ``errors`` and the rest still run."""
    for sample in samples:
        try:
            torch_private.call_sample(op, sample)
        except Exception as exc:
            errors[CALL_RAISED, _reason(exc)] += 1


def _opinfo_reports(argument: tuple[OpInfoId, bool, bool]) -> Iterator[dict[str, Any]]:
    """The OpInfo job: one report per CPU dtype, with the samples run, the observations and the errors; then the probes."""
    from migrate import probing, recorders

    opinfo, record, probe = argument
    op = find_opinfo(opinfo)
    capture = recorders.CallCapture(probing.budget(op)) if probe else None
    for name, samples, errors in samples_by_dtype(op, opinfo):
        if capture is not None:
            capture.sample_dtype = name
        # All samples are made first, then run under the recorders, entered once: entering
        # them costs more than a call, and making samples must not be recorded.
        with recorders.Recording(capture) as recording:
            with recording.active() if record else contextlib.nullcontext():
                call_samples(op, samples, errors)
        yield {
            "dtype": name,
            "samples": len(samples),
            "observations": [[o.overload, o.direct, o.count, list(o.slots)] for o in recording.observations()],
            "errors": [[kind, reason, count] for (kind, reason), count in sorted(errors.items())],
        }
    if capture is not None:
        yield from probing.probe_reports(capture.chosen(), str(opinfo), probing.PROBE_TIMEOUT)
