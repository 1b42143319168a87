"""Inference: evidence from every source merged into one plan, and the variables' names.

Each source speaks per overload in plan terms (``OverloadPlan``s), so the merge is plain data
work; its rules, and what counts as evidence, are stated once, in docs/evidence.md. OpInfo and
probe evidence name slots by the installed torch's schemas; on a file of another release
``align_runtime_evidence`` first skips the overloads the file lacks and keeps, where a schema
differs, only the slots of the same name in both.

Names are given last, deterministically, from the whole file's evidence whatever ``--op``
selects: every dtype set used by ``NAMED_FROM`` entries or more, or with a name already (in the
target's type_constraints.yaml, else a torchlib TypeVar of that set), is a global set; so is a
rarer set whose inline list would make an entry's ``type_constraints:`` line longer than
``LINE_LIMIT``. A set with no name yet takes the one composed from PyTorch's dtype groups
(``migrate.model.named_sets``). A variable is then spelled by its set's name, in the schema
when no other variable of the entry has that set, else as ``T: Name``.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping

from migrate.cache import Stage
from migrate.evidence.opinfo.aliases import AliasOf, alias_plans
from migrate.evidence.probe.follows import Follows
from migrate.evidence.probe.dtype_arguments import DtypeArgument, with_dtype_arguments
from migrate.evidence.probe.merge import split_and_joined
from migrate.evidence.structure import with_fallback, written_by_own_calls
from migrate.model.autocast import Policies
from migrate.model.constraint import follows_problem
from migrate.evidence.verdicts import with_verdicts
from migrate.model.dtypes import DType, canonical, format_set
from migrate.model.global_sets import constraints_line
from migrate.model.named_sets import composed_name, pytorch_spelling
from migrate.model.native import NativeFunctions
from migrate.model.plan import DECLARED, GROUPS, OPINFO, Conflict, Evidence, GlobalSet, OverloadPlan, Plan, Variable
from migrate.model.schema import TypedSchema

_LETTERS = "TUVWXYZ"
NAMED_FROM = 3  # entries using a set that make it a global set
LINE_LIMIT = 200  # characters of a type_constraints: line; PyTorch's lint folds lines over 1,000


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


def _observed(variable: Variable) -> Variable:
    """An observed variable, widened by the dtypes OpInfos declare for other devices."""
    declared = [d for e in variable.evidence if e.source == DECLARED for d in e.dtypes]
    if not declared:
        return variable
    return Variable(variable.name, canonical(variable.dtypes + tuple(declared)), variable.binds, variable.evidence)


def _compare(torchlib: Variable, observed: list[Variable]) -> list[Conflict]:
    """torchlib narrower than ATen is an export coverage gap; wider is worth a note."""
    seen = canonical(d for v in observed for d in v.dtypes)
    slots = tuple(s for v in observed for s in v.binds if s in torchlib.binds)
    conflicts = []
    missing = tuple(d for d in seen if d not in torchlib.dtypes and d.onnx is not None)
    if missing:
        message = f"torchlib's {torchlib.name} at {', '.join(slots)} lacks {format_set(missing)}, which ATen accepts: an export coverage gap"
        conflicts.append(Conflict("export-coverage-gap", slots, missing, message))
    extra = tuple(d for d in torchlib.dtypes if d not in seen)
    if extra:
        message = f"torchlib's {torchlib.name} at {', '.join(slots)} also allows {format_set(extra)}, never observed"
        conflicts.append(Conflict("torchlib-wider", slots, extra, message))
    return conflicts


def _probed(observed: list[Variable], probe: OverloadPlan) -> list[Variable]:
    """The observed variables re-cut to the probed ones, each slot keeping its own observed and declared evidence.

    A probed variable's dtypes already hold everything observed at its slots; observed
    slots no probed variable binds keep their observed variable.
    """
    variables, covered = [], set()
    for probed in probe.variables:
        dtypes, evidence = set(probed.dtypes), []
        for variable in observed:
            for piece in variable.evidence:
                shared = tuple(s for s in piece.slots if s in probed.binds)
                if shared:
                    evidence.append(replace(piece, slots=shared))
                    if piece.source in (OPINFO, DECLARED):
                        dtypes.update(piece.dtypes)
        variables.append(Variable(probed.name, tuple(dtypes), probed.binds, tuple(evidence) + probed.evidence))
        covered.update(probed.binds)
    for variable in observed:
        rest = tuple(s for s in variable.binds if s not in covered)
        if rest:
            evidence = tuple(e for e in variable.evidence if not e.slots or set(e.slots) & set(rest))
            variables.append(Variable(variable.name, variable.dtypes, rest, evidence))
    return variables


def _attach(variables: list[Variable], handled: tuple[Evidence, ...]) -> list[Variable]:
    """Evidence that torchlib handles some dtypes at a slot, added to the variable binding that slot (never widening it)."""
    attached = []
    for variable in variables:
        extra = tuple(e for e in handled if set(e.slots) & set(variable.binds))
        attached.append(replace(variable, evidence=variable.evidence + extra) if extra else variable)
    return attached


def _widened_by(variables: list[Variable], torchlib: OverloadPlan) -> list[Variable]:
    """Each variable with the dtypes (and evidence) of the torchlib variables sharing a slot with it."""
    widened = []
    for variable in variables:
        dtypes, evidence = set(variable.dtypes), list(variable.evidence)
        for theirs in torchlib.variables:
            shared = set(theirs.binds) & set(variable.binds)
            if shared:
                dtypes.update(theirs.dtypes)
                evidence += [replace(e, slots=tuple(s for s in e.slots if s in shared)) for e in theirs.evidence if shared & set(e.slots)]
        widened.append(Variable(variable.name, canonical(dtypes), variable.binds, tuple(evidence)))
    return widened


def merge_overload(
    name: str,
    torchlib: OverloadPlan | None,
    opinfo: OverloadPlan | None,
    probe: OverloadPlan | None = None,
    handled: tuple[Evidence, ...] = (),
    schema_call: OverloadPlan | None = None,
) -> OverloadPlan:
    """One overload's variables from its sources (names are still the sources' own).

    ``schema_call``, for an overload no sample reached, is probed like ``probe``; but ATen may
    have refused such a call for its data, so torchlib's dtypes at its slots widen it.
    """
    variables = [_observed(v) for v in opinfo.variables] if opinfo else []
    conflicts = list(opinfo.conflicts) if opinfo else []
    if probe is not None:
        conflicts += split_and_joined(tuple(variables), probe.variables)
        variables = _probed(variables, probe)
        conflicts += probe.conflicts
    if schema_call is not None:
        variables = list(schema_call.variables)
    from_runtime = len(variables)  # torchlib fills the slots after these
    observed_slots = {s for v in variables for s in v.binds}
    for variable in torchlib.variables if torchlib else ():
        overlapping = [v for v in variables if set(v.binds) & set(variable.binds)]
        conflicts += _compare(variable, overlapping) if overlapping else []
        rest = tuple(s for s in variable.binds if s not in observed_slots)
        if rest:
            evidence = tuple(e for e in variable.evidence if not e.slots or set(e.slots) & set(rest))
            variables.append(Variable(variable.name, variable.dtypes, rest, evidence))
    if torchlib:
        conflicts += torchlib.conflicts
        if schema_call is not None:
            variables = _widened_by(variables[:from_runtime], torchlib) + variables[from_runtime:]
    return OverloadPlan(name, tuple(_attach(variables, handled)), tuple(conflicts))


def with_follows(plan: OverloadPlan, facts: Iterable[Follows]) -> OverloadPlan:
    """The plan with each one-slot variable a probe fact says follows another variable made to follow it.

    Its own dtypes are those ATen accepted beside every dtype of the other, and any it had that neither
    gives (nothing is narrowed); a fact whose slots the plan groups otherwise, or that would make
    variables follow each other in a cycle, changes nothing.
    """
    variables = list(plan.variables)
    names = [v.name for v in variables]
    for fact in facts:
        follower = next((v for v in variables if fact.slot in v.binds), None)
        holding = [v for slot in fact.on for v in variables if slot in v.binds]  # the variable of each slot followed
        if follower is None or follower.binds != (fact.slot,) or len(holding) != len(fact.on) or len({id(v) for v in holding}) != 1:
            continue
        target = holding[0]
        if target is follower or names.count(target.name) != 1:
            continue
        own = canonical(fact.dtypes + tuple(d for d in follower.dtypes if d not in target.dtypes))
        if set(target.dtypes) <= set(own):
            continue  # it takes every dtype of the other anyway
        made = Variable(follower.name, own, follower.binds, follower.evidence + (fact.evidence,), follower.follows + (target.name,))
        trial = [made if v is follower else v for v in variables]
        if follows_problem({v.name: v.follows for v in trial}) is None:
            variables = trial
    return replace(plan, variables=tuple(variables))


def _sibling_slot(slot: str, sibling: TypedSchema, functional: TypedSchema) -> tuple[str, ...]:
    """Where a functional overload's slot stands in a sibling: same argument, or the return and its out= argument."""
    if not slot.startswith("return."):
        own = sibling.slot(slot)
        return (slot,) if own is not None and own.is_tensor else ()
    index = int(slot.split(".")[1])
    found = []
    if sibling.slot(slot) is not None and sibling.slot(slot).is_tensor:
        found.append(slot)
    names = {s.name for s in functional.slots}
    outs = [s.name for s in sibling.slots if not s.is_return and s.is_tensor and "!" in s.alias and s.name not in names]
    if index < len(outs):
        found.append(outs[index])
    return tuple(found)


def group_siblings(native: NativeFunctions, plans: dict[str, OverloadPlan]) -> dict[str, OverloadPlan]:
    """Plans for in-place / out= / mutable siblings from their functional overload, at the slots no evidence of
    their own speaks for (all of them for a sibling no call reached; see ``with_fallback``)."""
    taken: dict[str, OverloadPlan] = {}
    for name, plan in sorted(plans.items()):
        group = native.groups.get(name)
        if group is None or name not in group.of_kind("functional") or not plan.variables:
            continue
        functional = native.by_name[name].schema
        for sibling_name in group.names:
            if sibling_name == name:
                continue
            sibling = native.by_name[sibling_name].schema
            covered = {s for variable in plan.variables for slot in variable.binds for s in _sibling_slot(slot, sibling, functional)}
            own = written_by_own_calls(plans.get(sibling_name, OverloadPlan(sibling_name, ())), sibling, covered)
            bound = {s for v in own.variables for s in v.binds}
            variables = []
            for variable in plan.variables:
                binds = tuple(s for slot in variable.binds for s in _sibling_slot(slot, sibling, functional) if s not in bound)
                if binds:
                    evidence = (Evidence(GROUPS, f"from {name}", variable.dtypes, binds),)
                    variables.append(Variable(variable.name, variable.dtypes, binds, evidence, variable.follows, variable.verdicts))
            if variables:
                taken[sibling_name] = with_fallback(own, plan.followed_within(variables))
            elif own != plans.get(sibling_name, own):
                taken[sibling_name] = own
    return taken


def name_variables(plan: OverloadPlan, schema: TypedSchema, set_names: Mapping[tuple[DType, ...], str]) -> OverloadPlan:
    """A set's name where the variable's dtypes equal a named set no other variable of the entry has; else T, U, V, ...

    A variable that follows others is always a letter (its list names them, so it is never a set); the names
    it follows are renamed with them.
    """
    order = {slot.name: i for i, slot in enumerate(schema.slots)}
    variables = sorted(plan.variables, key=lambda v: min(order[s] for s in v.binds))
    counts: dict[tuple[DType, ...], int] = {}
    for variable in variables:
        counts[variable.dtypes] = counts.get(variable.dtypes, 0) + 1
    letters = (n for n in [*_LETTERS, *(f"T{i}" for i in range(1, 100))] if n not in set_names.values())
    new_names = []
    for variable in variables:
        name = set_names.get(variable.dtypes) if counts[variable.dtypes] == 1 and not variable.follows else None
        new_names.append(name or next(letters))
    renamed = {v.name: name for v, name in zip(variables, new_names)}  # a followed variable's name is unique (with_follows)
    named = [
        Variable(name, v.dtypes, tuple(sorted(v.binds, key=order.__getitem__)), v.evidence, tuple(renamed[n] for n in v.follows), v.verdicts)
        for v, name in zip(variables, new_names)
    ]
    return OverloadPlan(plan.name, tuple(named), plan.conflicts)


def _set_names(existing: Iterable[GlobalSet], torchlib: Iterable[GlobalSet]) -> dict[tuple[DType, ...], str]:
    """Names sets already have: the target file's (first in file order), else torchlib's (shortest, then first by name)."""
    names: dict[tuple[DType, ...], str] = {}
    for global_set in existing:
        names.setdefault(global_set.dtypes, global_set.name)
    taken = {global_set.name for global_set in existing}  # a torchlib TypeVar of a name the file gives another set yields
    for global_set in sorted(torchlib, key=lambda g: (len(g.name), g.name)):
        if global_set.name not in taken:
            names.setdefault(global_set.dtypes, global_set.name)
    return names


def _composed(dtypes: tuple[DType, ...], taken: set[str]) -> str:
    name = composed_name(dtypes)
    while name in taken:  # a hand-written or torchlib name that means another set
        name += "Set"
    return name


def global_sets(native: NativeFunctions, plans: Iterable[OverloadPlan], sources: Sources) -> tuple[GlobalSet, ...]:
    """The named sets the plans' variables are spelled with, sorted by name (see the module's docstring)."""
    plans = sorted(plans, key=lambda p: p.name)
    entries: dict[tuple[DType, ...], set[str]] = defaultdict(set)
    for plan in plans:
        for variable in plan.variables:
            if not variable.follows:  # written as its own list: no set spells it
                entries[variable.dtypes].add(plan.name)
    known = _set_names(sources.existing_sets, sources.global_sets)
    taken = {g.name for g in (*sources.existing_sets, *sources.global_sets)}
    names = {}
    for dtypes in sorted(entries, key=lambda d: (len(d), [t.sort_key for t in d])):
        if dtypes in known or len(entries[dtypes]) >= NAMED_FROM:
            names[dtypes] = known.get(dtypes) or _composed(dtypes, taken)
            taken.add(names[dtypes])
    sets = {name: GlobalSet(name, dtypes) for dtypes, name in names.items()}
    for plan in plans:
        entry = native.by_name[plan.name]
        while True:
            named = name_variables(plan, entry.schema, names)
            line = constraints_line(entry.key_indent, named.variables, sets)
            inline = [v.dtypes for v in named.variables if v.dtypes not in names and not v.follows]
            if line is None or len(line) <= LINE_LIMIT or not inline:
                break
            longest = max(inline, key=lambda d: (len(format_set(d)), [t.sort_key for t in d]))
            names[longest] = _composed(longest, taken)
            taken.add(names[longest])
            sets[names[longest]] = GlobalSet(names[longest], longest)
    return tuple(sorted((GlobalSet(name, dtypes, pytorch_spelling(dtypes)) for dtypes, name in names.items()), key=lambda g: g.name))


@dataclass(frozen=True)
class Remapped:
    """An overload whose schema in the file differs from the installed torch's: its evidence kept where an argument name maps."""

    name: str
    installed: str  # the installed torch's schema text
    file: str  # the file's schema text, lowered
    kept: tuple[str, ...]  # tensor slots of both schemas: their evidence stays
    dropped: tuple[str, ...]  # slots the evidence spoke of that the file has not as tensor slots

    def to_json(self) -> dict:
        return {"name": self.name, "installed": self.installed, "file": self.file, "kept": list(self.kept), "dropped": list(self.dropped)}


@dataclass(frozen=True)
class Alignment:
    """How the installed torch's runtime evidence met a file of another release."""

    skipped: tuple[str, ...]  # overloads with runtime evidence (observed, probed, schema calls) the installed torch has and the file lacks
    remapped: tuple[Remapped, ...]

    def to_json(self) -> dict:
        return {
            "overloads_skipped": len(self.skipped),
            "overloads_remapped": len(self.remapped),
            "skipped": list(self.skipped),
            "remapped": [r.to_json() for r in self.remapped],
        }


def _slot_shape(schema: TypedSchema) -> tuple[tuple[str, bool], ...]:
    """Each argument and return by name, and whether it holds tensors: what evidence maps through (int -> SymInt does not matter)."""
    return tuple((s.name, s.is_tensor) for s in schema.slots)


def align_runtime_evidence(
    native: NativeFunctions, installed: NativeFunctions, *sources: Mapping[str, OverloadPlan]
) -> tuple[list[dict[str, OverloadPlan]], Alignment]:
    """The installed torch's per-overload plans (OpInfo, probe) restricted to what the file's schemas can take.

    Runtime evidence names slots by the installed torch's schemas. On a file of another release an
    overload the file lacks is skipped; where the file's schema differs (arguments renamed, added or
    removed) only the slots that are tensor slots of the same name in both keep their evidence.
    Returns are named by position (``return.N``), so they map by position. On the installed file
    nothing changes.
    """
    observed = sorted({name for plans in sources for name in plans})
    skipped = tuple(name for name in observed if name not in native.by_name and name in installed.by_name)
    keep: dict[str, set[str]] = {}
    remapped = []
    for name in observed:
        entry, theirs = native.by_name.get(name), installed.by_name.get(name)
        if entry is None or theirs is None or _slot_shape(entry.schema) == _slot_shape(theirs.schema):
            continue
        keep[name] = {s.name for s in entry.schema.tensor_slots} & {s.name for s in theirs.schema.tensor_slots}
        spoken = {s for plans in sources if name in plans for v in plans[name].variables for s in v.binds}
        remapped.append(Remapped(name, theirs.schema.text, entry.schema.lowered(), tuple(sorted(keep[name])), tuple(sorted(spoken - keep[name]))))
    aligned = [
        {name: plan.kept(keep[name]) if name in keep else plan for name, plan in plans.items() if name in native.by_name}
        for plans in sources
    ]
    return aligned, Alignment(skipped, tuple(remapped))


def _tied_by_structure(native: NativeFunctions, sources: Sources) -> set[str]:
    """Overloads that take another's constraints when they have none of their own: aliases, and in-place and
    out= siblings of a functional overload. Calls built from their schemas do not speak for them: whether they
    do must not depend on what else typed them (torchlib's annotations among it, which a run rewrites)."""
    tied = {name for name in sources.aliases if name in sources.schema_calls}
    if sources.groups:
        for name in sources.schema_calls:
            group = native.groups.get(name) if name in native.by_name else None
            if group is not None and group.of_kind("functional") and name not in group.of_kind("functional"):
                tied.add(name)
    return tied


def _named_plans(native: NativeFunctions, sources: Sources) -> tuple[tuple[GlobalSet, ...], list[OverloadPlan]]:
    """The global sets, and every overload's plan with its variables named, in file order."""
    names = [e.name for e in native.entries]
    tied = _tied_by_structure(native, sources)
    merged = {}
    for name in names:
        torchlib, opinfo, probe = sources.torchlib.get(name), sources.opinfo.get(name), sources.probe.get(name)
        schema_call = None
        if not (opinfo or probe) and name not in sources.kernel and name not in tied:
            schema_call = sources.schema_calls.get(name)
        if torchlib or opinfo or probe or schema_call:
            merged[name] = merge_overload(name, torchlib, opinfo, probe, sources.torchlib_handled.get(name, ()), schema_call)
            merged[name] = with_follows(merged[name], sources.follows.get(name, ()))
    for name, plan in sorted(sources.kernel.items()):  # where no sample gave evidence; over torchlib, as observations are
        if not (sources.opinfo.get(name) or sources.probe.get(name)):
            merged[name] = plan
    for name, fact in sorted(sources.dtype_arguments.items()):  # the return a dtype argument sets speaks for itself
        if name in native.by_name and all(native.by_name[name].schema.slot(slot) is not None for slot in fact.returns):
            if (plan := with_dtype_arguments(merged.get(name), name, fact)) is not None:
                merged[name] = plan
    merged = {name: with_verdicts(plan, native.has_cpu_kernel(native.by_name[name])) for name, plan in merged.items()}  # siblings and aliases take them as they are
    for _ in range(2):  # a second round for aliases of overloads only their group types, and their own groups
        merged.update(alias_plans(sources.aliases, merged))
        if sources.groups:
            merged.update(group_siblings(native, merged))
    planned = {name: plan for name, plan in merged.items() if plan.variables}
    sets = global_sets(native, planned.values(), sources)
    set_names = {g.dtypes: g.name for g in sets}
    return sets, [name_variables(planned[name], native.by_name[name].schema, set_names) for name in names if name in planned]


def _restricted(sets: tuple[GlobalSet, ...], overloads: list[OverloadPlan]) -> Plan:
    """The plan of these overloads, with the global sets they use."""
    used = {v.name for o in overloads for v in o.variables} | {v.dtypes for o in overloads for v in o.variables if not v.follows}
    return Plan(tuple(g for g in sets if g.name in used or g.dtypes in used), tuple(overloads))


def infer_plan(native: NativeFunctions, sources: Sources, only: set[str] | None = None) -> Plan:
    """The plan for every overload of the file (or only those named), from the sources given.

    The global sets are named from every overload's plan, so an ``--op`` run names sets as a full run does;
    the plan lists those its overloads use.
    """
    sets, overloads = _named_plans(native, sources)
    return _restricted(sets, [o for o in overloads if only is None or o.name in only])


def cached_plan(
    native: NativeFunctions, sources: Callable[[], Sources], stage: Stage, inputs: tuple[bytes | str, ...], only: set[str] | None = None
) -> tuple[Plan, Alignment | None]:
    """``infer_plan``, read from the stage's cache when the same inputs were inferred from before, with the sources' alignment.

    ``inputs`` are every input of the inference; ``sources`` is called only on a miss. The whole
    file's inference is stored, each overload's plan pickled apart, so that an ``--op`` run reads
    only its own overloads (and names sets as a full run does).
    """
    stored = stage.read(*inputs, kind=dict)
    if stored is None:
        found = sources()
        sets, overloads = _named_plans(native, found)
        stored = {
            "sets": sets,
            "overloads": {o.name: pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL) for o in overloads},
            "alignment": found.alignment,
        }
        stage.write(stored, *inputs)
    wanted = [pickle.loads(data) for name, data in stored["overloads"].items() if only is None or name in only]
    return _restricted(stored["sets"], wanted), stored["alignment"]


def with_autocast(plan: Plan, policies: Mapping[str, Policies], only: set[str] | None = None) -> Plan:
    """The plan with each overload's autocast policy per key; an overload planned for no variables gets a plan of its
    policy alone (the writer then leaves its type variables as they are)."""
    planned = {o.name for o in plan.overloads}
    overloads = [replace(o, autocast=policies.get(o.name, ())) for o in plan.overloads]
    overloads += [OverloadPlan(name, (), (), found) for name, found in policies.items() if name not in planned and found and (only is None or name in only)]
    return replace(plan, overloads=tuple(overloads))


# Why an entry with a tensor slot is left untyped, in the order they are decided.
NO_CPU_KERNEL = "no-cpu-kernel"  # only CUDA, MPS, quantized, sparse, nested... kernels: CPU samples cannot reach it
OBSERVED_UNTYPED = "observed-but-untyped"  # samples reached it, yet no variable came of it
NO_STRUCTURE = "no-structure-ties-it"  # another overload of its operator is typed, but no group or alias ties this one to it
NO_SAMPLE = "no-sample-reaches-it"  # no sample reached it nor anything tied to it, and ATen accepted no call built from its schema
UNTYPED_REASONS = (NO_CPU_KERNEL, OBSERVED_UNTYPED, NO_STRUCTURE, NO_SAMPLE)


def untyped_reasons(native: NativeFunctions, typed: set[str], observed: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """Each untyped entry with a tensor slot under its reason (``UNTYPED_REASONS``), in file order."""
    typed_operators = {name.split(".")[0] for name in typed}
    reasons: dict[str, list[str]] = {reason: [] for reason in UNTYPED_REASONS}
    for entry in native.entries:
        if not entry.schema.tensor_slots or entry.name in typed:
            continue
        if not native.has_cpu_kernel(entry):
            reason = NO_CPU_KERNEL
        elif entry.name in observed:
            reason = OBSERVED_UNTYPED
        elif entry.name.split(".")[0] in typed_operators:
            reason = NO_STRUCTURE
        else:
            reason = NO_SAMPLE
        reasons[reason].append(entry.name)
    return {reason: tuple(names) for reason, names in reasons.items()}

