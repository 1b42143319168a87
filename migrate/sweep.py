"""The OpInfo sweep: every OpInfo's CPU samples run under the recorders, in parallel, cached per OpInfo.

Each OpInfo runs in a fresh process forked from a fork server that has torch and the
OpInfo database already imported: a crash or a hang takes down only that process
(the parent kills one that runs over its timeout, which no code inside can catch),
and no state leaks from one OpInfo to the next, so the observations are the same
whatever ``jobs`` is. A worker reports after each sample dtype, so a timeout keeps
what was seen before it. Only complete runs are cached, one JSON file per OpInfo
under ``<cache>/opinfo/<torch version>/``, next to a catalogue of the OpInfos
(their dtypes, the dtypes they declare for other devices, the operator names they
are about), so a warm run imports neither the OpInfo database nor the recorders.
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
import zlib
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Union

from migrate import torch_private
from migrate.cache import cache_root, store
from migrate.dtypes import DType, canonical

FORMAT = 1  # of the cache files; a file of another format is a miss
DEFAULT_TIMEOUT = 600.0  # seconds per OpInfo; the slowest takes well under a minute on one core

# Failure kinds.
NO_CPU_DTYPES = "no-cpu-dtypes"  # the OpInfo declares no CPU dtypes: nothing to run
SAMPLE_INPUTS_RAISED = "sample-inputs-raised"  # making the samples of a dtype raised
CALL_RAISED = "call-raised"  # running a sample raised
TIMEOUT = "timeout"
CRASH = "crash"

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
    complete: bool  # False after a timeout or a crash; such runs are not cached
    seconds: float = field(default=0.0, compare=False)

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
        return {
            "format": FORMAT,
            "name": self.opinfo.name,
            "variant": self.opinfo.variant,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
            "slots": slot_names,
            "observations": observations,
            "failures": failures,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> OpInfoRun:
        opinfo = OpInfoId(obj["name"], obj["variant"])
        slot_names = obj["slots"]
        observations = tuple(
            Observation(overload, tuple(zip(slot_names[overload], map(_load, dtypes))), opinfo, _dtype(sample), bool(direct), count)
            for overload, sample, direct, count, dtypes in obj["observations"]
        )
        failures = tuple(
            Failure(opinfo, kind, reason, tuple(map(_dtype, dtypes)), count) for kind, reason, dtypes, count in obj["failures"]
        )
        return cls(opinfo, observations, failures, obj["samples"], True, obj["seconds"])


def _dump(dtypes: SlotDTypes) -> Any:
    if isinstance(dtypes, tuple):
        return [None if d is None else d.name for d in dtypes]
    return None if dtypes is None else dtypes.name


def _load(dumped: Any) -> SlotDTypes:
    if isinstance(dumped, list):
        return tuple(None if d is None else _dtype(d) for d in dumped)
    return None if dumped is None else _dtype(dumped)


@dataclass(frozen=True)
class SweepStats:
    opinfos: int  # selected
    ran: int
    from_cache: int
    samples: int
    seconds: float  # wall time of the sweep


@dataclass(frozen=True)
class SweepResult:
    """What the selected OpInfos showed, in catalogue order: observations, failures, declared dtypes."""

    runs: tuple[OpInfoRun, ...]
    catalogue: tuple[CatalogueEntry, ...]  # the selected OpInfos
    stats: SweepStats = field(compare=False)

    @functools.cached_property
    def observations(self) -> tuple[Observation, ...]:
        return tuple(o for run in self.runs for o in run.observations)

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

    @property
    def declared(self) -> dict[OpInfoId, tuple[tuple[str, tuple[DType, ...]], ...]]:
        """Dtypes each OpInfo declares for other devices: declared-only evidence, never observed here."""
        return {entry.opinfo: entry.declared for entry in self.catalogue}


# --- selection and caching ------------------------------------------------------------------------


def _overload_matcher(requested: Iterable[str]):
    """A predicate on recorded overload names ('aten::add.Tensor') for `--op` spellings."""
    exact, families = set(), set()
    for text in requested:
        name = text.removeprefix("aten::").removesuffix(".default")
        (exact if "." in name else families).add(name)

    def matches(overload: str) -> bool:
        if not overload.startswith("aten::"):
            return False
        name = overload[len("aten::") :]
        return name in exact or name.split(".", 1)[0] in families

    return matches, {name.split(".", 1)[0] for name in exact | families}


def _cache_dir(cache_dir: Path | str | None) -> Path:
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
    path = _cache_dir(cache_dir) / "catalogue.json"
    cached = None if refresh else _read_json(path)
    if not (isinstance(cached, dict) and cached.get("format") == FORMAT):
        ((_, outcome),) = _run_tasks([_Task("catalogue")], jobs=1, timeout=DEFAULT_TIMEOUT, progress=False)
        if outcome.kind != "done":
            raise torch_private.TorchAPIChanged(f"reading the OpInfo database failed: {outcome.reason}")
        cached = {"format": FORMAT, "opinfos": outcome.payload}
        _store_json(path, cached)
    return tuple(CatalogueEntry.from_json(obj) for obj in cached["opinfos"])


def load_cached_run(cache_dir: Path | str | None, opinfo: OpInfoId) -> OpInfoRun | None:
    obj = _read_json(_cache_dir(cache_dir) / opinfo.file_name)
    if isinstance(obj, dict) and obj.get("format") == FORMAT and (obj["name"], obj["variant"]) == (opinfo.name, opinfo.variant):
        return OpInfoRun.from_json(obj)
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
    for run in _runs(to_run, jobs, timeout, progress, record=True):
        if run.complete:  # stored at once: an interrupted sweep keeps what it finished
            _store_json(_cache_dir(cache_dir) / run.opinfo.file_name, run.to_json())
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


# --- running OpInfos in worker processes ----------------------------------------------------------


def run_opinfos(
    entries: Iterable[CatalogueEntry],
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    record: bool = True,
) -> list[OpInfoRun]:
    """Run OpInfos' samples in worker processes, no cache involved; ``record=False`` runs them bare (the benchmark's baseline)."""
    entries = list(entries)
    order = {entry.opinfo: index for index, entry in enumerate(entries)}
    return sorted(_runs(entries, jobs, timeout, progress, record), key=lambda run: order[run.opinfo])


def _runs(entries: list[CatalogueEntry], jobs: int | None, timeout: float, progress: bool | None, record: bool) -> Iterator[OpInfoRun]:
    """Each OpInfo's run as soon as its worker ends (not in catalogue order)."""
    tasks = [_Task("opinfo", entry.opinfo, record) for entry in entries]
    for task, outcome in _run_tasks(tasks, jobs, timeout, progress):
        yield _run_from_outcome(task.opinfo, outcome)


@dataclass(frozen=True)
class _Task:
    kind: str  # 'catalogue' or 'opinfo'
    opinfo: OpInfoId | None = None
    record: bool = True


@dataclass(frozen=True)
class _Outcome:
    kind: str  # 'done', TIMEOUT or CRASH
    payload: Any  # the catalogue, or the per-dtype reports an OpInfo sent
    seconds: float
    reason: str = ""


def _run_from_outcome(opinfo: OpInfoId, outcome: _Outcome) -> OpInfoRun:
    """Merge a worker's per-dtype reports into one run, a timeout or crash added as a failure."""
    observations: list[Observation] = []
    failures: list[Failure] = []
    samples = 0
    errors: dict[tuple[str, str], list[Any]] = {}
    for report in outcome.payload:
        sample_dtype = _dtype(report["dtype"])
        samples += report["samples"]
        for overload, direct, count, slots in report["observations"]:
            named = tuple((name, _load(dtypes)) for name, dtypes in slots)
            observations.append(Observation(overload, named, opinfo, sample_dtype, direct, count))
        for kind, reason, count in report["errors"]:
            dtypes_and_count = errors.setdefault((kind, reason), [[], 0])
            dtypes_and_count[0].append(sample_dtype)
            dtypes_and_count[1] += count
    for (kind, reason), (dtypes, count) in errors.items():
        failures.append(Failure(opinfo, kind, reason, tuple(dtypes), count))
    if outcome.kind != "done":
        failures.append(Failure(opinfo, outcome.kind, outcome.reason))
    return OpInfoRun(opinfo, tuple(observations), tuple(failures), samples, outcome.kind == "done", outcome.seconds)


@functools.cache
def _context() -> multiprocessing.context.BaseContext:
    """Workers fork from a server that imported torch and the OpInfo database once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "torch.testing._internal.common_methods_invocations", "migrate.torch_private"])
    return context


@dataclass
class _Running:
    task: _Task
    process: Any
    connection: Any
    log: Path
    started: float
    reports: list[Any] = field(default_factory=list)
    payload: Any = None
    done: bool = False


def _run_tasks(tasks: list[_Task], jobs: int | None, timeout: float, progress: bool | None) -> Iterator[tuple[_Task, _Outcome]]:
    """Run each task in its own worker, at most ``jobs`` at a time; yield each outcome as it ends."""
    if not tasks:
        return
    context = _context()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    waiting = deque(tasks)
    running: dict[Any, _Running] = {}
    bar = _progress_bar(len(tasks), progress)
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                job = _start(context, waiting.popleft())
                running[job.connection] = job
            now = time.monotonic()
            next_deadline = min(job.started + timeout for job in running.values())
            ready = set(wait([*running, *(j.process.sentinel for j in running.values())], max(0.0, next_deadline - now)))
            for connection, job in list(running.items()):
                outcome = None
                if connection in ready or job.process.sentinel in ready:
                    outcome = _collect(job)
                elif time.monotonic() >= job.started + timeout:
                    job.process.kill()
                    outcome = _finish(job, TIMEOUT, f"ran over the {timeout:g} s timeout and was killed")
                if outcome is not None:
                    del running[connection]
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix_str(str(job.task.opinfo or ""), refresh=False)
                    yield job.task, outcome
    finally:
        for job in running.values():
            job.process.kill()
            _finish(job, CRASH, "the sweep was interrupted")
        if bar is not None:
            bar.close()


def _progress_bar(total: int, progress: bool | None):
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="OpInfo", desc="OpInfo samples", file=sys.stderr, dynamic_ncols=True)


def _start(context: Any, task: _Task) -> _Running:
    receive, send = context.Pipe(duplex=False)
    fd, log = tempfile.mkstemp(prefix="dtype-migrate-worker-", suffix=".log")
    os.close(fd)
    process = context.Process(target=_worker_main, args=(send, task, log), daemon=True)
    process.start()
    send.close()
    return _Running(task, process, receive, Path(log), time.monotonic())


def _collect(job: _Running) -> _Outcome | None:
    """Read what the worker sent; its outcome once it has finished or died, else None."""
    with contextlib.suppress(EOFError, OSError):
        while job.connection.poll():
            kind, payload = job.connection.recv()
            if kind == "dtype":
                job.reports.append(payload)
            else:
                job.done, job.payload = True, payload
    if job.done:
        return _finish(job, "done", "")
    if job.process.is_alive():
        return None
    return _finish(job, CRASH, _crash_reason(job))


def _crash_reason(job: _Running) -> str:
    job.process.join()
    code = job.process.exitcode
    how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited with code {code}"
    try:
        lines = [line.strip() for line in job.log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return f"the worker {how}" + (f": {lines[-1][:300]}" if lines else "")


def _finish(job: _Running, kind: str, reason: str) -> _Outcome:
    job.process.join(5)
    if job.process.is_alive():  # finished its work but hangs on the way out
        job.process.kill()
        job.process.join()
    job.connection.close()
    job.log.unlink(missing_ok=True)
    payload = job.payload if job.task.kind == "catalogue" else job.reports
    return _Outcome(kind, payload, time.monotonic() - job.started, reason)


# --- inside a worker ------------------------------------------------------------------------------


def _worker_main(connection: Any, task: _Task, log: str) -> None:
    """A worker's body: quiet, single-threaded, seeded; reports through ``connection``."""
    import faulthandler
    import warnings

    import torch

    with open(log, "wb") as output:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    faulthandler.enable()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    if task.kind == "catalogue":
        connection.send(("done", _catalogue()))
    else:
        for report in _run_opinfo(task.opinfo, task.record):
            connection.send(("dtype", report))
        connection.send(("done", None))
    connection.close()


def _catalogue() -> list[dict[str, Any]]:
    from migrate import recorders

    recorders.check_recorders()
    entries = []
    for op in torch_private.op_db():
        entry = CatalogueEntry(
            OpInfoId(*torch_private.opinfo_identity(op)),
            _canonical(torch_private.opinfo_cpu_dtypes(op)),
            tuple(sorted((device, _canonical(dtypes)) for device, dtypes in torch_private.opinfo_declared_dtypes(op).items())),
            tuple(sorted(torch_private.opinfo_operator_names(op))),
        )
        entries.append(entry.to_json())
    return entries


def _canonical(dtypes: Iterable[Any]) -> tuple[DType, ...]:
    from migrate.recorders import dtype_name

    return canonical(_dtype(dtype_name(d)) for d in dtypes)


def _seed(opinfo: OpInfoId, dtype_name: str) -> None:
    """Every (OpInfo, dtype) starts from its own fixed seed: samples do not depend on what ran before."""
    import numpy
    import torch

    seed = zlib.crc32(f"{opinfo.name}\0{opinfo.variant}\0{dtype_name}".encode())
    torch.manual_seed(seed)
    random.seed(seed)
    numpy.random.seed(seed)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _reason(exc: BaseException) -> str:
    """An exception as one deterministic line (memory addresses removed)."""
    text = str(exc).strip().splitlines()
    return _ADDRESS.sub("0x…", f"{type(exc).__name__}: {text[0] if text else ''}".strip())[:300]


def _run_opinfo(opinfo: OpInfoId, record: bool) -> Iterator[dict[str, Any]]:
    """One report per CPU dtype of the OpInfo: samples run, observations, errors."""
    from migrate import recorders

    op = next(op for op in torch_private.op_db() if torch_private.opinfo_identity(op) == (opinfo.name, opinfo.variant))
    for dtype in sorted(torch_private.opinfo_cpu_dtypes(op), key=lambda d: _dtype(recorders.dtype_name(d)).sort_key):
        name = recorders.dtype_name(dtype)
        _seed(opinfo, name)
        recording = recorders.Recording()
        errors: Counter[tuple[str, str]] = Counter()
        samples = 0
        try:
            for sample in torch_private.opinfo_samples(op, dtype):
                samples += 1
                try:
                    with recording.active() if record else contextlib.nullcontext():
                        torch_private.call_sample(op, sample)
                except Exception as exc:  # the op refused this sample: counted, and the sweep goes on
                    errors[CALL_RAISED, _reason(exc)] += 1
        except Exception as exc:  # making the samples failed
            errors[SAMPLE_INPUTS_RAISED, _reason(exc)] += 1
        yield {
            "dtype": name,
            "samples": samples,
            "observations": [[o.overload, o.direct, o.count, list(o.slots)] for o in recording.observations()],
            "errors": [[kind, reason, count] for (kind, reason), count in sorted(errors.items())],
        }


