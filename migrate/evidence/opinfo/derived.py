"""The OpInfo and probe evidence of a run: the sweep, then per-overload plans, cached by the sweep's cache.

Building plans from every cached observation and probe takes seconds, reading the
runs alone half a second; yet they change only when a sweep writes its cache. So the
derived plans are cached under a key made of the run files' names, sizes and
modification times, the code that derives them, and the torch version; a warm run
reads one file, or only the small summary beside it when the plan inferred from them is
cached too (``sweep_state`` gives the key, ``sweep_summary`` and ``evidence_of`` read).
``--op`` runs use the same full plans, restricted: each overload's plan depends only
on its own observations, so they decide as a full run does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from migrate.cache import cache_root, read_pickle, write_pickle
from migrate.evidence.opinfo import observations as observations_module
from migrate.evidence.opinfo.forwards import Forward, MetadataKernel, load_forwards
from migrate.evidence.opinfo.sweep import load_cached_run, load_catalogue, run_sweep, sweep_cache_dir
from migrate.evidence.probe import merge as probe_module
from migrate.evidence.probe import schema_calls as schema_calls_module
from migrate.evidence.runtime import records as records_module
from migrate.evidence.runtime import variables as variables_module
from migrate.evidence.runtime.records import SweepResult, SweepStats
from migrate.model.plan import OverloadPlan


@dataclass(frozen=True)
class OpInfoEvidence:
    """Per-overload plans from observations and from probes, and what the sweep did."""

    opinfo: dict[str, OverloadPlan]
    probe: dict[str, OverloadPlan]
    observed: frozenset[str]  # overloads ('add.Tensor') some OpInfo called
    failures: tuple[str, ...]
    stats: SweepStats
    aliases: tuple[tuple[str, str], ...] = ()  # (alias, target) operator names from the OpInfo alias lists
    forwards: tuple[Forward, ...] = ()  # overloads whose kernel is one call of another
    kernels: tuple[MetadataKernel, ...] = ()  # overloads whose kernel reads only metadata
    schema_calls: dict[str, OverloadPlan] = field(default_factory=dict)  # calls built from schemas, of overloads no sample reached


def _key(sweep_dir: Path, names: list[str]) -> str:
    """The state of the sweep cache and of the deriving code, as one digest."""
    digest = hashlib.sha256()
    for module in (records_module, variables_module, observations_module, probe_module, schema_calls_module):
        digest.update(Path(module.__file__).read_bytes())
    digest.update(Path(__file__).read_bytes())
    for name in sorted(names):
        stat = (sweep_dir / name).stat()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def probed_calls(
    probes: tuple[records_module.ProbedCall, ...], built: tuple[records_module.ProbedCall, ...], observed: frozenset[str]
) -> tuple[records_module.ProbedCall, ...]:
    """The sweep's probed calls, and the calls built from the schema of each overload only observed: no call of it
    with elements in every tensor was probed (``remainder.Scalar``, seen only inside ``take_along_dim``)."""
    probed = {k for call in probes if call.nonempty and (k := records_module.overload_key(call.overload)) is not None}
    return probes + tuple(call for call in built if records_module.overload_key(call.overload) in observed - probed)


def _derive(sweep: SweepResult, built: tuple[records_module.ProbedCall, ...]) -> OpInfoEvidence:
    """The plans, from the observations, the probed calls and the calls built for overloads only observed."""
    observations = sweep.observations
    observed = frozenset(k for o in observations if (k := observations_module.overload_key(o.overload)) is not None)
    return OpInfoEvidence(
        opinfo=observations_module.plans_from_observations(observations, sweep.catalogue),
        probe=probe_module.probe_plans(probed_calls(sweep.probes, built, observed), observations),
        observed=observed,
        failures=tuple(f"{f.opinfo}: {f.kind}: {f.reason}" for f in sweep.failures),
        stats=sweep.stats,
    )


@dataclass(frozen=True)
class SweepState:
    """The sweep cache once a run has filled what it lacked: what it holds, and a digest of that."""

    opinfos: int  # in the catalogue
    ran: int  # OpInfos this run swept
    present: int  # OpInfos with a cached run
    key: str  # of the cache's state and the deriving code (see _key)
    cache_dir: Path | None
    jobs: int | None = None  # workers for what the cache still lacks (the calls built from schemas)


@dataclass(frozen=True)
class SweepSummary:
    """What a run's summary says about the sweep, kept apart from the plans so that reading it is cheap."""

    observed: frozenset[str]
    failures: tuple[str, ...]
    samples: int


def sweep_state(jobs: int | None, cache_dir: Path | None, refresh: bool, only: set[str] | None) -> SweepState:
    """Run what the sweep cache lacks (with ``only``: the OpInfos reaching those overloads)."""
    catalogue = load_catalogue(cache_dir)
    wanted = [e for e in catalogue if e.cpu_dtypes]
    sweep_dir = sweep_cache_dir(cache_dir)
    ran = 0
    if refresh or not all((sweep_dir / e.opinfo.file_name).exists() for e in wanted):
        ran = run_sweep(jobs=jobs, cache_dir=cache_dir, refresh=refresh, ops=sorted(only) if only is not None else None).stats.ran
    present = [e.opinfo.file_name for e in wanted if (sweep_dir / e.opinfo.file_name).exists()]
    return SweepState(len(catalogue), ran, len(present), _key(sweep_dir, present), cache_dir, jobs)


def _paths(state: SweepState) -> tuple[Path, Path]:
    folder = cache_root(state.cache_dir) / "derived"
    return folder / f"{state.key}.pickle", folder / f"{state.key}.summary.pickle"


def sweep_summary(state: SweepState) -> SweepSummary:
    """The observed overloads and failures of the cached runs (derived once, with the plans)."""
    summary = read_pickle(_paths(state)[1], SweepSummary)
    if summary is None:
        evidence = evidence_of(state)
        summary = SweepSummary(evidence.observed, evidence.failures, evidence.stats.samples)
    return summary


def evidence_of(state: SweepState) -> OpInfoEvidence:
    """The per-overload plans of the cached runs: derived when the cache changed, else read."""
    derived_path, summary_path = _paths(state)
    evidence = read_pickle(derived_path, OpInfoEvidence)
    built_calls = schema_calls_module.load_schema_calls(sweep_cache_dir(state.cache_dir), state.jobs)
    if evidence is None:
        catalogue = load_catalogue(state.cache_dir)
        wanted = [e for e in catalogue if e.cpu_dtypes]
        runs = tuple(r for e in wanted if (r := load_cached_run(state.cache_dir, e.opinfo)) is not None)
        stats = SweepStats(len(catalogue), state.ran, len(runs) - state.ran, sum(r.samples for r in runs), 0.0)
        evidence = _derive(SweepResult(runs, catalogue, stats), built_calls)
        write_pickle(derived_path, evidence)
    if not summary_path.exists():
        write_pickle(summary_path, SweepSummary(evidence.observed, evidence.failures, evidence.stats.samples))
    stats = SweepStats(state.opinfos, state.ran, state.present - state.ran, evidence.stats.samples, 0.0)
    aliases = tuple(sorted({pair for e in load_catalogue(state.cache_dir) for pair in e.aliases}))
    forwards, kernels = load_forwards(sweep_cache_dir(state.cache_dir))
    built = schema_calls_module.schema_call_plans(built_calls)
    built = {name: plan for name, plan in built.items() if name not in evidence.observed}  # samples speak for the rest
    return OpInfoEvidence(evidence.opinfo, evidence.probe, evidence.observed, evidence.failures, stats, aliases, forwards, kernels, built)


def opinfo_evidence(jobs: int | None, cache_dir: Path | None, refresh: bool, only: set[str] | None) -> OpInfoEvidence:
    """Run what the sweep cache lacks (with ``only``: the OpInfos reaching those overloads), then the plans."""
    return evidence_of(sweep_state(jobs, cache_dir, refresh, only))
