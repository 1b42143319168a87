"""Where caches live, and writing one cache file atomically (a crash never leaves half a file)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
