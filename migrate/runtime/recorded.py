"""Facts of one torch release: what ATen did with every call the tool makes, kept by the release, not by the tool's code.

The OpInfo sweep and its probes, the calls built from schemas and the catalogue, the ``dtype=``, promotion and value
calls, the forwarding kernels, autocast's observed run and the tiny models' runs depend on the installed torch and
on the inputs that decide which calls are made (the OpInfo database, the schemas, the argument catalogue), never on
how the tool's own code is spelled. So they live in one folder per ``Release`` (``recorded/<key>/`` in the stage
cache): an edit of the tool keeps them, another torch gets a folder of its own. Their entries are JSON (``encode``,
``decode``), each file named by its content's digest, so the names present are a content key of what the folder holds
(``content_key``) and the stages derived from them change when a fact does.

A recording (``migrate.evidence.recording``) holds the same facts as one file: the project ships its pinned torch's,
and a run whose installed torch matches fills this folder from it instead of calling ATen.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.cache import ReadOnce, Stage, StageCache, digest, store
from migrate.model.dtypes import DType
from migrate.runtime.processes import CPU_CAPABILITY

FOLDER = "recorded"
CATALOGUE_MODULE = Path(__file__).resolve().parent.parent / "evidence" / "probe" / "catalogue.py"  # the hand-chosen argument values


# --- which release -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """What decides the ATen calls the tool makes and their answers: the torch release, and digests of the OpInfo
    database, the schemas and the argument catalogue (a source build of the same version with another database differs)."""

    torch: str
    inputs: tuple[tuple[str, str], ...]  # (what, digest of its bytes)

    @property
    def key(self) -> str:
        return digest(self.torch, *(f"{name}={value}" for name, value in self.inputs))[:16]

    def to_json(self) -> dict[str, Any]:
        return {"torch": self.torch, **dict(self.inputs)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Release:
        return cls(str(obj["torch"]), tuple(sorted((k, str(v)) for k, v in obj.items() if k != "torch")))

    def differs(self, other: Release) -> str:
        """What tells ``other`` (the installed one) apart from this (a recording's), in a few words; '' when equal."""
        if self.torch != other.torch:
            return f"its torch is {self.torch}, the installed torch is {other.torch}"
        mine, theirs = dict(self.inputs), dict(other.inputs)
        changed = sorted(name for name in mine.keys() | theirs.keys() if mine.get(name) != theirs.get(name))
        return f"the installed torch {other.torch} has another {' and '.join(changed)}" if changed else ""


def _torch_files(*relative: str) -> list[Path]:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return []
    root = Path(spec.origin).parent
    found: list[Path] = []
    for name in relative:
        path = root / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.is_file() else []
    return found


def _digest_files(paths: list[Path]) -> str:
    found = hashlib.sha256()
    for path in paths:
        found.update(path.name.encode() + b"\0" + path.read_bytes())
    return found.hexdigest()[:16]


@functools.cache
def installed_release() -> Release:
    """The installed torch's release (read without importing torch: the ``--op`` fast path never does)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
    database = _torch_files("testing/_internal/common_methods_invocations.py", "testing/_internal/opinfo")
    schemas = _torch_files("../torchgen/packaged/ATen/native/native_functions.yaml")
    return Release(
        version,
        (
            ("argument catalogue", _digest_files([CATALOGUE_MODULE])),
            ("cpu capability", CPU_CAPABILITY),
            ("opinfo database", _digest_files(database)),
            ("schemas", _digest_files(schemas)),
        ),
    )


def folder(cache: StageCache, release: Release | None = None) -> Path:
    """Where the facts of ``release`` (default: the installed torch's) live in the cache."""
    return cache.root / FOLDER / (release or installed_release()).key


def content_key(cache: StageCache) -> str:
    """A content key of the installed release's facts: every entry's name carries its content's digest."""
    root = folder(cache)
    try:
        names = sorted(f"{stage.name}/{entry.name}" for stage in root.iterdir() if stage.is_dir() for entry in stage.iterdir())
    except OSError:
        names = []
    return digest(*names)


# --- one stage's entry ---------------------------------------------------------------------------

SUFFIX = ".json.gz"


@dataclass(frozen=True)
class RecordedStage(Stage):
    """A stage of the release's facts: its one entry as gzipped JSON in a file named by the digest of its content."""

    def _entry(self) -> Path | None:
        try:
            found = sorted(p for p in self.folder.iterdir() if p.name.endswith(SUFFIX))
        except OSError:
            return None
        return found[-1] if found else None

    def path(self, *inputs: bytes | str, suffix: str = SUFFIX) -> Path:
        return self._entry() or self.folder / f"none{suffix}"

    def holds(self, *inputs: bytes | str) -> bool:
        return self._entry() is not None

    def read(self, *inputs: bytes | str, kind: type | None = None) -> Any | None:
        entry = self._entry()
        found = None if entry is None else _read(entry)
        return found if kind is None or isinstance(found, kind) else None

    def write(self, value: Any, *inputs: bytes | str) -> None:
        self.write_encoded(encode(value))

    def write_encoded(self, value: Any) -> None:
        """Store an entry already as JSON (``encode``), as a recording holds it."""
        data = packed(value)
        old = self._entry()
        path = self.folder / f"{hashlib.sha256(data).hexdigest()[:16]}{SUFFIX}"
        try:
            store(path, data)
            if old is not None and old != path:
                old.unlink(missing_ok=True)
        except OSError:
            pass


_READ = ReadOnce(32)  # the entries last read


def _read(entry: Path) -> Any | None:
    """An entry's value, read once per process whichever cache folder holds it; None where it is unreadable."""
    return _READ.get(entry, _decoded_entry)


def _decoded_entry(entry: Path) -> Any | None:
    try:
        return json.loads(gzip.decompress(entry.read_bytes()), object_hook=_decoded)
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError, ImportError):
        return None


def recorded_stage(cache: StageCache, name: str) -> RecordedStage:
    """The stage ``name`` of the installed release's facts."""
    return RecordedStage(folder(cache) / name, cache.progress)


def packed(obj: Any) -> bytes:
    """Gzipped JSON, the same bytes for the same value (no time stamp). Keys keep their order: a dict's order is part
    of the value its reader iterates (autocast's observations)."""
    return gzip.compress(json.dumps(obj, separators=(",", ":")).encode(), compresslevel=6, mtime=0)


# --- the entries as JSON -------------------------------------------------------------------------

_TYPE, _TUPLE, _MAP, _DTYPE = "§type", "§tuple", "§map", "§dtype"


def encode(value: Any) -> Any:
    """A stage's entry as JSON: workers' reports (dicts, lists) as they are; tuples, dicts with keys other than
    strings, dtypes and the tool's frozen dataclasses tagged, so that ``decode`` gives back an equal value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {_TUPLE: [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("§") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {_MAP: [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, DType):
        return {_DTYPE: value.name}
    kind = type(value)
    if dataclasses.is_dataclass(value) and kind.__module__.split(".")[0] == "migrate":
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {_TYPE: f"{kind.__module__}:{kind.__qualname__}", **fields}
    raise TypeError(f"cannot record a {kind.__qualname__}")


def decode(value: Any) -> Any:
    """The value ``encode`` made this JSON of; a class that no longer takes its recorded fields raises TypeError."""
    return json.loads(json.dumps(value), object_hook=_decoded)


def _decoded(obj: dict[str, Any]) -> Any:
    """One JSON object, its members decoded already (``json.loads`` calls it inside out)."""
    if _TUPLE in obj:
        return tuple(obj[_TUPLE])
    if _MAP in obj:
        return {k: v for k, v in obj[_MAP]}
    if _DTYPE in obj:
        return DType(obj[_DTYPE])
    if _TYPE in obj:
        return _class(obj.pop(_TYPE))(**obj)
    return obj


@functools.cache
def _class(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    if module.split(".")[0] != "migrate":
        raise TypeError(f"a recorded value of a foreign type {path}")
    return getattr(importlib.import_module(module), name)

