"""One way to cache a stage: entries keyed by content, under one folder, written atomically.

A stage's key digests the contents of its inputs, the source of the stage's own code (the
module that computes it and every module of the tool it imports, found statically) and the
versions of the packages the tool works through. Nothing is versioned by hand: an edit of an
input or of the code is a new key, never a stale answer. Deleting the folder is always safe.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import functools
import gc
import hashlib
import importlib.metadata
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

_TOP = Path(__file__).resolve().parent.parent
_OWN_PACKAGES = ("migrate", "codemods")
# Installed packages whose behaviour a derived result depends on: torch (its OpInfos, kernels and torchgen),
# libcst prints the rewritten modules, ruamel.yaml and PyYAML read and write the yaml, onnxscript and
# onnxruntime export and run the export check's models.
_PACKAGES = ("torch", "libcst", "ruamel.yaml", "PyYAML", "onnxscript", "onnxruntime")
T = TypeVar("T")


def cache_root(override: Path | str | None = None) -> Path:
    """``--cache-dir`` if given, else $DTYPE_MIGRATE_CACHE, else the user's cache folder."""
    if override is not None:
        return Path(override)
    if os.environ.get("DTYPE_MIGRATE_CACHE"):
        return Path(os.environ["DTYPE_MIGRATE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dtype-migrate"


def store(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_paused = [0, False]  # threads inside without_cyclic_gc, and whether the collector ran before the first came in
_pausing = threading.Lock()


@contextlib.contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """For work that makes many objects (a parsed tree): their garbage is freed by reference counting, and the cyclic
    collector would rescan the live ones again and again as they are made. The collector is process-wide: it runs
    again once the last thread inside has left."""
    with _pausing:
        if _paused[0] == 0:
            _paused[1] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _pausing:
            _paused[0] -= 1
            if _paused[0] == 0 and _paused[1]:
                gc.enable()


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """For loading objects that live as long as the run (a stage's product, the unpickled plan): made with the cyclic
    collector paused, then left out of its scans (``gc.freeze``), which would otherwise visit all of them at every
    full collection the rest of the run makes (a warm full run spent a third of its time so). Frozen objects are
    still freed by reference counting when no longer used."""
    with without_cyclic_gc():
        yield
        gc.freeze()


def _module_path(name: str) -> Path | None:
    base = _TOP.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _statements(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement, nested ones too (an import is a statement: expressions need no visit)."""
    for node in nodes:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            yield from _statements(getattr(node, field, None) or [])


@functools.cache
def imported_modules(path: Path, module: str) -> frozenset[str]:
    """The tool's modules a module imports anywhere in its body (lazy imports too); read once per process."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _statements(ast.parse(path.read_bytes()).body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(name for name in found if name.split(".")[0] in _OWN_PACKAGES)


@functools.cache
def code_digest(*modules: str) -> str:
    """The source of ``modules`` and of every module of the tool they import, with the packages' versions.

    With no module named: the whole tool's source (for stages that run most of it).
    """
    if modules:
        seen: dict[str, Path] = {}
        todo = list(modules)
        while todo:
            name = todo.pop()
            path = _module_path(name)
            if name in seen or path is None:
                continue
            seen[name] = path
            todo += sorted(imported_modules(path, name) - seen.keys())
        paths = sorted(set(seen.values()))
    else:
        paths = sorted(p for package in _OWN_PACKAGES for p in (_TOP / package).rglob("*.py"))
    digest = hashlib.sha256(f"python {sys.version_info[:2]}\n".encode())
    for path in paths:
        digest.update(f"{path.relative_to(_TOP).as_posix()}\0".encode())
        digest.update(path.read_bytes())
    for package in _PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{package}=={version}\n".encode())
    return digest.hexdigest()


class ReadOnce:
    """What files named by their content's digest decode to, each decoded once per process whichever folder holds it
    (a test suite's cache folders, the user's): the ``kept`` read last are kept. A file ``decode`` cannot read (None)
    is never kept. Readers take a value as it is, never changing it."""

    def __init__(self, kept: int):
        self._kept = kept
        self._values: collections.OrderedDict[str, Any] = collections.OrderedDict()  # by file name
        self._lock = threading.Lock()

    def get(self, path: Path, decode: Callable[[Path], T | None]) -> T | None:
        with self._lock:
            if path.name in self._values:
                self._values.move_to_end(path.name)
                return self._values[path.name]
        found = decode(path)
        if found is not None:
            with self._lock:
                self._values[path.name] = found
                if len(self._values) > self._kept:
                    self._values.popitem(last=False)
        return found


class Remembered:
    """What ``make`` gave for each key, made once per process for the ``kept`` keys asked for last: the runs of one
    process (a test suite's) read the same inputs again and again. A value ``make`` gives as None is never kept, nor is
    an error. Readers take a value as it is, never changing it."""

    def __init__(self, kept: int):
        self._kept = kept
        self._values: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T | None]) -> T | None:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        found = make()
        if found is not None:
            with self._lock:
                self._values[key] = found
                if len(self._values) > self._kept:
                    self._values.popitem(last=False)
        return found


def digest(*parts: bytes | str) -> str:
    """The parts (input contents, options), unambiguously joined, as one hex digest."""
    found = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        found.update(len(data).to_bytes(8, "little"))
        found.update(data)
    return found.hexdigest()


_entry_locks: dict[Path, threading.Lock] = {}
_entry_locks_guard = threading.Lock()


def _entry_lock(path: Path) -> threading.Lock:
    """The process's one lock of an entry, so that two threads compute it once."""
    with _entry_locks_guard:
        return _entry_locks.setdefault(path, threading.Lock())


@dataclass(frozen=True)
class Stage:
    """One stage's entries: a folder named by the stage's code digest, one entry per key of inputs."""

    folder: Path
    progress: Callable[[str], None] | None = None

    def path(self, *inputs: bytes | str, suffix: str = ".pickle") -> Path:
        """Where the entry of these inputs lives (for stages that store files of their own format)."""
        return self.folder / (digest(*inputs)[:40] + suffix)

    def holds(self, *inputs: bytes | str) -> bool:
        """Whether an entry of these inputs is stored (it may still be one this build cannot read)."""
        return self.path(*inputs).is_file()

    def read(self, *inputs: bytes | str, kind: type | None = None) -> Any | None:
        """The pickled entry of these inputs; None when there is none or this build cannot read it."""
        try:
            with long_lived():
                found = pickle.loads(self.path(*inputs).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None
        return found if kind is None or isinstance(found, kind) else None

    def write(self, value: Any, *inputs: bytes | str) -> None:
        """Store the entry of these inputs; an unwritable cache only costs time."""
        try:
            store(self.path(*inputs), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass

    def get(self, inputs: tuple[bytes | str, ...], compute: Callable[[], T], kind: type | None = None, cold: str = "") -> T:
        """The entry of these inputs, computed and stored on a miss; ``cold`` says on the progress line what a miss runs.
        A thread asking for an entry another thread is computing waits for it (``migrate.evidence.torch_stages``)."""
        with _entry_lock(self.path(*inputs)):
            found = self.read(*inputs, kind=kind)
            if found is None:
                if cold and self.progress is not None:
                    self.progress(cold)
                found = compute()
                self.write(found, *inputs)
        return found


def made_once(stage: Stage, inputs: tuple[bytes | str, ...], compute: Callable[[], T], kind: type | None = None) -> T:
    """``stage.get`` for an entry that takes long to make (the derived evidence, the plans, a rewrite): a process asking
    for an entry another process is making waits for it and reads it (a test suite's workers, two runs at once)."""
    found = stage.read(*inputs, kind=kind)
    if found is None:
        with one_process(stage.path(*inputs)):
            found = stage.get(inputs, compute, kind)
    return found


@contextlib.contextmanager
def one_process(path: Path) -> Iterator[None]:
    """Held by one process at a time: a POSIX lock on a file beside the entry at ``path`` (not inherited by the workers
    a computation forks). Where it cannot be taken (no fcntl, an unwritable cache) nobody waits."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_name(path.name + ".lock"), "ab")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield


@dataclass(frozen=True)
class StageCache:
    """The run's cache folder (``--cache-dir``, else the default): every stage keeps its entries under it."""

    root: Path
    progress: Callable[[str], None] | None = None

    @classmethod
    def at(cls, override: Path | str | None = None, progress: Callable[[str], None] | None = None) -> StageCache:
        return cls(cache_root(override), progress)

    def stage(self, name: str, *code: str) -> Stage:
        """The stage ``name``, keyed by the code of the modules named (default: the whole tool)."""
        return Stage(self.root / name / code_digest(*code)[:16], self.progress)
