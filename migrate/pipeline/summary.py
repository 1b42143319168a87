"""The run in numbers: one frozen section per part of the summary, each next to what produces it (the sweep's in
``migrate.evidence.gather``, the alignment's in ``migrate.evidence.align``, autocast's, the torchlib rewrite's; the
probe's and the verdicts', counted over the applied plan, in ``plan_summary``; the written yaml's here), each with ``to_json()`` (what ``--report`` keeps
under ``summary``) and ``lines()`` (what the run prints on stderr), gathered in one ``RunSummary``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from migrate.model.backends import BACKEND_KEYS, BACKENDS_KEY, CLAIMED, NO_KERNEL, OBSERVED
from migrate.model.dtypes import PREFIX, TENSOR_DTYPES, DType
from migrate.model.global_sets import constraints_value
from migrate.model.native import CONSTRAINTS_KEY, NativeFunctions
from migrate.model.plan import FAMILY_CLAIM, KERNEL, OPINFO, SOURCES, Plan, Variable
from migrate.model.promotion import counts_by_kind
from migrate.model.verdict import ACCEPTED, DTYPE_ARGUMENT, PROBE_CALL, PROMOTION_CALL, REJECTED, SCHEMA_CALL, VERDICTS
from migrate.write.native_functions import KEPT, UNCHANGED, WRITTEN, YamlResult

if TYPE_CHECKING:
    from migrate.evidence.align import RuntimeEvidenceSummary
    from migrate.evidence.autocast.policies import AutocastSummary
    from migrate.evidence.gather import OpInfoSummary
    from migrate.evidence.probe.host_paths import HostPathsSummary
    from migrate.evidence.recording import RecordingsSummary
    from migrate.evidence.models.source import ModelsSummary
    from migrate.pipeline.plan_summary import ProbeSummary, ValuesSummary, VerdictSummary
    from migrate.write.torchlib.rewrite import TorchlibSummary


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


@dataclass(frozen=True)
class OverloadsSummary:
    """The overloads in scope, and what the writer did with them."""

    in_scope: int
    constrained: int
    unchanged: int
    with_conflicts: int

    def to_json(self) -> dict[str, int]:
        skipped = self.in_scope - self.constrained - self.unchanged
        return {"in_scope": self.in_scope, "constrained": self.constrained, "unchanged": self.unchanged, "skipped": skipped, "with_conflicts": self.with_conflicts}

    def lines(self) -> list[str]:
        o = self.to_json()
        return [f"overloads: {o['constrained']} constrained, {o['unchanged']} unchanged, {o['skipped']} skipped, {o['with_conflicts']} with conflicts (of {o['in_scope']})"]


@dataclass(frozen=True)
class SourcesSummary:
    """Per source, the planned overloads one of whose variables it speaks for (the summary's ``by_source``)."""

    overloads: dict[str, int]

    def to_json(self) -> dict[str, int]:
        return dict(self.overloads)

    def lines(self) -> list[str]:
        return ["by source: " + (", ".join(f"{s} {n}" for s, n in self.overloads.items()) or "none")]


@dataclass(frozen=True)
class CoverageSummary:
    """How much of the written yaml is typed: entries with a tensor slot, and tensor slots; the untyped entries by reason."""

    entries_with_tensor_slots: int
    entries_typed: int
    tensor_slots: int
    tensor_slots_typed: int
    untyped: dict[str, tuple[str, ...]]  # per reason (UNTYPED_REASONS), in file order
    entries_with_cpu_kernel: int = 0  # entries with a tensor slot and a kernel a CPU call reaches: what CPU evidence can type
    entries_with_cpu_kernel_typed: int = 0
    last_refusal: dict[str, str] = field(default_factory=dict)  # untyped with a CPU kernel: ATen's last refusal (migrate.evidence.untyped)
    cuda_claims: dict[str, list[str]] = field(default_factory=dict)  # untyped without one: the dtypes OpInfo claims on CUDA

    def to_json(self) -> dict[str, Any]:
        entries, slots = self.entries_with_tensor_slots, self.tensor_slots
        found = {
            "entries_with_tensor_slots": entries,
            "entries_typed": self.entries_typed,
            "entry_share": round(self.entries_typed / entries, 4) if entries else 0.0,
            "tensor_slots": slots,
            "tensor_slots_typed": self.tensor_slots_typed,
            "slot_share": round(self.tensor_slots_typed / slots, 4) if slots else 0.0,
            "entries_with_cpu_kernel": self.entries_with_cpu_kernel,
            "entries_with_cpu_kernel_typed": self.entries_with_cpu_kernel_typed,
            "cpu_kernel_entry_share": round(self.entries_with_cpu_kernel_typed / cpu, 4) if (cpu := self.entries_with_cpu_kernel) else 0.0,
            "untyped_by_reason": {reason: len(names) for reason, names in self.untyped.items()},
            "untyped": {reason: list(names) for reason, names in self.untyped.items()},
        }
        if self.last_refusal:
            found["untyped_last_refusal"] = dict(self.last_refusal)
        if self.cuda_claims:
            found["untyped_cuda_claims"] = {name: list(dtypes) for name, dtypes in self.cuda_claims.items()}
        return found

    def lines(self) -> list[str]:
        c = self.to_json()
        return [
            f"coverage of the written yaml: {c['entries_typed']} of {c['entries_with_tensor_slots']} entries with tensor slots "
            f"({c['entry_share']:.1%}; {c['entries_with_cpu_kernel_typed']} of {c['entries_with_cpu_kernel']} with a CPU kernel, "
            f"{c['cpu_kernel_entry_share']:.1%}), {c['tensor_slots_typed']} of {c['tensor_slots']} tensor slots ({c['slot_share']:.1%})",
            "untyped entries by reason: " + ", ".join(f"{reason} {n}" for reason, n in c["untyped_by_reason"].items()) + " (each listed in --report)",
        ]


def coverage_summary(native: NativeFunctions, plan: Plan, result: YamlResult, observed: frozenset[str]) -> CoverageSummary:
    """How much of the written yaml is typed; the untyped entries by reason (``untyped_reasons``; without samples,
    as when a --plan is applied, none counts as observed).

    Computed from the input and what the writer did to it, without reading the output again.
    """
    written = {o.name for o in result.outcomes if o.status == WRITTEN}
    planned = {o.name: o for o in plan.overloads if o.name in written}
    with_slots = [e for e in native.entries if e.schema.tensor_slots]
    typed_entries = typed_slots = 0
    typed = set()
    for entry in with_slots:
        binds = [v.binds for v in planned[entry.name].variables] if entry.name in planned else list(entry.schema.variables().values())
        typed_entries += bool(binds)
        typed_slots += sum(len(b) for b in binds)
        if binds:
            typed.add(entry.name)
    slots = sum(len(e.schema.tensor_slots) for e in with_slots)
    on_cpu = [e.name for e in with_slots if native.has_cpu_kernel(e)]
    untyped = untyped_reasons(native, typed, observed)
    return CoverageSummary(len(with_slots), typed_entries, slots, typed_slots, untyped, len(on_cpu), len(typed.intersection(on_cpu)))


@dataclass(frozen=True)
class SpellingSummary:
    """How the written yaml spells its variables: by a set's name (a list that spells no dtype out, ``[TAny, dtype]``,
    counts so) or as an inline list; line lengths; the file's growth."""

    variables_written: int
    variables_named: int
    global_sets_used: int
    constraints_lines: int
    longest_constraints_line: int
    yaml_growth: float

    def to_json(self) -> dict[str, int | float]:
        return {
            "variables_written": self.variables_written,
            "variables_named": self.variables_named,
            "named_share": round(self.variables_named / self.variables_written, 4) if self.variables_written else 0.0,
            "global_sets_used": self.global_sets_used,
            "constraints_lines": self.constraints_lines,
            "longest_constraints_line": self.longest_constraints_line,
            "yaml_growth": self.yaml_growth,
        }

    def lines(self) -> list[str]:
        s = self.to_json()
        return [
            f"spelling: {s['variables_named']} of {s['variables_written']} variables by a set name "
            f"({s['named_share']:.1%}), {s['global_sets_used']} global sets; {s['constraints_lines']} "
            f"type_constraints lines, the longest {s['longest_constraints_line']} characters; yaml {s['yaml_growth']:+.1%}"
        ]


def spelling_summary(native: NativeFunctions, plan: Plan, result: YamlResult) -> SpellingSummary:
    """How the written yaml spells its variables, read from the plan and what the writer wrote."""
    written = {o.name for o in result.outcomes if o.status == WRITTEN}
    set_names = []  # per written variable: the global set it is spelled by, or None for an inline list
    for overload in plan.overloads:
        taken = {v.name for v in overload.variables} | {v.argument.name for v in overload.variables if v.argument is not None}
        for variable in overload.variables if overload.name in written else ():
            value = constraints_value(variable, result.sets, taken)
            set_names.append(variable.name if value is None else _listed_set(value, result.sets))
    named = [n for n in set_names if n is not None]
    lines = [len(line) for line in result.native_functions.decode().splitlines() if line.lstrip().startswith(CONSTRAINTS_KEY + ":")]
    growth = round((len(result.native_functions) - len(native.data)) / len(native.data), 4)
    return SpellingSummary(len(set_names), len(named), len(set(named) - {""}), len(lines), max(lines, default=0), growth)


def _listed_set(value: str, sets) -> str | None:
    """The set name a value spells a variable by: the name; a list's global set (``[TAny, dtype]``), or '' for a list
    of no dtype or one (``[dtype]``, ``[torch.float32, input.dtype]``: a one-dtype set's name would say no more); None
    for dtypes written out and for a PyTorch spelling (no set name)."""
    if not value.startswith("["):
        return value if value in sets else None
    items = value.strip("[]").split(", ")
    spelled = [item for item in items if item.startswith(PREFIX) or "(" in item]
    return next((item for item in items if item in sets), None if len(spelled) > 1 or "(" in value else "")


@dataclass(frozen=True)
class PromotionSummary:
    """The written yaml's ``type_promotion:`` lines by kind, and how many the run wrote or kept hand-written."""

    lines_by_kind: dict[str, int]
    written: int
    kept: int

    def to_json(self) -> dict[str, Any]:
        return {"lines_by_kind": dict(self.lines_by_kind), "written": self.written, "kept": self.kept}

    def lines(self) -> list[str]:
        by_kind = ", ".join(f"{kind} {n}" for kind, n in self.lines_by_kind.items()) or "none"
        return [f"type_promotion: {sum(self.lines_by_kind.values())} lines ({by_kind}); {self.written} written, {self.kept} hand-written kept"]


# Where a CPU verdict was observed, most direct first: the kind of call its evidence was seen on.
OPINFO_SAMPLE = "OpInfo sample"  # an OpInfo sample's call, as recorded
KERNEL_ON_META = "kernel on meta"  # a composite kernel that reads only metadata, run on meta tensors
DERIVED = "derived"  # no call at these slots: a sibling's, an alias's verdict, or a rule's (a promotion's real counterparts)
WHERE_OBSERVED = (OPINFO_SAMPLE, PROBE_CALL, SCHEMA_CALL, DTYPE_ARGUMENT, PROMOTION_CALL, KERNEL_ON_META, DERIVED)

# A CUDA verdict without a recording: what the CUDA set rests on at that variable.
CLAIMED_FOR_CUDA = "claimed"  # in the set OpInfo's CUDA claims state
RECORDED = "recorded"  # in the set a recording made on the device states
AS_THE_UNION = "as the union"  # no set is stated for CUDA: the claims agree with CPU's, or there are none
OUTSIDE = "outside its set"  # in neither CUDA's stated set nor the union: nothing ran it there


@dataclass(frozen=True)
class BackendsSummary:
    """The written ``dispatch_dtypes:`` lines, the (variable, dtype) pairs one backend's set holds and the other's
    lacks, with what each backend's set rests on, and the verdicts counted per backend: CPU's by where they were
    observed, CUDA's by what its set rests on."""

    entries: int  # entries with a dispatch_dtypes line
    by_key: dict[str, int]  # entries stating a set for that dispatch key
    only: dict[str, int]  # (variable, dtype) pairs in that backend's set alone
    basis: dict[str, str]  # what each backend's set rests on
    verdicts: dict[str, dict[str, int]] = field(default_factory=dict)  # per dispatch key, (variable, dtype) pairs by verdict
    observed_at: dict[str, dict[str, int]] = field(default_factory=dict)  # CPU's accepted and rejected pairs by where observed
    family_claims: tuple[int, int] = (0, 0)  # siblings that took their functional's claims for CUDA, and their (variable, dtype) pairs
    families: tuple[int, int] = (0, 0)  # structured_delegate families of the file, and their members
    no_kernel: int = 0  # entries whose CUDA set is empty: their dispatch: gives CUDA no kernel

    def to_json(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "by_key": dict(self.by_key),
            "only": dict(self.only),
            "from": dict(self.basis),
            "verdicts": {key: dict(counts) for key, counts in self.verdicts.items()},
            "observed_at": {verdict: dict(counts) for verdict, counts in self.observed_at.items()},
            "family_claims": {"overloads": self.family_claims[0], "pairs": self.family_claims[1]},
            "families": {"structured_delegate": self.families[0], "members": self.families[1]},
            "no_kernel": {"CUDA": self.no_kernel},
        }

    def lines(self) -> list[str]:
        keys = ", ".join(f"{key} {n}" for key, n in self.by_key.items()) or "none"
        only = ", ".join(f"{key} only {n}" for key, n in self.only.items())
        basis = ", ".join(f"{key.lower()}: {basis}" for key, basis in self.basis.items())
        lines = [f"{BACKENDS_KEY}: {self.entries} entries state sets per backend ({keys}); (variable, dtype) pairs {only}; {basis} (a lower bound)"]
        siblings, pairs = self.family_claims
        lines.append(
            f"kernel families: {self.families[0]} structured_delegate families ({self.families[1]} overloads); {siblings} in-place and "
            f"out= overloads take their functional's claims for CUDA ({pairs} (variable, dtype) pairs); {self.no_kernel} entries "
            "state no CUDA dtype: their dispatch: gives CUDA no kernel"
        )
        for key, counts in self.verdicts.items():
            lines.append(f"verdicts on {key}: " + ", ".join(f"{verdict} {n}" for verdict, n in counts.items()) + " (per variable and dtype)")
        for verdict, counts in ((v, c) for v, c in self.observed_at.items() if any(c.values())):
            lines.append(f"CPU {verdict} verdicts by where observed: " + ", ".join(f"{where} {n}" for where, n in counts.items() if n))
        return lines


def _where_observed(variable: Variable) -> dict[tuple[str, DType], str]:
    """Per (outcome, dtype) the variable's evidence shows, the most direct kind of call (``WHERE_OBSERVED``) showing it."""
    found: dict[tuple[str, DType], set[str]] = {}
    for evidence in variable.evidence:
        if evidence.verdict is not None:
            where = evidence.verdict.site.kind
        else:
            where = {OPINFO: OPINFO_SAMPLE, KERNEL: KERNEL_ON_META}.get(evidence.source, "")
        for dtype in evidence.dtypes if where else ():
            found.setdefault((evidence.outcome, dtype), set()).add(where)
    return {key: next((w for w in WHERE_OBSERVED if w in kinds), DERIVED) for key, kinds in found.items()}


def backends_summary(plan: Plan, native_functions: bytes, native: NativeFunctions | None = None) -> BackendsSummary:
    """Counted from the written yaml's lines and the plan's sets per backend and verdicts (``native``: the file's
    structured_delegate families too)."""
    by_key: dict[str, int] = dict.fromkeys(BACKEND_KEYS, 0)
    entries = 0
    for line in native_functions.decode("utf-8").splitlines():
        if line.lstrip().startswith(BACKENDS_KEY + ":"):
            entries += 1
            for key in BACKEND_KEYS:
                by_key[key] += f"{key}: {{" in line
    only = dict.fromkeys(BACKEND_KEYS, 0)
    for variable in (v for o in plan.overloads for v in o.variables if v.backends):
        cpu, cuda = set(variable.on("CPU")), set(variable.on("CUDA"))
        only["CPU"] += len(cpu - cuda)
        only["CUDA"] += len(cuda - cpu)
    cpu_verdicts: Counter[str] = Counter()
    cuda_verdicts: Counter[str] = Counter()
    observed_at = {outcome: Counter[str]() for outcome in (ACCEPTED, REJECTED)}
    for variable in (v for o in plan.overloads for v in o.variables if v.verdicts is not None):
        cuda = next((b for b in variable.backends if b.key == "CUDA"), None)
        where = _where_observed(variable)
        for dtype in TENSOR_DTYPES:
            verdict = variable.verdicts.of(dtype)
            cpu_verdicts[verdict] += 1
            if verdict in observed_at:
                observed_at[verdict][where.get((verdict, dtype), DERIVED)] += 1
            if cuda is None:
                cuda_verdicts[AS_THE_UNION if dtype in variable.dtypes else OUTSIDE] += 1
            else:
                cuda_verdicts[OUTSIDE if dtype not in cuda.dtypes else CLAIMED_FOR_CUDA if cuda.basis == CLAIMED else RECORDED] += 1
    claimed = [sum(len(e.dtypes) for v in o.variables for e in v.evidence if e.provenance.startswith(FAMILY_CLAIM)) for o in plan.overloads]
    return BackendsSummary(
        entries,
        by_key,
        only,
        {"CPU": OBSERVED, "CUDA": CLAIMED},
        {"CPU": {v: cpu_verdicts[v] for v in VERDICTS}, "CUDA": {v: cuda_verdicts[v] for v in (RECORDED, CLAIMED_FOR_CUDA, AS_THE_UNION, OUTSIDE)}},
        {outcome: {where: counts[where] for where in WHERE_OBSERVED} for outcome, counts in observed_at.items()},
        (sum(1 for pairs in claimed if pairs), sum(claimed)),
        _families(native) if native is not None else (0, 0),
        sum(1 for o in plan.overloads if any(b.basis == NO_KERNEL for v in o.variables for b in v.backends)),
    )


def _families(native: NativeFunctions) -> tuple[int, int]:
    """The file's structured_delegate families (an out= kernel and the overloads delegating to it) and their members."""
    delegating: dict[str, int] = {}
    for entry in native.entries:
        delegate = native.fields(entry).get("structured_delegate")
        if isinstance(delegate, str) and delegate in native.by_name:
            delegating[delegate] = delegating.get(delegate, 0) + 1
    return len(delegating), sum(delegating.values()) + len(delegating)


@dataclass(frozen=True)
class ValidationSummary:
    """Which torchgen checked the schemas ("installed", or a source tree's), and those with type words it does not know."""

    torchgen: str
    schemas_unchecked: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"torchgen": self.torchgen, "schemas_unchecked": list(self.schemas_unchecked)}

    def lines(self) -> list[str]:
        by = "the installed torchgen" if self.torchgen == "installed" else f"the source tree's {self.torchgen}"
        return [f"validation: {by}; {len(self.schemas_unchecked)} schemas with type words it does not know were not checked"]


@dataclass(frozen=True)
class ConflictsSummary:
    """Conflicts by kind over the written overloads and global sets, and the lines of those the run must show."""

    kinds: dict[str, int]
    messages: tuple[str, ...]  # the global sets', and the last of each kept overload's

    def to_json(self) -> dict[str, int]:
        return dict(self.kinds)

    def lines(self) -> list[str]:
        counted = ["conflicts: " + ", ".join(f"{k} {n}" for k, n in self.kinds.items()) + " (each listed in --report)"] if self.kinds else []
        return counted + [f"conflict: {message}" for message in self.messages]


@dataclass(frozen=True)
class RunSummary:
    """The run in numbers: every section, in the report's order; printed in the order a reader wants them."""

    overloads: OverloadsSummary
    by_source: SourcesSummary
    conflicts: ConflictsSummary
    coverage: CoverageSummary
    spelling: SpellingSummary
    promotion: PromotionSummary
    validation: ValidationSummary
    probe: ProbeSummary
    verdicts: VerdictSummary
    opinfo: OpInfoSummary | None = None
    runtime_evidence: RuntimeEvidenceSummary | None = None
    autocast: AutocastSummary | None = None
    torchlib: TorchlibSummary | None = None
    host_paths: HostPathsSummary | None = None  # --report alone: where this host's CPU paths differ
    backends: BackendsSummary | None = None
    recordings: RecordingsSummary | None = None  # where each backend's evidence came from (--recording)
    values: ValuesSummary | None = None  # dtypes some value of a string argument refuses and another takes
    models: ModelsSummary | None = None  # the tiny models' calls (migrate.evidence.models)

    _REPORTED = ("overloads", "by_source", "conflicts", "coverage", "spelling", "promotion", "validation", "opinfo", "runtime_evidence", "autocast", "probe", "verdicts", "torchlib", "host_paths", "backends", "recordings", "values", "models")
    _PRINTED = ("overloads", "by_source", "coverage", "spelling", "promotion", "backends", "recordings", "validation", "probe", "verdicts", "values", "opinfo", "models", "runtime_evidence", "autocast", "torchlib", "host_paths", "conflicts")

    def to_json(self) -> dict[str, Any]:
        return {name: section.to_json() for name in self._REPORTED if (section := getattr(self, name)) is not None}

    _BRIEF = ("overloads", "torchlib", "conflicts")  # what an --op run prints without -v: what it changed

    def lines(self, whole: bool = True) -> list[str]:
        """The printed lines: every section, or (``whole`` False) those saying what the run changed."""
        names = self._PRINTED if whole else tuple(n for n in self._PRINTED if n in self._BRIEF)
        return [line for name in names if (section := getattr(self, name)) is not None for line in section.lines()]

    def text(self, whole: bool = True) -> str:
        return "\n".join(self.lines(whole)) + "\n"


def run_summary(native: NativeFunctions, plan: Plan, result: YamlResult, scope: int, observed: frozenset[str]) -> dict[str, Any]:
    """The sections of the summary the written yaml gives (``RunSummary``'s fields of that name)."""
    statuses = [o.status for o in result.outcomes]
    kinds: dict[str, int] = {}
    for conflict in [c for o in result.outcomes for c in o.conflicts] + list(result.global_conflicts):
        kinds[conflict.kind] = kinds.get(conflict.kind, 0) + 1
    messages = [c.message for c in result.global_conflicts]
    messages += [f"{o.name}: {c.message}" for o in result.outcomes if o.status == KEPT for c in o.conflicts[-1:]]
    sources = [{s for v in o.variables for s in v.sources} for o in plan.overloads]  # each variable's sources read once
    return {
        "overloads": OverloadsSummary(scope, statuses.count(WRITTEN), statuses.count(UNCHANGED), sum(1 for o in result.outcomes if o.conflicts)),
        "by_source": SourcesSummary({s: n for s in SOURCES if (n := sum(1 for found in sources if s in found))}),
        "conflicts": ConflictsSummary(dict(sorted(kinds.items())), tuple(messages)),
        "coverage": coverage_summary(native, plan, result, observed),
        "spelling": spelling_summary(native, plan, result),
        "promotion": PromotionSummary(
            counts_by_kind(result.native_functions),
            sum(1 for o in result.outcomes if o.promotion == WRITTEN),
            sum(1 for o in result.outcomes if o.promotion == KEPT),
        ),
        "validation": ValidationSummary("installed", tuple(sorted(native.groups.unchecked))),
        "backends": backends_summary(plan, result.native_functions, native),
    }
