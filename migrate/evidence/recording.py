"""A recording: every ATen call the tool makes on one device, and what ATen did, portable to another machine.

It holds where it was made (torch release, device, its name and capability), every OpInfo's run as the sweep's cache
files hold it (the observations, each probed call with its accepted dtypes and each refusal's message, the failures),
the OpInfo catalogue it ran, and the schema of each overload it covers (those its calls reached; with ``--op``, the
overloads named), so that a run of another torch release takes only the overloads whose schema it still has. A CPU
recording is the torch release's whole facts (``migrate.runtime.recorded``): beside the sweep, the entry of every stage
made in workers (the calls built from schemas and the catalogue, the ``dtype=``, promotion and value calls, the
forwarding kernels, autocast's observed run, the tiny models' runs) and the ``Release`` it was made for. The project
ships its pinned torch's (``SHIPPED``): a run whose installed release matches fills its facts from it (``seed``) and
makes no ATen call. A recording on another device holds the sweep alone; ``--recording FILE`` merges it as that
backend's observed evidence, derived into per-overload plans as the local sweep's are (``migrate.evidence.derived``).

The ``dtype=`` arguments' calls and the promotion calls are not made on other devices: the CPU's stand in for them at
every backend (docs/evidence.md, "Recordings").
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from migrate.cache import StageCache, one_process, store
from migrate.errors import InputError
from migrate.evidence.models import source as models_source
from migrate.evidence.opinfo.sweep import SweepCache, _overload_matcher, run_opinfos, run_sweep
from migrate.evidence.probe import catalogue_calls, schema_calls
from migrate.evidence.sites import WORKERS, torch_release
from migrate.evidence.torch_stages import WORKER_STAGES
from migrate.model.backends import DEVICES
from migrate.model.verdict import Backend
from migrate.runtime import recorded
from migrate.runtime.processes import CPU_CAPABILITY, DONE, Job, run_in_workers
from migrate.runtime.recorded import Release, installed_release
from migrate.runtime.run_files import CATALOGUE
from migrate.runtime.runs import SCHEMA_CALL, CatalogueEntry, OpInfoId, OpInfoRun, Probe, ProbedCall, overload_key

FORMAT = "dtype-migrate-recording"
VERSION = 2  # 2: a CPU recording holds the release and every worker stage's entry (1: the sweep and built calls)
READS = (1, 2)
SHIPPED = Path(__file__).resolve().parent.parent / "recordings"  # the CPU recording of the pinned torch


@dataclass(frozen=True)
class Recording:
    """What one device did with the sweep's calls, and where it was made."""

    torch: str  # the torch release it was made with
    device: str  # the torch device type: 'cpu', 'cuda'
    device_name: str  # torch.cuda.get_device_name(); for the CPU: the reference paths
    capability: str  # '9.0' (get_device_capability); for the CPU: the pinned ATen CPU capability
    schemas: tuple[tuple[str, str], ...]  # (overload 'add.Tensor' it covers, its schema in the recording torch's yaml)
    catalogue: tuple[CatalogueEntry, ...]
    runs: tuple[OpInfoRun, ...]
    built: tuple[ProbedCall, ...] = ()  # the probed calls built from schemas and the catalogue (a CPU recording's)
    release: Release | None = None  # what decided its calls (a CPU recording's: the facts it holds are that release's)
    stages: tuple[tuple[str, Any], ...] = ()  # (worker stage, its entry as JSON: ``migrate.runtime.recorded.encode``)

    @property
    def key(self) -> str:
        """The dispatch key its verdicts count for ('CUDA' for a cuda recording)."""
        return DEVICES[self.device]

    @property
    def backend(self) -> Backend:
        return Backend(self.device, f"{self.device_name}, capability {self.capability}")

    @property
    def origin(self) -> str:
        """'recorded on cuda (NVIDIA H100, capability 9.0), torch 2.9.0': what the backend's sets rest on."""
        return f"recorded on {self.backend}, torch {self.torch}"

    def to_json(self) -> dict[str, Any]:
        found = {
            "format": FORMAT,
            "version": VERSION,
            "torch": self.torch,
            "device": self.device,
            "device_name": self.device_name,
            "capability": self.capability,
            "schemas": dict(self.schemas),
            "catalogue": [e.to_json() for e in self.catalogue],
            "runs": [replace(r, seconds=0.0, cpu_seconds=0.0, probe_seconds=0.0).to_json() for r in self.runs],  # no timings: the same bytes
        }
        if self.release is None:
            return found | {"built": OpInfoRun(SCHEMA_CALL, (), (), 0, True, 0.0, 0.0, self.built, 0.0).to_json()}
        return found | {"release": self.release.to_json(), "stages": dict(self.stages)}  # the built calls are two of the stages

    def to_bytes(self) -> bytes:
        """Gzipped JSON, the same bytes for the same recording (no time stamp, members in a fixed order)."""
        return recorded.packed(self.to_json())

    @classmethod
    def from_json(cls, obj: Any) -> Recording:
        _check_format(obj)
        stages = tuple(sorted(obj.get("stages", {}).items()))
        if "built" in obj:
            built = OpInfoRun.from_json(obj["built"]).probes
        else:
            entries, covered = dict(stages), obj["schemas"].keys()
            built = tuple(
                call
                for stage in (schema_calls.STAGE, catalogue_calls.STAGE)
                for call in stage.load(recorded.decode(entries.get(stage.name, [])))
                if overload_key(call.overload) in covered
            )
        return cls(
            str(obj["torch"]),
            obj["device"],
            str(obj["device_name"]),
            str(obj["capability"]),
            tuple(sorted(obj["schemas"].items())),
            tuple(CatalogueEntry.from_json(e) for e in obj["catalogue"]),
            tuple(OpInfoRun.from_json(r) for r in obj["runs"]),
            built,
            Release.from_json(obj["release"]) if "release" in obj else None,
            stages,
        )


def _check_format(obj: Any) -> None:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ValueError(f"not a dtype-migrate recording (no \"format\": \"{FORMAT}\")")
    if obj.get("version") not in READS:
        raise ValueError(f"recording format version {obj.get('version')!r}; this dtype-migrate reads versions {', '.join(map(str, READS))}: record it again")
    if obj.get("device") not in DEVICES:
        raise ValueError(f"recording of device {obj.get('device')!r}; known: {', '.join(DEVICES)}")


def read_recording(path: Path) -> tuple[Recording, str]:
    """The recording in ``path`` and a digest of its bytes; an unreadable or foreign file is an ``InputError`` naming it."""
    obj, digest_of_bytes = recording_json(path)
    try:
        return Recording.from_json(obj), digest_of_bytes
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{exc}" if isinstance(exc, ValueError) else f"a malformed recording ({type(exc).__name__}: {exc})", path) from exc


def recording_json(path: Path) -> tuple[dict[str, Any], str]:
    """The recording in ``path`` as JSON, of a format this build reads, and a digest of its bytes (``InputError``s as
    ``read_recording``)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the recording: {exc.strerror}", path) from exc
    try:
        obj = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a dtype-migrate recording (not gzipped JSON: {exc})", path) from exc
    try:
        _check_format(obj)
    except ValueError as exc:
        raise InputError(str(exc), path) from exc
    return obj, _bytes_digest(data)


def _bytes_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recorded_overloads(runs: Iterable[OpInfoRun]) -> set[str]:
    """The overloads ('add.Tensor') the runs' samples or probes reached."""
    found = {overload_key(o.overload) for run in runs for o in run.observations}
    found |= {overload_key(p.overload) for run in runs for p in run.probes}
    return {name for name in found if name is not None}


POISONED = "CUDA error"  # a device-side assert fails every later call of its worker with this: none of them is a verdict


def trusted(runs: tuple[OpInfoRun, ...]) -> tuple[OpInfoRun, ...]:
    """The runs without the refusals a poisoned CUDA context gave (``CUDA error: device-side assert triggered``): after
    one call's assert, every later call of that worker fails so, whatever its dtypes."""

    def probe(found: Probe) -> Probe:
        return replace(found, rejected=tuple((d, m) for d, m in found.rejected if POISONED not in m))

    return tuple(replace(run, probes=tuple(replace(call, probes=tuple(map(probe, call.probes))) for call in run.probes)) for run in runs)


def matching(recording: Recording, schemas: dict[str, str]) -> tuple[frozenset[str], frozenset[str]]:
    """The covered overloads whose schema the installed torch has word for word, and the others (skipped)."""
    matched = frozenset(name for name, schema in recording.schemas if schemas.get(name) == schema)
    return matched, frozenset(name for name, _ in recording.schemas if name not in matched)


@dataclass(frozen=True)
class RecordingSummary:
    """One merged recording, as the summary and ``--report`` say it: where it was made, what it covered."""

    file: str
    key: str  # the dispatch key its verdicts count for
    origin: str  # Recording.origin
    matched: int  # recorded overloads whose schema the installed torch has
    skipped: int  # recorded overloads of another schema (another torch release) or none here
    verdicts: tuple[tuple[str, int], ...] = ()  # (outcome, (variable, dtype) count) at the covered overloads
    by_kind: tuple[tuple[str, int], ...] = ()  # (kind of call, evidence records) at the covered overloads

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "backend": self.key,
            "from": self.origin,
            "overloads_matched": self.matched,
            "overloads_skipped": self.skipped,
            "verdicts": dict(self.verdicts),
            "by_kind_of_call": dict(self.by_kind),
        }

    def line(self) -> str:
        verdicts = ", ".join(f"{outcome} {n}" for outcome, n in self.verdicts) or "none"
        kinds = ", ".join(f"{kind} {n}" for kind, n in self.by_kind) or "none"
        return (
            f"recording {self.file}: {self.key} {self.origin}; {self.matched} overloads matched, {self.skipped} skipped "
            f"(another schema or none here); {self.key} verdicts {verdicts} (evidence by kind of call: {kinds})"
        )


# --- making one ----------------------------------------------------------------------------------


def device_reports(device: str) -> Any:
    """A worker's job: the torch release and the device's name and capability (CUDA is initialised in the worker,
    never in the parent that forks the sweep's workers)."""
    import torch  # here: the parent imports this module without torch (the --op fast path)


    if device == "cpu":
        yield [torch_release(), WORKERS.detail.split(", ", 1)[1], CPU_CAPABILITY]
        return
    module = getattr(torch, device)
    if not module.is_available():
        raise RuntimeError(f"torch {torch_release()} has no {device} device here")
    yield [torch_release(), module.get_device_name(), ".".join(map(str, module.get_device_capability()))]


def make_recording(cache: Any, device: str, schemas: dict[str, str], jobs: int | None, ops: list[str] | None) -> Recording:
    """The sweep's samples and probes on ``device`` (with ``ops``, overload names: the OpInfos reaching them, and the
    recording covers those overloads alone, whose every OpInfo it ran), as a recording.

    On the CPU the release's facts are the recording (read from the stage cache, made where it lacks them: the same
    workers, the same reference paths), every worker stage's entry with them unless ``ops`` narrows it; elsewhere
    every OpInfo runs again with its samples made on the device.
    """

    if device not in DEVICES:
        raise InputError(f"cannot record on device {device!r}; known: {', '.join(DEVICES)}")
    (outcome,) = run_in_workers([Job(device_reports, device, f"device {device}")], jobs=1, progress=False)
    if outcome.status != DONE:
        raise InputError(f"cannot record on {device}: {outcome.reason}")
    release, name, capability = outcome.reports[0]
    sweep = SweepCache.of(cache)
    built: tuple[ProbedCall, ...] = ()
    stages: tuple[tuple[str, Any], ...] = ()
    if device == "cpu":
        result = run_sweep(sweep, jobs=jobs, ops=ops)
        catalogue, runs = result.catalogue, result.runs
        built = schema_calls.STAGE.loaded(cache, jobs) + catalogue_calls.STAGE.loaded(cache, jobs)
        if ops is None:
            stages = tuple(sorted((stage.name, recorded.encode(entry)) for stage, entry in _stage_entries(cache, jobs)))
    else:
        catalogue = sweep.catalogue()
        if ops is not None:
            matches, families = _overload_matcher(ops)
            cached = sweep.runs(catalogue)
            catalogue = tuple(
                e for e in catalogue if families & set(e.operator_names) or (e.opinfo in cached and any(map(matches, cached[e.opinfo].overloads)))
            )
        catalogue = tuple(e for e in catalogue if e.cpu_dtypes)
        runs = tuple(run_opinfos(catalogue, jobs=jobs, device=device))
    covered = recorded_overloads(runs) & (set(ops) if ops is not None else set(schemas))
    return Recording(
        release,
        device,
        name,
        capability,
        tuple(sorted((n, schemas[n]) for n in covered if n in schemas)),
        tuple(catalogue),
        tuple(sorted(runs, key=lambda run: run.opinfo)),
        tuple(call for call in built if overload_key(call.overload) in covered),
        installed_release() if stages else None,
        stages,
    )


def _stage_entries(cache: StageCache, jobs: int | None) -> Iterable[tuple[Any, Any]]:
    """Every worker stage with its entry, made where the cache lacks it; the models' as the cache holds them where
    transformers is not installed to make them."""
    for stage in WORKER_STAGES:
        if stage is models_source.STAGE and models_source.transformers_version() is None:
            found = models_source.stored_models(cache)
            if found is not None:
                yield models_source.stage_of(found.transformers), found
            continue
        yield stage, stage.entry(cache, jobs)


# --- the shipped recording fills a run's facts -----------------------------------------------------


@dataclass(frozen=True)
class Seeded:
    """What ``seed`` did: ``source`` the recording the facts came from ('' when it filled nothing); ``why`` the line
    that says why the run calls ATen itself ('' when it need not)."""

    source: str = ""
    why: str = ""
    replaced: bool = False  # the cache held an older shipped recording's facts, which these replaced


def seed(cache: StageCache, shipped: Path | None = None) -> Seeded:
    """The installed release's facts filled from the recording in ``shipped`` (default: ``SHIPPED``) made for that
    release, where the cache has none yet or holds those of an older shipped recording (a checkout that pulled a
    re-recorded file: every stage would read the older answers). Their catalogue is written last: it marks facts that
    are whole. One process at a time: two runs starting at once fill them once."""
    folder = recorded.folder(cache)
    with one_process(folder.with_name(folder.name + ".seed")):
        return _seeded(cache, folder, shipped or SHIPPED)


def _seeded(cache: StageCache, folder: Path, shipped: Path) -> Seeded:
    if holds_facts(cache, shipped):
        return Seeded()
    replaced = (folder / SEEDED_FROM).is_file()
    if replaced:  # a copy of an older shipped recording's facts (and the calls made since where it had none)
        shutil.rmtree(folder, ignore_errors=True)
    installed = installed_release()
    found = _shipped_for(installed, shipped)
    if found.path is None:
        why = "; ".join(found.reasons) or f"no recording of it ships in {shipped}"
        return Seeded(why=f"recording torch {installed.torch}'s facts afresh (every ATen call here, minutes): {why}")
    try:
        _write_facts(cache, found.obj, f"{found.path.name}\n{found.digest}")
    except OSError as exc:  # an unwritable cache only costs time: the stages make their calls
        return Seeded(why=f"recording torch {installed.torch}'s facts afresh: the cache cannot hold the shipped {found.path.name} ({exc})")
    return Seeded(source=str(found.path), replaced=replaced)


@dataclass(frozen=True)
class _Shipped:
    """The shipped CPU recording made for the installed release (``path`` None: none ships), and why each other shipped
    file is not it."""

    path: Path | None
    obj: dict[str, Any]
    digest: str  # of the file's bytes
    reasons: tuple[str, ...]


def _shipped_for(installed: Release, shipped: Path) -> _Shipped:
    reasons = []
    for path in sorted(shipped.glob("*.json.gz")):
        try:
            obj, bytes_digest = recording_json(path)
            theirs = Release.from_json(obj["release"]) if "release" in obj else None
        except (InputError, KeyError, TypeError, AttributeError) as exc:
            reasons.append(f"{path} cannot be read ({exc})")
            continue
        if theirs is None or obj["device"] != "cpu":
            continue
        why = theirs.differs(installed)
        if why:
            reasons.append(f"the shipped {path.name} is not this torch's: {why}")
            continue
        return _Shipped(path, obj, bytes_digest, tuple(reasons))
    return _Shipped(None, {}, "", tuple(reasons))


SEEDED_FROM = "seeded-from"
"""In the facts' folder when they were copied from a shipped recording: its file name and its bytes' digest."""


def holds_facts(cache: StageCache, shipped: Path | None = None) -> bool:
    """Whether the cache holds the installed release's facts (their catalogue is there): made by this machine's calls,
    or copied from the shipped recording (``shipped``, default ``SHIPPED``) as it is now."""
    folder = recorded.folder(cache)
    if not (folder / "opinfo" / CATALOGUE).is_file():
        return False
    try:
        name, _, seeded = (folder / SEEDED_FROM).read_text().partition("\n")
    except FileNotFoundError:
        return True
    source = (shipped or SHIPPED) / name
    return source.is_file() and seeded == _bytes_digest(source.read_bytes())


def refreshed(cache: StageCache, shipped: Path | None = None) -> str:
    """The installed release's facts removed, so that the run makes every ATen call again; the line that says so.
    Without transformers the tiny models cannot run again here: their runs stay as the shipped recording of this release
    (``shipped``, default ``SHIPPED``) holds them, so a refresh writes what a run from that recording writes."""
    shutil.rmtree(recorded.folder(cache), ignore_errors=True)
    installed = installed_release()
    line = f"--refresh: making every ATen call of torch {installed.torch} again (minutes)"
    if models_source.transformers_version() is not None:
        return line
    found = _shipped_for(installed, shipped or SHIPPED)
    models = sorted(name for name in found.obj.get("stages", {}) if name.startswith(models_source.STAGE_PREFIX))
    if found.path is None or not models:
        return line
    recorded.RecordedStage(recorded.folder(cache) / models[-1]).write_encoded(found.obj["stages"][models[-1]])
    return f"{line}; the tiny models' runs, which need transformers, as the shipped {found.path.name} holds them"


def _write_facts(cache: StageCache, obj: dict[str, Any], seeded_from: str) -> None:
    target = recorded.folder(cache)
    for name, entry in obj["stages"].items():
        recorded.RecordedStage(target / name).write_encoded(entry)
    sweep = SweepCache.of(cache)
    for run in obj["runs"]:  # as the sweep stores a run (its JSON, timings zero), into a folder that holds none yet
        sweep.store_run_json(OpInfoId(run["name"], run["variant"]), run)
    store(target / SEEDED_FROM, seeded_from.encode())
    store(sweep.folder / CATALOGUE, json.dumps(obj["catalogue"], separators=(",", ":")).encode())


# --- merged into a run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedEvidence:
    """A recording's runs derived into plans as the local sweep's are, aligned to the file: the evidence the inference
    reads that backend's sets from, at the overloads it covers."""

    summary: RecordingSummary
    covered: frozenset[str]  # the file's overloads whose schema the recording matched
    opinfo: dict[str, Any]  # overload -> OverloadPlan, from the recorded observations
    probe: dict[str, Any]  # from the recorded probes (and the CPU's calls built from schemas)
    follows: dict[str, Any]


@dataclass(frozen=True)
class RecordingsSummary:
    """Where each backend's evidence came from, and each merged recording (the summary's ``recordings`` section)."""

    backends: tuple[tuple[str, str], ...]  # (dispatch key, what its sets rest on: device and torch release)
    recordings: tuple[RecordingSummary, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"backends": dict(self.backends), "merged": [r.to_json() for r in self.recordings]}

    def lines(self) -> list[str]:
        found = "; ".join(f"{key} {origin}" for key, origin in self.backends)
        return [f"evidence per backend: {found}"] + [r.line() for r in self.recordings]


# --- the freshness gate --------------------------------------------------------------------------

FRESHNESS_OPINFOS = tuple(
    (name, "")
    for name in (
        "abs", "add", "addmm", "amax", "argmax", "bitwise_and", "bmm", "cat", "clamp", "cos", "cumsum", "eq", "exp",
        "gather", "index_put", "index_select", "matmul", "mean", "mm", "mul", "nn.functional.conv2d",
        "nn.functional.embedding", "nn.functional.gelu", "nn.functional.layer_norm", "nn.functional.relu", "pow",
        "scatter", "softmax", "sort", "sqrt", "stack", "sub", "sum", "where",
    )
) + (("div", "no_rounding_mode"), ("div", "trunc_rounding"))
"""The fixed sample CI re-records: a few dozen OpInfos (with their probes), beside autocast's run and one model's."""
FRESHNESS_MODEL = "bert"


@dataclass(frozen=True)
class Rerecorded:
    """The freshness gate's sample, made again here: each sampled OpInfo's run, autocast's observed run, one model's
    run (None without transformers) and that transformers' release."""

    runs: tuple[OpInfoRun, ...]
    autocast: dict[str, Any]
    model: OpInfoRun | None
    transformers: str | None


def rerecord_sample(jobs: int | None) -> Rerecorded:
    """The sample's ATen calls made here, in workers, as the recording made them."""
    from migrate.evidence.autocast.policies import OBSERVATIONS  # the parent imports this module without autocast's

    entries = [CatalogueEntry(OpInfoId(name, variant), (), (), ()) for name, variant in FRESHNESS_OPINFOS]
    runs = tuple(run_opinfos(entries, jobs=jobs))
    version = models_source.transformers_version()
    model = None
    if version is not None:
        (model,) = models_source.run_models(version, jobs, [FRESHNESS_MODEL]).runs
    return Rerecorded(runs, OBSERVATIONS.make(jobs), model, version)


def stale_calls(recording: dict[str, Any], sample: Rerecorded) -> list[str]:
    """Where the sample made here differs from the recording's (JSON, as the file holds it), verdict for verdict: one
    line per differing OpInfo, model or autocast key, each naming its first differing call; [] when fresh."""
    found = []
    recorded_runs = {(r["name"], r["variant"]): r for r in recording["runs"]}
    for run in sample.runs:
        what = f"OpInfo {run.opinfo}"
        ours = recorded_runs.get((run.opinfo.name, run.opinfo.variant))
        found += _differing(what, ours, _timeless(run))
    if sample.model is not None:
        stage = f"{models_source.STAGE_PREFIX}{sample.transformers}"
        if stage not in recording["stages"]:
            found.append(f"model {FRESHNESS_MODEL}: the recording holds no run of transformers {sample.transformers}")
        else:
            runs = recorded.decode(recording["stages"][stage]).runs
            ours = next((_timeless(r) for r in runs if r.opinfo == sample.model.opinfo), None)
            found += _differing(f"model {FRESHNESS_MODEL}", ours, _timeless(sample.model))
    observed = recorded.decode(recording["stages"].get("autocast", {}))
    found += _differing("autocast's observed run", observed, sample.autocast)
    return found


def _timeless(run: OpInfoRun) -> dict[str, Any]:
    return replace(run, seconds=0.0, cpu_seconds=0.0, probe_seconds=0.0).to_json()


def _differing(what: str, recorded_value: Any, now: Any) -> list[str]:
    if recorded_value is None:
        return [f"{what}: not in the recording"]
    where = _first_difference(recorded_value, now)
    if where is None:
        return []
    path, before, after = where
    return [f"{what}: {path}: recorded {_short(before)}, now {_short(after)}"]


def _first_difference(before: Any, after: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ: its path, and the two values there. Under a list of calls (a run's
    observations, probes), the whole differing call, named by its overload."""
    if before == after:  # in C: a fresh recording's sample is equal throughout
        return None
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            found = _first_difference(before.get(key), after.get(key), f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)):
        for index, (one, other) in enumerate(zip(before, after)):
            call = _overload_of(one)
            found = _first_difference(one, other, "" if call else f"{path}[{index}]")
            if found is not None and call:
                return f"{path}[{index}], a call of {call} {_short(one[1:4], 80)}, at {found[0]}", found[1], found[2]
            if found is not None:
                return found
        if len(before) != len(after):
            return f"{path or 'the list'} ({len(before)} items recorded, {len(after)} now)", before[len(after) :], after[len(before) :]
        return None
    return None if before == after else (path, before, after)


def _overload_of(item: Any) -> str:
    """'aten::add.Tensor' for a run's recorded call (a list that starts with its overload), else ''."""
    if isinstance(item, (list, tuple)) and item and isinstance(item[0], str) and item[0].startswith("aten::"):
        return item[0]
    return ""


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
