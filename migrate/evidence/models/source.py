"""The ``models`` evidence source in the parent: its runs made in workers, cached as a stage, and counted.

Each architecture of ``zoo.ARCHITECTURES`` is one job (``migrate.evidence.models.jobs``) whose reports become an
``OpInfoRun`` named ``model.<architecture>``, its observations and probes joined to the OpInfo sweep's where the
plans are derived (``migrate.evidence.derived``): a model's mixed-precision call is one more call of the overload,
which splits the variables its dtypes tell apart as any OpInfo sample's would. Beside the runs, every distinct
call is kept as a ``ModelCall`` (0-dim slots, Python numbers, model, mode and pass), for the summary and the tests.

The stage is one of the torch release's facts, named by transformers' version; without transformers installed the
source is skipped, and the run says so on one line (``unavailable``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from migrate.cache import StageCache
from migrate.evidence.models import jobs as model_jobs
from migrate.evidence.models.records import ModelCall
from migrate.evidence.models.zoo import ARCHITECTURES
from migrate.model.dtypes import DType
from migrate.runtime import recorded
from migrate.runtime.processes import CRASH, worker_count
from migrate.runtime.runs import MODEL_RUN, Failure, Observation, OpInfoId, OpInfoRun, ProbedCall, load, overload_key
from migrate.runtime.worker_stage import WorkerStage, reports_by_chunk

TIMEOUT = 300.0  # seconds per architecture in a worker's chunk: each takes a few seconds on one core


@functools.cache
def transformers_version() -> str | None:
    """The installed transformers' version; None when it is not installed (the source is skipped). Read once per
    process: the stage's name, the run and the torch stages' thread each ask (about 2 ms a lookup)."""
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return None


def unavailable() -> str:
    """The one line a run prints when the source was asked for (or is a default) and cannot run."""
    return "dtype-migrate: models evidence skipped: transformers is not installed (pip install 'dtype-migrate[models]')"


@dataclass(frozen=True)
class ModelsEvidence:
    """What the tiny models did: a run per architecture (as an OpInfo's), and every distinct call with its context."""

    transformers: str
    runs: tuple[OpInfoRun, ...]
    calls: tuple[ModelCall, ...]
    digest: str = ""  # of the runs' content (``of``): the sweep's key grows by it, so the derived plans change with it

    @classmethod
    def of(cls, transformers: str, runs: tuple[OpInfoRun, ...], calls: tuple[ModelCall, ...]) -> ModelsEvidence:
        content = json.dumps([replace(run, seconds=0.0, cpu_seconds=0.0, probe_seconds=0.0).to_json() for run in runs], sort_keys=True)
        return cls(transformers, runs, calls, hashlib.sha256(content.encode()).hexdigest())

    @property
    def key(self) -> str:
        return f"models transformers {self.transformers} {self.digest}"

    @property
    def failures(self) -> tuple[Failure, ...]:
        return tuple(f for run in self.runs for f in run.failures)


def _made_in_workers(jobs: int | None) -> ModelsEvidence:
    return run_models(transformers_version() or "none", jobs)


def stage_of(transformers: str) -> WorkerStage[ModelsEvidence, ModelsEvidence]:
    """The stage of the models' runs made with this transformers release."""
    return replace(STAGE, name=f"{STAGE_PREFIX}{transformers}")


STAGE_PREFIX = "models-transformers-"
STAGE: WorkerStage[ModelsEvidence, ModelsEvidence] = WorkerStage(
    f"{STAGE_PREFIX}{transformers_version() or 'none'}",
    _made_in_workers,
    cold="running the tiny models, in workers (once)",
    kind=ModelsEvidence,
    evidence="models",
)
"""A stage of the torch release's facts, named by the transformers release that built the models."""


def load_models(cache: StageCache, jobs: int | None) -> ModelsEvidence | None:
    """The models' evidence from the cache, else run in workers and stored; without transformers, those the release's
    facts hold (a recording's), else None."""
    return stored_models(cache) if transformers_version() is None else STAGE.entry(cache, jobs)


def stored_models(cache: StageCache) -> ModelsEvidence | None:
    """The models' evidence the release's facts hold (nothing is run): those of the installed transformers, or without
    it, of the one release the facts hold (a recording's); None where there are none."""
    if transformers_version() is not None:
        return STAGE.stored(cache)
    made = sorted(p.name.removeprefix(STAGE_PREFIX) for p in recorded.folder(cache).glob(f"{STAGE_PREFIX}*"))
    return stage_of(made[-1]).stored(cache) if made else None


def run_models(version: str, jobs: int | None, names: Iterable[str] | None = None) -> ModelsEvidence:
    """Every architecture (or those named) run and probed in workers, a chunk of them per worker."""
    wanted = [a.name for a in ARCHITECTURES if names is None or a.name in names]
    chunk_size = max(1, math.ceil(len(wanted) / worker_count(jobs)))
    found, lost = reports_by_chunk(wanted, model_jobs.chunk_reports, "models", jobs, chunk_size, TIMEOUT * chunk_size)
    reports: dict[str, list[dict[str, Any]]] = {name: [] for name in wanted}
    for name, report in found:
        reports[name].append(report)
    made = [_run(name, reports[name], name not in lost) for name in wanted]
    return ModelsEvidence.of(version, tuple(run for run, _ in made), tuple(call for _, calls in made for call in calls))


def _run(name: str, reports: list[dict[str, Any]], finished: bool) -> tuple[OpInfoRun, list[ModelCall]]:
    """One architecture's reports as a run (observations and probes) and its calls; one whose worker ended while it ran
    (``finished`` False) a failure."""
    opinfo = OpInfoId(MODEL_RUN, name)
    observations, probed, failures, calls = [], [], [], []
    for report in reports:
        if "probed" in report:
            probed.append(ProbedCall.from_report(opinfo, report["probed"]))
        elif "calls" in report:
            sample = DType(report["dtype"])
            for overload, direct, count, slots, nonempty in report["observations"]:
                observations.append(Observation(overload, tuple((n, load(d)) for n, d in slots), opinfo, sample, direct, count, nonempty))
            calls += [ModelCall.from_report(call, name, report["mode"], report["pass"]) for call in report["calls"]]
            failures += [Failure(opinfo, kind, f"{report['mode']} {report['pass']}: {why}", (sample,), n) for kind, why, n in report["errors"]]
    if not finished:
        failures.append(Failure(opinfo, CRASH, "its worker ended while it ran (a crash, or a hang past the timeout)"))
    run = OpInfoRun(opinfo, tuple(observations), tuple(failures), len(calls), finished, probes=tuple(probed))
    return run, sorted(calls, key=lambda c: (c.mode, c.phase, c.overload, repr(c.signature)))


@dataclass(frozen=True)
class ModelsSummary:
    """What the summary says of the models (its ``models`` section): calls recorded, the overloads they reached that no
    OpInfo sample did, the verdicts they changed; or why the source did not run."""

    transformers: str | None
    architectures: tuple[str, ...] = ()
    calls: int = 0  # ATen calls recorded (every call counted)
    distinct: int = 0  # distinct calls (overload, dtypes, 0-dim slots, Python numbers)
    overloads: int = 0  # of the file's overloads the models reached
    beyond_opinfo: tuple[str, ...] = ()  # of those, the ones no OpInfo sample reached
    changed: tuple[str, ...] = ()  # overloads whose declared sets or variables the models changed
    failures: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "transformers": self.transformers,
            "architectures": list(self.architectures),
            "calls": self.calls,
            "distinct_calls": self.distinct,
            "overloads_reached": self.overloads,
            "overloads_beyond_opinfo": list(self.beyond_opinfo),
            "verdicts_changed": list(self.changed),
            "failures": list(self.failures),
        }

    def lines(self) -> list[str]:
        if self.transformers is None:
            return ["models: skipped, transformers is not installed"]
        return [
            f"models: {len(self.architectures)} tiny models (transformers {self.transformers}), {self.calls} ATen calls recorded "
            f"({self.distinct} distinct), {self.overloads} overloads of the yaml reached, {len(self.beyond_opinfo)} that no OpInfo "
            f"sample reached; {len(self.changed)} overloads' verdicts changed by them; {len(self.failures)} failures (listed in --report)"
        ]


def models_summary(models: ModelsEvidence | None, file_overloads: Iterable[str], opinfo_observed: frozenset[str], changed: Iterable[str] = ()) -> ModelsSummary:
    """The summary's section: ``opinfo_observed``, the overloads OpInfo's samples alone reached."""
    if models is None:
        return ModelsSummary(None)
    reached = {key for call in models.calls if (key := overload_key(call.overload)) is not None} & set(file_overloads)
    return ModelsSummary(
        models.transformers,
        tuple(run.opinfo.variant for run in models.runs),
        sum(call.count for call in models.calls),
        len({call.signature for call in models.calls}),
        len(reached),
        tuple(sorted(reached - opinfo_observed)),
        tuple(sorted(changed)),
        tuple(f"{f.opinfo}: {f.kind}: {f.reason}" for f in models.failures),
    )
