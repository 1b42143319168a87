"""Shared test helpers: copies of the real installed files, the all-slots plan, the CLI in-process."""

from __future__ import annotations

import collections
import functools
import gc
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from migrate.runtime.processes import CPU_CAPABILITY, CPU_CAPABILITY_VARIABLE, reference_cpu_paths

os.environ[CPU_CAPABILITY_VARIABLE] = CPU_CAPABILITY  # before torch's first kernel: calls made here match the workers'
# A test process holds what its session fixtures loaded (full runs, plans, recordings): the cyclic collector's default
# thresholds walk that heap again and again, a sixth of the suite's time; collect seldom instead.
gc.set_threshold(1_000_000, 100, 1_000)

from migrate.cli import main  # noqa: E402
from migrate.model.dtypes import named
from migrate.model.native import NativeFunctions, installed_native_functions
from migrate.model.plan import GlobalSet, OverloadPlan, Plan, Variable


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules with slow or live tests first, those with more tests before the others of their kind, each module's
    tests in their own order: ``./test.sh``'s two workers take whole modules in this order (``--dist loadfile
    --no-loadscope-reorder``), so the long ones start early and the workers end together."""
    slow = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("live")}
    tests = collections.Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow, -tests[item.path], str(item.path)))


@pytest.fixture(autouse=True, scope="session")
def _reference_cpu_paths():
    """ATen called in the tests' own process takes the reference CPU paths the evidence is made on, whatever the host."""
    with reference_cpu_paths():
        yield


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REAL_NATIVE_FUNCTIONS = installed_native_functions()
FLOATS = named("float16", "bfloat16", "float32", "float64")


@pytest.fixture
def real_copy(tmp_path: Path) -> Path:
    """The installed torch's native_functions.yaml, copied: tests never write into site-packages."""
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, path)
    return path


def real_copies(folder: Path) -> Path:
    """A new folder holding copies of the installed native_functions.yaml and torch_lib (no bytecode), to run on."""
    from migrate.torchlib_source.resolve import installed_torchlib

    folder.mkdir()
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, folder / "native_functions.yaml")
    shutil.copytree(installed_torchlib(), folder / "torch_lib", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


EXPORT_STORES = ("export", "export-function")  # export-check's results: a test's own, never the user's
DERIVED_STAGES = ("recorded", "derived", "derived-summary", "recorded-derived", "plans", "native", "validated", "declarations", "torchlib-facts", "torchlib-evidence", "applied", "rewrites", "export-keys", "host-paths")


def without_exports(folder: Path) -> Path:
    """A cache folder sharing the user's cache (the installed release's facts seeded there first) but for export-check's
    results: every stage is keyed by content, so a test's run reads what any other run derived, and only the export
    stores, whose results a rewrite follows, are the folder's own."""
    root = _seeded_user_cache().root
    for name in DERIVED_STAGES:
        (root / name).mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    for part in root.iterdir():
        if part.name not in EXPORT_STORES and not part.name.startswith("."):
            (folder / part.name).symlink_to(part, target_is_directory=part.is_dir())
    return folder


def with_catalogue_of(source: Path, target: Path) -> Path:
    """A cache folder ``target`` holding the OpInfo catalogue of the cache at ``source`` and no run: a sweep there runs
    its OpInfos live without reading the catalogue cold (a worker and the GPU-claims interpreter)."""
    from migrate.cache import StageCache
    from migrate.runtime.run_files import CATALOGUE, RunFiles

    folder = RunFiles.of(StageCache.at(target)).folder
    folder.mkdir(parents=True)
    shutil.copyfile(RunFiles.of(StageCache.at(source)).folder / CATALOGUE, folder / CATALOGUE)
    return target


def facts_only(folder: Path) -> Path:
    """A new cache folder holding the installed release's facts and nothing derived: a copy of those the user's cache
    was filled with from the shipped recording (``seed``), as ``seed`` fills an empty one, without decoding the
    recording again (seconds). For tests of what a run does with the facts, not of how they are filled."""
    from migrate.cache import StageCache
    from migrate.runtime import recorded

    shutil.copytree(recorded.folder(_seeded_user_cache()), recorded.folder(StageCache.at(folder)))
    return folder


def _seeded_user_cache() -> StageCache:
    """The user's cache, the installed release's facts seeded there first (once: a second call finds them there)."""
    from migrate.cache import StageCache, cache_root
    from migrate.evidence.recording import seed

    cache = StageCache.at(cache_root(None))
    seed(cache)
    return cache


def seeded_cache(tmp_path_factory, name: str = "cache") -> Path:
    """A cache folder holding the installed torch release's facts and what runs derived from them, and no export results."""
    return without_exports(tmp_path_factory.mktemp(name) / "cache")


@pytest.fixture(scope="session")
def full_run(tmp_path_factory, worker_id) -> Path:
    """One full run on the installed files with its report, made by the first test worker to ask and read by the
    others (tests read it and never write into it: copy what a test changes)."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    out = (base if worker_id == "master" else base.parent) / "full-run"
    with FileLock(f"{out}.lock"):
        if not (out / "report.json").exists():
            assert main(["--out", str(out), "--report", str(out / "report.json")]) == 0
    return out


@pytest.fixture(scope="module")
def export_cache(tmp_path_factory) -> Iterator[Path]:
    """A seeded cache holding the export tests' recorded export-check results too (``tests.recorded_exports``)."""
    from tests.recorded_exports import keep_exports, seed_exports

    folder = seeded_cache(tmp_path_factory)
    seed_exports(folder)
    yield folder
    keep_exports(folder)


def annotated(folder: Path, text: str) -> NativeFunctions:
    """A native_functions.yaml of these entries, written in ``folder`` and read back."""
    path = folder / "native_functions.yaml"
    path.write_text(text)
    return NativeFunctions.load(path)


def declaration_error(folder: Path, entry: str, constraints: str) -> str:
    """The reader's error for the entry with its ``type_constraints`` value replaced: one line naming the file,
    line 2 and the overload."""
    from migrate.errors import InputError
    from migrate.model.declared import declared_variables

    native = annotated(folder, entry.replace(entry.splitlines()[1].split(": ", 1)[1], constraints))
    with pytest.raises(InputError) as raised:
        declared_variables(native, native.entries[0], {})
    error = str(raised.value)
    assert error.startswith(f"{native.path}:2: {native.entries[0].name}: ") and "\n" not in error
    return error


def all_slots_plan(native: NativeFunctions) -> Plan:
    """One variable per tensor slot of every entry; alternating sets so both spellings (set name, list) occur."""
    overloads = []
    for entry in native.entries:
        variables = tuple(
            Variable(f"T{i}", FLOATS if i % 2 == 0 else named("bool", "int64"), (slot.name,))
            for i, slot in enumerate(entry.schema.tensor_slots)
        )
        overloads.append(OverloadPlan(entry.name, variables))
    return Plan((GlobalSet("TFloat", FLOATS, "Floating-point tensors."),), tuple(overloads))


@functools.lru_cache(maxsize=2)
def report_of(folder: Path) -> dict:
    """The report.json of a run's folder, parsed once per process (a full run's is 36 MB of JSON, half a second): the
    tests of a session's run read it and never change it."""
    return json.loads((folder / "report.json").read_text())


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below a folder with its bytes, to prove that nothing was written."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run_cli(capfd, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


@functools.lru_cache(maxsize=4)
def lint_round_trip(text: str) -> str:
    """PyTorch's NATIVEFUNCTIONS lint: a plain ruamel.yaml load and dump with its settings (seconds for the whole file:
    a worker's tests that round-trip the same text, the installed yaml or the full run's, share one)."""
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1000
    yaml.boolean_representation = ["False", "True"]
    out = io.StringIO()
    yaml.dump(yaml.load(text), out)
    return out.getvalue()


def changed_items(written: str, original: str) -> str:
    """The written file's top-level items whose text differs from the original's, as one document: what a writer that
    changed a few entries of the installed file puts before PyTorch's lint (the others are the installed bytes)."""
    before, after = (re.split(r"(?m)^(?=- )", text) for text in (original, written))
    assert len(before) == len(after), "a writer adds or removes no entry"
    changed = "".join(item for item, was in zip(after, before) if item != was)
    assert changed, "the writer changed no entry: nothing to lint"
    return changed


def probed(
    cast: tuple[str, ...],
    dtypes: tuple,
    slots: tuple[str, ...] | None = None,
    *,
    refused: str = "",
    made_by: str = "OpInfo x (1 call)",
    built: bool = False,
    beside: tuple[str, ...] = (),
    numbers: tuple[tuple[str, str], ...] = (),
    gate: str = "",
    count: int = 1,
):
    """Probe evidence as the merge makes it: ``cast`` probed beside the rest, accepted, or ``refused`` with that message."""
    from migrate.evidence.probe.merge import probe_site
    from migrate.model.plan import PROBE, Evidence
    from migrate.model.verdict import ACCEPTED, REJECTED, Verdict

    site = probe_site(cast, made_by, built, beside, numbers, gate)
    verdict = Verdict(REJECTED, site, tuple(dict.fromkeys(dtypes, refused).items())) if refused else Verdict(ACCEPTED, site)
    return Evidence(PROBE, "", tuple(dtypes), cast if slots is None else slots, count, verdict)


def diagonal(tensors: tuple[str, ...], dtypes: tuple, refused: str = ""):
    """The evidence of diagonal calls built for promotion: accepted, or ``refused`` with that message."""
    from migrate.infer.promotion_findings import diagonal_site
    from migrate.model.plan import PROBE, Evidence
    from migrate.model.verdict import ACCEPTED, REJECTED, Verdict

    site = diagonal_site(tensors)
    verdict = Verdict(REJECTED, site, tuple(dict.fromkeys(dtypes, refused).items())) if refused else Verdict(ACCEPTED, site)
    return Evidence(PROBE, "", tuple(dtypes), tensors, verdict=verdict)
