"""A run enters ``migrate.infer`` once, with the whole ``Sources``: every call into its code from outside it is counted."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

import migrate
import migrate.infer
from migrate.cli import main
from migrate.pipeline import Options, RunRequest, Session

ROOT = Path(__file__).resolve().parent.parent
INFER = str(Path(migrate.infer.__file__).parent) + "/"
PROJECT = str(Path(migrate.__file__).parent.parent) + "/"  # the tool and its tests


@contextlib.contextmanager
def calls_into_infer():
    """The functions of ``migrate.infer`` entered from the project's code outside it, in call order, one per call.

    A call made while some function of ``migrate.infer`` is still running is no entry: the stage cache calling back the
    computation infer handed it, ``canonical`` iterating a generator infer made."""
    entered: list[str] = []

    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(INFER):
            return
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(PROJECT):  # functools, dataclasses' __init__
            caller = caller.f_back
        if caller is None or caller.f_code.co_filename.startswith(INFER):
            return
        outer = caller
        while outer is not None and not outer.f_code.co_filename.startswith(INFER):
            outer = outer.f_back
        if outer is None:
            entered.append(f"{frame.f_globals['__name__']}.{frame.f_code.co_qualname}")

    sys.setprofile(profile)
    try:
        yield entered
    finally:
        sys.setprofile(None)


def test_the_counter_sees_a_call_into_infer_and_not_its_own_calls():
    from migrate.infer.naming import spelling

    with calls_into_infer() as entered:
        spell = spelling((), ())
        spell(())
    assert entered == ["migrate.infer.naming.spelling", "migrate.infer.naming.spelling.<locals>.<lambda>"]


def test_a_run_on_a_fixture_enters_infer_once(tmp_path):
    native = tmp_path / "native_functions.yaml"
    native.write_bytes((ROOT / "fixtures" / "torchlib_native_functions.yaml").read_bytes())
    options = Options(native_functions=native, torchlib=ROOT / "fixtures" / "torchlib_variants", evidence=("torchlib", "groups"), cache_dir=tmp_path / "cache")
    with calls_into_infer() as entered:
        migration = Session(options).migrate(RunRequest(yaml_only=True, out=tmp_path / "out"))
    assert entered == ["migrate.infer.run.infer"]
    assert migration.changed


@pytest.mark.slow  # the full default run
def test_the_full_default_run_enters_infer_once(tmp_path):
    with calls_into_infer() as entered, contextlib.redirect_stderr(io.StringIO()):
        assert main(["--out", str(tmp_path), "-j", "1"]) == 0
    assert entered == ["migrate.infer.run.infer"]
