"""``dtype-migrate show NAME``: what each evidence source says about an overload, for a reviewer.

Each source contributes one section (a function of the context and an overload name); a new
source adds its function to ``SECTIONS``. ``show`` builds nothing itself: it asks the ``Session``
for each source's evidence of the overload (the sources a run infers from, over the OpInfo runs the cache
holds) and prints it.

Dtype sets are spelled by name, as the written yaml names them (``Session.set_name``: a set of the
target's type_constraints.yaml, else torchlib's TypeVar of that set unless the file gives the name
another set, else the name composed from PyTorch's dtype groups), and no line is longer than
``WIDTH``; ``-v`` prints the full dtype lists, every line whole, and the messages of the dtypes ATen
refused.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from migrate.audit.export import ResultStore
from migrate.infer.promotion_findings import finding_of
from migrate.model.autocast import autocast_line, declared_autocast
from migrate.model.declared import declared_promotion, declared_with_backends
from migrate.model.dtypes import TENSOR_DTYPES, DType, canonical, format_set
from migrate.model.exceptions import CONDITIONS
from migrate.model.global_sets import constraints_value, followed_spelling, set_value
from migrate.model.plan import OPINFO, PROBE, Evidence, GlobalSet, Variable
from migrate.model.promotion import Promotion, computation_dtype
from migrate.model.verdict import DTYPE_SPELLING, PROMOTED, REJECTED, UNKNOWN, VERDICTS, one_per_dtype
from migrate.pipeline import OverloadEvidence, Session
from migrate.torchlib_source.resolve import OverloadIndex, TorchlibEvidence

WIDTH = 200  # characters of a line of the default output
MIGRATED = Path("out/native_functions.yaml")  # where ./migrate.sh writes the migrated file


def native_functions_to_show(given: Path | None) -> Path | None:
    """The yaml ``show`` reads: the one given, else the migrated ``out/native_functions.yaml`` when it exists, else
    None (the installed plain one)."""
    if given is not None:
        return given
    return MIGRATED if MIGRATED.is_file() else None


def torchlib_to_show(native_functions: Path | None, given: Path | None) -> Path | None:
    """The torch_lib ``show`` reads: the one given, else the ``torch_lib/`` a run wrote beside the yaml it reads (the
    rewritten functions of that run, not the installed ones from before it), else None (the installed one)."""
    if given is not None or native_functions is None:
        return given
    beside = Path(native_functions).parent / "torch_lib"
    return beside if beside.is_dir() else None


class ShowContext:
    """The inputs of one ``show`` run: the session, and what every runtime source and autocast say about each overload
    shown (``Session.evidence_of``)."""

    def __init__(self, session: Session, verbose: bool = False, evidence: dict[str, OverloadEvidence] | None = None):
        self.session = session
        self.native = session.native
        self.index = OverloadIndex(self.native)
        self.verbose = verbose
        self.evidence = evidence or {}

    @property
    def file_sets(self) -> dict[str, GlobalSet]:
        """The global sets of the target's type_constraints.yaml, by name."""
        return self.session.sets_file.by_name

    def spell(self, dtypes) -> str:
        """A dtype set by its name; its full list with -v."""
        dtypes = canonical(dtypes)
        if self.verbose or not dtypes:
            return format_set(dtypes)
        return self.session.set_name(dtypes)

    def fit(self, line: str) -> str:
        return line if self.verbose or len(line) <= WIDTH else line[: WIDTH - 1] + "…"

    @property
    def torchlib(self) -> TorchlibEvidence:
        return self.session.torchlib

    @functools.lru_cache(maxsize=None)
    def declared(self, overload: str) -> tuple[Variable, ...]:
        """The overload's variables as the file declares them, with their sets per backend; () for a plain entry."""
        entry = self.native.by_name.get(overload)
        return declared_with_backends(self.native, entry, self.file_sets) if entry is not None else ()


Section = Callable[[ShowContext, str], list[str]]


def declared_section(context: ShowContext, overload: str) -> list[str]:
    """What the file declares for the overload: one line per variable (its slots, its set by name and its dtypes), its
    sets per backend, its promotion and its autocast policies."""
    entry = context.native.by_name.get(overload)
    if entry is None:
        return ["declared: nothing (an overload the file does not list)"]
    variables = context.declared(overload)
    promotion = declared_promotion(context.native, entry)
    policies = declared_autocast(context.native, entry)
    if not (variables or promotion or policies):
        return [f"declared: nothing, every tensor is Tensor here (a migrated file: --native-functions FILE, or ./migrate.sh writes {MIGRATED})"]
    lines = []
    taken = {v.name for v in variables} | {v.argument.name for v in variables if v.argument is not None}
    followed = followed_spelling(variables)
    for variable in variables:
        said = [f"or the dtype {', '.join(variable.follows)} has in the call"] if variable.follows else []
        said += [f"or {', '.join(f'opmath({name})' for name in variable.opmath)}: float32 for float16, bfloat16; complex64 for complex32"] if variable.opmath else []
        if variable.argument is not None:
            name = variable.argument.name
            spelled = constraints_value(variable, context.file_sets, taken, followed)
            others = "any dtype it may name" if spelled == f"[{name}]" else "one of the list's other members"
            none = f", else {others}" if variable.argument.optional else "; it is never None"
            said.insert(0, f"exactly the dtype {name} names{' when given' if variable.argument.optional else ''}{none}")
        spelled = _named(context, variable) if not variable.listed else f"{variable.name} = {constraints_value(variable, context.file_sets, taken, followed)}"
        count = f" {_count(variable.dtypes)}" if variable.dtypes or not variable.depends_on else ""
        lines.append(f"  {', '.join(variable.binds)}: {spelled}{count}" + (f" ({'; '.join(said)})" if said else ""))
        if variable.argument is not None:
            lines.append(f"  {variable.argument.name} = {set_value(variable.argument.dtypes, context.file_sets)} (the dtypes the argument may name)")
        lines.extend(f"    on {stated.key}: {context.spell(stated.dtypes)} {_count(stated.dtypes)}" for stated in variable.backends)
        lines.extend(
            f"    where the call takes {e.condition} ({CONDITIONS[e.condition].short}): {context.spell(e.dtypes)} {_count(e.dtypes)}" for e in variable.exceptions
        )
    if promotion is not None:
        lines.append(f"  {promotion.line(0)} (the promoted tensors' variable is the call's computation dtype)")
    if policies:
        lines.append(autocast_line(2, policies) or "")
    return [f"declared ({context.native.path.name}:{entry.func_line + 1}):"] + lines


def _short(dtypes) -> str:
    """Dtypes without their ``torch.`` prefix: ``uint16, uint32``."""
    return ", ".join(d.name for d in canonical(dtypes))


def _count(dtypes) -> str:
    """A set's size and dtypes after its name: ``(13 of 21: bool, uint8, ...)``; a set of most of the 21 by the ones it
    lacks (``(15 of 21: all but bool, uint16, ...)``), so the line stays short."""
    lacks = [d for d in TENSOR_DTYPES if d not in dtypes]
    if not lacks:
        return f"(all {len(TENSOR_DTYPES)})"
    listed = f"all but {_short(lacks)}" if len(lacks) < len(TENSOR_DTYPES) // 3 else _short(dtypes)
    return f"({len(dtypes)} of {len(TENSOR_DTYPES)}: {listed})" if dtypes else "(none)"


def refused_section(context: ShowContext, overload: str) -> list[str]:
    """Why the declaration leaves each of the 21 dtypes out of a variable's set: the one call that refused it and ATen's
    message (dtypes refused on one call with one message, but for the dtype it names, share a line), else what the
    run's verdicts say of it (unknown, and why; computed in another dtype)."""
    variables = [v for v in context.declared(overload) if not v.depends_on and v.argument is None and len(v.dtypes) < len(TENSOR_DTYPES)]
    if not variables:
        return []
    evidence = context.evidence[overload]
    refusals = [
        e
        for plan in (evidence.probe, evidence.schema_calls)
        if plan is not None
        for variable in plan.variables
        for e in variable.evidence
        if e.outcome == REJECTED and e.verdict is not None
    ]
    own = evidence.opinfo is not None or evidence.probe is not None
    verdicts = context.session.verdicts_of(overload, evidence).variables if own else ()
    promoted, diagonal = _diagonal_refusals(evidence)
    declared = declared_promotion(context.native, context.native.by_name[overload]) if overload in context.native.by_name else None
    lines = []
    for variable in variables:
        left_out = [d for d in TENSOR_DTYPES if d not in variable.dtypes]
        if not left_out:
            continue
        lines.append(f"refused at {', '.join(variable.binds)} ({len(left_out)} of {len(TENSOR_DTYPES)}):")
        by_call: dict[tuple[str, str], dict[DType, str]] = {}
        without: dict[str, list[DType]] = {}
        for dtype in left_out:
            if declared is not None and set(declared.args) & set(variable.binds) and (moved := _computed_in(declared, dtype, variable)):
                without.setdefault(moved, []).append(dtype)
                continue
            record = _refusing(refusals, variable.binds, dtype)
            if record is None and promoted and set(promoted) <= set(variable.binds):
                record = next((e for e in diagonal if dtype in e.dtypes), None)
            if record is not None:
                message = record.verdict.message_of(dtype)
                by_call.setdefault((record.verdict.site.call, DTYPE_SPELLING.sub("_", message)), {})[dtype] = message
            else:
                without.setdefault(_without_refusal(verdicts, variable.binds, dtype), []).append(dtype)
        for (call, _), messages in by_call.items():
            lines += [f"  {_short(messages)}", f"    by {call}:", f"    {one_per_dtype(list(messages.values()))}"]
        lines.extend(f"  {_short(dtypes)}: {why}" for why, dtypes in without.items())
    return lines


def _diagonal_refusals(evidence: OverloadEvidence) -> tuple[tuple[str, ...], list[Evidence]]:
    """The tensors the overload promotes, and the calls built for promotion that refused them all at one dtype: a
    promoted variable's set is what its diagonal calls computed in (``bitwise_left_shift(bool, True)``)."""
    finding = finding_of(evidence.promotion) if evidence.promotion is not None else None
    if finding is None or finding.promotion is None:
        return (), []
    return finding.tensors, [e for e in finding.diagonal if e.outcome == REJECTED and e.verdict is not None]


def _computed_in(promotion: Promotion, dtype: DType, variable: Variable) -> str:
    """The line for a dtype its variable leaves out that the promotion computes in another dtype the set holds (``sum``
    of int8 computes in int64), else ''."""
    computed = computation_dtype(promotion.kind, dtype.name)
    if computed is None or computed == dtype.name or DType(computed) not in variable.dtypes:
        return ""
    return f"promoted: computed in {computed} ({promotion.kind}), which the set holds"


def _refusing(refusals: list[Evidence], slots: tuple[str, ...], dtype: DType) -> Evidence | None:
    """The call that refused the dtype at these slots and cast no other: the one casting most of them together (the
    diagonal call a promoted variable's set is judged by), then the one seen most often."""
    found = [e for e in refusals if dtype in e.dtypes and e.verdict.site.cast and set(e.verdict.site.cast) <= set(slots)]
    return max(found, key=lambda e: (len(e.verdict.site.cast), e.count), default=None)


def _without_refusal(verdicts: tuple[Variable, ...], slots: tuple[str, ...], dtype: DType) -> str:
    """What the run's verdicts say of a dtype left out that no call casting these slots refused."""
    said = {slot: v.verdicts for v in verdicts if v.verdicts is not None for slot in v.binds if slot in slots}
    for slot, judged in said.items():
        if judged.of(dtype) == REJECTED:
            return f"rejected at {slot} (no call casts it): {dict(judged.rejected)[dtype]}"
        if judged.of(dtype) == PROMOTED:
            return f"promoted at {slot}: {dict(judged.promoted)[dtype]}"
    reasons = sorted({judged.reason_of(dtype) for judged in said.values() if judged.of(dtype) == UNKNOWN} - {""})
    if len(said) == sum(judged.of(dtype) == UNKNOWN for judged in said.values()):
        return "unknown: no call judged it" + (f" ({', '.join(reasons)})" if reasons else "")
    return "left out with no refusal on record (-v: each source's evidence)"


def evidence_section(context: ShowContext, overload: str) -> list[str]:
    """The runtime sources that have evidence of the overload, in one line (``-v`` prints each per slot)."""
    evidence = context.evidence[overload]
    plans = (("OpInfo observations", evidence.opinfo), ("probes", evidence.probe), ("calls built from the schema", evidence.schema_calls))
    sources = [name for name, plan in plans if plan is not None]
    return [f"evidence: {', '.join(sources) if sources else 'no runtime evidence of its own'} (-v prints each source's, per slot)"]


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
    lines = []
    for variable in plan.variables:
        lines.append(f"  {_named(context, variable)}: {', '.join(variable.binds)}")
        evidence = [e for e in variable.evidence if e.source == source and (context.verbose or not e.refused)]
        shown = evidence if context.verbose else evidence[:_EVIDENCE_LINES]
        lines.extend(f"    {e.where}: {context.spell(e.dtypes)}" for e in shown)
        if len(evidence) > len(shown):
            lines.append(f"    ... {len(evidence) - len(shown)} more (-v shows them, and what ATen refused)")
    return lines


def opinfo_section(context: ShowContext, overload: str) -> list[str]:
    """The variables the cached OpInfo observations give, with the OpInfos behind each."""
    evidence = context.evidence[overload]
    if evidence.opinfo is None:
        return [f"opinfo: not observed in the {evidence.cached_runs} cached OpInfo runs"]
    return ["opinfo:"] + _variable_lines(context, evidence.opinfo, OPINFO)


def probe_section(context: ShowContext, overload: str) -> list[str]:
    """What ATen accepted (and refused, with its message) when the overload was called with slots cast."""
    evidence = context.evidence[overload]
    if evidence.probe is None:
        return ["probe: not probed"]
    return ["probe:"] + _variable_lines(context, evidence.probe, PROBE) + [f"  follows: {fact.evidence.where}" for fact in evidence.follows]


def verdicts_section(context: ShowContext, overload: str) -> list[str]:
    """Per variable of the overload's own runtime evidence, each dtype's verdict (docs/evidence.md); ``incomplete``
    when some dtype is unknown (the set is then a lower bound); with -v, ATen's message for each rejected dtype."""
    evidence = context.evidence[overload]
    if evidence.opinfo is None and evidence.probe is None:
        return ["verdicts: no runtime evidence of its own"]
    plan = context.session.verdicts_of(overload, evidence)
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
    evidence = context.evidence[overload]
    if evidence.schema_calls is None:
        return ["schema calls: ATen accepted no call built from the schema, or it binds no argument"]
    return ["schema calls:"] + _variable_lines(context, evidence.schema_calls, PROBE)


def export_section(context: ShowContext, overload: str) -> list[str]:
    """Each checked dtype's export status (from ``export-check`` results cached for this torch_lib), per cast slots and value."""
    results = ResultStore.of(context.session.torchlib_root, context.session.cache).get(overload)
    if results is None:
        return ["export: not checked (run 'dtype-migrate export-check')"]
    lines = ["export:" + (f" {results[0].function}" if results and results[0].function else "")]
    for case in results:
        value = f" [{case.value}]" if case.value else ""  # a case per value of the arguments that change the graph
        lines.append(f"  {', '.join(case.cast)} {case.dtype}{value}: {case.status}" + (f": {case.message}" if case.message else ""))
    return lines


def structure_section(context: ShowContext, overload: str) -> list[str]:
    """The overloads whose constraints this one takes where it has no evidence of its own (provenance
    ``aliases`` and ``groups``), each as the yaml declares it, with which of its slots carries which."""
    lines = []
    alias = context.evidence[overload].alias
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
    """The policy per autocast key, where it comes from and the run that shows it (the yaml's line is declared_section's)."""
    evidence = context.evidence[overload].autocast
    if evidence is None:
        return ["autocast: not gathered (--evidence without autocast)"]
    lines = []
    for found in evidence.policies.get(overload, ()):
        via = f", as {found.header_list} lists it" if found.header_list else ""
        lines.append(f"  {found.key}: {found.policy} ({found.source}{via})" + (f": {found.observed}" if found.observed else ""))
    lines += [f"  {u.key}: not settled: {u.reason}" for u in evidence.unresolved if u.overload == overload]
    return ["autocast:"] + lines if lines else ["autocast: no autocast key registers it"]


SECTIONS: tuple[Section, ...] = (  # the default: what the file declares and why, each call once
    declared_section,
    refused_section,
    torchlib_section,
    evidence_section,
    structure_section,
    export_section,
    autocast_section,
)
VERBOSE_SECTIONS: tuple[Section, ...] = (  # -v: every source's evidence, per slot
    declared_section,
    refused_section,
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
    """Print, after the file it read, every section for each overload ``name`` denotes."""
    overloads = session.native.overloads_named([name], with_autogen=True)
    context = ShowContext(session, verbose, session.evidence_of(overloads))
    print(f"read {session.native_path}")
    for overload in overloads:
        schema = context.index.schema(overload)
        print(context.fit(str(schema) if schema else overload))
        for section in VERBOSE_SECTIONS if verbose else SECTIONS:
            for line in section(context, overload):
                print(context.fit("  " + line))
    return 0
