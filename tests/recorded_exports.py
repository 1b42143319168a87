"""The export tests' results, recorded once: real exports (torch.onnx.export and onnxruntime) take minutes, and their
results depend only on the exporter's and runtime's releases, the judges' code and the torch_lib functions a case
reaches, which is exactly what export-check's result store keys them by. The export tests seed their caches with
``tests/recorded/exports.json.gz`` and read what it holds; a key the recording lacks (another onnxruntime, an edit of
a judge) exports live, so a stale recording is slow, never wrong. ``test_export_check``'s cases of each status always
export live, and ``test_the_recorded_exports_are_the_judges_of_this_code`` fails when the judges' code moved on.

Regenerate it (minutes, every case exported anew): ``python -m tests.recorded_exports``.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from migrate.audit.export import ResultStore
from migrate.write.torchlib.narrowing import EXPORT_JUDGE, FUNCTION_JUDGE
from migrate.cache import store

RECORDED = Path(__file__).resolve().parent / "recorded" / "exports.json.gz"
RECORDING = "DTYPE_MIGRATE_RECORDING_EXPORTS"  # set while regenerating: caches start empty and are kept
MODULES = ("tests/test_export_cases.py", "tests/test_export_values_slow.py", "tests/test_export_judges_slow.py", "tests/test_export_check.py")
REGENERATE = "python -m tests.recorded_exports"


def store_folders() -> tuple[str, str]:
    """The result stores' folders under a cache root for this code and these releases."""
    return ResultStore.folder_of(EXPORT_JUDGE), ResultStore.folder_of(FUNCTION_JUDGE)


def recorded_files() -> dict[str, str]:
    """Each recorded store file by its path under a cache root."""
    try:
        with gzip.open(RECORDED, "rt") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def seed_exports(cache: Path) -> None:
    """Write the recorded results into this cache (nothing while regenerating: every case exports)."""
    if os.environ.get(RECORDING):
        return
    for relative, text in recorded_files().items():
        store(cache / relative, text.encode())


def keep_exports(cache: Path) -> None:
    """While regenerating, merge this cache's results into the recording: entries per overload file, each once."""
    if not os.environ.get(RECORDING):
        return
    files = recorded_files()
    for path in sorted(p for folder in ("export", "export-function") for p in (cache / folder).rglob("*.json")):
        relative = path.relative_to(cache).as_posix()
        entries = json.loads(files.get(relative, '{"entries": []}'))["entries"]
        entries += [e for e in json.loads(path.read_text())["entries"] if e not in entries]
        files[relative] = json.dumps({"entries": entries}, separators=(",", ":"))
    RECORDED.parent.mkdir(exist_ok=True)
    store(RECORDED, gzip.compress(json.dumps(files, sort_keys=True, indent=0).encode(), mtime=0))
    RECORDED.chmod(0o644)


def main() -> int:
    """Export every case of the export tests anew, in one process, into a new recording."""
    RECORDED.unlink(missing_ok=True)
    return subprocess.call([sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", *MODULES], env={**os.environ, RECORDING: "1"})


if __name__ == "__main__":
    sys.exit(main())
