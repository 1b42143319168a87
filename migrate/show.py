"""``dtype-migrate show NAME``: what each evidence source says about an overload, for a reviewer.

Each source contributes one section (a function of the context and an overload
name); a new source adds its function to ``SECTIONS``. Sources are computed lazily,
so showing one overload costs only the sources it prints.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from migrate.evidence.torchlib.resolve import OverloadIndex, TorchlibEvidence, scan_torchlib
from migrate.model.dtypes import format_set
from migrate.model.native import NativeFunctions, installed_native_functions


class ShowContext:
    """The inputs of one ``show`` run; each evidence source is computed on first use."""

    def __init__(self, native: NativeFunctions, torchlib_dir: Path | None, cache_dir: Path | None):
        self.native = native
        self.index = OverloadIndex(native)
        self.torchlib_dir = torchlib_dir
        self.cache_dir = cache_dir

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
        lines.append(f"  {variable.name} {format_set(variable.dtypes)}: {', '.join(variable.binds)}")
        if len(variable.evidence) > 1:
            lines.extend(f"    {e.where}: {format_set(e.dtypes)}" for e in variable.evidence)
    schema = context.index.schema(overload)
    free = [s.name for s in schema.tensor_slots if plan.variable_of(s.name) is None] if schema else []
    if free:
        lines.append(f"  no constraint: {', '.join(free)}")
    if overload in evidence.unmatched:
        lines.append(f"  parameters with no schema argument of that name: {', '.join(evidence.unmatched[overload])}")
    return lines


_EVIDENCE_LINES = 6  # per variable; --report has them all


def _variable_lines(plan, source: str) -> list[str]:
    lines = []
    for variable in plan.variables:
        lines.append(f"  {variable.name} {format_set(variable.dtypes)}: {', '.join(variable.binds)}")
        evidence = [e for e in variable.evidence if e.source == source]
        lines.extend(f"    {e.where}: {format_set(e.dtypes)}" for e in evidence[:_EVIDENCE_LINES])
        if len(evidence) > _EVIDENCE_LINES:
            lines.append(f"    ... {len(evidence) - _EVIDENCE_LINES} more")
    return lines


def opinfo_section(context: ShowContext, overload: str) -> list[str]:
    """The variables the cached OpInfo observations give, with the OpInfos behind each."""
    from migrate.evidence.opinfo.observations import plans_from_observations
    from migrate.model.plan import OPINFO

    plan = plans_from_observations(context.observed(overload), context.sweep.catalogue).get(overload)
    if plan is None:
        return [f"opinfo: not observed in the {len(context.sweep.runs)} cached OpInfo runs"]
    return ["opinfo:"] + _variable_lines(plan, OPINFO)


def probe_section(context: ShowContext, overload: str) -> list[str]:
    """What ATen accepted (and refused, with its message) when the overload was called with slots cast."""
    from migrate.evidence.probe.merge import probe_plans
    from migrate.evidence.runtime.records import overload_key
    from migrate.model.plan import PROBE

    probed = [p for p in context.sweep.probes if overload_key(p.overload) == overload]
    plan = probe_plans(probed, context.observed(overload)).get(overload)
    if plan is None:
        return ["probe: not probed"]
    return ["probe:"] + _variable_lines(plan, PROBE)


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


SECTIONS: tuple[Section, ...] = (torchlib_section, opinfo_section, probe_section, export_section)


def run(args) -> int:
    """Print every section for each overload ``args.name`` denotes."""
    native = NativeFunctions.load(args.native_functions or installed_native_functions())
    context = ShowContext(native, args.torchlib, args.cache_dir)
    for number, overload in enumerate(native.overloads_named([args.name], with_autogen=True)):
        schema = context.index.schema(overload)
        print(("\n" if number else "") + (str(schema) if schema else overload))
        for section in SECTIONS:
            for line in section(context, overload):
                print("  " + line)
    return 0
