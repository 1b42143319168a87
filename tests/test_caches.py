"""The caches of derived results (the torchlib scan, the plan, the rewrite) are keyed by content.

A warm run after an edit of the yaml or of torchlib writes exactly what a run with an
empty cache writes: no output ever comes from an entry an older input made.
"""

from __future__ import annotations

import multiprocessing
import shutil
import time
from pathlib import Path

import pytest

from migrate.cache import code_digest, digest
from migrate.errors import InputError
from migrate.model.native import NativeFunctions
from migrate.model.schema import TypedSchema
from migrate.pipeline import Options, RunRequest, Session
from migrate.cli import main
from tests.conftest import REAL_NATIVE_FUNCTIONS, real_copies, run_cli, snapshot

# The OpInfo sweep's cache is keyed by its own files; these runs leave it out to stay fast with an empty cache.
EVIDENCE = ("--evidence", "torchlib,groups")
ACOS = "- func: acos(Tensor self) -> Tensor\n"
ABS = "- func: abs(Tensor self) -> Tensor\n"
ABS_HAND = "- func: abs(T self) -> T\n  type_constraints: {T: [torch.float32]}\n"
ROOT = Path(__file__).resolve().parent.parent
EDITS = {
    # The schema's argument renamed: torchlib's parameter no longer maps to it, so acos loses its constraint.
    "yaml": ("native_functions.yaml", ACOS, "- func: acos(Tensor input) -> Tensor\n"),
    # torchlib's annotation widened: acos (and its siblings) take the wider set.
    "torchlib": ("torch_lib/ops/core.py", "def aten_acos(self: TFloat) -> TFloat:", "def aten_acos(self: TReal) -> TReal:"),
}


@pytest.fixture
def work(tmp_path) -> Path:
    return real_copies(tmp_path / "work")


def _arguments(work: Path, cache: Path, out: Path, *extra: str) -> tuple[str, ...]:
    inputs = ("--native-functions", work / "native_functions.yaml", "--torchlib", work / "torch_lib")
    return tuple(str(a) for a in (*inputs, *EVIDENCE, "--cache-dir", cache, "--out", out, *extra))


def _run(capfd, work: Path, cache: Path, out: Path, *extra: str) -> dict[str, bytes]:
    code, _, err = run_cli(capfd, *_arguments(work, cache, out, *extra))
    assert code == 0, err
    return snapshot(out)


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """A cache an empty one became in a run on copies of the installed files, and what that run wrote."""
    folder = tmp_path_factory.mktemp("filled")
    assert main(list(_arguments(real_copies(folder / "work"), folder / "cache", folder / "out"))) == 0
    return folder / "cache", snapshot(folder / "out")


def _acos_line(outputs: dict[str, bytes]) -> str:
    """acos's declaration: its func: line and the line after it (a letter's set, T: Name)."""
    lines = outputs["native_functions.yaml"].decode().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("- func: acos("))
    return "\n".join(lines[at : at + 2])


@pytest.mark.slow
def test_a_run_on_other_copies_of_the_same_files_reads_the_cache_and_writes_the_same(filled, work, tmp_path, capfd):
    cache = tmp_path / "cache"
    shutil.copytree(filled[0], cache)
    assert _run(capfd, work, cache, tmp_path / "again") == filled[1]
    assert {"plans", "applied", "rewrites"} <= {p.name for p in cache.iterdir()}
    assert any((cache / "torchlib-evidence").rglob("*.pickle"))


@pytest.mark.slow  # full runs, with a cold cache and a warm one
@pytest.mark.parametrize("edited", sorted(EDITS))
def test_a_warm_run_after_an_edit_writes_what_a_run_with_an_empty_cache_writes(edited, filled, work, tmp_path, capfd):
    cache, before = tmp_path / "cache", filled[1]
    shutil.copytree(filled[0], cache)
    path, old, new = EDITS[edited]
    text = (work / path).read_text()
    assert text.count(old) == 1
    (work / path).write_text(text.replace(old, new))
    warm = _run(capfd, work, cache, tmp_path / "warm")
    cold = _run(capfd, work, tmp_path / "empty-cache", tmp_path / "cold")
    assert warm == cold
    assert {name for name in before if before[name] != warm[name]} >= {"native_functions.yaml", "torch_lib/ops/core.py"}
    assert _acos_line(warm) != _acos_line(before)
    # An --op run on the warm cache writes, for its overloads, what the full run does.
    assert _acos_line(_run(capfd, work, cache, tmp_path / "op", "--op", "acos")) == _acos_line(cold)


def test_every_key_holds_each_part_apart_and_a_stage_its_own_code():
    assert digest("ab", "c") != digest("a", "bc")
    assert digest(b"x") == digest("x") != digest("x", "")
    assert len(code_digest()) == 64
    # A stage's code is its module and every module of the tool it imports, not the whole tool.
    assert code_digest("migrate.model.native") == code_digest("migrate.model.native", "migrate.model.schema")
    assert code_digest("migrate.model.native") != code_digest("migrate.runtime.samples") != code_digest()


def _validated(path: Path, cache: Path) -> NativeFunctions:
    session = Session(Options(native_functions=path, cache_dir=cache))
    session.validate()
    return session.native


def test_a_validated_file_is_read_back_with_its_groups_and_a_broken_one_is_checked_every_time(tmp_path, monkeypatch):
    data = REAL_NATIVE_FUNCTIONS.read_bytes()
    path = tmp_path / "native_functions.yaml"
    path.write_bytes(data)
    fresh = _validated(path, tmp_path / "cache")
    assert not fresh.groups.unchecked

    def no_torchgen(self):
        raise AssertionError("a validated file went through torchgen again")

    with monkeypatch.context() as patched:
        patched.setattr(TypedSchema, "torchgen", no_torchgen)
        warm = _validated(path, tmp_path / "cache")
        assert warm.groups.state() == fresh.groups.state()
        assert warm.groups["add.out"] == fresh.groups["add.out"]

    path.write_bytes(data.replace(ACOS.encode(), ACOS.encode() + b"  variants: [function\n"))
    for _ in range(2):
        with pytest.raises(InputError, match="acos"):
            _validated(path, tmp_path / "cache")


def test_a_run_with_a_cache_dir_writes_nothing_outside_it(tmp_path, monkeypatch, capfd):
    """Every stage keeps its entries under the session's cache folder: an empty HOME stays empty."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("DTYPE_MIGRATE_CACHE", raising=False)
    cache = tmp_path / "cache"
    code, _, err = run_cli(capfd, "--cache-dir", cache, *EVIDENCE, "--out", tmp_path / "out")
    assert code == 0, err
    code, out, err = run_cli(capfd, "--cache-dir", cache, *EVIDENCE, "--op", "acos", "--dry-run")  # a second command, reading it
    assert code == 0 and "acos" in out, err
    assert list(home.rglob("*")) == []
    assert {p.name for p in cache.iterdir()} >= {"native", "validated", "torchlib-facts", "torchlib-evidence", "plans", "rewrites"}


def test_a_recorded_entry_is_decoded_once_per_process_whichever_cache_holds_it(tmp_path):
    """Its file's name is its content's digest: a test suite's caches (each test's own) share the value read."""
    from migrate.runtime.recorded import RecordedStage

    stages = [RecordedStage(tmp_path / name / "stage") for name in ("first", "second")]
    stages[0].write({"calls": (1, 2)})
    stages[1].folder.mkdir(parents=True)
    shutil.copyfile(stages[0].path(), stages[1].folder / stages[0].path().name)
    assert stages[0].read() == {"calls": (1, 2)} and stages[1].read() is stages[0].read()


def test_copies_of_one_yaml_and_torchlib_share_what_their_bytes_make_and_an_edit_makes_its_own(tmp_path):
    """Schemas, entries' yaml and torchlib modules' trees and scans are made once per process for each content."""
    from migrate.cache import StageCache
    from migrate.torchlib_source.facts import facts_stage
    from migrate.torchlib_source.scan import module_facts
    from migrate.torchlib_source.resolve import installed_torchlib
    from migrate.write.torchlib.tree import TorchlibModule

    copies = [real_copies(tmp_path / name) for name in ("first", "second")]
    first, second = (NativeFunctions.load(folder / "native_functions.yaml") for folder in copies)
    pairs = list(zip(first.entries, second.entries))
    assert all(a.schema is b.schema for a, b in pairs) and all(first.fields(a) is second.fields(b) for a, b in pairs[:50])
    edited = TypedSchema.parse(first.entries[0].schema.text.replace("Tensor", "T", 1))
    assert edited is not first.entries[0].schema and edited.lowered() == first.entries[0].schema.text
    data = (installed_torchlib() / "ops" / "core.py").read_bytes()
    modules = [TorchlibModule("ops/core.py", "ops.core", data, None) for _ in range(2)]
    assert modules[0].tree is modules[1].tree and modules[0].tree.code.encode() == data
    scans = [module_facts(data, facts_stage(StageCache.at(tmp_path / name / "cache"))) for name in ("first", "second")]
    assert scans[0] == (scans[1][0], False) and scans[0][0] is scans[1][0]


def test_a_dtype_is_one_object_per_name_however_it_is_made():
    import copy
    import pickle

    from migrate.model.dtypes import DType, canonical
    from migrate.runtime.recorded import decode, encode

    made = [DType("float32"), DType.parse("torch.float32"), pickle.loads(pickle.dumps(DType("float32"))), copy.deepcopy(DType("float32"))]
    made.append(decode(encode((DType("float32"),)))[0])
    assert all(d is made[0] for d in made) and made[0].name == "float32"
    assert DType("float32") != DType("float64") and {DType("float32"): 1}.get(DType.parse("torch.float32")) == 1
    newer = DType("float_of_a_newer_torch")  # a name the table lacks sorts after the known ones
    assert canonical([newer, DType("float64"), DType("bool"), DType("float64")]) == (DType("bool"), DType("float64"), newer)


def test_a_run_file_read_through_two_cache_folders_is_decoded_once(tmp_path):
    from migrate.cache import Stage
    from migrate.runtime.run_files import RunFiles
    from migrate.runtime.runs import OpInfoId, OpInfoRun

    run = OpInfoRun(OpInfoId("add", ""), (), (), 3, True)
    first, second = (RunFiles(Stage(tmp_path / name)) for name in ("first", "second"))
    path = first.store_run_json(run.opinfo, run.to_json())
    second.folder.mkdir(parents=True)
    shutil.copyfile(path, second.folder / path.name)
    assert first.run(run.opinfo) == run and first.run(run.opinfo) is second.run(run.opinfo)
    assert first.run(OpInfoId("add", "other")) is None  # a file of another OpInfo is no run of this one
    sub = OpInfoId("sub", "")
    path.rename(first.folder / (sub.file_stem + path.name[len(run.opinfo.file_stem) :]))
    assert first.run(sub) is None  # a file named as sub's whose content is add's run: not sub's


def test_a_worker_stages_entry_read_through_two_cache_folders_is_loaded_once(tmp_path):
    from migrate.cache import StageCache
    from migrate.runtime.worker_stage import WorkerStage

    loads = []
    stage = WorkerStage("example-calls", lambda jobs: [{"overload": "aten::add.Tensor"}], "", lambda entry: loads.append(entry) or tuple(entry))
    first, second = StageCache.at(tmp_path / "first"), StageCache.at(tmp_path / "second")
    made = stage.loaded(first)  # made here: the value made, then the file it was stored as
    assert stage.loaded(first) == made and len(loads) == 2
    entry = stage.stage(first).folder
    shutil.copytree(entry, stage.stage(second).folder)
    assert stage.cached(second, []) is stage.loaded(first) and len(loads) == 2
    stage.stage(second).write_encoded([{"overload": "aten::sub.Tensor"}])  # another entry: loaded afresh
    assert stage.cached(second, []) == ({"overload": "aten::sub.Tensor"},) and len(loads) == 3


def test_a_stage_product_is_unpickled_frozen_out_of_the_cyclic_collector(tmp_path):
    import gc

    from migrate.cache import StageCache

    stage = StageCache(tmp_path).stage("example", "migrate.cache")
    stage.write({"calls": [[1, 2], [3]]}, "inputs")
    gc.unfreeze()
    try:
        assert stage.read("inputs") == {"calls": [[1, 2], [3]]}
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_an_annotated_yaml_is_inferred_as_the_plain_file_it_lowers_to(tmp_path):
    """A hand-written set (or an earlier run's output) changes what is written, never what is inferred: the run reads the
    plans its plain file's run cached, and the writer still keeps the declared set."""
    fixture = (ROOT / "fixtures" / "torchlib_native_functions.yaml").read_text()
    plain, annotated = tmp_path / "plain" / "native_functions.yaml", tmp_path / "annotated" / "native_functions.yaml"
    for path, text in ((plain, fixture), (annotated, fixture.replace(ABS, ABS_HAND, 1))):
        path.parent.mkdir()
        path.write_text(text)
    assert annotated.read_text() != fixture

    def session(path: Path) -> Session:
        return Session(Options(native_functions=path, torchlib=ROOT / "fixtures" / "torchlib_variants", evidence=("torchlib", "groups"), cache_dir=tmp_path / "cache"))

    first, second = session(plain), session(annotated)
    assert second.plain_native.data == first.native.data and second.sources.key == first.sources.key
    assert second.inference.plan == first.inference.plan
    written = second.migrate(RunRequest(yaml_only=True, out=tmp_path / "out")).outputs[0].after.decode()
    assert ABS_HAND in written


def _count_once(stage_folder: str, marks: str) -> None:
    from migrate.cache import Stage, made_once

    def compute() -> int:
        with open(marks, "a") as f:
            f.write("x")
        time.sleep(0.5)  # long enough that the other process asks while this one computes
        return 7

    assert made_once(Stage(Path(stage_folder)), ("inputs",), compute, kind=int) == 7


def test_two_processes_asking_for_one_costly_entry_make_it_once(tmp_path):
    marks = tmp_path / "marks"
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_count_once, args=(str(tmp_path / "stage"), str(marks))) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [p.exitcode for p in processes] == [0, 0]
    assert marks.read_text() == "x"
