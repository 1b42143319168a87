"""The ``Session``: one run's inputs, cache and stages, each computed once, on first use.

A stage reads its inputs from the session and its cached result from the session's
``StageCache`` (only under ``--cache-dir``, or the default cache folder): the yaml's entries
and their validation, the torchlib scan, the OpInfo sweep and what is derived from it, the
inferred plan, the torchlib rewrite. ``migrate`` runs them in order and returns what to
write, with the summary; the caller decides whether to write, diff or check.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.cache import StageCache, store
from migrate.errors import InputError
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.names import OverloadName
from migrate.model.native import NativeFunctions, installed_native_functions, scan_entries, sibling_constraints_path, source_tree_root
from migrate.model.plan import Plan
from migrate.pipeline.summary import codemod_summary, run_summary, summary_text
from migrate.write.native_functions import KEPT, YamlResult, apply_plan
from migrate.write.outputs import Output, is_installed_path

if TYPE_CHECKING:  # loaded only by the stages that need them
    from migrate.evidence.derived import SweepState
    from migrate.runtime.runs import CatalogueEntry, OpInfoId, OpInfoRun
    from migrate.audit.export import ExportCheck
    from migrate.torchlib_source.resolve import TorchlibEvidence

EVIDENCE = ("torchlib", "opinfo", "probe", "groups", "aliases", "kernel", "autocast")
_RUNTIME_EVIDENCE = frozenset({"opinfo", "probe", "aliases", "kernel"})


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


@dataclass(frozen=True)
class Migration:
    """What a run would write, and what it says about it."""

    outputs: tuple[Output, ...]
    summary: dict
    text: str  # the summary lines

    @property
    def changed(self) -> bool:
        return any(o.changed for o in self.outputs)


@dataclass(frozen=True)
class Targets:
    """Where the outputs go, and how the diff names every output."""

    out: Path | None

    def display(self, source: Path, name_under_out: str) -> str:
        """The diff path: the output's name under --out, else relative to the current folder when the file is in it."""
        resolved = source.resolve()
        cwd = Path.cwd().resolve()
        if self.out is None and resolved.is_relative_to(cwd) and not is_installed_path(resolved):
            return resolved.relative_to(cwd).as_posix()
        return name_under_out

    def output(self, source: Path, before: bytes | None, after: bytes) -> Output:
        target = self.out / source.name if self.out is not None else source
        return Output(self.display(source, source.name), source, target, before, after)


def _say(message: str) -> None:
    """A cold stage that needs workers says so, on a terminal, as the progress bars show there."""
    if sys.stderr.isatty():
        sys.stderr.write(f"dtype-migrate: {message}\n")


class Session:
    """One run: made once from the options; every stage computed on first use and cached by content."""

    def __init__(self, options: Options):
        self.options = options
        self.cache = StageCache.at(options.cache_dir, progress=_say)

    # --- inputs -------------------------------------------------------------------------------------

    @functools.cached_property
    def native_path(self) -> Path:
        return self.options.native_functions or installed_native_functions()

    @functools.cached_property
    def torchlib_root(self) -> Path:
        from migrate.torchlib_source.resolve import installed_torchlib

        return self.options.torchlib or installed_torchlib()

    @functools.cached_property
    def native(self) -> NativeFunctions:
        """The yaml, its entries scanned once per content (``native`` stage)."""
        return self.load_native(self.native_path)

    def load_native(self, path: Path) -> NativeFunctions:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path) from exc
        entries = self.cache.stage("native", "migrate.model.native").get((data,), lambda: scan_entries(data, path), list)
        return NativeFunctions.parse(data, path, entries)

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
        """Without --op, every entry's yaml and schema checked (``validated`` stage: a file checked before is not
        checked again); in a source tree, every schema by the tree's own torchgen too."""
        if self.selected is None:
            stage = self.cache.stage("validated")
            stored = stage.read(self.native.data, kind=tuple)
            if stored is not None:
                self.native.groups.restore(*stored)
            else:
                self.native.validate()
                stage.write(self.native.groups.state(), self.native.data)
        if self.source_tree is not None:
            from migrate.check.torchgen import validate_with_tree_torchgen

            validate_with_tree_torchgen(self.native, self.source_tree)

    # --- evidence -----------------------------------------------------------------------------------

    @functools.cached_property
    def torchlib(self) -> TorchlibEvidence:
        """torchlib's annotations, scanned statically; unreadable modules are warnings."""
        from migrate.torchlib_source.resolve import scan_torchlib

        evidence = scan_torchlib(self.torchlib_root, self.native, self.cache)
        for error in evidence.errors:
            sys.stderr.write(f"dtype-migrate: warning: {error}\n")
        return evidence

    @functools.cached_property
    def sweep(self) -> SweepState | None:
        """The OpInfo sweep's cache, filled with what it lacks (for --op: the OpInfos reaching those overloads);
        None when no runtime evidence is asked for."""
        if not _RUNTIME_EVIDENCE & set(self.options.evidence):
            return None
        from migrate.evidence.derived import sweep_state

        return sweep_state(self.cache, self.options.jobs, self.options.refresh, self.selected)

    def cached_runs(self) -> tuple[tuple[CatalogueEntry, ...], dict[OpInfoId, OpInfoRun]]:
        """The OpInfo catalogue and the runs the sweep's cache holds (nothing is run)."""
        from migrate.evidence.opinfo.sweep import SweepCache

        sweep = SweepCache.of(self.cache)
        catalogue = sweep.catalogue()
        return catalogue, sweep.runs(catalogue)

    def opinfos_reaching(self, selected: set[str] | None) -> tuple[CatalogueEntry, ...]:
        """OpInfos about the selected operators by name, or whose cached run called a selected overload (None: all)."""
        if selected is None:  # the catalogue alone: no run file need be read
            from migrate.evidence.opinfo.sweep import SweepCache

            return SweepCache.of(self.cache).catalogue()
        names = [OverloadName.parse(name) for name in selected]
        families = {name.operator for name in names}
        recorded = {name.qualified for name in names}  # the sweep's spelling
        catalogue, runs = self.cached_runs()
        return tuple(
            e for e in catalogue if families & set(e.operator_names) or (e.opinfo in runs and runs[e.opinfo].overloads & recorded)
        )

    # --- inference ----------------------------------------------------------------------------------

    @functools.cached_property
    def inferred(self) -> tuple[Plan, frozenset[str], dict]:
        """The inferred plan of the selected overloads, the overloads some OpInfo sample reached (the untyped
        rest's reasons need them), and what the sweep says for the summary (``plans`` stage)."""
        from migrate.infer import Sources, cached_plan, infer_plan

        evidence = self.options.evidence
        summary: dict = {}
        state, observed = self.sweep, frozenset()
        if state is not None:
            from migrate.evidence.derived import sweep_summary

            swept = sweep_summary(state)
            observed = swept.observed
            summary["opinfo"] = {
                "opinfos": state.opinfos,
                "ran": state.ran,
                "from_cache": state.present - state.ran,
                "overloads_observed": len(swept.observed & self.native.by_name.keys()),
                "failures": list(swept.failures),
            }
        torchlib = self.torchlib if "torchlib" in evidence else None

        def sources() -> Sources:
            # Every overload's evidence, also for --op: the global sets are named from the whole file's plan.
            runtime = self._runtime_sources()
            return Sources(
                torchlib=torchlib.overloads if torchlib else {},
                global_sets=torchlib.global_sets if torchlib else (),
                torchlib_handled=torchlib.handled if torchlib else {},
                groups="groups" in evidence,
                existing_sets=self.sets_file.sets,
                **runtime,
            )

        if self.torchlib.key:
            inputs = (",".join(evidence), self.native.data, self.sets_file.data or b"", self.torchlib.key, state.key if state else "")
            plan, alignment = cached_plan(self.native, sources, self.cache.stage("plans"), inputs, self.selected)
        else:  # a torchlib file could not be read: infer without the cache
            found = sources()
            plan, alignment = infer_plan(self.native, found, self.selected), found.alignment
        if alignment is not None:
            from migrate.runtime.torch_private import torch_version

            summary["runtime_evidence"] = {"torch": torch_version(), **alignment.to_json()}
        return plan, observed, summary

    def _runtime_sources(self) -> dict:
        """The runtime sources' plans (OpInfo, probe, aliases, kernel, schema calls), aligned to the file's schemas."""
        if self.sweep is None:
            return {"opinfo": {}}
        from migrate.evidence.derived import evidence_of
        from migrate.infer import align_runtime_evidence

        evidence, wanted = evidence_of(self.sweep), self.options.evidence
        opinfo = evidence.opinfo if "opinfo" in wanted else {}
        probe = evidence.probe if "probe" in wanted else {}
        schema_calls = evidence.schema_calls if "probe" in wanted else {}
        follows = evidence.follows if "probe" in wanted else {}
        dtype_arguments = {}
        if "probe" in wanted:
            from migrate.evidence.probe.dtype_arguments import load_dtype_arguments

            dtype_arguments = {name: fact for name, fact in load_dtype_arguments(self.cache, self.options.jobs).items() if name in self.native.by_name}
        aliases, kernel = {}, {}
        if "aliases" in wanted:
            from migrate.evidence.opinfo.aliases import alias_overloads

            aliases = alias_overloads(self.native, evidence.aliases, evidence.forwards)
        if "kernel" in wanted:
            from migrate.evidence.opinfo.forwards import kernel_plans

            kernel = kernel_plans(self.native, evidence.kernels)
        installed = installed_native_functions()
        reference = self.native if installed.read_bytes() == self.native.data else self.load_native(installed)
        (opinfo, probe, kernel, schema_calls), alignment = align_runtime_evidence(self.native, reference, opinfo, probe, kernel, schema_calls)
        return {
            "opinfo": opinfo,
            "probe": probe,
            "aliases": aliases,
            "kernel": kernel,
            "schema_calls": schema_calls,
            "follows": follows,
            "dtype_arguments": dtype_arguments,
            "alignment": alignment,
        }

    # --- the run ------------------------------------------------------------------------------------

    def migrate(
        self,
        plan_path: Path | None = None,
        overwrite: bool = False,
        yaml_only: bool = False,
        out: Path | None = None,
        report: Path | None = None,
        export_check: bool = False,
    ) -> Migration:
        """The outputs of applying the plan (``plan_path``, else the inferred one) to the yaml and torchlib, with
        the summary; ``report`` receives the applied plan with its evidence and the summary as JSON."""
        from migrate.evidence.probe.merge import probe_summary
        from migrate.evidence.verdicts import dtype_verdict_summary

        self.validate()
        self.torchlib  # scanned (and its warnings printed) before any evidence is gathered
        if plan_path is not None:
            plan, observed, evidence_summary = Plan.read(plan_path), frozenset(), {}
        else:
            plan, observed, evidence_summary = self.inferred
            if "autocast" in self.options.evidence:
                plan, evidence_summary = self._with_autocast(plan, evidence_summary)
        selected = self.selected
        if selected is not None:
            plan = replace(plan, overloads=tuple(o for o in plan.overloads if o.name in selected))
        scope = len(selected) if selected is not None else len(self.native.entries)
        result = apply_plan(self.native, self.sets_file, plan, overwrite=overwrite, plan_path=plan_path)
        targets = Targets(out)
        outputs = [targets.output(self.native_path, self.native.data, result.native_functions)]
        if result.type_constraints is not None:
            outputs.append(targets.output(sibling_constraints_path(self.native_path), self.sets_file.data, result.type_constraints))
        summary = {
            **run_summary(self.native, plan, result, scope, observed),
            **evidence_summary,
            "probe": probe_summary(plan),
            "verdicts": dtype_verdict_summary(self.native, plan),
        }
        if plan_path is None and self.sweep is not None:
            self._untyped_details(summary["coverage"])
        if "autocast" in summary:
            from migrate.model.autocast import annotated_counts

            summary["autocast"]["annotated"] = annotated_counts(result.native_functions)
        if self.source_tree is not None:
            summary["validation"] = {"torchgen": str(self.source_tree / "torchgen"), "schemas_unchecked": []}
        if not yaml_only:
            outputs += self._torchlib_outputs(plan, result, targets, summary, export_check)
        if report is not None:
            store(report, self._report(plan, result, summary).dumps().encode())
        return Migration(tuple(outputs), summary, summary_text(summary, result))

    def _untyped_details(self, coverage: dict) -> None:
        """The untyped entries' last refusals (those with a CPU kernel) and CUDA claims (the rest), into ``coverage``."""
        from migrate.evidence.probe.dtype_arguments import cached_dtype_arguments
        from migrate.evidence.untyped import cuda_claims, last_refusals
        from migrate.infer import NO_CPU_KERNEL

        untyped = coverage["untyped"]
        judgeable = [name for reason, names in untyped.items() if reason != NO_CPU_KERNEL for name in names]
        coverage["untyped_last_refusal"] = last_refusals(judgeable, self.cache, cached_dtype_arguments(self.cache))
        coverage["untyped_cuda_claims"] = cuda_claims(untyped.get(NO_CPU_KERNEL, ()), self.sweep.sweep.catalogue())

    def _with_autocast(self, plan: Plan, evidence_summary: dict) -> tuple[Plan, dict]:
        """The plan with each overload's autocast policy per key (``migrate.evidence.autocast``)."""
        from migrate.evidence.autocast.policies import autocast_policies
        from migrate.infer import with_autocast

        autocast = autocast_policies(self.native.by_name, self.cache, self.options.autocast_source, self.options.refresh)
        plan = with_autocast(plan, {name: autocast.of(name) for name in autocast.policies}, self.selected)
        return plan, {**evidence_summary, "autocast": autocast.summary()}

    def autocast_dtypes(self) -> dict[str, str]:
        """Each autocast key's lower dtype as the installed torch sets it."""
        from migrate.evidence.autocast.policies import autocast_dtypes

        return autocast_dtypes(self.cache)

    def _torchlib_outputs(self, plan: Plan, result: YamlResult, targets: Targets, summary: dict, export_check: bool) -> list[Output]:
        """torchlib rewritten to what the yaml says (hand-written constraints the run kept are not pushed into it), and to
        what export-check's results (cached for this torch_lib, or computed first with ``export_check``) prove."""
        from migrate.audit.export import rewrite_verdicts
        from migrate.write.torchlib.rewrite import rewrite_torchlib, torchlib_outputs

        kept = {o.name for o in result.outcomes if o.status == KEPT}
        written_plan = replace(plan, overloads=tuple(o for o in plan.overloads if o.name not in kept and o.variables))
        declared = {o.name: o.variables for o in written_plan.overloads if self.selected is None or o.name in self.selected}
        exported = rewrite_verdicts(declared, self.torchlib.by_overload, self.torchlib_root, self.cache, export_check, self.options.jobs)
        rewrite = rewrite_torchlib(self.torchlib, written_plan, self.native, self.cache, only=self.selected, exported=exported)
        summary["torchlib"] = codemod_summary(rewrite)
        mirrored = torchlib_outputs(rewrite, self.torchlib.root, targets.out, mirror=targets.out is not None)
        return [replace(output, display=targets.display(output.source, output.display)) for output in mirrored]

    def _report(self, plan: Plan, result: YamlResult, summary: dict) -> Plan:
        """The applied plan with the writer's conflicts added to each overload, and the summary.

        Export coverage gaps that ``export-check`` results (cached for this torchlib) judged are
        marked confirmed or refuted, and counted in the summary.
        """
        from migrate.audit.export import verdict_summary, verdicts

        conflicts = {o.name: o.conflicts for o in result.outcomes}
        conflicts = {o.name: conflicts.get(o.name, o.conflicts) for o in plan.overloads}
        judged = verdicts(conflicts, self.torchlib_root, self.cache)
        overloads = tuple(
            replace(o, conflicts=tuple(replace(c, export=judged.get((o.name, i), "")) for i, c in enumerate(conflicts[o.name])))
            for o in plan.overloads
        )
        return replace(plan, overloads=overloads, summary={**summary, "export_check": verdict_summary(conflicts, judged)})

    def export_check(self, refresh: bool = False) -> tuple[ExportCheck, dict[str, int] | None, dict]:
        """Real exports of every torchlib-registered overload (those selected) at each declared dtype.

        Declarations come from the yaml when it has any, else from the plan a run infers, whose
        export coverage gaps then get verdicts (counted in the second value).
        """
        from migrate.audit.export import run_export_check, verdict_summary, verdicts
        from migrate.model.declared import declared_variables

        registered = set(self.torchlib.by_overload)
        if self.selected is not None:
            registered &= self.selected
        native = self.native
        plan = None
        if any(entry.schema.variables() for entry in native.entries):
            by_name = self.sets_file.by_name
            declared = {name: declared_variables(native, native.by_name[name], by_name) for name in registered if name in native.by_name}
        else:
            plan = self.inferred[0]
            declared = {o.name: o.variables for o in plan.overloads}
        result = run_export_check(declared, registered, self.torchlib_root, self.cache, self.options.jobs, refresh)
        if plan is None:
            return result, None, declared
        listed = {o.name: o.conflicts for o in plan.overloads if o.name in registered}
        return result, verdict_summary(listed, verdicts(listed, self.torchlib_root, self.cache)), declared

    def refuse_installed(self, yaml_only: bool) -> None:
        """Installed files are never written: a run that writes them needs --out."""
        for path in (self.native_path, *(() if yaml_only else (self.torchlib_root,))):
            if is_installed_path(path):
                hint = "pass --out DIR (or --dry-run)" if path.suffix else "pass --out DIR, --torchlib DIR, or --yaml-only"
                raise InputError(f"installed files are never written: {hint}", path)
