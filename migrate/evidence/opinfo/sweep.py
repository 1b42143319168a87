"""The OpInfo sweep: every OpInfo's CPU samples run under the recorders, in parallel, cached per OpInfo.

Each OpInfo runs in a fresh process forked from a fork server that has torch and the
OpInfo database already imported: a crash or a hang takes down only that process
(the parent kills one that runs over its timeout, which no code inside can catch),
and no state leaks from one OpInfo to the next, so the observations are the same
whatever ``jobs`` is. A worker reports after each sample dtype, so a timeout keeps
what was seen before it.

Once every sample has run, the worker probes (``migrate.evidence.probe.prober``): a few
calls of each overload with distinct input dtypes are made again with
tensor slots cast to other dtypes, to learn what ATen accepts beyond what was sampled.
A probe that crashes or hangs ends the worker after its observations were reported;
that is recorded as a probe failure and the run still counts as complete.

Only complete runs are cached, one JSON file per OpInfo in the ``opinfo`` stage's folder
(keyed by the worker's code and torch's version), next to a catalogue of the OpInfos (their
dtypes, the dtypes they declare for other devices, the operator names they are about), so a
warm run imports neither the OpInfo database nor the recorders. Each run file's name ends
with the digest of its content, so the names of the files present are a content key of what
the cache holds (``SweepCache.key``).
"""


from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator

from migrate.runtime import torch_private
from migrate.cache import store
from migrate.evidence.opinfo.jobs import catalogue_reports, opinfo_reports, with_claims_on_a_current_gpu
from migrate.runtime.runs import (
    PROBE_CRASH,
    PROBE_TIMEOUT,
    CatalogueEntry,
    Failure,
    Observation,
    OpInfoId,
    OpInfoRun,
    ProbedCall,
    SweepResult,
    SweepStats,
    load,
)
from migrate.runtime.run_files import CATALOGUE, RunFiles
from migrate.runtime.processes import CRASH, DEFAULT_TIMEOUT, DONE, Job, JobOutcome, run_in_workers
from migrate.model.dtypes import DType
from migrate.model.names import OverloadName


def _overload_matcher(requested: Iterable[str]) -> tuple[Callable[[str], bool], set[str]]:
    """For `--op` spellings: a predicate on recorded overload names ('aten::add.Tensor'), and the operator names."""
    exact, families = set(), set()
    for text in requested:
        name = OverloadName.parse(text)
        if name.overload or text.endswith(".default"):  # 'relu.default' is the default overload alone
            exact.add(name)
        else:
            families.add(name.operator)

    def matches(overload: str) -> bool:
        name = OverloadName.qualified_or_none(overload)
        return name is not None and (name in exact or name.operator in families)

    return matches, {name.operator for name in exact} | families


class SweepCache(RunFiles):
    """The sweep stage's folder, with the catalogue read in a worker when it holds none."""

    def catalogue(self, refresh: bool = False) -> tuple[CatalogueEntry, ...]:
        """Every OpInfo of the installed torch: from the cache, else read in a worker (and the recorders checked)."""
        cached = None if refresh else self.cached_catalogue()
        if cached is not None:
            return cached
        if self.stage.progress is not None:
            self.stage.progress("reading the OpInfo database in a worker (once per torch and code)")
        reading = torch_private.opinfo_claims_on_a_current_gpu()  # an interpreter of its own, beside the worker
        (outcome,) = run_in_workers([Job(catalogue_reports, None, "catalogue")], jobs=1, progress=False)
        if outcome.status != DONE:
            raise torch_private.TorchAPIChanged(f"reading the OpInfo database failed: {outcome.reason}")
        entries = with_claims_on_a_current_gpu((CatalogueEntry.from_json(obj) for obj in outcome.reports[0]), reading())
        store(self.folder / CATALOGUE, json.dumps([entry.to_json() for entry in entries], separators=(",", ":")).encode())
        return entries


def run_sweep(
    cache: SweepCache,
    jobs: int | None = None,
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
    catalogue = cache.catalogue(refresh)[:limit]
    cached = cache.runs(catalogue)
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
    for run in _runs(to_run, jobs, timeout, progress, record=True, probe=True, backward=True):
        if run.complete:  # stored at once: an interrupted sweep keeps what it finished
            cache.store_run(run)
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


# --- running OpInfos ------------------------------------------------------------------------------


def run_opinfos(
    entries: Iterable[CatalogueEntry],
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    record: bool = True,
    probe: bool = True,
    backward: bool = True,
    device: str = "cpu",
) -> list[OpInfoRun]:
    """Run OpInfos' samples in workers, no cache involved.

    ``probe=False`` skips probing, ``record=False`` runs the samples bare, ``backward=False`` runs no
    backward (the benchmarks' baselines); ``device``: where the samples are made (``record --device cuda``).
    """
    entries = list(entries)
    order = {entry.opinfo: index for index, entry in enumerate(entries)}
    return sorted(_runs(entries, jobs, timeout, progress, record, probe, backward, device), key=lambda run: order[run.opinfo])


def _runs(
    entries: list[CatalogueEntry],
    jobs: int | None,
    timeout: float,
    progress: bool | None,
    record: bool,
    probe: bool,
    backward: bool,
    device: str = "cpu",
) -> Iterator[OpInfoRun]:
    """Each OpInfo's run as soon as its worker ends (not in catalogue order)."""
    on = () if device == "cpu" else (device,)
    work = [Job(opinfo_reports, (entry.opinfo, record, record and probe, backward, *on), str(entry.opinfo)) for entry in entries]
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
            probed.append(ProbedCall.from_report(opinfo, report["probed"]))
            probing = ""
            continue
        if "probe_seconds" in report:
            probe_seconds = report["probe_seconds"]
            continue
        sample_dtype = DType(report["dtype"])
        samples += report["samples"]
        for overload, direct, count, slots, nonempty in report["observations"]:
            named = tuple((name, load(dtypes)) for name, dtypes in slots)
            observations.append(Observation(overload, named, opinfo, sample_dtype, direct, count, nonempty))
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

