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
from pathlib import Path
from typing import Callable

from migrate.evidence.torchlib.resolve import OverloadIndex, TorchlibEvidence, scan_torchlib
from migrate.model.dtypes import TENSOR_DTYPES, DType, canonical, format_set
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.named_sets import composed_name
from migrate.model.native import NativeFunctions, installed_native_functions, sibling_constraints_path

WIDTH = 200  # characters of a line of the default output


class ShowContext:
    """The inputs of one ``show`` run; each evidence source is computed on first use."""

    def __init__(self, native: NativeFunctions, torchlib_dir: Path | None, cache_dir: Path | None, verbose: bool = False):
        self.native = native
        self.index = OverloadIndex(native)
        self.torchlib_dir = torchlib_dir
        self.cache_dir = cache_dir
        self.verbose = verbose

    @functools.cached_property
    def set_names(self) -> dict[tuple[DType, ...], str]:
        """Names sets have already: the target's type_constraints.yaml first, then torchlib's TypeVars."""
        names: dict[tuple[DType, ...], str] = {}
        for global_set in GlobalSetsFile.load(sibling_constraints_path(self.native.path)).sets:
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

    @functools.cached_property
    def torchlib(self) -> TorchlibEvidence:
        return scan_torchlib(self.torchlib_dir, self.native, self.cache_dir)

    @functools.cached_property
    def sweep(self):
        """The OpInfo runs in the cache (show runs nothing: a run of the tool fills the cache)."""
        from migrate.evidence.opinfo.sweep import load_cached_run, load_catalogue
        from migrate.evidence.runtime.records import SweepResult, SweepStats

        catalogue = load_catalogue(self.cache_dir)
        runs = tuple(r for e in catalogue if e.cpu_dtypes and (r := load_cached_run(self.cache_dir, e.opinfo)) is not None)
        return SweepResult(runs, catalogue, SweepStats(len(catalogue), 0, len(runs), sum(r.samples for r in runs), 0.0))

    @functools.cached_property
    def aliases(self):
        """Alias overloads and what they stand for, from the cached catalogue and forwards table."""
        from migrate.evidence.opinfo.aliases import alias_overloads
        from migrate.evidence.opinfo.forwards import load_forwards
        from migrate.evidence.opinfo.sweep import sweep_cache_dir

        pairs = {pair for entry in self.sweep.catalogue for pair in entry.aliases}
        return alias_overloads(self.native, pairs, load_forwards(sweep_cache_dir(self.cache_dir))[0])

    def observed(self, overload: str):
        from migrate.evidence.runtime.records import overload_key

        return [o for o in self.sweep.observations if overload_key(o.overload) == overload]


Section = Callable[[ShowContext, str], list[str]]


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
    from migrate.evidence.probe.merge import is_rejection

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
    """The overload's probe plan as a run makes it: its probed calls, or the calls built from its schema when it was only observed."""
    from migrate.evidence.opinfo.derived import probed_calls
    from migrate.evidence.opinfo.sweep import sweep_cache_dir
    from migrate.evidence.probe.merge import probe_plans
    from migrate.evidence.probe.schema_calls import cached_schema_calls
    from migrate.evidence.runtime.records import overload_key

    probed = tuple(p for p in context.sweep.probes if overload_key(p.overload) == overload)
    built = tuple(c for c in cached_schema_calls(sweep_cache_dir(context.cache_dir)) or () if overload_key(c.overload) == overload)
    observed = context.observed(overload)
    return probe_plans(probed_calls(probed, built, frozenset([overload] if observed else [])), observed).get(overload)


def probe_section(context: ShowContext, overload: str) -> list[str]:
    """What ATen accepted (and refused, with its message) when the overload was called with slots cast."""
    from migrate.model.plan import PROBE

    plan = _probe_plan(context, overload)
    if plan is None:
        return ["probe: not probed"]
    return ["probe:"] + _variable_lines(context, plan, PROBE)


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
    from migrate.evidence.opinfo.sweep import sweep_cache_dir
    from migrate.evidence.probe.schema_calls import cached_schema_calls, schema_call_plans
    from migrate.evidence.runtime.records import overload_key
    from migrate.model.plan import PROBE

    calls = cached_schema_calls(sweep_cache_dir(context.cache_dir))
    if calls is None:
        return ["schema calls: none cached (a run of the tool builds them)"]
    plan = schema_call_plans(tuple(c for c in calls if overload_key(c.overload) == overload)).get(overload)
    if plan is None:
        return ["schema calls: ATen accepted no call built from the schema, or it binds no argument"]
    return ["schema calls:"] + _variable_lines(context, plan, PROBE)


def export_section(context: ShowContext, overload: str) -> list[str]:
    """Each checked dtype's export status (from ``export-check`` results cached for this torch_lib), per cast slots."""
    from migrate.check.export import cached_results, results_dir
    from migrate.evidence.torchlib.resolve import installed_torchlib

    results = cached_results(results_dir(context.torchlib_dir or installed_torchlib(), context.cache_dir), overload)
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


SECTIONS: tuple[Section, ...] = (
    torchlib_section,
    opinfo_section,
    probe_section,
    schema_call_section,
    verdicts_section,
    structure_section,
    export_section,
)


def run(args) -> int:
    """Print every section for each overload ``args.name`` denotes."""
    native = NativeFunctions.load(args.native_functions or installed_native_functions())
    context = ShowContext(native, args.torchlib, args.cache_dir, args.verbose)
    for number, overload in enumerate(native.overloads_named([args.name], with_autogen=True)):
        schema = context.index.schema(overload)
        print(("\n" if number else "") + context.fit(str(schema) if schema else overload))
        for section in SECTIONS:
            for line in section(context, overload):
                print(context.fit("  " + line))
    return 0
