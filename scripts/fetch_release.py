"""Fetch one release's files into a persistent cache, once.

`torch==X` keeps only `torchgen/` (its packaged yaml, and the model a source tree's layout needs); `onnxscript==Y` keeps only
`onnxscript/function_libs/torch_lib/`. The wheel is deleted after extraction
(torch wheels are hundreds of MB). Prints the folder holding the extracted files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

KEPT_PREFIX = {
    "torch": "torchgen/",
    "onnxscript": "onnxscript/function_libs/torch_lib/",
}


def cache_root() -> Path:
    base = os.environ.get("DTYPE_MIGRATE_CACHE") or Path.home() / ".cache" / "dtype-migrate"
    return Path(base) / "releases"


def fetch(package: str, version: str, index_url: str | None = None) -> Path:
    """The folder holding `package==version`'s kept files, downloading them if absent."""
    target = cache_root() / f"{package}-{version}"
    prefix = KEPT_PREFIX[package]
    marker = f"{package}=={version} {prefix}\n"
    if (target / ".complete").exists() and (target / ".complete").read_text() == marker:
        return target
    with tempfile.TemporaryDirectory(dir=cache_root().parent if cache_root().parent.exists() else None) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   f"{package}=={version}", "-d", tmp, "--quiet"]
        if index_url:
            command += ["--index-url", index_url]
        subprocess.run(command, check=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"fetch_release: expected one wheel for {package}=={version}, got {wheels}")
        staging = Path(tmp) / "extract"
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = [name for name in wheel.namelist() if name.startswith(prefix)]
            if not members:
                raise SystemExit(f"fetch_release: {wheels[0].name} has no {prefix}")
            wheel.extractall(staging, members)
        wheels[0].unlink()
        (staging / ".complete").write_text(marker)
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec", help="torch==X or onnxscript==Y")
    parser.add_argument("--index-url", default=None)
    args = parser.parse_args()
    package, _, version = args.spec.partition("==")
    if package not in KEPT_PREFIX or not version:
        raise SystemExit(f"fetch_release: expected torch==X or onnxscript==Y, got {args.spec!r}")
    print(fetch(package, version, args.index_url))


if __name__ == "__main__":
    main()
