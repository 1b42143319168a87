"""One run's evidence, gathered from every source it was asked to use into ``Sources`` (``gather``); ``show`` reads
the same sources, one overload at a time (``overload_evidence``).

The runtime sources (OpInfo, probe, aliases, kernel, schema calls) are gathered only when the inference
needs them (``Sources.complete``): a run whose plan the stage cache holds reads none of them. Their slots
are named by the installed torch's schemas, so they are aligned to the file's first
(``migrate.evidence.align``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from migrate.cache import StageCache, made_once
from migrate.evidence.align import Alignment, align_runtime_evidence
from migrate.evidence.autocast.policies import AutocastEvidence, autocast_policies
from migrate.evidence.derived import OpInfoEvidence, SweepState, evidence_of, recorded_evidence, sweep_summary
from migrate.evidence.opinfo.aliases import AliasOf, alias_overloads
from migrate.evidence.opinfo.forwards import kernel_plans
from migrate.evidence.probe import dtype_arguments as dtype_arguments_module
from migrate.evidence.probe.dtype_arguments import DtypeArgument
from migrate.evidence.probe import value_calls as value_calls_module
from migrate.evidence.probe.follows import Follows
from migrate.evidence.promotion import promotion_reports
from migrate.evidence.recording import RecordedEvidence, Recording, RecordingSummary, matching, trusted
from migrate.model.dtypes import DType
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, installed_native_functions, read_native
from migrate.model.plan import Evidence, GlobalSet, OverloadPlan
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
    built_calls: Mapping[str, OverloadPlan] = field(default_factory=dict)  # those of every overload, reached or not (``show``)
    follows: Mapping[str, tuple[Follows, ...]] = field(default_factory=dict)  # slots that follow another variable (probe.follows)
    dtype_arguments: Mapping[str, DtypeArgument] = field(default_factory=dict)  # returns a ScalarType argument sets (probe.dtype_arguments)
    promotions: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # issue 31: the calls built for promotion, per overload (evidence.promotion)
    value_calls: tuple[dict[str, Any], ...] = ()  # the calls built at each value of a string argument (probe.value_calls)
    cuda_claims: Mapping[str, tuple[tuple[str, tuple[DType, ...], tuple[DType, ...]], ...]] = field(default_factory=dict)  # (slot, CPU's, CUDA's) its own OpInfos claim
    autocast: AutocastEvidence | None = None  # each overload's policy per autocast key; None: not asked for
    key: tuple[bytes | str, ...] | None = None  # the content of every input above: the plans stage's key (None: not cacheable)
    observed: frozenset[str] = frozenset()  # overloads some OpInfo sample reached
    recorded: tuple[RecordedEvidence, ...] = ()  # --recording: another backend's (or this one's) evidence, derived
    opinfo_summary: OpInfoSummary | None = None
    derived: OpInfoEvidence | None = field(default=None, compare=False, repr=False)  # the runtime evidence before its alignment
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
    recordings: tuple[tuple[str, Recording, str], ...] = (),
) -> Sources:
    """Every overload's evidence, also for --op (the global sets are named from the whole file's plan); the runtime
    sources deferred to ``Sources.complete``. ``sweep`` is None when no runtime evidence is asked for.
    ``recordings``: (file as named, recording, digest of its bytes) for each ``--recording``."""
    torchlib_asked = "torchlib" in evidence
    observed, summary = frozenset(), None
    if sweep is not None:
        swept = sweep_summary(sweep)
        observed = swept.observed
        by_opinfo = swept.by_opinfo or observed  # the models' overloads are counted on their own line
        summary = OpInfoSummary(sweep.opinfos, sweep.ran, sweep.present - sweep.ran, len(by_opinfo & native.by_name.keys()), swept.failures)
    autocast = None
    if "autocast" in evidence:
        autocast = autocast_policies(native.by_name, cache, autocast_source)
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
    evidence = evidence_of(sweep)
    opinfo = evidence.opinfo if "opinfo" in wanted else {}
    probe = evidence.probe if "probe" in wanted else {}
    built_calls = evidence.schema_calls if "probe" in wanted else {}
    schema_calls = {name: plan for name, plan in built_calls.items() if name not in evidence.observed}  # samples speak for the rest
    follows = evidence.follows if "probe" in wanted else {}
    dtype_arguments = {}
    if "probe" in wanted:
        loaded = dtype_arguments_module.STAGE.loaded(cache, sweep.jobs)
        dtype_arguments = {name: fact for name, fact in loaded.items() if name in native.by_name}
    aliases = alias_overloads(native, evidence.aliases, evidence.forwards) if "aliases" in wanted else {}
    kernel = kernel_plans(native, evidence.kernels) if "kernel" in wanted else {}
    installed = installed_native_functions()
    reference = native if installed.read_bytes() == native.data else read_native(installed, cache)
    (opinfo, probe, kernel, schema_calls), alignment = align_runtime_evidence(native, reference, opinfo, probe, kernel, schema_calls)
    (built_calls,), _ = align_runtime_evidence(native, reference, built_calls)
    promotions = promotion_reports(cache, sweep.jobs) if "probe" in wanted else {}  # issue 31: the refs' promotions and the calls made to check them
    value_calls = tuple(value_calls_module.STAGE.entry(cache, sweep.jobs)) if "probe" in wanted else ()
    claims = {
        name: claims
        for name, claims in evidence.claims.items()
        if "opinfo" in wanted and name in native.by_name and all(native.by_name[name].schema.slot(slot) is not None for slot, *_ in claims)
    }  # a file of another release: the claims of the overloads whose slots it still names
    recorded = tuple(_recorded(native, reference, recording, kernel, schema_calls, cache) for recording in recordings)
    return {
        "recorded": recorded,
        "opinfo": opinfo,
        "probe": probe,
        "cuda_claims": claims,
        "aliases": aliases,
        "kernel": kernel,
        "schema_calls": schema_calls,
        "built_calls": built_calls,
        "follows": follows,
        "dtype_arguments": dtype_arguments,
        "promotions": promotions,
        "value_calls": value_calls,
        "alignment": alignment,
        "derived": evidence,
    }


def _recorded(
    native: NativeFunctions, installed: NativeFunctions, named: tuple[str, Recording, str], kernel: Any, schema_calls: Any, cache: StageCache
) -> RecordedEvidence:
    """One recording's runs as plans (derived once per recording's content, the ``recorded-derived`` stage), aligned to
    the file as the local sweep's are, with the overloads it covers: those whose schema in the recording's torch is the
    installed torch's (another release's counts where it matches)."""
    file, recording, content = named
    matched, skipped = matching(recording, {name: str(entry.schema) for name, entry in installed.by_name.items()})
    keep = lambda plans: {name: plan for name, plan in plans.items() if name in matched}  # noqa: E731
    derive = lambda: recorded_evidence(trusted(recording.runs), recording.catalogue, recording.built)  # noqa: E731
    runs = made_once(cache.stage("recorded-derived", "migrate.evidence.derived"), (content,), derive, kind=OpInfoEvidence)
    (opinfo, probe, _, _), _ = align_runtime_evidence(native, installed, keep(runs.opinfo), keep(runs.probe), kernel, schema_calls)
    summary = RecordingSummary(file, recording.key, recording.origin, len(matched), len(skipped))
    return RecordedEvidence(summary, frozenset(matched & native.by_name.keys()), opinfo, probe, keep(runs.follows))


# --- one overload, as show prints it -------------------------------------------------------------


@dataclass(frozen=True)
class OverloadEvidence:
    """What the sources a run infers from say about one overload (``show``)."""

    name: str
    cached_runs: int  # OpInfo runs in the cache
    opinfo: OverloadPlan | None  # from the OpInfo observations that reached it
    probe: OverloadPlan | None  # its probed calls, and the calls built from its schema when it was observed
    follows: tuple[Follows, ...]
    schema_calls: OverloadPlan | None  # its calls built from the schema or the catalogue, reached by a sample or not
    alias: AliasOf | None
    autocast: AutocastEvidence | None  # None: not asked for
    promotion: dict[str, Any] | None = None  # the calls built for promotion (``Sources.promotions``), when it has them


def overload_evidence(sources: Sources, names: Iterable[str], cached_runs: int, listed: Collection[str]) -> dict[str, OverloadEvidence]:
    """Each overload's evidence from every source, as ``sources`` (complete) hold it. The overloads the file does not
    list (``listed``: those it does), an autogen ``out=`` overload, are aligned away from the sources a run infers
    from: theirs is the sweep's evidence as derived, before its alignment."""
    derived = sources.derived
    found = {}
    for name in names:
        if name in listed or derived is None:
            opinfo, probe, follows, built = sources.opinfo, sources.probe, sources.follows, sources.built_calls
        else:
            opinfo, probe, follows, built = derived.opinfo, derived.probe, derived.follows, derived.schema_calls
        found[name] = OverloadEvidence(
            name=name,
            cached_runs=cached_runs,
            opinfo=opinfo.get(name),
            probe=probe.get(name),
            follows=follows.get(name, ()),
            schema_calls=built.get(name),
            alias=sources.aliases.get(name),
            autocast=sources.autocast,
            promotion=sources.promotions.get(name),
        )
    return found
