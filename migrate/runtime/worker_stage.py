"""One recipe for the stages made in workers once per torch release: their key, their make, their load.

Each source that calls ATen itself (the calls built from schemas and from the argument catalogue, the ``dtype=``
and promotion calls, the forwarding kernels, the autocast observations, the tiny models' runs) keeps its workers'
reports as one entry of the release's facts (``migrate.runtime.recorded``), never keyed by the tool's code. A
``WorkerStage`` says that once: the stage's name, how its entry is made in workers on a miss, and how a run reads it. ``migrate.evidence.torch_stages`` makes those a run will read beside the
sweep; every reader reads them through the same recipe.

Most are made per overload, a chunk of names per worker job (``reports_by_chunk``): a call that ends its worker
(a crash, a hang past the probe timeout) loses that overload, and a new worker goes on after it. The names come
from a worker too (``listed_in_worker``): the parent need not import torch.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from migrate.cache import StageCache
from migrate.runtime.aten_call import bounded
from migrate.runtime.processes import DEFAULT_TIMEOUT, DONE, Job, run_in_workers
from migrate.runtime.recorded import RecordedStage, recorded_stage
from migrate.runtime.torch_private import TorchAPIChanged

CHUNK = 40  # overloads per worker job
TRYING = "trying"  # a job's report that announces the overload it calls next
REPORT = "report"  # a job's report of what it found

E = TypeVar("E")  # a stage's entry, as stored
P = TypeVar("P")  # what a run reads of it


def _as_stored(entry: Any) -> Any:
    return entry


_LOADED: dict[str, tuple[Any, Any]] = {}  # per stage: the entry last loaded (as ``recorded`` read it) and what it gave
_LOADED_LOCK = threading.Lock()


@dataclass(frozen=True)
class WorkerStage(Generic[E, P]):
    """A stage made in workers: ``name`` its folder in the release's facts; ``make`` its entry, in workers (``-j``), on a miss, saying ``cold`` on the progress line; ``load`` what a run reads of
    the entry. ``after_sweep``: the run reads it only after the sweep's plans (``migrate.evidence.torch_stages``
    makes it then); ``evidence``: the ``--evidence`` word whose run reads it ('': every run with runtime evidence)."""

    name: str
    make: Callable[[int | None], E]
    cold: str
    load: Callable[[E], P] = _as_stored
    kind: type = list
    after_sweep: bool = False
    evidence: str = ""

    def stage(self, cache: StageCache) -> RecordedStage:
        return recorded_stage(cache, self.name)

    def entry(self, cache: StageCache, jobs: int | None = None) -> E:
        """The stored entry, else made in workers and stored."""
        return self.stage(cache).get((), lambda: self.make(jobs), self.kind, cold=self.cold)

    def stored(self, cache: StageCache) -> E | None:
        """The entry a run stored, or None before one did (nothing is made)."""
        return self.stage(cache).read(kind=self.kind)

    def loaded(self, cache: StageCache, jobs: int | None = None) -> P:
        """What a run reads of the entry, made first where the cache lacks it."""
        return self._loaded_once(self.entry(cache, jobs))

    def cached(self, cache: StageCache, default: E) -> P:
        """What a run reads of the stored entry, or of ``default`` before a run stored one (nothing is made)."""
        found = self.stored(cache)
        return self.load(default) if found is None else self._loaded_once(found)

    def _loaded_once(self, entry: E) -> P:
        """``load(entry)``, made once per entry and process: an entry is read once per process (``recorded._read``,
        one object whichever cache folder holds it), and the runs of a process (a test suite's) read what it gives
        (thousands of built calls) many times. Readers never change either."""
        with _LOADED_LOCK:
            kept = _LOADED.get(self.name)
        if kept is not None and kept[0] is entry:
            return kept[1]
        loaded = self.load(entry)
        with _LOADED_LOCK:
            _LOADED[self.name] = (entry, loaded)
        return loaded


def listed_in_worker(names_report: Callable[[None], Iterator[list[str]]], what: str) -> list[str]:
    """The names one job lists in a worker (``names_report(None)`` yields lists of them): ``what`` they are."""
    (outcome,) = run_in_workers([Job(names_report, None, what)], jobs=1, progress=False)
    if outcome.status != DONE:
        raise TorchAPIChanged(f"listing {what} failed: {outcome.reason}")
    return [name for report in outcome.reports for name in report]


def reports_by_chunk(
    names: Sequence[str],
    job: Callable[[tuple[str, ...]], Iterator[dict[str, Any]]],
    what: str,
    jobs: int | None,
    chunk_size: int = CHUNK,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[list[Any], list[str]]:
    """What ``job`` reported (``{REPORT: ...}``) of every name, in the order the workers ended, and the names that
    ended their worker, in name order: ``job`` takes a chunk of ``chunk_size`` names and announces each (``{TRYING: name}``)
    before it calls it; after a worker that ended early (a crash, or ``timeout`` seconds after its start), a new
    one goes on after the name it announced last."""
    chunks = [tuple(names[i : i + chunk_size]) for i in range(0, len(names), chunk_size)]
    found: list[Any] = []
    lost: list[str] = []
    while chunks:
        work = [Job(job, chunk, f"{what} {chunk[0]}") for chunk in chunks]
        chunks = []
        for outcome in run_in_workers(work, jobs, timeout, unit="chunk", desc=what):
            tried = [r[TRYING] for r in outcome.reports if TRYING in r]
            found += [r[REPORT] for r in outcome.reports if REPORT in r]
            if outcome.status != DONE:
                if not tried:
                    raise TorchAPIChanged(f"{what} failed: {outcome.reason}")
                lost.append(tried[-1])
                chunk = outcome.job.argument
                rest = chunk[chunk.index(tried[-1]) + 1 :]
                if rest:
                    chunks.append(rest)
    return found, sorted(lost)


def each_overload(report: Callable[[str], Iterable[Any]], names: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """A job's body for ``reports_by_chunk`` (as ``functools.partial(each_overload, report)``): for each overload
    named, announced, what ``report`` finds of it; warnings off, the calls bounded (``aten_call.bounded``)."""
    with warnings.catch_warnings(), bounded():
        warnings.simplefilter("ignore")
        for name in names:
            yield {TRYING: name}
            for found in report(name):
                yield {REPORT: found}
