"""The entry point: one call per run, ``infer``, with the whole ``Sources``; it returns an ``Inference``.

Every overload's evidence is merged (``merge``), tied overloads take their constraints (``structure``,
``aliases``), the sets are named from the whole file's plan
(``naming``) whatever ``--op`` selects, and the autocast policies are added last. The whole file's
inference is cached in the ``plans`` stage, keyed by ``Sources.key``, each overload's plan pickled
apart, so that an ``--op`` run reads only its own overloads; on a hit the runtime sources are never
gathered.
"""

from __future__ import annotations

import pickle
from collections import Counter
from dataclasses import dataclass, replace
from typing import Mapping

from migrate.cache import Remembered, Stage, long_lived, made_once
from migrate.evidence.align import Alignment
from migrate.evidence.gather import Sources
from migrate.evidence.recording import RecordingSummary
from migrate.infer.aliases import alias_plans
from migrate.infer.backends import Claims, Recorded, with_backends
from migrate.infer.dtype_arguments import returns_following_the_promotion, with_dtype_arguments
from migrate.infer.families import family_claims
from migrate.infer.exceptions import with_masked_fill
from migrate.infer.merge import merge_overload, with_follows
from migrate.infer.naming import backend_sets, global_sets, name_variables
from migrate.infer.promotion_findings import promotion_findings, reduction_findings
from migrate.infer.promotion_sets import one_tensor_return, sibling_promotions, with_promotion
from migrate.infer.structure import group_siblings, tied_by_structure, with_fixed_returns
from migrate.infer.values import value_refusals
from migrate.infer.verdicts import with_verdicts
from migrate.model.autocast import Policies
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.values import ValueRefusal
from migrate.model.global_sets import sets_used
from migrate.model.native import NativeFunctions
from migrate.model.plan import GlobalSet, OverloadPlan, Plan, Variable
from migrate.model.schema import TypedSchema
from migrate.model.verdict import ACCEPTED, REJECTED


@dataclass(frozen=True)
class Inference:
    """What a run inferred: the plan of the selected overloads, every global set of the whole file's plan (the
    plan lists those its overloads use), and how the installed torch's runtime evidence met the file."""

    plan: Plan
    sets: tuple[GlobalSet, ...]
    alignment: Alignment | None
    recordings: tuple[RecordingSummary, ...] = ()  # the recordings merged (--recording), with what they covered
    value_refusals: tuple[ValueRefusal, ...] = ()  # dtypes a value of a string argument refuses that another takes


def _merged(native: NativeFunctions, sources: Sources) -> dict[str, OverloadPlan]:
    """Every overload's evidence merged, with its verdicts, tied by structure and to its siblings and aliases."""
    names = [e.name for e in native.entries]
    tied = tied_by_structure(native, sources)
    promotions = promotion_findings(native, sources.promotions)
    merged = {}
    for name in names:
        torchlib, opinfo, probe = sources.torchlib.get(name), sources.opinfo.get(name), sources.probe.get(name)
        schema_call = None
        if not (opinfo or probe) and name not in sources.kernel and name not in tied:
            schema_call = sources.schema_calls.get(name)
        if torchlib or opinfo or probe or schema_call:
            schema = native.by_name[name].schema
            handled, returns_complete = sources.torchlib_handled.get(name, ()), not schema.numbers_may_set_returns
            merged[name] = merge_overload(name, torchlib, opinfo, probe, handled, schema_call, returns_complete)
            merged[name] = with_masked_fill(with_follows(merged[name], sources.follows.get(name, ())), schema)
            free_return = one_tensor_return(schema)
            merged[name] = with_promotion(merged[name], promotions.get(name), free_return=free_return)  # issue 31: promoted slots, diagonal sets
    for name, plan in sorted(sources.kernel.items()):  # where no sample gave evidence; over torchlib, as observations are
        if not (sources.opinfo.get(name) or sources.probe.get(name)):
            merged[name] = plan
    for name, fact in sorted(sources.dtype_arguments.items()):  # the return a dtype argument sets speaks for itself
        schema = native.by_name[name].schema if name in native.by_name else None
        if schema is not None and all(_set_by_the_call(schema, slot) for slot in fact.returns):
            if schema.default_of(fact.argument) not in (None, "None"):
                fact = replace(fact, unset_cast=(), unset=())  # left out it is its default (randint's long), not None
            optional = schema.dtype_arguments.get(fact.argument)
            if (plan := with_dtype_arguments(merged.get(name), name, fact, optional, schema.scalars_may_set_returns)) is not None:
                merged[name] = plan
    merged = {name: _with_verdicts(native, plan) for name, plan in merged.items()}  # siblings and aliases take them as they are
    for _ in range(2):  # a second round for aliases of overloads only their group types, and their own groups
        merged.update(alias_plans(sources.aliases, merged))
        if sources.groups:
            merged.update(group_siblings(native, merged))
    merged.update(sibling_promotions(native, merged, promotions))  # issue 31: in-place and out= promote as their functional does
    merged.update(with_fixed_returns(native, merged, sources))  # a return its own calls fixed at one dtype keeps it
    for name, finding in reduction_findings(native, sources.dtype_arguments).items():  # after the siblings: each computes in what it writes
        if name in merged and _takes_every_dtype(merged[name].variable_of(finding.tensors[0])):
            promoted = with_promotion(merged[name], finding)
            merged[name] = _with_verdicts(native, returns_following_the_promotion(promoted, sources.dtype_arguments[name]))
    if sources.groups:
        merged.update(family_claims(native, merged))  # one kernel: the functional's claims for other devices are its siblings'
    merged.update(alias_plans(sources.aliases, merged))  # an OpInfo alias declares what its target finally declares
    return merged


def _takes_every_dtype(variable: Variable | None) -> bool:
    """Whether the tensor's own variable took every dtype on the CPU: a reduction given ``dtype`` casts it first, which
    ``int_to_long`` says; ``nansum`` refuses complex tensors whatever ``dtype`` names, which only its own set says."""
    return variable is not None and variable.verdicts is not None and set(variable.verdicts.accepted) == set(TENSOR_DTYPES)


def _set_by_the_call(schema: TypedSchema, slot: str) -> bool:
    """Whether the schema has this return and the call makes it: a return that is a tensor the call writes into
    (``cumsum_``'s ``-> Tensor(a!)``, its ``self``) has that tensor's dtype, whatever a ``dtype`` argument says."""
    found = schema.slot(slot)
    return found is not None and "!" not in found.alias


def _with_verdicts(native: NativeFunctions, plan: OverloadPlan) -> OverloadPlan:
    entry = native.by_name[plan.name]
    return with_verdicts(plan, native.has_cpu_kernel(entry), not entry.schema.numbers_may_set_returns)


def _recorded_sets(native: NativeFunctions, sources: Sources) -> tuple[dict[str, dict[str, Recorded]], tuple[RecordingSummary, ...]]:
    """Per overload a recording covers, its backend's set at each slot: the inference made again with the recording's
    runs in place of the local sweep's (the CPU's built calls beside them), each variable's dtypes less the ones only
    OpInfo's claims put there. A later recording of the same backend wins where both speak."""
    found: dict[str, dict[str, Recorded]] = {}
    summaries = []
    for recorded in sources.recorded:
        again = _merged(native, replace(sources, opinfo=recorded.opinfo, probe=recorded.probe, follows=recorded.follows, recorded=()))
        outcomes: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        for name in sorted(recorded.covered & again.keys()):
            per_slot = {}
            for variable in again[name].variables:
                if variable.verdicts is None or variable.listed:
                    continue
                dtypes = tuple(d for d in variable.dtypes if d not in variable.verdicts.other_device)
                per_slot.update(dict.fromkeys(variable.binds, dtypes))
                outcomes.update({ACCEPTED: len(variable.verdicts.accepted), REJECTED: len(variable.verdicts.rejected)})
                kinds.update(e.verdict.site.kind for e in variable.evidence if e.verdict is not None and e.verdict.outcome in (ACCEPTED, REJECTED))
            if per_slot:
                found.setdefault(name, {})[recorded.summary.key] = Recorded(per_slot, recorded.summary.origin)
        summaries.append(replace(recorded.summary, verdicts=tuple(sorted(outcomes.items())), by_kind=tuple(sorted(kinds.items()))))
    return found, tuple(summaries)


def _cuda_claims(native: NativeFunctions, sources: Sources, name: str) -> Claims:
    """The overload's own OpInfos' claims, else its functional sibling's: an out= or in-place overload runs the same
    CUDA kernel, and no OpInfo of its own claims anything."""
    if name in sources.cuda_claims:
        return sources.cuda_claims[name]
    group = native.groups.get(name)
    functional = group.of_kind("functional") if group is not None else ()
    return next((sources.cuda_claims[f] for f in functional if f in sources.cuda_claims), ())


def _named_plans(native: NativeFunctions, sources: Sources) -> tuple[tuple[GlobalSet, ...], list[OverloadPlan], tuple[RecordingSummary, ...]]:
    """The global sets, every overload's plan with its variables named, in file order, and the recordings merged."""
    names = [e.name for e in native.entries]
    merged = _local_merged(native, sources)
    recorded, summaries = _recorded_sets(native, sources)
    planned = {
        name: with_backends(plan, _cuda_claims(native, sources, name), recorded.get(name, {}), native.has_kernel(native.by_name[name], "CUDA"))
        for name, plan in merged.items()
        if plan.variables
    }
    unions = global_sets(native, planned.values(), sources.existing_sets, sources.global_sets)
    set_names = {g.dtypes: g.name for g in unions}  # a variable is named by its union's set alone
    named = [name_variables(planned[name], native.by_name[name].schema, set_names) for name in names if name in planned]
    return backend_sets(native, named, unions, sources.existing_sets, sources.global_sets), named, summaries


def _local_merged(native: NativeFunctions, sources: Sources) -> dict[str, OverloadPlan]:
    """The merge of this host's own evidence, made once per process for the sources before their recordings: each
    recording merged into the same run (a suite's edited recordings) changes its own merge alone."""
    if not sources.recorded or sources.key is None:
        return _merged(native, sources)
    return _LOCAL_MERGED.get(sources.key[: len(sources.key) - len(sources.recorded)], lambda: _merged(native, sources))


_LOCAL_MERGED = Remembered(1)


def _restricted(sets: tuple[GlobalSet, ...], overloads: list[OverloadPlan]) -> Plan:
    """The plan of these overloads, with the global sets they use."""
    return Plan(sets_used(sets, overloads), tuple(overloads))


def infer_plan(native: NativeFunctions, sources: Sources, only: set[str] | None = None) -> Plan:
    """The plan for every overload of the file (or only those named), from the sources given, uncached and
    without autocast (the tests' and benchmarks' inference of hand-made sources).

    The global sets are named from every overload's plan, so an ``--op`` run names sets as a full run does;
    the plan lists those its overloads use.
    """
    sets, overloads, _ = _named_plans(native, sources.complete())
    return _restricted(sets, [o for o in overloads if only is None or o.name in only])


def _cached(native: NativeFunctions, sources: Sources, stage: Stage | None) -> dict:
    """The whole file's inference, read from the stage when the same sources were inferred from before."""

    def make() -> dict:
        found = sources.complete()
        sets, overloads, recordings = _named_plans(native, found)
        if sources.key is not None:  # the plans the stage keeps are these: this process need not unpickle them
            _DECODED.get(sources.key, lambda: {o.name: o for o in overloads})
        return {
            "recordings": recordings,
            "sets": sets,
            "overloads": {o.name: pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL) for o in overloads},
            "alignment": found.alignment,
            "value_refusals": value_refusals(found.value_calls),
        }

    return make() if stage is None or sources.key is None else made_once(stage, sources.key, make, kind=dict)


def with_autocast(plan: Plan, policies: Mapping[str, Policies], only: set[str] | None = None) -> Plan:
    """The plan with each overload's autocast policy per key; an overload planned for no variables gets a plan of its
    policy alone (the writer then leaves its type variables as they are)."""
    planned = {o.name for o in plan.overloads}
    overloads = [replace(o, autocast=policies.get(o.name, ())) for o in plan.overloads]
    overloads += [OverloadPlan(name, (), (), found) for name, found in policies.items() if name not in planned and found and (only is None or name in only)]
    return replace(plan, overloads=tuple(overloads))


def infer(native: NativeFunctions, sources: Sources, stage: Stage | None = None, only: set[str] | None = None) -> Inference:
    """The run's inference: the plan of every overload (or only those named) from the whole ``Sources``, cached in
    ``stage`` (the ``plans`` stage) when the sources have a key, with the autocast policies the sources carry."""
    stored = _cached(native, sources, stage)
    plan = _restricted(stored["sets"], _stored_plans(stored, sources.key, only))
    if sources.autocast is not None:
        autocast = sources.autocast
        plan = with_autocast(plan, {name: autocast.of(name) for name in autocast.policies}, only)
    return Inference(plan, stored["sets"], stored["alignment"], stored["recordings"], stored["value_refusals"])


def _stored_plans(stored: dict, key: tuple | None, only: set[str] | None) -> list[OverloadPlan]:
    """The stored plans of the overloads wanted, each unpickled once per process for the plans' keys read last (the
    runs of a test suite infer from the same sources again and again; a plan is frozen): the remembered dict of a key
    fills as its overloads are asked for."""
    decoded: dict[str, OverloadPlan] = _DECODED.get(key, dict) if key is not None else {}
    with long_lived():
        for name, data in stored["overloads"].items():
            if (only is None or name in only) and name not in decoded:
                decoded[name] = pickle.loads(data)
    return [decoded[name] for name in stored["overloads"] if only is None or name in only]


_DECODED = Remembered(2)  # a whole file's plans weigh tens of MB


def verdict_plan(name: str, opinfo: OverloadPlan | None, probe: OverloadPlan | None, tensors_set_returns: bool = True) -> OverloadPlan:
    """One overload's own runtime evidence merged, with each dtype's verdict per variable (what ``show`` prints;
    ``tensors_set_returns`` as ``migrate.infer.verdicts.verdicts_of`` takes it)."""
    return with_verdicts(merge_overload(name, None, opinfo, probe), tensors_set_returns=tensors_set_returns)
