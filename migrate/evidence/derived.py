"""The OpInfo and probe evidence of a run, joined: the sweep, then per-overload plans, cached by the sweep's cache.

Building plans from every cached observation and probe takes seconds, reading the
runs alone half a second; yet they change only when a sweep writes its cache. So the
derived plans are a stage of their own, keyed by the content of the cached runs (their
files' names carry their digests: ``SweepCache.key``) and the code that derives them; a
warm run reads one file, or only the small summary beside it when the plan inferred from
them is cached too (``sweep_state`` gives the key, ``sweep_summary`` and ``evidence_of`` read).
``--op`` runs use the same full plans, restricted: each overload's plan depends only
on its own observations, so they decide as a full run does.

The tiny models' runs (``migrate.evidence.models``), when the run has them, join the sweep's runs here: their
calls are observations and probed calls like any OpInfo's, and the key grows by their content.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from migrate.cache import Remembered, Stage, StageCache, made_once
from migrate.evidence.opinfo import observations as observations_module
from migrate.evidence.opinfo import forwards as forwards_module
from migrate.evidence.opinfo.forwards import Forward, MetadataKernel
from migrate.evidence.models.source import ModelsEvidence
from migrate.evidence.opinfo.sweep import SweepCache, run_sweep
from migrate.evidence.probe import follows as follows_module
from migrate.evidence.probe import merge as probe_module
from migrate.evidence.probe import schema_calls as schema_calls_module
from migrate.evidence.probe import catalogue_calls as catalogue_calls_module
from migrate.evidence.probe import value_calls
from migrate.evidence.probe.follows import Follows
from migrate.runtime import recorded
from migrate.runtime.processes import forked
from migrate.runtime import runs as runs_module
from migrate.runtime.runs import SweepResult, SweepStats
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
    schema_calls: dict[str, OverloadPlan] = field(default_factory=dict)  # calls built from schemas or the catalogue, of every overload
    follows: dict[str, tuple[Follows, ...]] = field(default_factory=dict)  # slots whose dtypes follow another variable's
    claims: dict[str, observations_module.Claims] = field(default_factory=dict)  # what each overload's own OpInfos claim for CUDA, per slot
    models_changed: tuple[str, ...] = ()  # overloads whose observed or probed variables the tiny models changed
    by_opinfo: frozenset[str] = frozenset()  # overloads some OpInfo sample reached (``observed`` less the models' alone)


def probed_calls(
    probes: tuple[runs_module.ProbedCall, ...], built: tuple[runs_module.ProbedCall, ...], observed: frozenset[str]
) -> tuple[runs_module.ProbedCall, ...]:
    """The sweep's probed calls, and the calls built from the schema of each overload observed.

    A set is a may-accept set, and a sample's call is one call among many: a built call may show a dtype
    the samples' calls never could (``remainder.Scalar``, seen only inside ``take_along_dim``;
    ``count_nonzero(uint16, [1])`` runs where a sample's dims refuse it).
    """
    return probes + tuple(call for call in built if runs_module.overload_key(call.overload) in observed)


def _derive(sweep: SweepResult, built: tuple[runs_module.ProbedCall, ...], models: tuple[runs_module.OpInfoRun, ...] = ()) -> OpInfoEvidence:
    """The plans, from the observations, the probed calls and the calls built for overloads only observed; the
    models' runs joined to the sweep's, with what they changed. The probe's plans are made here, the rest (the
    observations' plans and facts, and the sweep's plans without the models) in a forked child beside them."""
    by_opinfo = _keys(sweep.observations)
    joined = SweepResult(sweep.runs + models, sweep.catalogue, sweep.stats)
    observed = _keys(joined.observations)
    beside = forked(lambda: (_observation_facts(joined), _without_models(sweep, built, models) if models else {}))
    probe = probe_module.probe_plans(probed_calls(joined.probes, built, observed), joined.observations)
    (opinfo, follows, claims), alone = beside()
    plans = OpInfoEvidence(
        opinfo=opinfo,
        probe=probe,
        follows=follows,
        claims=claims,
        observed=observed,
        failures=tuple(f"{f.opinfo}: {f.kind}: {f.reason}" for f in joined.failures),
        stats=joined.stats,
    )
    changed = tuple(name for name, variables in sorted(alone.items()) if variables != (_variables(opinfo.get(name)), _variables(probe.get(name))))
    return replace(plans, models_changed=changed, by_opinfo=by_opinfo)


def _keys(found: Iterable[runs_module.Observation | runs_module.ProbedCall]) -> frozenset[str]:
    return frozenset(k for o in found if (k := runs_module.overload_key(o.overload)) is not None)


def _variables(plan: OverloadPlan | None) -> frozenset[tuple[tuple[str, ...], frozenset[object]]]:
    return frozenset((v.binds, frozenset(v.dtypes)) for v in plan.variables) if plan is not None else frozenset()


def _observation_facts(sweep: SweepResult) -> tuple[dict[str, OverloadPlan], dict[str, tuple[Follows, ...]], dict[str, observations_module.Claims]]:
    """The observations' plans, the slots that follow another variable, and each overload's CUDA claims."""
    observations = sweep.observations
    return (
        observations_module.plans_from_observations(observations, sweep.catalogue),
        follows_module.follows_facts(sweep.probes, observations),
        observations_module.cuda_claims(observations, sweep.catalogue),
    )


def _without_models(
    sweep: SweepResult, built: tuple[runs_module.ProbedCall, ...], models: tuple[runs_module.OpInfoRun, ...]
) -> dict[str, tuple[frozenset, frozenset]]:
    """Per overload the models reached, its observed and probed variables (slots and dtypes) as the sweep's own runs
    give them, derived again for those overloads alone (a plan reads its own overload's calls only): where the joined
    plans differ, the models changed them."""
    reached = _keys(o for run in models for o in (*run.observations, *run.probes))
    keep = lambda found: tuple(o for o in found if runs_module.overload_key(o.overload) in reached)  # noqa: E731
    observations = tuple(o for o in sweep.observations if runs_module.overload_key(o.overload) in reached)
    opinfo = observations_module.plans_from_observations(observations, sweep.catalogue)
    probe = probe_module.probe_plans(probed_calls(keep(sweep.probes), keep(built), _keys(observations)), observations)
    return {name: (_variables(opinfo.get(name)), _variables(probe.get(name))) for name in reached}


@dataclass(frozen=True)
class SweepState:
    """The sweep cache once a run has filled what it lacked: what it holds, and a content key of that."""

    opinfos: int  # in the catalogue
    ran: int  # OpInfos this run swept
    present: int  # OpInfos with a cached run
    key: str  # of the cached runs' contents (SweepCache.key) and the release's other facts (recorded.content_key)
    cache: StageCache
    jobs: int | None = None  # workers for what the cache still lacks (the calls built from schemas)
    models: ModelsEvidence | None = None  # the tiny models' runs, joined to the sweep's (``with_models``)

    @property
    def sweep(self) -> SweepCache:
        return SweepCache.of(self.cache)


@dataclass(frozen=True)
class SweepSummary:
    """What a run's summary says about the sweep, kept apart from the plans so that reading it is cheap."""

    observed: frozenset[str]
    failures: tuple[str, ...]
    samples: int
    by_opinfo: frozenset[str] = frozenset()  # OpInfoEvidence.by_opinfo
    models_changed: tuple[str, ...] = ()  # OpInfoEvidence.models_changed


def sweep_state(cache: StageCache, jobs: int | None, refresh: bool, only: set[str] | None, run: bool = True) -> SweepState:
    """Run what the sweep cache lacks (with ``only``: the OpInfos reaching those overloads; ``run`` False: nothing, the
    state is what the cache holds)."""
    sweep = SweepCache.of(cache)
    catalogue = sweep.catalogue()
    wanted = [e.opinfo for e in catalogue if e.cpu_dtypes]
    files = sweep.files()
    ran = 0
    if run and (refresh or not all(o.file_stem in files for o in wanted)):
        if sweep.stage.progress is not None:
            sweep.stage.progress("running the OpInfo samples the cache lacks, in workers")
        ran = run_sweep(sweep, jobs=jobs, refresh=refresh, ops=sorted(only) if only is not None else None).stats.ran
        files = sweep.files()
    present = [o for o in wanted if o.file_stem in files]
    return SweepState(len(catalogue), ran, len(present), f"{sweep.key(present)}\n{recorded.content_key(cache)}", cache, jobs)


def with_models(state: SweepState, models: ModelsEvidence | None) -> SweepState:
    """The state with the models' runs joined, its key grown by their content (None: as it was)."""
    return state if models is None else replace(state, models=models, key=f"{state.key}\n{models.key}")


def _derived(state: SweepState) -> tuple[Stage, Stage]:
    """The derived plans, and their summary apart, keyed by the runs' contents and the deriving code."""
    return state.cache.stage("derived", __name__), state.cache.stage("derived-summary", __name__)


def sweep_summary(state: SweepState) -> SweepSummary:
    """The observed overloads and failures of the cached runs (derived once, with the plans)."""
    summary = _derived(state)[1].read(state.key, kind=SweepSummary)
    if summary is None:
        evidence = evidence_of(state)
        summary = SweepSummary(evidence.observed, evidence.failures, evidence.stats.samples, evidence.by_opinfo, evidence.models_changed)
    return summary


_MADE = Remembered(1)  # per process, one state's at a time (the plans are large): a run asks twice (its summary, its sources)


def evidence_of(state: SweepState) -> OpInfoEvidence:
    """The per-overload plans of the cached runs: derived when the cache changed, else read; once per process."""
    return _MADE.get((str(state.cache.root), state.key, state.ran, state.present), lambda: _evidence_of(state))


def _evidence_of(state: SweepState) -> OpInfoEvidence:
    derived, summaries = _derived(state)

    def derive() -> OpInfoEvidence:
        built_calls = schema_calls_module.STAGE.loaded(state.cache, state.jobs) + catalogue_calls_module.STAGE.loaded(state.cache, state.jobs)
        built_calls += value_calls.STAGE.loaded(state.cache, state.jobs)
        sweep = state.sweep
        catalogue = sweep.catalogue()
        runs = tuple(sweep.runs(catalogue).values())
        stats = SweepStats(len(catalogue), state.ran, len(runs) - state.ran, sum(r.samples for r in runs), 0.0)
        evidence = _derive(SweepResult(runs, catalogue, stats), built_calls, state.models.runs if state.models is not None else ())
        uniform, free = catalogue_calls_module.uniform_lists(state.cache), catalogue_calls_module.free_returns(state.cache)
        schema_calls = schema_calls_module.schema_call_plans(built_calls, uniform, free)  # of every overload: samples speak for those observed
        return replace(evidence, schema_calls=schema_calls)

    evidence = made_once(derived, (state.key,), derive, kind=OpInfoEvidence)
    if summaries.read(state.key, kind=SweepSummary) is None:
        summaries.write(SweepSummary(evidence.observed, evidence.failures, evidence.stats.samples, evidence.by_opinfo, evidence.models_changed), state.key)
    stats = SweepStats(state.opinfos, state.ran, state.present - state.ran, evidence.stats.samples, 0.0)
    aliases = tuple(sorted({pair for e in state.sweep.catalogue() for pair in e.aliases}))
    forwards, kernels = forwards_module.STAGE.loaded(state.cache)
    return replace(evidence, stats=stats, aliases=aliases, forwards=forwards, kernels=kernels)


def recorded_evidence(
    runs: tuple[runs_module.OpInfoRun, ...], catalogue: tuple[runs_module.CatalogueEntry, ...], built_calls: tuple[runs_module.ProbedCall, ...]
) -> OpInfoEvidence:
    """A recording's runs and built calls derived as the local sweep's are (``migrate.evidence.recording``)."""
    stats = SweepStats(len(catalogue), 0, len(runs), sum(r.samples for r in runs), 0.0)
    return _derive(SweepResult(runs, catalogue, stats), built_calls)
