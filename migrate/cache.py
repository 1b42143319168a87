"""Where caches live, and writing one cache file atomically (a crash never leaves half a file)."""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

_SOURCE_FOLDERS = ("migrate", "codemods")
# Installed packages whose behaviour a derived result depends on: torchgen (in torch) groups overloads,
# libcst prints the rewritten modules, ruamel.yaml and PyYAML read and write the yaml.
_PACKAGES = ("torch", "libcst", "ruamel.yaml", "PyYAML")


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


def read_pickle(path: Path, kind: type | None = None) -> Any | None:
    """A pickled cache entry; None when there is none, or this build cannot read it (its classes moved or changed)."""
    try:
        found = pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return found if kind is None or isinstance(found, kind) else None


def write_pickle(path: Path, obj: Any) -> None:
    """Store ``obj`` as a cache entry; an unwritable cache only costs time."""
    try:
        store(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass


@functools.cache
def code_digest() -> str:
    """The tool's own source and the versions of the packages it works through, as one digest.

    Part of the key of every cache of derived results (plans, scans, rewrites), so that
    new code or a new torch never reads an entry an older one wrote.
    """
    import importlib.metadata  # here, not at import: only a run that reads a cache pays for it

    digest = hashlib.sha256()
    top = Path(__file__).resolve().parent.parent
    for folder in _SOURCE_FOLDERS:
        for path in sorted((top / folder).rglob("*.py")):
            digest.update(f"{path.relative_to(top).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    for package in _PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{package}=={version}\n".encode())
    return digest.hexdigest()


def content_key(*parts: bytes | str) -> str:
    """A cache key: the code's digest and every part (input contents, options), unambiguously joined."""
    digest = hashlib.sha256(code_digest().encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()
