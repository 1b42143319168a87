"""A recording: the OpInfo sweep's samples and probes made on one device by the tool itself (``dtype-migrate record``),
portable to another machine, where ``--recording FILE`` merges it as that backend's observed evidence.

It holds where it was made (torch release, device, its name and capability), every OpInfo's run as the sweep's cache
files hold it (the observations, each probed call with its accepted dtypes and each refusal's message, the failures),
the OpInfo catalogue it ran, and the schema of each overload it covers (those its calls reached; with ``--op``, the
overloads named), so that a run of another torch release takes only the overloads whose schema it still has. A CPU
recording also holds the calls built from schemas and the argument catalogue for the overloads it covers, as the
sweep's evidence joins them; a recording on another device does not make those yet. The evidence stage derives per-overload plans from its runs as from
the local sweep's (``migrate.evidence.derived``); ``migrate.infer`` reads that backend's sets from them.

The ``dtype=`` arguments' calls and the promotion calls are not recorded: the CPU's stand in for them at every backend
(docs/evidence.md, "Recordings").
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from migrate.errors import InputError
from migrate.evidence.opinfo.sweep import SweepCache, _overload_matcher, run_opinfos, run_sweep
from migrate.evidence.probe import catalogue_calls, schema_calls
from migrate.evidence.sites import WORKERS, torch_release
from migrate.model.backends import DEVICES
from migrate.model.verdict import Backend
from migrate.runtime.processes import CPU_CAPABILITY, DONE, Job, run_in_workers
from migrate.runtime.runs import SCHEMA_CALL, CatalogueEntry, OpInfoRun, Probe, ProbedCall, overload_key

FORMAT = "dtype-migrate-recording"
VERSION = 1


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
        return {
            "format": FORMAT,
            "version": VERSION,
            "torch": self.torch,
            "device": self.device,
            "device_name": self.device_name,
            "capability": self.capability,
            "schemas": dict(self.schemas),
            "catalogue": [e.to_json() for e in self.catalogue],
            "runs": [replace(r, seconds=0.0, cpu_seconds=0.0, probe_seconds=0.0).to_json() for r in self.runs],  # no timings: the same bytes
            "built": OpInfoRun(SCHEMA_CALL, (), (), 0, True, 0.0, 0.0, self.built, 0.0).to_json(),
        }

    def to_bytes(self) -> bytes:
        """Gzipped JSON, the same bytes for the same recording (no time stamp, keys sorted)."""
        data = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()
        return gzip.compress(data, compresslevel=6, mtime=0)

    @classmethod
    def from_json(cls, obj: Any) -> Recording:
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise ValueError(f"not a dtype-migrate recording (no \"format\": \"{FORMAT}\")")
        if obj.get("version") != VERSION:
            raise ValueError(f"recording format version {obj.get('version')!r}; this dtype-migrate reads version {VERSION}: record it again")
        if obj.get("device") not in DEVICES:
            raise ValueError(f"recording of device {obj.get('device')!r}; known: {', '.join(DEVICES)}")
        return cls(
            str(obj["torch"]),
            obj["device"],
            str(obj["device_name"]),
            str(obj["capability"]),
            tuple(sorted(obj["schemas"].items())),
            tuple(CatalogueEntry.from_json(e) for e in obj["catalogue"]),
            tuple(OpInfoRun.from_json(r) for r in obj["runs"]),
            OpInfoRun.from_json(obj["built"]).probes,
        )


def read_recording(path: Path) -> tuple[Recording, str]:
    """The recording in ``path`` and a digest of its bytes; an unreadable or foreign file is an ``InputError`` naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the recording: {exc.strerror}", path) from exc
    try:
        text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        return Recording.from_json(json.loads(text)), hashlib.sha256(data).hexdigest()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a dtype-migrate recording (not gzipped JSON: {exc})", path) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{exc}" if isinstance(exc, ValueError) else f"a malformed recording ({type(exc).__name__}: {exc})", path) from exc


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

    On the CPU the sweep's own runs are the recording (read from the stage cache, run where it lacks them: the same
    workers, the same reference paths); elsewhere every OpInfo runs again with its samples made on the device.
    """

    if device not in DEVICES:
        raise InputError(f"cannot record on device {device!r}; known: {', '.join(DEVICES)}")
    (outcome,) = run_in_workers([Job(device_reports, device, f"device {device}")], jobs=1, progress=False)
    if outcome.status != DONE:
        raise InputError(f"cannot record on {device}: {outcome.reason}")
    release, name, capability = outcome.reports[0]
    sweep = SweepCache.of(cache)
    built: tuple[ProbedCall, ...] = ()
    if device == "cpu":
        result = run_sweep(sweep, jobs=jobs, ops=ops)
        catalogue, runs = result.catalogue, result.runs
        built = schema_calls.STAGE.loaded(cache, jobs) + catalogue_calls.STAGE.loaded(cache, jobs)
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
    )


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
