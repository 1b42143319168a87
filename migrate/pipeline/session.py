"""The ``Session``: one run's inputs, cache and stages, each computed once, on first use.

A stage reads its inputs from the session and its cached result from the session's
``StageCache`` (only under ``--cache-dir``, or the default cache folder): the yaml's entries
and their validation, the torchlib scan, the OpInfo sweep and what is derived from it, the
inferred plan, the torchlib rewrite. ``migrate`` runs them in order and returns what to
write, with the summary; the caller decides whether to write, diff or check.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from migrate.audit import autocast as autocast_audit
from migrate.audit.export import ExportCheck, gap_statuses, gap_summary, missing as provisioning_list, missing_text, reached_calls, report_json, rewrite_statuses, run_export_check, table
from migrate.cache import StageCache
from migrate.check.torchgen import validate_with_tree_torchgen
from migrate.errors import InputError
from migrate.evidence.align import RuntimeEvidenceSummary
from migrate.evidence.autocast.policies import autocast_dtypes
from migrate.evidence.derived import SweepState, sweep_state, sweep_summary, with_models
from migrate.evidence.gather import EVIDENCE, RUNTIME_EVIDENCE, OverloadEvidence, Sources, gather, overload_evidence
from migrate.evidence.models import source as models_source
from migrate.evidence.models.source import ModelsEvidence, ModelsSummary
from migrate.evidence.opinfo.sweep import SweepCache
from migrate.evidence.probe import dtype_arguments
from migrate.evidence.probe.host_paths import host_paths
from migrate.evidence.recording import (
    Recording,
    RecordingsSummary,
    Seeded,
    holds_facts,
    make_recording,
    read_recording,
    recording_json,
    refreshed,
    rerecord_sample,
    seed,
    stale_calls,
)
from migrate.evidence.sites import WORKERS, torch_release
from migrate.evidence.torch_stages import torch_stages_beside
from migrate.evidence.untyped import cuda_claims, last_refusals
from migrate.infer import Inference, infer, verdict_plan
from migrate.infer.naming import spelling
from migrate.model.autocast import annotated_counts
from migrate.model.backends import CLAIMED
from migrate.model.declared import check_declarations, declared_variables
from migrate.model.dtypes import DType
from migrate.model.global_sets import GlobalSetsFile, sets_used
from migrate.model.names import OverloadName
from migrate.model.native import NativeFunctions, installed_native_functions, native_of, read_native, sibling_constraints_path, source_tree_root
from migrate.model.plan import GlobalSet, OverloadPlan, Plan, plan_text
from migrate.pipeline.plan_summary import ValuesSummary, dtype_verdict_summary, probe_summary
from migrate.pipeline.summary import NO_CPU_KERNEL, CoverageSummary, RunSummary, ValidationSummary, run_summary
from migrate.runtime.processes import forked
from migrate.runtime.runs import CatalogueEntry, OpInfoId, OpInfoRun
from migrate.runtime.torch_private import CURRENT_GPU_TEXT, torch_version
from migrate.torchlib_source.resolve import TorchlibEvidence, installed_torchlib, scan_torchlib
from migrate.write.continued import EarlierOutput, carried_overloads, carried_sets, changed_functions, merged_native, read_earlier
from migrate.write.native_functions import KEPT, YamlResult, apply_plan, lower
from migrate.write.outputs import Output, checkout_root, commit, is_installed_path, read_or_none, replacing
from migrate.write.torchlib.rewrite import TorchlibSummary, rewrite_torchlib, torchlib_outputs, written_form


@dataclass(frozen=True)
class Options:
    """What a command was asked: the inputs, the overloads, the evidence, the workers and the cache."""

    native_functions: Path | None = None  # default: the installed torch's packaged yaml
    torchlib: Path | None = None  # default: the installed onnxscript's torch_lib
    ops: tuple[str, ...] = ()  # --op spellings; empty: every overload
    evidence: tuple[str, ...] = EVIDENCE
    jobs: int | None = None
    cache_dir: Path | None = None
    refresh: bool = False  # run the OpInfo samples (and the autocast observations) again
    autocast_source: Path | None = None  # a source tree whose autocast_mode.cpp/.h give the policies
    recordings: tuple[Path, ...] = ()  # --recording: a backend's evidence recorded on its device (``record``)


@dataclass(frozen=True)
class RunRequest:
    """What a run is asked to do with its inputs: which plan to apply, what to write and where, what to report."""

    plan: Path | None = None  # apply this plan (JSON, as --report writes it) instead of inferring one
    overwrite: bool = False  # replace hand-written constraints and global sets
    yaml_only: bool = False  # leave torchlib as it is
    out: Path | None = None  # write the outputs under this folder instead of in place
    report: Path | None = None  # write the applied plan, its evidence and the summary here as JSON
    export_check: bool = False  # check torchlib's exports first, for the rewrite


@dataclass(frozen=True)
class Finding:
    """What an audit command prints, and whether it found something that fails the command (verify's violations)."""

    text: str
    failed: bool = False


@dataclass(frozen=True)
class Migration:
    """What a run would write, and what it says about it; ``report`` is the ``--report`` file, written with the
    outputs (all or none), and alone under ``--dry-run`` and ``--check``, whose review it serves."""

    outputs: tuple[Output, ...]
    summary: RunSummary
    report: Output | None = None

    @property
    def changed(self) -> bool:
        return any(o.changed for o in self.outputs)


@dataclass(frozen=True)
class Targets:
    """Where the outputs go, and how the diff names every output."""

    out: Path | None

    def display(self, source: Path, name_under_out: str) -> str:
        """The diff path: the output's name under --out; else, for a file in a git checkout, its path in that checkout
        (``git apply`` at the checkout's root takes it), else relative to the current folder when the file is in it."""
        resolved = source.resolve()
        if self.out is not None or is_installed_path(resolved):
            return name_under_out
        root = checkout_root(resolved)
        if root is not None:
            return resolved.relative_to(root).as_posix()
        cwd = Path.cwd().resolve()
        return resolved.relative_to(cwd).as_posix() if resolved.is_relative_to(cwd) else name_under_out

    def output(self, source: Path, before: bytes | None, after: bytes) -> Output:
        """The output of an input file: in place, else under --out compared with what the folder holds."""
        if self.out is None:
            return Output(self.display(source, source.name), source, source, before, after)
        target = self.out / source.name
        return Output(source.name, target, target, read_or_none(target), after)


@dataclass
class Applied:
    """The plan applied to the yaml: the writer's result, the summary's sections the plan and the written yaml give,
    and what of the plan torchlib's rewrite reads (``written_plan``, computed once) with its form (``written``, the
    rewrite cache's key)."""

    plan: Plan
    result: YamlResult
    sections: dict
    written: str = ""

    @functools.cached_property
    def written_plan(self) -> Plan:
        """The plan's typed overloads but those whose hand-written constraints the yaml kept."""
        kept = {o.name for o in self.result.outcomes if o.status == KEPT}
        overloads = tuple(o for o in self.plan.overloads if o.name not in kept and o.variables)
        return replace(self.plan, global_sets=sets_used(self.plan.global_sets, self.plan.overloads, backends=False), overloads=overloads)


def _merged_report(path: Path, ours: dict, selected: set[str]) -> dict:
    """The earlier report at ``path`` with the selected overloads' entries replaced by this run's (in place, new ones
    last) and this run's sets added; the summary is this run's, scoped to the selection (``scope``) as an ``--op``
    run's is."""
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the earlier report to merge into it: {exc}", path) from exc
    if not isinstance(earlier, dict) or earlier.get("version") != ours["version"] or not isinstance(earlier.get("overloads"), list):
        raise InputError(f"not a report of format version {ours['version']} to merge into; remove it, or run without --op", path)
    new = {o["name"]: o for o in ours["overloads"]}
    overloads = []
    for overload in earlier["overloads"]:
        name = overload.get("name") if isinstance(overload, dict) else None
        if name in new:
            overloads.append(new.pop(name))
        elif name not in selected:
            overloads.append(overload)
    sets = {g["name"]: g for g in earlier.get("global_sets", ())} | {g["name"]: g for g in ours["global_sets"]}
    summary = {**ours["summary"], "scope": sorted(selected)}
    return {**ours, "summary": summary, "global_sets": list(sets.values()), "overloads": overloads + list(new.values())}


def _say(message: str) -> None:
    """A cold stage that needs workers says so, on a terminal, as the progress bars show there."""
    if sys.stderr.isatty():
        sys.stderr.write(f"dtype-migrate: {message}\n")


class Session:
    """One run: made once from the options; every stage computed on first use and cached by content."""

    def __init__(self, options: Options):
        self.options = options
        self.cache = StageCache.at(options.cache_dir, progress=_say)
        self._swept = threading.Event()  # set once the sweep is done (migrate.evidence.torch_stages waits for it)
        self._seeding: Callable[[], Seeded] | None = None  # the facts being filled beside the yaml's and torchlib's reading

    # --- inputs -------------------------------------------------------------------------------------

    @functools.cached_property
    def native_path(self) -> Path:
        return self.options.native_functions or installed_native_functions()

    @functools.cached_property
    def torchlib_root(self) -> Path:
        return self.options.torchlib or installed_torchlib()

    @functools.cached_property
    def native(self) -> NativeFunctions:
        """The yaml, its entries scanned once per content (``native`` stage)."""
        return self.load_native(self.native_path)

    def load_native(self, path: Path) -> NativeFunctions:
        return read_native(path, self.cache)

    @functools.cached_property
    def plain_native(self) -> NativeFunctions:
        """The yaml as it lowers (every declaration gone): what the evidence is gathered and inferred against, since a
        plan follows from the schemas and the evidence, never from what the file declares. An earlier run's output, or
        a file with a hand-written set, thus reads the plans its plain file's run cached (the ``plans`` stage's key)."""
        native = self.native
        plain = lower(native).encode("utf-8")
        if plain == native.data:
            return native
        return native_of(plain, native.path, self.cache)

    @functools.cached_property
    def sets_file(self) -> GlobalSetsFile:
        return GlobalSetsFile.load(sibling_constraints_path(self.native_path))

    @functools.cached_property
    def selected(self) -> set[str] | None:
        """The overloads --op names (None: every overload)."""
        return set(self.native.overloads_named(list(self.options.ops))) if self.options.ops else None

    @functools.cached_property
    def source_tree(self) -> Path | None:
        return source_tree_root(self.native_path)

    def validate(self) -> None:
        """Whatever --op selects, every entry's declaration resolved against the sets of type_constraints.yaml
        (``declarations`` stage, by both files' contents); without --op, every entry's yaml and schema checked
        (``validated`` stage: a file checked before is not checked again); in a source tree, every schema by the
        tree's own torchgen too."""
        self.check_declarations()
        if self.selected is None:
            stage = self.cache.stage("validated")
            stored = stage.read(self.native.data, kind=tuple)
            if stored is not None:
                self.native.groups.restore(*stored)
            else:
                self.native.validate()
                stage.write(self.native.groups.state(), self.native.data)
        if self.source_tree is not None:
            validate_with_tree_torchgen(self.native, self.source_tree)

    def check_declarations(self) -> None:
        """The file refused whole when a declaration of any entry does not resolve (``migrate.model.declared``)."""
        sets_file = self.sets_file

        def check() -> bool:
            check_declarations(self.native, sets_file.by_name)
            return True

        stage = self.cache.stage("declarations")
        stage.get((self.native.data, b"" if sets_file.data is None else sets_file.data), check, kind=bool)

    # --- evidence -----------------------------------------------------------------------------------

    @functools.cached_property
    def torchlib(self) -> TorchlibEvidence:
        """torchlib's annotations, scanned statically; unreadable modules are warnings."""
        root = self.torchlib_root
        if not (root / "tensor_typing.py").is_file():
            raise InputError("not onnxscript's torch_lib: it has no tensor_typing.py; nothing was written", root)
        evidence = scan_torchlib(root, self.plain_native, self.cache)
        if not evidence.registrations:
            raise InputError("not onnxscript's torch_lib: no module registers an ATen overload with @torch_op; nothing was written", root)
        for error in evidence.errors:
            sys.stderr.write(f"dtype-migrate: warning: {error}\n")
        return evidence

    @functools.cached_property
    def facts(self) -> Seeded:
        """The installed torch release's facts (every ATen call's answer, ``migrate.runtime.recorded``) where the cache
        has none: from the shipped recording of that release, else made by the stages as they are read, the run saying
        why in one line; with ``--refresh``, every call made again."""
        if self.options.refresh:
            sys.stderr.write(f"dtype-migrate: {refreshed(self.cache)}\n")
            return Seeded()
        found = self._seeding() if self._seeding is not None else seed(self.cache)
        if found.why:
            sys.stderr.write(f"dtype-migrate: {found.why}\n")
        elif found.replaced:
            sys.stderr.write(f"dtype-migrate: the shipped recording {found.source} changed since this cache was filled from it: its facts read again\n")
        elif found.source:
            _say(f"read torch's facts from the shipped recording {found.source}")
        return found

    @functools.cached_property
    def sweep(self) -> SweepState | None:
        """The OpInfo sweep's cache, filled with what it lacks (for --op: the OpInfos reaching those overloads);
        None when no runtime evidence is asked for."""
        if not RUNTIME_EVIDENCE & set(self.options.evidence):
            return None
        self.facts
        state = sweep_state(self.cache, self.options.jobs, self.options.refresh, self.selected)
        self._swept.set()
        return with_models(state, self.models)

    @functools.cached_property
    def models(self) -> ModelsEvidence | None:
        """The tiny models' runs (``migrate.evidence.models``) when asked for and transformers is installed; without it,
        the run says so on one line."""
        if "models" not in self.options.evidence:
            return None
        self.facts
        found = models_source.load_models(self.cache, self.options.jobs)
        if found is None:
            sys.stderr.write(models_source.unavailable() + "\n")
        return found

    def cached_runs(self) -> tuple[tuple[CatalogueEntry, ...], dict[OpInfoId, OpInfoRun]]:
        """The OpInfo catalogue and the runs the sweep's cache holds (nothing is run)."""
        self.facts
        sweep = SweepCache.of(self.cache)
        catalogue = sweep.catalogue()
        return catalogue, sweep.runs(catalogue)

    def opinfos_reaching(self, selected: set[str] | None) -> tuple[CatalogueEntry, ...]:
        """OpInfos about the selected operators by name, or whose cached run called a selected overload (None: all)."""
        if selected is None:  # the catalogue alone: no run file need be read
            self.facts
            return SweepCache.of(self.cache).catalogue()
        names = [OverloadName.parse(name) for name in selected]
        families = {name.operator for name in names}
        recorded = {name.qualified for name in names}  # the sweep's spelling
        catalogue, runs = self.cached_runs()
        return tuple(
            e for e in catalogue if families & set(e.operator_names) or (e.opinfo in runs and runs[e.opinfo].overloads & recorded)
        )

    @functools.cached_property
    def sources(self) -> Sources:
        """Every source's evidence the options ask for (the runtime ones gathered only when the plan is inferred)."""
        return self._gathered(self.sweep)

    def _gathered(self, sweep: SweepState | None) -> Sources:
        options = self.options
        if "autocast" in options.evidence:
            self.facts
        recordings = self.recordings
        if recordings and sweep is None:
            raise InputError(f"--recording needs the runtime evidence (--evidence with one of {', '.join(sorted(RUNTIME_EVIDENCE))})", recordings[0][0])
        return gather(self.plain_native, self.sets_file, self.torchlib, sweep, self.cache, options.evidence, options.autocast_source, recordings)

    @functools.cached_property
    def recordings(self) -> tuple[tuple[str, Recording, str], ...]:
        """Each ``--recording``, read and checked (an unreadable file, or one of another format version, is refused)."""
        return tuple((str(path), *read_recording(path)) for path in self.options.recordings)

    def record(self, device: str) -> Recording:
        """The sweep's samples and probes made on ``device`` (for --op: the OpInfos reaching those overloads)."""
        self.facts
        installed = self.load_native(installed_native_functions())
        schemas = {name: str(entry.schema) for name, entry in installed.by_name.items()}
        ops = sorted(self.selected) if self.selected is not None else None
        return make_recording(self.cache, device, schemas, self.options.jobs, ops)

    def stale_calls(self, path: Path) -> list[str]:
        """The freshness gate of the CPU recording in ``path``: its fixed sample re-recorded here, each differing OpInfo,
        model or autocast key with its first differing call ([] when fresh)."""
        obj, _ = recording_json(path)
        if obj["device"] != "cpu" or "stages" not in obj:
            raise InputError("not a CPU recording of a release's facts (record --device cpu, without --op)", path)
        return stale_calls(obj, rerecord_sample(self.options.jobs))

    def evidence_of(self, overloads: list[str]) -> dict[str, OverloadEvidence]:
        """What each source a run infers from says about each of these overloads (``show``): gathered as a run gathers
        them, over the OpInfo and model runs the cache holds (none is run here)."""
        sweep = None
        if RUNTIME_EVIDENCE & set(self.options.evidence):
            self.facts
            models = models_source.stored_models(self.cache) if "models" in self.options.evidence else None
            sweep = with_models(sweep_state(self.cache, self.options.jobs, refresh=False, only=None, run=False), models)
        return overload_evidence(self._gathered(sweep).complete(), overloads, sweep.present if sweep is not None else 0, self.native.by_name)

    @functools.cached_property
    def set_name(self) -> Callable[[tuple[DType, ...]], str]:
        """A dtype set's name as the run writes it (``migrate.infer.naming.spelling``)."""
        return spelling(self.sets_file.sets, self.torchlib.global_sets)

    # --- inference ----------------------------------------------------------------------------------

    @functools.cached_property
    def inference(self) -> Inference:
        """The inferred plan of the selected overloads (``plans`` stage), with its autocast policies: the one entry into
        ``migrate.infer`` of a run."""
        return infer(self.plain_native, self.sources, self.cache.stage("plans"), self.selected)

    def verdicts_of(self, overload: str, evidence: OverloadEvidence) -> OverloadPlan:
        """The overload's own runtime evidence merged, with each dtype's verdict (``show``)."""
        entry = self.native.by_name.get(overload)
        return verdict_plan(overload, evidence.opinfo, evidence.probe, entry is None or not entry.schema.numbers_may_set_returns)

    # --- the run ------------------------------------------------------------------------------------

    def _untyped_details(self, coverage: CoverageSummary) -> CoverageSummary:
        """The untyped entries' last refusals (those with a CPU kernel) and CUDA claims (the rest): read from every
        schema call's cached report, so worked out only for ``--report``, the one output that lists them."""
        judgeable = [name for reason, names in coverage.untyped.items() if reason != NO_CPU_KERNEL for name in names]
        refusals = last_refusals(judgeable, self.cache, dtype_arguments.STAGE.cached(self.cache, []))
        claims = cuda_claims(coverage.untyped.get(NO_CPU_KERNEL, ()), self.sweep.sweep.catalogue())
        return replace(coverage, last_refusal=refusals, cuda_claims=claims)

    def _torch_stages_beside(self) -> contextlib.AbstractContextManager[None]:
        """On a cold cache, the stages that need only torch made in a thread beside the scan and the sweep
        (``migrate.evidence.torch_stages``)."""
        evidence = set(self.options.evidence)
        if not RUNTIME_EVIDENCE & evidence:
            return contextlib.nullcontext()
        self.facts
        autocast = "autocast" in evidence
        return torch_stages_beside(self.cache, self.options.jobs, "probe" in evidence, autocast, self._swept, "models" in evidence)

    def _host_paths_beside(self) -> None:
        """The report's host-path calls (``migrate.evidence.probe.host_paths``) made in one worker while the parent derives
        and infers, which keep one core busy; the report reads them from the stage, waiting where they are still made
        (``migrate.cache.Stage.get``). What fails here the report makes again and says."""

        def make() -> None:
            with contextlib.suppress(Exception):
                host_paths(self.cache, 1)

        self.facts  # filled here, before the thread reads them
        threading.Thread(target=make, name="host paths", daemon=True).start()

    def migrate(self, request: RunRequest = RunRequest()) -> Migration:
        """The outputs of applying the plan (the request's, else the inferred one) to the yaml and torchlib, with
        the summary; the request's ``report`` receives the applied plan with its evidence and the summary as JSON."""
        plan_path = request.plan
        if plan_path is None and RUNTIME_EVIDENCE & set(self.options.evidence) and not (self.options.refresh or holds_facts(self.cache)):
            self._seeding = forked(functools.partial(seed, self.cache))  # seconds of JSON, beside the yaml's and torchlib's
        self.validate()
        earlier = self._earlier(request)  # before any evidence: a folder the run cannot continue from costs nothing
        given = None  # the --plan file's text
        if plan_path is not None:
            self.torchlib  # scanned (and its warnings printed) before any evidence is gathered
            given = Plan.text_of(plan_path)
            plan, observed, evidence_summary = Plan.parse(given, plan_path), frozenset(), {}
            pool = plan.global_sets
        else:
            if request.report is not None and "probe" in self.options.evidence and RUNTIME_EVIDENCE & set(self.options.evidence):
                self._host_paths_beside()
            with self._torch_stages_beside():
                self.torchlib
                inference = self._whole_inference() if earlier is not None else self.inference
                plan, observed, evidence_summary = inference.plan, self.sources.observed, self._evidence_summary(inference)
            pool = inference.sets
        whole, selected = plan, self.selected
        if selected is not None:
            kept = tuple(o for o in plan.overloads if o.name in selected)
            plan = Plan(sets_used(pool, kept), kept) if earlier is not None and plan_path is None else replace(plan, overloads=kept)
        applied = self._applied(plan, observed, request.overwrite, plan_path, given)
        result, sections = applied.result, applied.sections
        native_functions, type_constraints = result.native_functions, result.type_constraints
        if earlier is not None:
            native_functions = merged_native(earlier.native, native_functions, selected)
            carried = carried_sets(earlier, selected, result.sets.values())
            type_constraints = self.sets_file.updated((*plan.global_sets, *carried), request.overwrite)[0]
        targets = Targets(request.out)
        outputs = [targets.output(self.native_path, self.native.data, native_functions)]
        if type_constraints is not None:
            outputs.append(targets.output(sibling_constraints_path(self.native_path), self.sets_file.data, type_constraints))
        summary = RunSummary(**sections, **evidence_summary)
        if request.report is not None and plan_path is None and self.sweep is not None:  # the report alone lists them
            summary = replace(summary, coverage=self._untyped_details(summary.coverage))
            if "probe" in self.options.evidence:
                summary = replace(summary, host_paths=host_paths(self.cache, self.options.jobs))
        if summary.autocast is not None:
            summary = replace(summary, autocast=replace(summary.autocast, annotated=annotated_counts(result.native_functions)))
        if self.source_tree is not None:
            summary = replace(summary, validation=ValidationSummary(str(self.source_tree / "torchgen"), ()))
        if not request.yaml_only:
            written_plan, written = applied.written_plan, applied.written
            if earlier is not None:
                written_plan, written = self._continued_plan(written_plan, earlier, whole, pool), None
            rewritten, rewrite_summary = self._torchlib_outputs(written_plan, targets, request.export_check, written, earlier)
            outputs += rewritten
            summary = replace(summary, torchlib=rewrite_summary)
        if request.report is not None:
            report = self._report(plan, result, summary.to_json(), request.export_check).to_json()
            if earlier is not None and request.report.is_file():
                report = _merged_report(request.report, report, selected)
            return Migration(tuple(outputs), summary, replacing(request.report, plan_text(report).encode()))
        return Migration(tuple(outputs), summary)

    def _earlier(self, request: RunRequest) -> EarlierOutput | None:
        """The earlier output an --op run into --out continues from (None: it starts from the inputs, as a full run
        and an --overwrite run do; a full run into the folder writes what it writes into an empty one)."""
        if request.out is None or self.selected is None or request.overwrite:
            return None
        return read_earlier(request.out, self.native, self.cache)

    def _whole_inference(self) -> Inference:
        """The plan of every overload (``plans`` stage): continuing, the others' plans are what the earlier run's
        torchlib rewrite may have applied; the run still enters ``migrate.infer`` once."""
        return infer(self.plain_native, self.sources, self.cache.stage("plans"))

    def _continued_plan(self, written_plan: Plan, earlier: EarlierOutput, whole: Plan, pool: tuple[GlobalSet, ...]) -> Plan:
        """What torchlib's rewrite applies when continuing: the selected overloads' plan, and for the others the plan
        the earlier run applied (``carried_overloads``: this run's plan of them, ``whole``, where it declares what
        the folder does), with the sets they use (from ``pool``, the sets this run named, and the folder's)."""
        named = {g.name for g in pool}
        pool = (*pool, *(g for g in earlier.sets.sets if g.name not in named))
        candidates = {o.name: o for o in whole.overloads}
        carried = carried_overloads(earlier, self.native, self.sets_file.by_name, self.selected, candidates, {g.name: g for g in pool})
        overloads = (*written_plan.overloads, *carried)
        return Plan(sets_used(pool, overloads), overloads)

    def _applied(self, plan: Plan, observed: frozenset[str], overwrite: bool, plan_path: Path | None, given: str | None) -> Applied:
        """The plan applied to the yaml, with the summary's sections that the plan and the written yaml give, and what
        of the plan torchlib's rewrite reads (``written_form``, its cache's key).

        An inferred plan is known by what it was inferred from (the plans stage's key), the autocast policies added
        to it and the overloads selected; a --plan file by its text (``given``) and the overloads selected: the
        ``applied`` stage keeps its result under those and the yaml and sets it is applied to, so a warm run reads it
        instead of writing the yaml and counting every variable's verdicts again.
        """
        selected = self.selected
        made: list[Applied] = []  # what apply made this run, its written plan computed once

        def apply() -> tuple[YamlResult, dict, str]:
            result = apply_plan(self.native, self.sets_file, plan, overwrite=overwrite, plan_path=plan_path)
            scope = len(selected) if selected is not None else len(self.native.entries)
            sections = run_summary(self.native, plan, result, scope, observed)
            sections.update(probe=probe_summary(plan), verdicts=dtype_verdict_summary(self.native, plan))
            applied = Applied(plan, result, sections)
            applied.written = written_form(applied.written_plan)
            made.append(applied)
            return result, sections, applied.written

        scope = ",".join(sorted(selected)) if selected is not None else "\0all"
        if given is not None:
            key = ("--plan", given, self.native.data, self.sets_file.data or b"", scope, str(overwrite))
        elif self.sources.key is not None:
            autocast = self.sources.autocast
            policies = repr(sorted(autocast.policies.items())) if autocast is not None else ""
            # the plans' key names the plain yaml: the declarations apply keeps or replaces are the input's own
            key = (*self.sources.key, self.native.data, policies, scope, str(overwrite))
        else:
            apply()
            return made[0]
        stored = self.cache.stage("applied").get(key, apply, kind=tuple)
        return made[0] if made else Applied(plan, *stored)

    def _evidence_summary(self, inference: Inference) -> dict:
        """What the sources and the inference say about themselves: the sweep, the runtime evidence's alignment, autocast
        (``RunSummary``'s fields of those names)."""
        sources, summary = self.sources, {}
        if sources.opinfo_summary is not None:
            summary["opinfo"] = sources.opinfo_summary
        alignment = inference.alignment
        if alignment is not None:
            summary["runtime_evidence"] = RuntimeEvidenceSummary(torch_version(), alignment)
        if sources.autocast is not None:
            summary["autocast"] = sources.autocast.summary()
        if self.sweep is not None:
            summary["recordings"] = self._recordings_summary(inference)
            summary["values"] = ValuesSummary(inference.value_refusals)
        if "models" in self.options.evidence and self.sweep is not None:
            summary["models"] = self._models_summary()
        return summary

    def _models_summary(self) -> ModelsSummary:
        """The summary's ``models`` section: the calls recorded, the overloads OpInfo's samples did not reach, what changed."""
        if self.models is None:
            return models_source.models_summary(None, (), frozenset())
        swept = sweep_summary(self.sweep)  # the small summary beside the derived plans
        return models_source.models_summary(self.models, self.native.by_name, swept.by_opinfo, swept.models_changed)

    def _recordings_summary(self, inference: Inference) -> RecordingsSummary:
        """Where each backend's evidence came from: this host's workers, OpInfo's claims, or the recordings merged."""
        origins = {"CPU": f"observed on {WORKERS}, torch {torch_release()}", "CUDA": f"{CLAIMED} {CURRENT_GPU_TEXT}, torch {torch_release()}"}
        for recording in inference.recordings:
            origins[recording.key] = f"{recording.origin} at {recording.matched} overloads, else {origins[recording.key]}"
        return RecordingsSummary(tuple(origins.items()), inference.recordings)

    def autocast_dtypes(self) -> dict[str, str]:
        """Each autocast key's lower dtype as the installed torch sets it."""
        return autocast_dtypes(self.cache)

    def _torchlib_outputs(
        self, written_plan: Plan, targets: Targets, export_check: bool, written: str | None, earlier: EarlierOutput | None
    ) -> tuple[list[Output], TorchlibSummary]:
        """torchlib rewritten to what the yaml says (hand-written constraints the run kept are not pushed into it), and,
        with ``export_check``, to what export-check's results (cached for this torch_lib, or computed first) prove.
        Without it no export result is read: the outputs depend on the inputs and options, never on what the cache holds.

        Continuing an earlier output, the rewrite also covers the functions the earlier run changed, so that they
        come out as they were."""
        only = self.selected
        declared = {o.name: o.variables for o in written_plan.overloads if only is None or o.name in only}
        exported = rewrite_statuses(declared, self.real_functions(), self.torchlib_root, self.cache, self.options.jobs) if export_check else {}
        if earlier is not None and earlier.torchlib is not None:
            changed = changed_functions(self.torchlib_root, earlier.torchlib)
            only = only | {o for o, found in self.torchlib.by_overload.items() if any((r.path, r.function) in changed for r in found)}
        rewrite = rewrite_torchlib(self.torchlib, written_plan, self.plain_native, self.cache, only=only, exported=exported, written=written)
        mirrored = torchlib_outputs(rewrite, self.torchlib.root, targets.out, mirror=targets.out is not None)
        return [replace(output, display=targets.display(output.source, output.display)) for output in mirrored], rewrite.summary()

    def _report(self, plan: Plan, result: YamlResult, summary: dict, export_check: bool) -> Plan:
        """The applied plan with the writer's conflicts added to each overload, and the summary.

        With ``export_check``, export coverage gaps that ``export-check`` results (for this torchlib) judged are
        marked confirmed or refuted, and counted in the summary.
        """
        conflicts = {o.name: o.conflicts for o in result.outcomes}
        conflicts = {o.name: conflicts.get(o.name, o.conflicts) for o in plan.overloads}
        judged = gap_statuses(conflicts, self.torchlib_root, self.cache) if export_check else {}
        overloads = tuple(
            replace(o, conflicts=tuple(replace(c, export=judged.get((o.name, i), "")) for i, c in enumerate(conflicts[o.name])))
            for o in plan.overloads
        )
        return replace(plan, overloads=overloads, summary={**summary, "export_check": gap_summary(conflicts, judged)})

    def real_functions(self) -> dict[str, tuple[str, ...]]:
        """Per overload the torchlib registers, its functions for real-valued inputs (those an annotation of it is on)."""
        return {o: tuple(r.function for r in registrations if not r.complex) for o, registrations in self.torchlib.by_overload.items()}

    def _export_check(self, refresh: bool = False) -> tuple[ExportCheck, dict[str, int] | None, dict]:
        """Real exports of every torchlib-registered overload (those selected) at each declared dtype.

        Declarations come from the yaml when it has any, else from the plan a run infers, whose
        export coverage gaps then get verdicts (counted in the second value).
        """
        registered = set(self.torchlib.by_overload)
        if self.selected is not None:
            registered &= self.selected
        native = self.native
        plan = None
        if any(entry.schema.variables() for entry in native.entries):
            by_name = self.sets_file.by_name
            declared = {name: declared_variables(native, native.by_name[name], by_name) for name in registered if name in native.by_name}
        else:
            plan = self.inference.plan
            declared = {o.name: o.variables for o in plan.overloads if o.variables}  # not the overloads of an autocast policy alone
        self.facts  # the OpInfo samples' calls the cases are made of
        result = run_export_check(declared, registered, self.torchlib_root, self.cache, self.options.jobs, refresh, functions=self.real_functions())
        if plan is None:
            return result, None, declared
        listed = {o.name: o.conflicts for o in plan.overloads if o.name in registered and o.variables}
        return result, gap_summary(listed, gap_statuses(listed, self.torchlib_root, self.cache)), declared

    def export_check(self, refresh: bool = False, missing: bool = False, report: Path | None = None) -> Finding:
        """``export-check``: the table of every case (or, with ``missing``, the provisioning list: declared dtypes no
        torchlib function exports), the export coverage gaps the cases judged, and ``report`` as JSON."""
        result, conflicts, declared = self._export_check(refresh)
        provisioning = provisioning_list(result, declared, reached_calls(declared, self.cache)) if missing else None
        text = table(result) if provisioning is None else missing_text(provisioning)
        if conflicts is not None:
            gaps = ", ".join(f"{conflicts[k]} {k}" for k in ("confirmed", "refuted", "unchecked"))
            text += f"export coverage gaps: {gaps} (of {conflicts['conflicts']})\n"
        if report is not None:
            commit([replacing(report, report_json(result, conflicts, provisioning).encode())])
        return Finding(text)

    def verify(self) -> Finding:
        """``verify``: the OpInfo samples reaching the selected overloads run under the checker the yaml declares."""
        from migrate.audit.verify import report, verify_declarations  # imports torch: off the --op fast path

        result = verify_declarations(self.native, self.selected, self.opinfos_reaching(self.selected), self.options.jobs)
        if result is None:
            selected = " for the selected overloads" if self.options.ops else ""
            return Finding(f"verify: {self.native_path} declares no type variable{selected}: nothing to check\n")
        return Finding(report(result, self.native_path), bool(result.found))

    def autocast_contradictions(self) -> Finding:
        """``verify --autocast``: where an entry's autocast policy contradicts its declared dtypes (findings, not failures)."""
        return Finding(autocast_audit.report(self.native, self.sets_file.by_name, self.autocast_dtypes(), self.selected))

    def refuse_installed(self, yaml_only: bool) -> None:
        """Installed files are never written: a run that writes them needs --out."""
        for path in (self.native_path, *(() if yaml_only else (self.torchlib_root,))):
            if is_installed_path(path):
                hint = "pass --out DIR (or --dry-run)" if path.suffix else "pass --out DIR, --torchlib DIR, or --yaml-only"
                raise InputError(f"installed files are never written: {hint}", path)
