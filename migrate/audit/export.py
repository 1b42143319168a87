"""``dtype-migrate export-check``: which declared dtypes the ONNX exporter really handles, from real exports.

For every overload a torch_lib registers and every declared dtype (one ONNX can
express) of each of its input variables, a case: a call from the OpInfo samples that
reach the overload, with that variable's slots cast to the dtype, exported with
``torch.onnx.export(dynamo=True)`` against that torch_lib, run in onnxruntime and compared
with eager PyTorch (``migrate.audit.export_worker`` does that, in forked workers).

Results are cached per overload (``ResultStore``), keyed by what they depend on: the
torch, onnxscript, onnx, onnx_ir and onnxruntime versions, the code the workers run
(``export_key``: the definitions their entry points reach, not whole modules), and the
digests of the torch_lib functions registered for the overload and used by its calls.
A re-run reads them, ``--op`` runs only the named overloads, ``--refresh`` runs again.
Which OpInfo gives an overload's calls comes from the OpInfo sweep's cache.
A main run reads the same cache to mark its export-coverage-gap conflicts confirmed
or refuted (``gap_statuses``).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from itertools import chain
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.audit.export_key import TorchlibKeys, torchlib_keys, worker_digest
from migrate.cache import StageCache, store
from migrate.runtime.processes import DONE, Job, run_in_workers
from migrate.runtime.run_files import RunFiles
from migrate.runtime.runs import CatalogueEntry
from migrate.model.dtypes import DType, canonical
from migrate.model.export_status import (
    DECOMPOSED,
    EXPORT_ERROR,
    INVALID_MODEL,
    MISMATCH,
    NO_KERNEL,
    NO_SAMPLE,
    OK,
    PARTIAL,
    RUNTIME_ERROR,
    STATUSES,
    combined,
)
from migrate.model.names import OverloadName
from migrate.model.plan import Conflict, OverloadPlan, Variable
from migrate.write.torchlib.narrowing import EXPORT_JUDGE, FUNCTION_JUDGE, ExportStatus, by_dtype

SOURCES = 6  # OpInfos whose samples give an overload's calls (several variants take other values of its arguments)
JOB_OVERLOADS = 20  # overloads per worker: each worker pays ~3 s to load torch_lib and the exporter; a job that ends keeps its results
JOB_TIMEOUT = 3600.0  # seconds per worker (a machine others share gives a worker a small part of a core)
FAILING = (EXPORT_ERROR, INVALID_MODEL, RUNTIME_ERROR, MISMATCH)  # a coverage gap is confirmed by these
COVERAGE_GAP = "export-coverage-gap"
CONFIRMED, REFUTED = "confirmed", "refuted"


@dataclass(frozen=True)
class CaseRequest:
    """A case to check: the overload, its input slots cast together, the dtype."""

    overload: str
    cast: tuple[str, ...]
    dtype: DType


@dataclass(frozen=True)
class CallResult:
    """One sampled call of a case: every tensor input's dtype, its status and message, the torchlib functions
    the exporter dispatched the case's overload to (``ran``) and all it dispatched the call to (``used``), and
    whether it decomposed the overload before dispatch (then none of them is the overload's)."""

    dtypes: tuple[tuple[str, str], ...]  # (slot, 'torch.x')
    status: str
    message: str
    ran: tuple[str, ...] = ()
    used: tuple[str, ...] = ()
    decomposed: bool = False

    def to_json(self) -> dict[str, Any]:
        found = {"dtypes": dict(self.dtypes), "status": self.status, "message": self.message, "ran": list(self.ran), "used": list(self.used)}
        return {**found, "decomposed": True} if self.decomposed else found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CallResult:
        ran, used = tuple(obj.get("ran", ())), tuple(obj.get("used", ()))
        return cls(tuple(obj["dtypes"].items()), obj["status"], stable_message(obj["message"]), ran, used, bool(obj.get("decomposed")))


@dataclass(frozen=True)
class CaseResult:
    """A checked case at one value (the calls' arguments that change the graph): the request, the torchlib function
    registered first for the overload (the one the exporter dispatches it to), the first call's input dtypes, the
    status and message of the value's calls together (of those that reached the function: ``decomposed`` when none
    did), each call's own, what the user's export did (``export``: status and message, whether or not the function
    ran), which judge settled it, and the value."""

    overload: str
    cast: tuple[str, ...]
    dtype: DType
    function: str
    dtypes: tuple[tuple[str, str], ...]  # every tensor input slot of the first call: (slot, 'torch.x')
    status: str
    message: str
    calls: tuple[CallResult, ...] = ()
    export: tuple[str, str] = ("", "")  # the user's export of the op: its status and message
    judge: str = EXPORT_JUDGE
    value: str = ""  # the calls' arguments that change the graph: "reduce='amax'", 'min=int, max=None' ('' for none)

    def to_json(self) -> dict[str, Any]:
        return {
            "overload": self.overload,
            "function": self.function,
            "judge": self.judge,
            "cast": list(self.cast),
            "dtype": str(self.dtype),
            "value": self.value,
            "dtypes": dict(self.dtypes),
            "status": self.status,
            "message": self.message,
            "export": {"status": self.export[0], "message": self.export[1]},
            "calls": [call.to_json() for call in self.calls],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CaseResult:
        return cls(
            obj["overload"],
            tuple(obj["cast"]),
            DType.parse(obj["dtype"]),
            obj["function"],
            tuple(obj["dtypes"].items()),
            obj["status"],
            stable_message(obj["message"]),
            tuple(CallResult.from_json(call) for call in obj.get("calls", ())),
            (export.get("status", obj["status"]), stable_message(export.get("message", obj["message"])))
            if (export := obj.get("export"))
            else (obj["status"], stable_message(obj["message"])),
            obj.get("judge", EXPORT_JUDGE),
            obj.get("value", ""),
        )

    def export_status(self) -> ExportStatus:
        """The case as the rewrite and the provisioning list read it: each call with the slots it passed a tensor
        to and the functions that ran for the overload (a call proves or refutes only those)."""
        calls = tuple((tuple(slot for slot, _ in call.dtypes), call.status, call.message, call.ran) for call in self.calls)
        return ExportStatus(self.cast, self.dtype, self.status, self.message, calls, self.judge, self.value)

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> CaseResult:
        """From a worker's report (dtypes spelled 'int64')."""
        return cls.from_json({**report, "dtype": str(DType(report["dtype"]))})


_NUMBERED = re.compile(r"\b(node_[A-Za-z0-9]+(?:_[A-Za-z][A-Za-z0-9]*)*|tensors|val|case)_\d+\b")


def stable_message(message: str) -> str:
    """A message without the numbers the exporter gives names by position in a batch (``node_sin_3``, ``tensors_10``):
    a case's message does not depend on which cases were exported with it."""
    return _NUMBERED.sub(lambda m: m.group(1) if m.group(1).startswith("node_") else f"{m.group(1)}_N", message)


@dataclass(frozen=True)
class ExportCheck:
    """What a check found, in request order, and how much of it came from the cache; then the function-level
    judge's cases, for the functions the exporter did not run."""

    cases: tuple[CaseResult, ...]
    torchlib: Path
    overloads: int
    ran: int  # overloads checked by workers in this run
    seconds: float
    judged: tuple[CaseResult, ...] = ()  # the function-level judge's cases

    def summary(self) -> dict[str, Any]:
        statuses = Counter(case.status for case in self.cases)
        judged = Counter(case.status for case in self.judged)
        return {
            "torchlib": str(self.torchlib),
            "overloads": self.overloads,
            "cases": len(self.cases),  # one per requested case and value its calls take
            "requested": len({(case.overload, case.cast, case.dtype) for case in self.cases}),
            "by_status": {status: statuses[status] for status in STATUSES},
            "function_judge": {
                "functions": len({(case.overload, case.function) for case in self.judged}),
                "cases": len(self.judged),
                "by_status": {status: judged[status] for status in STATUSES if status != DECOMPOSED},
            },
            "overloads_run": self.ran,
            "overloads_from_cache": self.overloads - self.ran,
            "seconds": round(self.seconds, 1),
        }


def requests(declared: Mapping[str, tuple[Variable, ...]], registered: Iterable[str]) -> dict[str, tuple[CaseRequest, ...]]:
    """Per registered overload with declared variables, its cases: the diagonal first, then each variable alone.

    The diagonal, for each declared dtype ONNX can express: the slots of the variable declaring it
    at that dtype, or, when the overload has independent variables, the slots of every variable
    declaring that dtype (as ``sample_inputs(dtype)`` makes every tensor of that kind that dtype).
    Then, for independent variables, each variable's slots cast alone (the others as sampled).
    """
    found = {}
    for overload in sorted(set(registered)):
        plan = OverloadPlan(overload, tuple(declared.get(overload, ())))
        # a variable that follows others is checked at every dtype it may take
        variables = [(v, _input_slots(v), plan.possible(v)) for v in plan.variables]
        variables = [(v, cast, dtypes) for v, cast, dtypes in variables if cast]
        independent = len(variables) > 1
        diagonal, alone = [], []
        for _, cast, dtypes in variables:
            for dtype in (d for d in dtypes if d.onnx is not None):
                if independent:
                    together = tuple(slot for _, other, others in variables if dtype in others for slot in other)
                    diagonal.append(CaseRequest(overload, together, dtype))
                    alone.append(CaseRequest(overload, cast, dtype))
                else:
                    diagonal.append(CaseRequest(overload, cast, dtype))
        cases = tuple(dict.fromkeys(diagonal + alone))
        if cases:
            found[overload] = cases
    return found


def _input_slots(variable: Variable) -> tuple[str, ...]:
    return tuple(slot for slot in variable.binds if not slot.startswith("return."))


# --- the cache -----------------------------------------------------------------------------------


# What a stored result depends on in the tool's code: the workers, the statuses' rules, and how a worker's reports
# become results (``export_key`` follows what these reach; other changes keep the results cached).
EXPORT_CODE = ("migrate.audit.export_worker:export_reports", "migrate.model.export_status", "migrate.audit.export:CaseResult", "migrate.audit.export:_in_workers")
JUDGE_CODE = ("migrate.audit.function_worker:function_reports", *EXPORT_CODE[1:])
KEPT_VERSIONS = 4  # results kept per overload for other versions of its functions (the original and a rewritten torch_lib)


@dataclass(frozen=True)
class ResultStore:
    """One judge's cached results for one torch_lib, a file per overload under ``<cache>/export/<code>/`` (or
    ``export-function``), ``<code>`` the digest of the code the judge runs (``EXPORT_CODE``, ``JUDGE_CODE``)
    and of the torch, onnxscript, onnx, onnx_ir and onnxruntime versions. A result holds the cases it answers
    and the digests of the torch_lib functions it depends on: those registered for its overload (in order) and
    those its calls used. It answers for any torch_lib whose functions have those digests, so a rewritten
    torch_lib re-runs only the overloads whose functions changed."""

    folder: Path
    keys: TorchlibKeys

    @classmethod
    def of(cls, torchlib: Path, cache: StageCache, judge: str = EXPORT_JUDGE) -> ResultStore:
        return cls(cache.root / cls.folder_of(judge), torchlib_keys(torchlib, cache))

    @staticmethod
    def folder_of(judge: str = EXPORT_JUDGE) -> str:
        """The judge's store folder under a cache root: ``export/<code>`` or ``export-function/<code>``."""
        stage, code = ("export", EXPORT_CODE) if judge == EXPORT_JUDGE else ("export-function", JUDGE_CODE)
        return f"{stage}/{worker_digest(*code)[:16]}"

    def get(self, overload: str, request: Any = None) -> tuple[CaseResult, ...] | None:
        """The overload's results (asked for by exactly this ``request``, when given) whose functions are this
        torch_lib's; None on a miss."""
        for entry in self._entries(overload):
            if request is not None and entry.get("request") != request:
                continue
            depends = entry.get("depends", {})
            if entry.get("registered") == list(self.keys.registered.get(overload, ())) and depends == self.keys.depends(overload, depends):
                return tuple(CaseResult.from_json(case) for case in entry["cases"])
        return None

    def put(self, overload: str, request: Any, results: Iterable[CaseResult]) -> None:
        results = tuple(results)
        used = {f for r in results for call in r.calls for f in (*call.used, *call.ran)} | {r.function for r in results if r.function}
        entry = {
            "request": request,
            "registered": list(self.keys.registered.get(overload, ())),
            "depends": self.keys.depends(overload, used),
            "cases": [r.to_json() for r in results],
        }
        same = (entry["request"], entry["registered"], entry["depends"])
        kept = [e for e in self._entries(overload) if (e.get("request"), e.get("registered"), e.get("depends")) != same]
        store(self._file(overload), json.dumps({"entries": [entry, *kept][:KEPT_VERSIONS]}, separators=(",", ":")).encode())

    def _file(self, overload: str) -> Path:
        return self.folder / f"{overload}.json"

    def _entries(self, overload: str) -> list[dict[str, Any]]:
        try:
            obj = json.loads(self._file(overload).read_bytes())
        except (OSError, ValueError):
            return []
        return [e for e in obj.get("entries", ()) if isinstance(e, dict)] if isinstance(obj, dict) else []


def _request_json(cases: tuple[CaseRequest, ...]) -> list[Any]:
    return [[list(case.cast), case.dtype.name] for case in cases]


# --- running -------------------------------------------------------------------------------------


def run_export_check(
    declared: Mapping[str, tuple[Variable, ...]],
    registered: Iterable[str],
    torchlib: Path,
    cache: StageCache,
    jobs: int | None = None,
    refresh: bool = False,
    progress: bool | None = None,
    functions: Mapping[str, Iterable[str]] | None = None,
) -> ExportCheck:
    """Check every case of the registered overloads (cached ones read, the rest run in ``jobs`` workers); then judge
    directly, on the same cases, the functions registered for an overload (``functions``: the real ones per overload;
    default the one the exporter dispatches it to) that no export ran."""
    started = time.monotonic()
    wanted = requests(declared, registered)
    run = partial(_run, torchlib=torchlib, jobs=jobs, cache=cache, progress=progress)
    found, ran = _cached_or_run(ResultStore.of(torchlib, cache), wanted, _request_json, refresh, run)
    cases = tuple(result for overload in wanted for result in found[overload])
    judged = judge_functions(unreached_functions(found, functions), torchlib, cache, jobs, refresh, progress)
    return ExportCheck(cases, Path(torchlib), len(wanted), ran, time.monotonic() - started, judged)


def _cached_or_run(stored: ResultStore, wanted: Mapping[str, Any], request: Any, refresh: bool, run: Any) -> tuple[dict[str, tuple[CaseResult, ...]], int]:
    """Per overload, its results: cached for exactly ``request(wanted[overload])``, or from ``run`` of the missing
    ones (stored when complete); and how many overloads ran."""
    found: dict[str, tuple[CaseResult, ...]] = {}
    for overload, asked in wanted.items():
        cached = None if refresh else stored.get(overload, request(asked))
        if cached is not None:
            found[overload] = cached
    missing = {overload: asked for overload, asked in wanted.items() if overload not in found}
    if missing:
        for overload, results, complete in run(missing):
            found[overload] = results
            if complete:
                stored.put(overload, request(missing[overload]), results)
    return found, len(missing)


def unreached_functions(
    found: Mapping[str, tuple[CaseResult, ...]], functions: Mapping[str, Iterable[str]] | None = None
) -> dict[tuple[str, str], tuple[CaseRequest, ...]]:
    """Per (overload, real function registered for it), the overload's cases with a sampled call none of whose calls
    ran that function (the exporter decomposed the overload for that call, sent it to another function, or failed
    before dispatch), complex ones aside (the exporter gives complex inputs to a ``complex=True`` function): the
    function-level judge's work, judged there at every value (none of its calls, at any value, ran the function).
    A case is about a function only when the function ran for that case, so an overload some of whose cases reach
    its function and some decompose (``eq.Scalar``) is judged directly on the decomposed ones only."""
    wanted = {}
    for overload, results in found.items():
        registered = functions.get(overload, ()) if functions is not None else {r.function for r in results if r.function}
        sampled = [r for r in results if r.calls and not r.dtype.name.startswith("complex")]
        for function in sorted(set(registered)):
            ran = {(r.cast, r.dtype) for r in sampled if any(function in call.ran for call in r.calls)}  # at some value
            cases = tuple(dict.fromkeys(CaseRequest(overload, r.cast, r.dtype) for r in sampled if (r.cast, r.dtype) not in ran))
            if cases:
                wanted[overload, function] = cases
    return wanted


def judge_functions(
    wanted: Mapping[tuple[str, str], tuple[CaseRequest, ...]],
    torchlib: Path,
    cache: StageCache,
    jobs: int | None = None,
    refresh: bool = False,
    progress: bool | None = None,
) -> tuple[CaseResult, ...]:
    """The function-level judge's cases of these functions (cached ones read, the rest run in workers)."""
    by_overload: dict[str, dict[str, tuple[CaseRequest, ...]]] = {}
    for (overload, function), cases in wanted.items():
        by_overload.setdefault(overload, {})[function] = cases
    run = partial(_run_judge, torchlib=torchlib, jobs=jobs, cache=cache, progress=progress)
    found, _ = _cached_or_run(ResultStore.of(torchlib, cache, FUNCTION_JUDGE), by_overload, _judge_request, refresh, run)
    return tuple(result for overload in by_overload for result in found[overload])


def _judge_request(requested: Mapping[str, tuple[CaseRequest, ...]]) -> list[Any]:
    return [[function, _request_json(cases)] for function, cases in sorted(requested.items())]


def _recorded_calls(overloads: Iterable[str], cache: StageCache) -> Iterator[tuple[CatalogueEntry, str, DType, bool, int]]:
    """Per OpInfo of the sweep's cache, its recorded calls of these overloads: (its catalogue entry, the overload
    as given, the sample dtype, whether the sample's own code made them, how many)."""
    keys = {OverloadName.parse(o).qualified: o for o in overloads}
    sweep = RunFiles.of(cache)
    catalogue = sweep.cached_catalogue() or ()  # before the sweep ran: no OpInfo recorded a call
    runs = sweep.runs(catalogue)
    for entry in catalogue:
        run = runs.get(entry.opinfo)
        if run is None or not (run.overloads & keys.keys()):
            continue
        counts: Counter[tuple[str, DType, bool]] = Counter()
        for observation in run.observations:
            if observation.overload in keys:
                counts[keys[observation.overload], observation.sample_dtype, observation.direct] += observation.count
        for (overload, sample, direct), count in counts.items():
            yield entry, overload, sample, direct, count


def _sources(overloads: Iterable[str], cache: StageCache) -> dict[str, tuple[tuple[tuple[str, str], str], ...]]:
    """Per overload, the OpInfos (name, variant) and sample dtypes whose samples reach it, from the sweep's cache: the
    best first, then every other OpInfo about the operator whose own code calls it (at its best sample dtype; up to
    ``SOURCES`` in all), whose samples may take other values of its arguments (scatter_reduce's ``amax`` variant).

    Best: calls made by the sample's own code first, then an OpInfo about the operator, then
    float32 samples, then the most calls; ties by name (the same choice every run).
    """
    best: dict[str, dict[tuple[str, str], tuple]] = {}
    for entry, overload, sample, direct, count in _recorded_calls(overloads, cache):
        about = overload.split(".", 1)[0] in entry.operator_names
        rank = (not direct, not about, sample.name != "float32", -count, sample.sort_key, entry.opinfo.name, entry.opinfo.variant)
        opinfo = (entry.opinfo.name, entry.opinfo.variant)
        mine = best.setdefault(overload, {})
        if opinfo not in mine or rank < mine[opinfo][0]:
            mine[opinfo] = (rank, sample.name)
    found = {}
    for overload, by_opinfo in best.items():
        (opinfo, (_, sample)), *rest = sorted(by_opinfo.items(), key=lambda item: item[1][0])
        others = [(other, dtype) for other, ((indirect, elsewhere, *_), dtype) in rest if not indirect and not elsewhere]
        found[overload] = ((opinfo, sample), *others[: SOURCES - 1])
    return found


def _run(
    missing: dict[str, tuple[CaseRequest, ...]], torchlib: Path, jobs: int | None, cache: StageCache, progress: bool | None
) -> Iterable[tuple[str, tuple[CaseResult, ...], bool]]:
    """Each missing overload's results as its worker ends, and whether they are complete (cacheable)."""
    from migrate.audit import export_worker  # here: imports torch and onnxruntime, which the parent needs not (the --op fast path)

    items = {overload: {"cases": _request_json(cases)} for overload, cases in missing.items()}
    expected = {overload: [("", case) for case in cases] for overload, cases in missing.items()}
    yield from _in_workers(items, expected, export_worker.export_reports, "export check", torchlib, jobs, cache, progress)


def _run_judge(
    missing: dict[str, dict[str, tuple[CaseRequest, ...]]], torchlib: Path, jobs: int | None, cache: StageCache, progress: bool | None
) -> Iterable[tuple[str, tuple[CaseResult, ...], bool]]:
    """Each missing overload's function-level results (its functions in turn) as its worker ends, and whether complete."""
    from migrate.audit import function_worker  # here: as export_worker above

    items, expected = {}, {}
    for overload, requested in missing.items():
        cases = tuple(dict.fromkeys(chain(*requested.values())))  # every function judged on each case
        items[overload] = {"functions": sorted(requested), "cases": _request_json(cases)}
        expected[overload] = [(function, case) for function in sorted(requested) for case in cases]
    yield from _in_workers(items, expected, function_worker.function_reports, "function judge", torchlib, jobs, cache, progress)


def _in_workers(
    items: dict[str, dict[str, Any]],
    expected: dict[str, list[tuple[str, CaseRequest]]],
    worker: Any,
    desc: str,
    torchlib: Path,
    jobs: int | None,
    cache: StageCache,
    progress: bool | None,
) -> Iterable[tuple[str, tuple[CaseResult, ...], bool]]:
    """Run ``worker`` over these overloads (``items``: what its job asks of each), grouped by the OpInfo whose samples
    reach them; per overload its results in the order ``expected`` ((function or '', case)), a case a crash left
    unanswered an export-error saying what the worker was doing, and whether they are complete (cacheable)."""
    sources = _sources(items, cache)
    for overload in (o for o in items if o not in sources):
        why = "no OpInfo sample in the sweep's cache calls it"
        yield overload, tuple(_result(case, function, (), NO_SAMPLE, why) for function, case in expected[overload]), True
    reached = sorted((o for o in items if o in sources), key=lambda o: (sources[o], o))
    work = []
    for start in range(0, len(reached), JOB_OVERLOADS):
        chunk = reached[start : start + JOB_OVERLOADS]
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for overload in chunk:
            for source in sources[overload]:
                groups.setdefault(source, []).append({"overload": overload, **items[overload]})
        argument = {
            "torchlib": str(torchlib),
            "groups": [{"opinfo": list(opinfo), "sample_dtype": sample, "overloads": o} for (opinfo, sample), o in groups.items()],
        }
        work.append(Job(worker, argument, f"{chunk[0]} .. {chunk[-1]}"))
    for outcome in run_in_workers(work, jobs, JOB_TIMEOUT, progress, unit="job", desc=desc):
        by_overload: dict[str, list[CaseResult]] = {}
        phase = ""
        for report in outcome.reports:
            if "phase" in report:
                phase = report["phase"]
                continue
            result = CaseResult.from_report(report)
            by_overload.setdefault(result.overload, []).append(result)
        asked = dict.fromkeys(item["overload"] for group in outcome.job.argument["groups"] for item in group["overloads"])
        for overload in asked:
            results = list(by_overload.get(overload, []))
            done = {(r.function if r.judge == FUNCTION_JUDGE else "", r.cast, r.dtype) for r in results}
            for function, case in expected[overload]:
                if (function, case.cast, case.dtype) not in done:
                    why = f"{phase}: {outcome.reason}" if phase else outcome.reason
                    results.append(_result(case, function, (), EXPORT_ERROR, why, FUNCTION_JUDGE if function else EXPORT_JUDGE))
            order = {(function, case.cast, case.dtype): i for i, (function, case) in enumerate(expected[overload])}
            results.sort(key=lambda r: order[r.function if r.judge == FUNCTION_JUDGE else "", r.cast, r.dtype])
            yield overload, tuple(results), outcome.status == DONE


def _result(case: CaseRequest, function: str, dtypes: tuple, status: str, message: str, judge: str = EXPORT_JUDGE) -> CaseResult:
    return CaseResult(case.overload, case.cast, case.dtype, function, dtypes, status, message, judge=judge)


# --- wiring back: conflicts --------------------------------------------------------------------


def gap_status(conflict: Conflict, results: Iterable[CaseResult]) -> str:
    """``confirmed`` when a case of the conflict's slots and dtypes fails, ``refuted`` when all such cases are ok, else ''
    (a decomposed case says nothing of the function: the function-level judge's cases of it do)."""
    relevant = [r for r in results if r.dtype in conflict.dtypes and set(r.cast) & set(conflict.slots) and r.status not in (NO_SAMPLE, DECOMPOSED)]
    if any(r.status in FAILING for r in relevant):
        return CONFIRMED
    return REFUTED if relevant else ""


def gap_statuses(conflicts: Mapping[str, tuple[Conflict, ...]], torchlib: Path, cache: StageCache) -> dict[tuple[str, int], str]:
    """Per (overload, index of the conflict), the export status of each export-coverage-gap conflict with cached results."""
    exported, judged = ResultStore.of(torchlib, cache), ResultStore.of(torchlib, cache, FUNCTION_JUDGE)
    found = {}
    for overload, listed in conflicts.items():
        gaps = [(i, c) for i, c in enumerate(listed) if c.kind == COVERAGE_GAP]
        if not gaps:
            continue
        results = exported.get(overload)
        if results is None:
            continue
        results += judged.get(overload) or ()
        for index, conflict in gaps:
            found[overload, index] = gap_status(conflict, results)
    return found


def gap_summary(conflicts: Mapping[str, tuple[Conflict, ...]], judged: Mapping[tuple[str, int], str]) -> dict[str, int]:
    """How many export-coverage-gap conflicts real exports confirmed, refuted, or did not judge."""
    total = sum(1 for listed in conflicts.values() for c in listed if c.kind == COVERAGE_GAP)
    counts = Counter(judged.values())
    return {"conflicts": total, CONFIRMED: counts[CONFIRMED], REFUTED: counts[REFUTED], "unchecked": total - counts[CONFIRMED] - counts[REFUTED]}


# --- wiring back: the torchlib rewrite ---------------------------------------------------------


def rewrite_statuses(
    declared: Mapping[str, tuple[Variable, ...]],
    registered: Mapping[str, Iterable[str]],
    torchlib: Path,
    cache: StageCache,
    jobs: int | None = None,
) -> dict[str, tuple[ExportStatus, ...]]:
    """export-check's cases per registered overload of this torch_lib (``registered``: its real functions), for the
    rewrite: both judges' cases, checked first where the cache lacks them. Each call says which functions ran, so the
    rewrite reads, per function, the export where the exporter ran it and the function-level judge where it did not."""
    overloads = sorted(set(registered) & declared.keys())
    run_export_check(declared, overloads, torchlib, cache, jobs, functions=registered)
    exported, judged = ResultStore.of(torchlib, cache), ResultStore.of(torchlib, cache, FUNCTION_JUDGE)
    found = {}
    for overload in overloads:
        results = (exported.get(overload) or ()) + (judged.get(overload) or ())
        if results:
            found[overload] = tuple(r.export_status() for r in results)
    return found


# --- the provisioning list ---------------------------------------------------------------------

# What keeps a declared dtype from exporting, for the list a torchlib maintainer works from; the runtime's gaps apart.
GAP_KINDS = {INVALID_MODEL: "spec", EXPORT_ERROR: "torchlib", MISMATCH: "mismatch", NO_KERNEL: "no-kernel", RUNTIME_ERROR: "runtime"}
RUNTIME_GAPS = ("no-kernel", "runtime")
KINDS = (*GAP_KINDS.values(), DECOMPOSED)  # decomposed apart: the user's export goes through other functions


@dataclass(frozen=True)
class Gap:
    """Declared dtypes of one variable that do not export for one reason at one value, and the first case's message."""

    kind: str  # a value of GAP_KINDS
    slots: tuple[str, ...]
    dtypes: tuple[DType, ...]
    message: str
    value: str = ""  # the arguments that change the graph ("reduce='amax'"); '' for an overload without such arguments


@dataclass(frozen=True)
class Missing:
    """An overload whose torchlib function does not export some dtypes ATen accepts, and how many sampled calls reach it."""

    overload: str
    function: str
    reached: int  # calls of the overload the OpInfo sweep recorded
    gaps: tuple[Gap, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "overload": self.overload,
            "function": self.function,
            "reached": self.reached,
            "gaps": [
                {"kind": g.kind, "slots": list(g.slots), "value": g.value, "dtypes": [str(d) for d in g.dtypes], "message": g.message}
                for g in self.gaps
            ],
        }


def missing(check: ExportCheck, declared: Mapping[str, tuple[Variable, ...]], reached: Mapping[str, int]) -> tuple[Missing, ...]:
    """Per overload, the declared dtypes no case of a variable exports at some value (its own case and the diagonal
    holding it combined, as the rewrite reads them, value by value: a value that fails blocks the dtype), grouped by
    what failed and the value; the overloads most sampled calls reach first."""
    cases: dict[str, list[CaseResult]] = {}
    for case in check.cases + check.judged:
        cases.setdefault(case.overload, []).append(case)
    found = []
    for overload, results in cases.items():
        statuses = tuple(r.export_status() for r in results)
        function = next((r.function for r in results if r.function), "")
        values = list(dict.fromkeys(s.value for s in statuses))
        gaps: dict[tuple[str, tuple[str, ...], str], dict[DType, str]] = {}
        for variable in declared.get(overload, ()):
            cast = _input_slots(variable)
            for value in values:
                for dtype, outcomes in by_dtype((s for s in statuses if s.value == value), cast, function).items():
                    status, message = combined(o[:2] for o in outcomes)
                    if status in GAP_KINDS:
                        gaps.setdefault((GAP_KINDS[status], cast, value), {})[dtype] = message
            decomposed = [r for r in results if r.status == DECOMPOSED and set(cast) <= set(r.cast)]
            for r in decomposed:
                gaps.setdefault((DECOMPOSED, cast, r.value), {})[r.dtype] = "the exporter decomposes it before dispatch"
        if gaps:
            order = list(KINDS)
            listed = tuple(
                Gap(kind, cast, canonical(by), by[canonical(by)[0]], value)
                for (kind, cast, value), by in sorted(gaps.items(), key=lambda item: (order.index(item[0][0]), item[0][1], values.index(item[0][2])))
            )
            found.append(Missing(overload, function, reached.get(overload, 0), listed))
    return tuple(sorted(found, key=lambda m: (-m.reached, m.overload)))


def reached_calls(overloads: Iterable[str], cache: StageCache) -> dict[str, int]:
    """Per overload, how many calls of it the OpInfo sweep recorded (every OpInfo, direct or inside another op)."""
    counts: Counter[str] = Counter()
    for _, overload, _, _, count in _recorded_calls(overloads, cache):
        counts[overload] += count
    return dict(counts)


def missing_text(rows: tuple[Missing, ...], top: int | None = None) -> str:
    """The provisioning list: totals by kind, then one row per overload, most reached first."""
    pairs = Counter(g.kind for m in rows for g in m.gaps for _ in g.dtypes)
    torchlib = ", ".join(f"{kind} {pairs[kind]}" for kind in GAP_KINDS.values() if kind not in RUNTIME_GAPS)
    runtime = ", ".join(f"{kind} {pairs[kind]}" for kind in RUNTIME_GAPS)
    lacking = sum(n for kind, n in pairs.items() if kind != DECOMPOSED)
    lines = [
        f"{len(rows)} overloads lack {lacking} declared dtypes: {torchlib}; onnxruntime's gaps apart: {runtime}; "
        f"decomposed before dispatch (the function judged directly): {pairs[DECOMPOSED]}"
    ]
    for rank, row in enumerate(rows[:top] if top else rows, 1):
        gaps = "; ".join(
            f"{g.kind} {','.join(g.slots)}{f' [{g.value}]' if g.value else ''} {' '.join(d.name for d in g.dtypes)} ({g.message[:120]})" for g in row.gaps
        )
        lines.append(f"{rank:4}  {row.overload}  {row.reached} calls  {row.function or '?'}: {gaps}")
    return "\n".join(lines) + "\n"


# --- output -------------------------------------------------------------------------------------


SHORT = {OK: "ok", PARTIAL: "part", EXPORT_ERROR: "EXP", INVALID_MODEL: "INV", NO_KERNEL: "KER", RUNTIME_ERROR: "RUN", MISMATCH: "MIS", NO_SAMPLE: "-", DECOMPOSED: "dec"}


def table(check: ExportCheck) -> str:
    """One row per overload, cast slots and value, one column per dtype (then a row per function the function-level
    judge called directly, its name after the slots); a legend and the totals of each judge below (cases counted per value)."""
    dtypes = canonical(case.dtype for case in check.cases + check.judged)
    header = ["overload", "slots", "value", *(d.name for d in dtypes)]
    rows: dict[tuple[str, str, str], dict[DType, str]] = {}
    for case in check.cases + check.judged:
        slots = ",".join(case.cast) + (f" ({case.function} called directly)" if case.judge == FUNCTION_JUDGE else "")
        rows.setdefault((case.overload, slots, case.value), {})[case.dtype] = SHORT[case.status]
    lines = [[overload, slots, value, *(cells.get(d, "") for d in dtypes)] for (overload, slots, value), cells in rows.items()]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *lines]]
    legend = ", ".join(f"{short} {status}" for status, short in SHORT.items())
    summary = check.summary()
    totals = ", ".join(f"{status} {n}" for status, n in summary["by_status"].items())
    text.append(f"\n{legend}")
    text.append(
        f"{summary['cases']} cases (per value; {summary['requested']} overload, slots and dtype) of {summary['overloads']} overloads: {totals} "
        f"({summary['overloads_run']} overloads run, {summary['overloads_from_cache']} from the cache; {summary['seconds']} s)"
    )
    judged = summary["function_judge"]
    totals = ", ".join(f"{status} {n}" for status, n in judged["by_status"].items())
    text.append(f"function-level judge (functions no export ran): {judged['cases']} cases of {judged['functions']} functions: {totals}")
    return "\n".join(text) + "\n"


def report_json(check: ExportCheck, conflict_summary: dict[str, int] | None = None, provisioning: tuple[Missing, ...] | None = None) -> str:
    summary = check.summary()
    if conflict_summary is not None:
        summary["conflicts"] = conflict_summary
    report: dict[str, Any] = {"cases": [case.to_json() for case in check.cases], "judged": [case.to_json() for case in check.judged], "summary": summary}
    if provisioning is not None:
        report["missing"] = [row.to_json() for row in provisioning]
    return json.dumps(report, indent=1) + "\n"

