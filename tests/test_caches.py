"""The caches of derived results (the torchlib scan, the plan, the rewrite) are keyed by content.

A warm run after an edit of the yaml or of torchlib writes exactly what a run with an
empty cache writes: no output ever comes from an entry an older input made.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from migrate.cache import code_digest, content_key
from migrate.errors import InputError
from migrate.evidence.torchlib.resolve import installed_torchlib
from migrate.model.native import NativeFunctions
from migrate.model.schema import TypedSchema
from tests.conftest import REAL_NATIVE_FUNCTIONS, run_cli, snapshot

# The OpInfo sweep's cache is keyed by its own files; these runs leave it out to stay fast with an empty cache.
EVIDENCE = ("--evidence", "torchlib,groups")
ACOS = "- func: acos(Tensor self) -> Tensor\n"
EDITS = {
    # The schema's argument renamed: torchlib's parameter no longer maps to it, so acos loses its constraint.
    "yaml": ("native_functions.yaml", ACOS, "- func: acos(Tensor input) -> Tensor\n"),
    # torchlib's annotation widened: acos (and its siblings) take the wider set.
    "torchlib": ("torch_lib/ops/core.py", "def aten_acos(self: TFloat) -> TFloat:", "def aten_acos(self: TReal) -> TReal:"),
}


@pytest.fixture
def work(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, folder / "native_functions.yaml")
    shutil.copytree(installed_torchlib(), folder / "torch_lib", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _run(capfd, work: Path, cache: Path, out: Path, *extra: str) -> dict[str, bytes]:
    inputs = ("--native-functions", work / "native_functions.yaml", "--torchlib", work / "torch_lib")
    code, _, err = run_cli(capfd, *inputs, *EVIDENCE, "--cache-dir", cache, "--out", out, *extra)
    assert code == 0, err
    return snapshot(out)


def _acos_line(outputs: dict[str, bytes]) -> str:
    return next(line for line in outputs["native_functions.yaml"].decode().splitlines() if line.startswith("- func: acos("))


@pytest.mark.slow  # full runs, with a cold cache and a warm one
@pytest.mark.parametrize("edited", sorted(EDITS))
def test_a_warm_run_after_an_edit_writes_what_a_run_with_an_empty_cache_writes(edited, work, tmp_path, capfd):
    cache = tmp_path / "cache"
    before = _run(capfd, work, cache, tmp_path / "before")
    assert _run(capfd, work, cache, tmp_path / "again") == before
    assert {"plans", "rewrites"} <= {p.name for p in cache.iterdir()}
    assert any((cache / "torchlib" / "evidence").iterdir())

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


def test_every_key_holds_the_code_and_each_part_apart():
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key(b"x") == content_key("x") != content_key("x", "")
    assert len(code_digest()) == 64


def test_a_validated_file_is_read_back_with_its_groups_and_a_broken_one_is_checked_every_time(tmp_path, monkeypatch):
    monkeypatch.setenv("DTYPE_MIGRATE_CACHE", str(tmp_path / "cache"))
    data = REAL_NATIVE_FUNCTIONS.read_bytes()
    fresh = NativeFunctions.parse(data, "native_functions.yaml")
    assert fresh.validate() == ()

    def no_torchgen(self):
        raise AssertionError("a validated file went through torchgen again")

    with monkeypatch.context() as patched:
        patched.setattr(TypedSchema, "torchgen", no_torchgen)
        warm = NativeFunctions.parse(data, "native_functions.yaml")
        assert warm.validate() == ()
        assert warm.groups.state() == fresh.groups.state()
        assert warm.groups["add.out"] == fresh.groups["add.out"]

    broken = data.replace(ACOS.encode(), ACOS.encode() + b"  variants: [function\n")
    for _ in range(2):
        with pytest.raises(InputError, match="acos"):
            NativeFunctions.parse(broken, "native_functions.yaml").validate()
