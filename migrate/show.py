"""``dtype-migrate show NAME``: what each evidence source says about an overload, for a reviewer.

Each source contributes one section (a function of the context and an overload
name); a new source adds its function to ``SECTIONS``. Sources are computed lazily,
so showing one overload costs only the sources it prints.

Dtype sets are spelled by name, as the written yaml spells them (a set of the target's
type_constraints.yaml, else torchlib's TypeVar of that set, else the name composed from
PyTorch's dtype groups), and no line is longer than ``WIDTH``; ``-v`` prints the full
dtype lists, every line whole, and the messages of the dtypes ATen refused.
"""

from __future__ import annotations

import functools
from typing import Callable

from migrate.torchlib_source.resolve import OverloadIndex, TorchlibEvidence
from migrate.model.dtypes import TENSOR_DTYPES, DType, canonical, format_set
from migrate.model.named_sets import composed_name
from migrate.model.plan import GlobalSet
from migrate.pipeline import Session

WIDTH = 200  # characters of a line of the default output


class ShowContext:
    """The inputs of one ``show`` run; each evidence source is computed on first use."""

    def __init__(self, session: Session, verbose: bool = False):
        self.session = session
        self.native = session.native
        self.index = OverloadIndex(self.native)
        self.verbose = verbose

    @property
    def file_sets(self) -> dict[str, GlobalSet]:
        """The global sets of the target's type_constraints.yaml, by name."""
        return self.session.sets_file.by_name

    @functools.cached_property
    def set_names(self) -> dict[tuple[DType, ...], str]:
        """Names sets have already: the target's type_constraints.yaml first, then torchlib's TypeVars."""
        names: dict[tuple[DType, ...], str] = {}
        for global_set in self.session.sets_file.sets:
            names.setdefault(global_set.dtypes, global_set.name)
        for global_set in sorted(self.torchlib.global_sets, key=lambda g: (len(g.name), g.name)):
            names.setdefault(global_set.dtypes, global_set.name)
        return names

    def spell(self, dtypes) -> str:
        """A dtype set by its name; its full list with -v."""
        dtypes = canonical(dtypes)
        if self.verbose or not dtypes:
            return format_set(dtypes)
        return self.set_names.get(dtypes) or composed_name(dtypes)

    def fit(self, line: str) -> str:
        return line if self.verbose or len(line) <= WIDTH else line[: WIDTH - 1] + "…"

    @property
    def torchlib(self) -> TorchlibEvidence:
        return self.session.torchlib

    @functools.cached_property
    def sweep(self):
        """The OpInfo runs in the cache (show runs nothing: a run of the tool fills the cache)."""
        from migrate.runtime.runs import SweepResult, SweepStats

        catalogue, found = self.session.cached_runs()
        runs = tuple(found.values())
        return SweepResult(runs, catalogue, SweepStats(len(catalogue), 0, len(runs), sum(r.samples for r in runs), 0.0))

    @functools.cached_property
    def aliases(self):
        """Alias overloads and what they stand for, from the cached catalogue and forwards table."""
        from migrate.evidence.opinfo.aliases import alias_overloads
        from migrate.evidence.opinfo.forwards import load_forwards

        pairs = {pair for entry in self.sweep.catalogue for pair in entry.aliases}
        return alias_overloads(self.native, pairs, load_forwards(self.session.cache)[0])

    @functools.cached_property
    def autocast(self):
        """The autocast policies per key (observed runs are cached; a cold cache observes once, in seconds)."""
        from migrate.evidence.autocast.policies import autocast_policies

        return autocast_policies(self.native.by_name, self.session.cache)

    def observed(self, overload: str):
        from migrate.runtime.runs import overload_key

        return [o for o in self.sweep.observations if overload_key(o.overload) == overload]


Section = Callable[[ShowContext, str], list[str]]


def declared_section(context: ShowContext, overload: str) -> list[str]:
    """What the file itself declares for the overload, when it is annotated: each variable's slots and its list, its promotion."""
    from migrate.model.constraint import ConstraintList
    from migrate.model.declared import declared_promotion, declared_variables

    entry = context.native.by_name.get(overload)
    variables = declared_variables(context.native, entry, context.file_sets) if entry is not None else ()
    promotion = declared_promotion(context.native, entry) if entry is not None else None
    lines = []
    for variable in variables:
        follows = f" (or the dtype {', '.join(variable.follows)} has in the call)" if variable.follows else ""
        spelled = str(ConstraintList(variable.dtypes, variable.follows)) if variable.follows else _named(context, variable)
        lines.append(f"  {variable.name} = {spelled}{follows}: {', '.join(variable.binds)}" if variable.follows else f"  {spelled}: {', '.join(variable.binds)}")
    if promotion is not None:
        lines.append(f"  {promotion.line(0)} (the promoted tensors' variable is the call's computation dtype)")
    return ["declared:"] + lines if lines else []


def torchlib_section(context: ShowContext, overload: str) -> list[str]:
    """Registrations with file:line, each tensor slot's variable and dtypes, and each variant's subset."""
    evidence = context.torchlib
    registrations = evidence.by_overload.get(overload, ())
    if not registrations:
        return ["torchlib: no registration"]
    lines = ["torchlib:"]
    for registration in registrations:
        notes = [flag for flag in ("complex", "trace_only") if getattr(registration, flag)]
        if registration.condition:
            notes.append(f"only if {registration.condition}")
        lines.append(f"  {registration.where}" + (f" ({'; '.join(notes)})" if notes else ""))
    plan = evidence.overloads[overload]
    for variable in plan.variables:
        lines.append(f"  {_named(context, variable)}: {', '.join(variable.binds)}")
        if len(variable.evidence) > 1:
            lines.extend(f"    {e.where}: {context.spell(e.dtypes)}" for e in variable.evidence)
    schema = context.index.schema(overload)
    free = [s.name for s in schema.tensor_slots if plan.variable_of(s.name) is None] if schema else []
    if free:
        lines.append(f"  no constraint: {', '.join(free)}")
    if overload in evidence.unmatched:
        lines.append(f"  parameters with no schema argument of that name: {', '.join(evidence.unmatched[overload])}")
    return lines


_EVIDENCE_LINES = 6  # per variable without -v; --report has them all


def _named(context: ShowContext, variable) -> str:
    """``T TFloat`` for a variable of a named set; ``TFloat`` alone when the variable is named after its set."""
    spelled = context.spell(variable.dtypes)
    concrete = len(variable.dtypes) == 1 and variable.name == variable.dtypes[0].onnx  # torchlib's BOOL, INT64
    return variable.name if spelled == variable.name or (concrete and not context.verbose) else f"{variable.name} {spelled}"


def _variable_lines(context: ShowContext, plan, source: str) -> list[str]:
    from migrate.model.rejection import is_rejection

    lines = []
    for variable in plan.variables:
        lines.append(f"  {_named(context, variable)}: {', '.join(variable.binds)}")
        evidence = [e for e in variable.evidence if e.source == source and (context.verbose or not is_rejection(e))]
        shown = evidence if context.verbose else evidence[:_EVIDENCE_LINES]
        lines.extend(f"    {e.where}: {context.spell(e.dtypes)}" for e in shown)
        if len(evidence) > len(shown):
            lines.append(f"    ... {len(evidence) - len(shown)} more (-v shows them, and what ATen refused)")
    return lines


def opinfo_section(context: ShowContext, overload: str) -> list[str]:
    """The variables the cached OpInfo observations give, with the OpInfos behind each."""
    from migrate.evidence.opinfo.observations import plans_from_observations
    from migrate.model.plan import OPINFO

    plan = plans_from_observations(context.observed(overload), context.sweep.catalogue).get(overload)
    if plan is None:
        return [f"opinfo: not observed in the {len(context.sweep.runs)} cached OpInfo runs"]
    return ["opinfo:"] + _variable_lines(context, plan, OPINFO)


def _probe_plan(context: ShowContext, overload: str):
    """The overload's probe plan as a run makes it: its probed calls, and the calls built from its schema when it was observed."""
    from migrate.evidence.derived import probed_calls
    from migrate.evidence.probe.merge import probe_plans
    from migrate.evidence.probe.schema_calls import cached_schema_calls
    from migrate.runtime.runs import overload_key

    probed = tuple(p for p in context.sweep.probes if overload_key(p.overload) == overload)
    built = tuple(c for c in cached_schema_calls(context.session.cache) or () if overload_key(c.overload) == overload)
    observed = context.observed(overload)
    return probe_plans(probed_calls(probed, built, frozenset([overload] if observed else [])), observed).get(overload)


def probe_section(context: ShowContext, overload: str) -> list[str]:
    """What ATen accepted (and refused, with its message) when the overload was called with slots cast."""
    from migrate.evidence.probe.follows import follows_facts
    from migrate.runtime.runs import overload_key
    from migrate.model.plan import PROBE

    probed = [p for p in context.sweep.probes if overload_key(p.overload) == overload]
    plan = _probe_plan(context, overload)
    if plan is None:
        return ["probe: not probed"]
    facts = follows_facts(probed, context.observed(overload)).get(overload, ())
    return ["probe:"] + _variable_lines(context, plan, PROBE) + [f"  follows: {fact.evidence.where}" for fact in facts]


def verdicts_section(context: ShowContext, overload: str) -> list[str]:
    """Per variable of the overload's own runtime evidence, each dtype's verdict (docs/evidence.md); ``incomplete``
    when some dtype is unknown (the set is then a lower bound); with -v, ATen's message for each rejected dtype."""
    from migrate.evidence.opinfo.observations import plans_from_observations
    from migrate.evidence.verdicts import with_verdicts
    from migrate.infer import merge_overload
    from migrate.model.plan import VERDICTS

    opinfo = plans_from_observations(context.observed(overload), context.sweep.catalogue).get(overload)
    probe = _probe_plan(context, overload)
    if opinfo is None and probe is None:
        return ["verdicts: no runtime evidence of its own"]
    plan = with_verdicts(merge_overload(overload, None, opinfo, probe))
    lines = ["verdicts:"]
    for variable in plan.variables:
        verdicts = variable.verdicts
        lines.append(f"  {', '.join(variable.binds)}" + (" (incomplete: a lower bound)" if verdicts.incomplete else ""))
        for verdict in VERDICTS:
            dtypes = [d for d in TENSOR_DTYPES if verdicts.of(d) == verdict]
            if dtypes:
                lines.append(f"    {verdict}: {context.spell(dtypes)}")
        if context.verbose:
            lines.extend(f"      {dtype}: {message}" for dtype, message in verdicts.rejected)
    return lines



def schema_call_section(context: ShowContext, overload: str) -> list[str]:
    """What ATen accepted when called with arguments built from the schema (used only where nothing else typed it)."""
    from migrate.evidence.probe.schema_calls import cached_schema_calls, schema_call_plans
    from migrate.runtime.runs import overload_key
    from migrate.model.plan import PROBE

    calls = cached_schema_calls(context.session.cache)
    if calls is None:
        return ["schema calls: none cached (a run of the tool builds them)"]
    plan = schema_call_plans(tuple(c for c in calls if overload_key(c.overload) == overload)).get(overload)
    if plan is None:
        return ["schema calls: ATen accepted no call built from the schema, or it binds no argument"]
    return ["schema calls:"] + _variable_lines(context, plan, PROBE)


def export_section(context: ShowContext, overload: str) -> list[str]:
    """Each checked dtype's export status (from ``export-check`` results cached for this torch_lib), per cast slots."""
    from migrate.audit.export import cached_results, results_dir

    results = cached_results(results_dir(context.session.torchlib_root, context.session.cache), overload)
    if results is None:
        return ["export: not checked (run 'dtype-migrate export-check')"]
    lines = ["export:" + (f" {results[0].function}" if results and results[0].function else "")]
    for case in results:
        lines.append(f"  {', '.join(case.cast)} {case.dtype}: {case.status}" + (f": {case.message}" if case.message else ""))
    return lines


def structure_section(context: ShowContext, overload: str) -> list[str]:
    """The overloads whose constraints this one takes where it has no evidence of its own (provenance
    ``aliases`` and ``groups``), each as the yaml declares it, with which of its slots carries which."""
    lines = []
    alias = context.aliases.get(overload)
    if alias is not None:
        target = context.index.schema(alias.target)
        lines.append(f"  aliases: {alias.why}: {target if target else alias.target}")
        lines.append("    " + ", ".join(a if a == t else f"{a} as {t}" for a, t in alias.slots))
    group = context.native.groups.get(overload) if overload in context.native.by_name else None
    functional = group.of_kind("functional") if group is not None else ()
    if functional and overload not in functional:
        lines.append(f"  groups: a sibling of {context.index.schema(functional[0]) or functional[0]}")
    return ["structure:"] + lines if lines else ["structure: no alias, not an in-place or out= sibling"]


def autocast_section(context: ShowContext, overload: str) -> list[str]:
    """The policy per autocast key, where it comes from and the run that shows it; the yaml's line when it has one."""
    from migrate.model.autocast import declared_autocast

    evidence = context.autocast
    lines = []
    entry = context.native.by_name.get(overload)
    declared = declared_autocast(context.native, entry) if entry is not None else ()
    if declared:
        lines.append("  declared: " + ", ".join(f"{key}: {policy}" for key, policy in declared))
    for found in evidence.policies.get(overload, ()):
        via = f", as {found.header_list} lists it" if found.header_list else ""
        lines.append(f"  {found.key}: {found.policy} ({found.source}{via})" + (f": {found.observed}" if found.observed else ""))
    lines += [f"  {u.key}: not settled: {u.reason}" for u in evidence.unresolved if u.overload == overload]
    return ["autocast:"] + lines if lines else ["autocast: no autocast key registers it"]


SECTIONS: tuple[Section, ...] = (
    declared_section,
    torchlib_section,
    opinfo_section,
    probe_section,
    schema_call_section,
    verdicts_section,
    structure_section,
    export_section,
    autocast_section,
)


def show(session: Session, name: str, verbose: bool = False) -> int:
    """Print every section for each overload ``name`` denotes."""
    context = ShowContext(session, verbose)
    for number, overload in enumerate(context.native.overloads_named([name], with_autogen=True)):
        schema = context.index.schema(overload)
        print(("\n" if number else "") + context.fit(str(schema) if schema else overload))
        for section in SECTIONS:
            for line in section(context, overload):
                print(context.fit("  " + line))
    return 0
