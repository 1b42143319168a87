"""Facts once per torch release (issue 51): every ATen call's answer kept by the release, not the tool's code; the
shipped CPU recording of the pinned torch fills them; a torch that differs records afresh and says why; the freshness
gate re-records a fixed sample and compares it verdict for verdict."""

from __future__ import annotations

import copy
import functools
import gzip
import json
from dataclasses import replace

import pytest

from migrate.cache import StageCache
from migrate.cli import main
from migrate.evidence import recording
from migrate.evidence.derived import sweep_state
from migrate.evidence.models import source as models_source
from migrate.evidence.promotion import calls as promotion_calls
from migrate.evidence.recording import FRESHNESS_OPINFOS, SEEDED_FROM, SHIPPED, Seeded, holds_facts, rerecord_sample, seed, stale_calls
from migrate.evidence.torch_stages import WORKER_STAGES
from migrate.model.dtypes import DType
from migrate.pipeline import session as session_module
from migrate.pipeline.session import Options, Session
from migrate.runtime import recorded
from migrate.runtime.recorded import Release, decode, encode, installed_release
from migrate.runtime.runs import Failure, OpInfoId, OpInfoRun
from tests.conftest import facts_only

SHIPPED_FILE = SHIPPED / f"cpu-torch-{installed_release().torch}.json.gz"


@functools.cache
def _shipped() -> dict:
    """The shipped recording as JSON, read once (seconds), never changed: a test changes a copy of what it changes."""
    return json.loads(gzip.decompress(SHIPPED_FILE.read_bytes()))


def _packed(obj: dict) -> bytes:
    """A recording file a test writes and reads once: gzipped JSON, compressed as fast as gzip goes (the shipped file's
    own compression, ``recorded.packed``, takes seconds more for the whole recording)."""
    return gzip.compress(json.dumps(obj, separators=(",", ":")).encode(), compresslevel=1, mtime=0)


def test_the_project_ships_the_pinned_torchs_whole_facts_small_enough_to_review():
    assert SHIPPED_FILE.stat().st_size < 4 * 2**20  # about 2.8 MB of gzipped JSON
    shipped = _shipped()
    assert Release.from_json(shipped["release"]) == installed_release()
    assert {stage.name for stage in WORKER_STAGES} <= shipped["stages"].keys()  # the models' of the pinned transformers too
    assert len(shipped["runs"]) == sum(1 for entry in shipped["catalogue"] if entry["cpu"])


def test_a_stage_entry_round_trips_through_json():
    run = OpInfoRun(OpInfoId("add", ""), (), (Failure(OpInfoId("add", ""), "error", "why", (DType("int8"),), 2),), 3, True)
    value = [{"overload": "aten::add.Tensor", "slots": [["self", "float32"]]}, (1, "a", None, 2.5), {("x", 1): [DType("bool")]}, run]
    assert decode(json.loads(json.dumps(encode(value)))) == value
    assert isinstance(decode(encode((1, 2))), tuple) and decode(encode({"b": 1, "a": 2})) == {"b": 1, "a": 2}
    assert list(decode(encode({"b": 1, "a": 2}))) == ["b", "a"]  # a dict keeps its order: readers iterate it


def test_a_key_is_the_release_and_the_inputs_that_decide_the_calls_never_the_code():
    release = installed_release()
    assert dict(release.inputs).keys() == {"argument catalogue", "cpu capability", "opinfo database", "schemas"}
    other = replace(release, torch="2.12.0")
    assert other.key != release.key and other.differs(release) == f"its torch is 2.12.0, the installed torch is {release.torch}"
    edited = replace(release, inputs=tuple((n, "0" * 16 if n == "opinfo database" else d) for n, d in release.inputs))
    assert edited.differs(release) == f"the installed torch {release.torch} has another opinfo database"


def test_an_empty_cache_is_filled_from_the_shipped_recording_so_no_stage_calls_aten(tmp_path):
    cache = StageCache(tmp_path)
    found = seed(cache)
    assert found == Seeded(source=str(SHIPPED_FILE))
    shipped = _shipped()
    for stage in WORKER_STAGES:
        assert stage.stored(cache) == decode(shipped["stages"][stage.name]), stage.name  # read, never made
    state = sweep_state(cache, 1, refresh=False, only=None)
    assert (state.ran, state.present) == (0, len(shipped["runs"]))
    assert seed(cache) == Seeded()  # once: the facts are there


@pytest.mark.slow
def test_facts_filled_from_an_older_shipped_recording_are_read_again_and_facts_made_here_are_kept(tmp_path, monkeypatch, capsys):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    file = shipped / SHIPPED_FILE.name
    # a recording of the installed release that holds a few runs and one stage: which facts a cache holds follows the
    # file's bytes, whatever they hold (the whole shipped file is read in the test above)
    reports = _shipped()["stages"]["promotion-calls"]
    older = {**_shipped(), "runs": _shipped()["runs"][:3], "stages": {"promotion-calls": reports}}
    file.write_bytes(_packed(older))
    monkeypatch.setattr(recording, "SHIPPED", shipped)
    cache = StageCache(tmp_path / "cache")
    assert seed(cache) == Seeded(source=str(file)) and seed(cache) == Seeded()
    # the checkout pulls a re-recorded file: one overload's promotion calls gone from it
    file.write_bytes(_packed({**older, "stages": {"promotion-calls": reports[:-1]}}))
    assert not holds_facts(cache)
    assert Session(Options(cache_dir=cache.root)).facts == Seeded(source=str(file), replaced=True)
    assert capsys.readouterr().err == f"dtype-migrate: the shipped recording {file} changed since this cache was filled from it: its facts read again\n"
    assert len(promotion_calls.STAGE.stored(cache)) == len(reports) - 1  # the new file's answers, not the older copy's
    # facts this machine's calls made (no shipped file named) stay, whatever ships
    (recorded.folder(cache) / SEEDED_FROM).unlink()
    file.write_bytes(SHIPPED_FILE.read_bytes())
    assert holds_facts(cache) and seed(cache) == Seeded()
    assert len(promotion_calls.STAGE.stored(cache)) == len(reports) - 1


@pytest.mark.live
def test_a_torch_other_than_the_recordings_records_afresh_and_says_why_in_one_line(tmp_path, monkeypatch, capsys):
    # the shipped recording's header, its release another torch's: which release a file is for is all that is read of it
    header = {key: value for key, value in _shipped().items() if key not in ("runs", "stages", "catalogue", "schemas")}
    shipped = {**header, "release": {**_shipped()["release"], "torch": "2.12.0"}}
    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "cpu-torch-2.12.0.json.gz").write_bytes(recorded.packed(shipped))
    monkeypatch.setattr(recording, "SHIPPED", folder)
    state = Session(Options(cache_dir=tmp_path / "cache", ops=("abs",), evidence=("opinfo",), jobs=2)).sweep
    assert capsys.readouterr().err.splitlines() == [
        f"dtype-migrate: recording torch {installed_release().torch}'s facts afresh (every ATen call here, minutes): "
        f"the shipped cpu-torch-2.12.0.json.gz is not this torch's: its torch is 2.12.0, the installed torch is {installed_release().torch}"
    ]
    assert state.ran >= 1  # abs's OpInfos ran here


def test_refresh_removes_the_releases_facts_and_says_so(tmp_path, capsys):
    cache = StageCache(facts_only(tmp_path))
    assert holds_facts(cache)
    assert Session(Options(cache_dir=tmp_path, refresh=True)).facts == Seeded()
    assert not recorded.folder(cache).exists()
    assert capsys.readouterr().err == f"dtype-migrate: --refresh: making every ATen call of torch {installed_release().torch} again (minutes)\n"


@pytest.fixture(scope="module")
def sample():
    """The freshness gate's sample, made here once for the module: its OpInfos, autocast's run and one model's."""
    return rerecord_sample(2)


@pytest.mark.slow
@pytest.mark.live
def test_the_freshness_gate_passes_on_the_shipped_recording(sample, monkeypatch, capfd):
    assert len(sample.runs) == len(FRESHNESS_OPINFOS) and sample.model is not None and sample.autocast["keys"]
    monkeypatch.setattr(session_module, "rerecord_sample", lambda jobs: sample)
    assert main(["record", "--check", str(SHIPPED_FILE)]) == 0
    assert "fresh: its sample re-recorded here is the same, verdict for verdict" in capfd.readouterr().err


@pytest.mark.slow
@pytest.mark.live
def test_the_freshness_gate_fails_at_one_verdict_changed_naming_the_call_and_the_command(sample, tmp_path, monkeypatch, capfd):
    # the shipped recording cut to what the gate compares (the sample's OpInfos, autocast's and the models' entries),
    # add's run the test's own to change
    sampled = set(FRESHNESS_OPINFOS)
    runs = [copy.deepcopy(run) if run["name"] == "add" else run for run in _shipped()["runs"] if (run["name"], run["variant"]) in sampled]
    compared = {name: entry for name, entry in _shipped()["stages"].items() if name == "autocast" or name.startswith(models_source.STAGE_PREFIX)}
    shipped = {**_shipped(), "runs": runs, "stages": compared}
    add = next(run for run in runs if run["name"] == "add")
    index, probe = next((i, p) for i, p in enumerate(add["probes"]) if p[0] == "aten::add.Tensor")
    dropped = probe[5][0][1].pop()  # one accepted dtype of one probed call gone
    stale = stale_calls(shipped, sample)
    assert len(stale) == 1 and stale[0].startswith(f"OpInfo add: probes[{index}], a call of aten::add.Tensor [")
    assert stale[0].endswith(f": recorded [], now [{json.dumps(dropped)}]")
    path = tmp_path / "stale.json.gz"
    path.write_bytes(_packed(shipped))
    monkeypatch.setattr(session_module, "rerecord_sample", lambda jobs: sample)
    assert main(["record", "--check", str(path)]) == 1
    err = capfd.readouterr().err
    assert err.startswith(f"{path}: stale: OpInfo add: probes[{index}], a call of aten::add.Tensor")
    assert f"regenerate it: dtype-migrate record --device cpu --refresh -o {path}" in err


def _as_set(entry) -> object:
    """A stage's entry with its reports in no particular order (workers end in any order)."""
    return sorted(json.dumps(encode(report), sort_keys=True) for report in entry) if isinstance(entry, list) else entry


@pytest.mark.slow
@pytest.mark.live
@pytest.mark.parametrize("name", ["value-calls", "forwards", "dtype-arguments"])
def test_a_stage_made_here_again_is_what_the_shipped_recording_holds(name):
    """The smaller stages made live, whole: each is the shipped recording's entry (the sweep's, the probes', autocast's
    and a model's are the freshness gate's sample; the calls built from schemas and the catalogue have tests of their own)."""
    (stage,) = [stage for stage in WORKER_STAGES if stage.name == name]
    assert _as_set(stage.make(2)) == _as_set(decode(_shipped()["stages"][name]))
