"""One run's evidence, gathered from every source it was asked to use into ``Sources`` (``gather``), or one
overload's, as ``show`` prints it (``gather_overload``).

The runtime sources (OpInfo, probe, aliases, kernel, schema calls) are gathered only when the inference
needs them (``Sources.complete``): a run whose plan the stage cache holds reads none of them. Their slots
are named by the installed torch's schemas, so they are aligned to the file's first
(``migrate.evidence.align``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from migrate.cache import StageCache
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.dtypes import DType
from migrate.model.native import NativeFunctions, installed_native_functions, read_native
from migrate.model.plan import Evidence, GlobalSet, OverloadPlan

if TYPE_CHECKING:  # loaded only by the sources asked for, and only when they are gathered
    from migrate.evidence.align import Alignment
    from migrate.evidence.autocast.policies import AutocastEvidence
    from migrate.evidence.derived import SweepState
    from migrate.evidence.opinfo.aliases import AliasOf
    from migrate.evidence.probe.dtype_arguments import DtypeArgument
    from migrate.evidence.probe.follows import Follows
    from migrate.evidence.promotion.decide import PromotionFinding
    from migrate.evidence.recording import RecordedEvidence, Recording
    from migrate.runtime.runs import CatalogueEntry, Observation, OpInfoId, OpInfoRun, ProbedCall
    from migrate.torchlib_source.resolve import TorchlibEvidence

EVIDENCE = ("torchlib", "opinfo", "probe", "groups", "aliases", "kernel", "autocast", "models")  # models: joined to opinfo and probe
RUNTIME_EVIDENCE = frozenset({"opinfo", "probe", "aliases", "kernel"})


@dataclass(frozen=True)
class OpInfoSummary:
    """What the run's summary says about the OpInfo sweep (its ``opinfo`` section)."""

    opinfos: int  # in the catalogue
    ran: int  # swept by this run
    from_cache: int
    overloads_observed: int  # of the file's overloads
    failures: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "opinfos": self.opinfos,
            "ran": self.ran,
            "from_cache": self.from_cache,
            "overloads_observed": self.overloads_observed,
            "failures": list(self.failures),
        }

    def lines(self) -> list[str]:
        return [
            f"opinfo: {self.opinfos} OpInfos ({self.ran} run, {self.from_cache} from the cache), "
            f"{self.overloads_observed} overloads of the yaml observed, {len(self.failures)} failures (listed in --report)"
        ]


@dataclass(frozen=True)
class Sources:
    """The evidence a run has, per overload, from each source it was asked to use."""

    torchlib: Mapping[str, OverloadPlan]
    opinfo: Mapping[str, OverloadPlan]
    global_sets: tuple[GlobalSet, ...]  # torchlib's TypeVars as dtype sets
    groups: bool = True  # let in-place/out= siblings take their functional overload's constraints
    probe: Mapping[str, OverloadPlan] = field(default_factory=dict)  # migrate.evidence.probe.merge.probe_plans_from_sweep
    torchlib_handled: Mapping[str, tuple[Evidence, ...]] = field(default_factory=dict)  # TorchlibEvidence.handled
    existing_sets: tuple[GlobalSet, ...] = ()  # the target's type_constraints.yaml, in file order
    alignment: Alignment | None = None  # how the installed torch's runtime evidence met the file (align_runtime_evidence)
    aliases: Mapping[str, AliasOf] = field(default_factory=dict)  # alias overload -> its target (migrate.evidence.opinfo.aliases)
    kernel: Mapping[str, OverloadPlan] = field(default_factory=dict)  # metadata-reading kernels (migrate.evidence.opinfo.forwards)
    schema_calls: Mapping[str, OverloadPlan] = field(default_factory=dict)  # probed calls built from schemas (none a sample reached)
    follows: Mapping[str, tuple[Follows, ...]] = field(default_factory=dict)  # slots that follow another variable (probe.follows)
    dtype_arguments: Mapping[str, DtypeArgument] = field(default_factory=dict)  # returns a ScalarType argument sets (probe.dtype_arguments)
    promotions: Mapping[str, PromotionFinding] = field(default_factory=dict)  # issue 31: how ATen promotes (evidence.promotion)
    cuda_claims: Mapping[str, tuple[tuple[str, tuple[DType, ...], tuple[DType, ...]], ...]] = field(default_factory=dict)  # (slot, CPU's, CUDA's) its own OpInfos claim
    autocast: AutocastEvidence | None = None  # each overload's policy per autocast key; None: not asked for
    key: tuple[bytes | str, ...] | None = None  # the content of every input above: the plans stage's key (None: not cacheable)
    observed: frozenset[str] = frozenset()  # overloads some OpInfo sample reached
    recorded: tuple[RecordedEvidence, ...] = ()  # --recording: another backend's (or this one's) evidence, derived
    opinfo_summary: OpInfoSummary | None = None
    deferred: Callable[[], dict[str, Any]] | None = field(default=None, compare=False, repr=False)  # the runtime sources

    def complete(self) -> Sources:
        """These sources with the runtime ones gathered (``deferred``, when they were left for later)."""
        return self if self.deferred is None else replace(self, **self.deferred(), deferred=None)


def gather(
    native: NativeFunctions,
    sets_file: GlobalSetsFile,
    torchlib: TorchlibEvidence,
    sweep: SweepState | None,
    cache: StageCache,
    evidence: tuple[str, ...] = EVIDENCE,
    autocast_source: Any = None,
    refresh: bool = False,
    recordings: tuple[tuple[str, Recording, str], ...] = (),
) -> Sources:
    """Every overload's evidence, also for --op (the global sets are named from the whole file's plan); the runtime
    sources deferred to ``Sources.complete``. ``sweep`` is None when no runtime evidence is asked for.
    ``recordings``: (file as named, recording, digest of its bytes) for each ``--recording``."""
    torchlib_asked = "torchlib" in evidence
    observed, summary = frozenset(), None
    if sweep is not None:
        from migrate.evidence.derived import sweep_summary

        swept = sweep_summary(sweep)
        observed = swept.observed
        by_opinfo = swept.by_opinfo or observed  # the models' overloads are counted on their own line
        summary = OpInfoSummary(sweep.opinfos, sweep.ran, sweep.present - sweep.ran, len(by_opinfo & native.by_name.keys()), swept.failures)
    autocast = None
    if "autocast" in evidence:
        from migrate.evidence.autocast.policies import autocast_policies

        autocast = autocast_policies(native.by_name, cache, autocast_source, refresh)
    key = None
    if torchlib.key:  # else a torchlib file could not be read: no cache
        key = (",".join(evidence), native.data, sets_file.data or b"", torchlib.key, sweep.key if sweep else "")
        key += tuple(digest for _, _, digest in recordings)  # none: the key a run without recordings always had
    return Sources(
        torchlib=torchlib.overloads if torchlib_asked else {},
        opinfo={},
        global_sets=torchlib.global_sets if torchlib_asked else (),
        groups="groups" in evidence,
        torchlib_handled=torchlib.handled if torchlib_asked else {},
        existing_sets=sets_file.sets,
        autocast=autocast,
        key=key,
        observed=observed,
        opinfo_summary=summary,
        deferred=lambda: _runtime_sources(native, sweep, cache, evidence, recordings),
    )


def _runtime_sources(
    native: NativeFunctions, sweep: SweepState | None, cache: StageCache, wanted: tuple[str, ...], recordings: tuple[tuple[str, Recording, str], ...] = ()
) -> dict[str, Any]:
    """The runtime sources' plans (OpInfo, probe, aliases, kernel, schema calls), aligned to the file's schemas."""
    if sweep is None:
        return {"opinfo": {}}
    from migrate.evidence.align import align_runtime_evidence
    from migrate.evidence.derived import evidence_of

    evidence = evidence_of(sweep)
    opinfo = evidence.opinfo if "opinfo" in wanted else {}
    probe = evidence.probe if "probe" in wanted else {}
    schema_calls = evidence.schema_calls if "probe" in wanted else {}
    follows = evidence.follows if "probe" in wanted else {}
    dtype_arguments = {}
    if "probe" in wanted:
        from migrate.evidence.probe.dtype_arguments import load_dtype_arguments

        dtype_arguments = {name: fact for name, fact in load_dtype_arguments(cache, sweep.jobs).items() if name in native.by_name}
    aliases, kernel = {}, {}
    if "aliases" in wanted:
        from migrate.evidence.opinfo.aliases import alias_overloads

        aliases = alias_overloads(native, evidence.aliases, evidence.forwards)
    if "kernel" in wanted:
        from migrate.evidence.opinfo.forwards import kernel_plans

        kernel = kernel_plans(native, evidence.kernels)
    installed = installed_native_functions()
    reference = native if installed.read_bytes() == native.data else read_native(installed, cache)
    (opinfo, probe, kernel, schema_calls), alignment = align_runtime_evidence(native, reference, opinfo, probe, kernel, schema_calls)
    promotions = {}
    if "probe" in wanted:  # issue 31: the refs' promotions and the calls made to check them
        from migrate.evidence.promotion import promotion_findings

        promotions = promotion_findings(native, cache, sweep.jobs)
    claims = {
        name: claims
        for name, claims in evidence.claims.items()
        if "opinfo" in wanted and name in native.by_name and all(native.by_name[name].schema.slot(slot) is not None for slot, *_ in claims)
    }  # a file of another release: the claims of the overloads whose slots it still names
    recorded = tuple(_recorded(native, reference, recording, kernel, schema_calls) for recording in recordings)
    return {
        "recorded": recorded,
        "opinfo": opinfo,
        "probe": probe,
        "cuda_claims": claims,
        "aliases": aliases,
        "kernel": kernel,
        "schema_calls": schema_calls,
        "follows": follows,
        "dtype_arguments": dtype_arguments,
        "promotions": promotions,
        "alignment": alignment,
    }


def _recorded(
    native: NativeFunctions, installed: NativeFunctions, named: tuple[str, Recording, str], kernel: Any, schema_calls: Any
) -> RecordedEvidence:
    """One recording's runs as plans, aligned to the file as the local sweep's are, with the overloads it covers: those
    whose schema in the recording's torch is the installed torch's (another release's counts where it matches)."""
    from migrate.evidence.align import align_runtime_evidence
    from migrate.evidence.derived import recorded_evidence
    from migrate.evidence.recording import RecordedEvidence, RecordingSummary, matching, trusted

    file, recording, _ = named
    matched, skipped = matching(recording, {name: str(entry.schema) for name, entry in installed.by_name.items()})
    keep = lambda plans: {name: plan for name, plan in plans.items() if name in matched}  # noqa: E731
    runs = recorded_evidence(trusted(recording.runs), recording.catalogue, recording.built)
    (opinfo, probe, _, _), _ = align_runtime_evidence(native, installed, keep(runs.opinfo), keep(runs.probe), kernel, schema_calls)
    summary = RecordingSummary(file, recording.key, recording.origin, len(matched), len(skipped))
    return RecordedEvidence(summary, frozenset(matched & native.by_name.keys()), opinfo, probe, keep(runs.follows))


# --- one overload, as show prints it -------------------------------------------------------------


@dataclass(frozen=True)
class OverloadEvidence:
    """What each source says about one overload, from the caches a run fills (nothing is run)."""

    name: str
    cached_runs: int  # OpInfo runs in the cache
    opinfo: OverloadPlan | None  # from the OpInfo observations that reached it
    probe: OverloadPlan | None  # its probed calls, and the calls built from its schema when it was observed
    follows: tuple[Follows, ...]
    schema_calls: OverloadPlan | None
    schema_calls_cached: bool  # False: no run built calls from the schemas yet
    alias: AliasOf | None
    autocast: AutocastEvidence


def _cached_sweep(cache: StageCache) -> tuple[tuple[CatalogueEntry, ...], dict[OpInfoId, OpInfoRun]]:
    from migrate.evidence.opinfo.sweep import SweepCache

    sweep = SweepCache.of(cache)
    catalogue = sweep.catalogue()
    return catalogue, sweep.runs(catalogue)


def gather_overloads(native: NativeFunctions, names: Iterable[str], cache: StageCache) -> dict[str, OverloadEvidence]:
    """Each overload's evidence from every source, from the cached runs (a run of the tool fills them)."""
    from migrate.evidence.autocast.policies import autocast_policies
    from migrate.evidence.derived import probed_calls
    from migrate.evidence.opinfo.aliases import alias_overloads
    from migrate.evidence.opinfo.forwards import load_forwards
    from migrate.evidence.opinfo.observations import plans_from_observations
    from migrate.evidence.probe.follows import follows_facts
    from migrate.evidence.probe.merge import probe_plans
    from migrate.evidence.probe.catalogue_calls import cached_catalogue_calls, free_returns, uniform_lists
    from migrate.evidence.probe.schema_calls import cached_schema_calls, schema_call_plans
    from migrate.runtime.runs import overload_key

    catalogue, runs = _cached_sweep(cache)
    observations = tuple(o for run in runs.values() for o in run.observations)
    probes = tuple(p for run in runs.values() for p in run.probes)
    built_calls = cached_schema_calls(cache)
    from_catalogue, uniform, free = cached_catalogue_calls(cache), uniform_lists(cache), free_returns(cache)
    aliases = alias_overloads(native, {pair for entry in catalogue for pair in entry.aliases}, load_forwards(cache)[0])
    autocast = autocast_policies(native.by_name, cache)
    found = {}
    for name in names:
        observed: list[Observation] = [o for o in observations if overload_key(o.overload) == name]
        probed: list[ProbedCall] = [p for p in probes if overload_key(p.overload) == name]
        built = tuple(c for c in built_calls or () if overload_key(c.overload) == name)
        recipe = tuple(c for c in from_catalogue if overload_key(c.overload) == name)
        found[name] = OverloadEvidence(
            name=name,
            cached_runs=len(runs),
            opinfo=plans_from_observations(observed, catalogue).get(name),
            probe=probe_plans(probed_calls(tuple(probed), built + recipe, frozenset([name] if observed else [])), observed).get(name),
            follows=follows_facts(probed, observed).get(name, ()),
            schema_calls=schema_call_plans(built + recipe, uniform, free).get(name) if built_calls is not None else None,
            schema_calls_cached=built_calls is not None,
            alias=aliases.get(name),
            autocast=autocast,
        )
    return found
