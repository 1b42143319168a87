"""The OpInfo sweep's cache folder, read and written: the catalogue, and each OpInfo's run in a file named by the
OpInfo and the digest of the file's content. The sweep (``migrate.evidence.opinfo.sweep``) fills it; the audits
read the calls it recorded."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.cache import ReadOnce, Stage, StageCache, digest, store
from migrate.runtime import recorded
from migrate.runtime.runs import CatalogueEntry, OpInfoId, OpInfoRun

CATALOGUE = "catalogue.json"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


_RUNS = ReadOnce(4096)  # the whole sweep is 747 runs, about 125 MB decoded


def _run_in(path: Path) -> OpInfoRun | None:
    """The run a file holds, decoded once per process whichever cache folder holds it; None when it is unreadable."""
    return _RUNS.get(path, _decoded_run)


def _decoded_run(path: Path) -> OpInfoRun | None:
    obj = _read_json(path)
    try:
        return OpInfoRun.from_json(obj) if isinstance(obj, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RunFiles:
    """The sweep stage's folder: the catalogue, and each OpInfo's run in a file named by the OpInfo and the
    digest of the file's content."""

    stage: Stage

    @classmethod
    def of(cls, cache: StageCache) -> RunFiles:
        """A folder of the installed torch release's facts (``migrate.runtime.recorded``)."""
        return cls(Stage(recorded.folder(cache) / "opinfo", cache.progress))

    @property
    def folder(self) -> Path:
        return self.stage.folder

    def files(self) -> dict[str, Path]:
        """The run files present, by OpInfo file stem (``OpInfoId.file_stem``)."""
        try:
            names = [entry.name for entry in self.folder.iterdir() if entry.name.endswith(".json")]
        except OSError:
            return {}
        return {name.rsplit(".", 2)[0]: self.folder / name for name in sorted(names) if name.count(".") >= 2}

    def key(self, present: Iterable[OpInfoId]) -> str:
        """A content key of these OpInfos' cached runs: their files' names carry their contents' digests."""
        files = self.files()
        return digest(*sorted(files[o.file_stem].name for o in present if o.file_stem in files))

    def cached_catalogue(self) -> tuple[CatalogueEntry, ...] | None:
        """Every OpInfo of the installed torch, when the sweep has read them; None before."""
        cached = _read_json(self.folder / CATALOGUE)
        return tuple(CatalogueEntry.from_json(obj) for obj in cached) if isinstance(cached, list) else None

    def run(self, opinfo: OpInfoId, files: dict[str, Path] | None = None) -> OpInfoRun | None:
        """The OpInfo's cached run; None when there is none, or it is unreadable (a miss)."""
        path = (self.files() if files is None else files).get(opinfo.file_stem)
        found = _run_in(path) if path is not None else None
        return found if found is not None and found.opinfo == opinfo else None

    def runs(self, catalogue: Iterable[CatalogueEntry]) -> dict[OpInfoId, OpInfoRun]:
        """The cached runs of the catalogue's OpInfos with CPU dtypes, in catalogue order."""
        files = self.files()
        found = {}
        for entry in catalogue:
            if entry.cpu_dtypes and (run := self.run(entry.opinfo, files)) is not None:
                found[entry.opinfo] = run
        return found

    def store_run(self, run: OpInfoRun) -> None:
        """Store a complete run, replacing the OpInfo's earlier file."""
        old = self.files().get(run.opinfo.file_stem)
        path = self.store_run_json(run.opinfo, run.to_json())
        if old is not None and old != path:
            old.unlink(missing_ok=True)

    def store_run_json(self, opinfo: OpInfoId, run: dict[str, Any]) -> Path:
        """Store a run given as its JSON (``OpInfoRun.to_json``) in the file its content names; where it goes."""
        data = json.dumps(run, separators=(",", ":")).encode()
        path = self.folder / f"{opinfo.file_stem}.{digest(data)[:16]}.json"
        store(path, data)
        return path
