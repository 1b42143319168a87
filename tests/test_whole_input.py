"""The whole input is checked before anything is written: every entry's declaration, whatever --op selects, by the run
and by every command that reads an annotated yaml; and --torchlib must be onnxscript's torch_lib."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.model.plan import GlobalSet, OverloadPlan, Plan, Variable
from tests.conftest import FLOATS, run_cli, snapshot

# abs annotated (its variable spelled by the global set TFloat), add.Tensor planned but left to the second run.
PLAN = Plan(
    (GlobalSet("TFloat", FLOATS, "Floating-point tensors."),),
    (
        OverloadPlan("abs", (Variable("T", FLOATS, ("self", "return.0")),)),
        OverloadPlan("add.Tensor", (Variable("T", FLOATS, ("self", "other", "return.0")),)),
    ),
)
ABS = "- func: abs(T self) -> T\n  type_constraints: {T: TFloat}\n"
RUN = ("--native-functions", "native_functions.yaml", "--plan", "plan.json", "--yaml-only")


@pytest.fixture
def annotated_copy(real_copy: Path, capfd, monkeypatch) -> Path:
    """The current folder: the real yaml with abs annotated in place, its type_constraints.yaml and the plan."""
    folder = real_copy.parent
    monkeypatch.chdir(folder)
    PLAN.write(folder / "plan.json")
    assert run_cli(capfd, *RUN, "--op", "abs")[0] == 0
    assert ABS in (folder / "native_functions.yaml").read_text()
    return folder


def _edit(path: Path, old: str, new: str) -> int:
    """Replace the first ``old`` and give the 1-based line it stands on."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return text[: text.index(old)].count("\n") + 1


def _typo_in_a_plain_entry(folder: Path) -> str:
    line = _edit(folder / "native_functions.yaml", "- func: _cast_Char(Tensor self,", "- func: _cast_Char(Tensr self,")
    return f"native_functions.yaml:{line}: _cast_Char: unresolved type variable Tensr"


def _unresolved_set_name(folder: Path) -> str:
    line = _edit(folder / "native_functions.yaml", ABS, ABS.replace("{T: TFloat}", "{T: TFloats}")) + 1
    return f"native_functions.yaml:{line}: abs: unresolved type variable TFloats"


def _unknown_dtype_in_the_sets(folder: Path) -> str:
    line = _edit(folder / "type_constraints.yaml", "- name: TFloat\n  dtypes: [torch.float16,", "- name: TFloat\n  dtypes: [torch.int17,")
    return f"type_constraints.yaml:{line}: TFloat: unknown dtype 'torch.int17'"


CORRUPTIONS = {"a type word typo": _typo_in_a_plain_entry, "an unresolved set name": _unresolved_set_name, "an unknown dtype": _unknown_dtype_in_the_sets}
COMMANDS = {
    "the run, another --op": (*RUN, "--op", "add.Tensor"),
    "the run, --report": (*RUN, "--op", "add.Tensor", "--report", "report.json"),
    "lower": ("lower", "native_functions.yaml", "-o", "plain.yaml"),
    "autocast-gen": ("autocast-gen", "native_functions.yaml", "-o", "autocast.cpp"),
    "promotion-gen": ("promotion-gen", "native_functions.yaml", "-o", "rules.py"),
    "docs": ("docs", "native_functions.yaml", "-o", "docs"),
    "accepts": ("accepts", "add.Tensor", "self=float32", "other=float32", "--native-functions", "native_functions.yaml"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_bad_declaration_anywhere_is_one_line_exit_2_and_nothing_written(corruption, command, annotated_copy, capfd):
    expected = CORRUPTIONS[corruption](annotated_copy)
    before = snapshot(annotated_copy)
    code, out, err = run_cli(capfd, *COMMANDS[command])
    assert (code, out, err) == (2, "", f"dtype-migrate: error: {expected}\n")
    assert snapshot(annotated_copy) == before


def test_the_run_still_writes_the_selected_overloads_of_a_sound_file(annotated_copy, capfd):
    """The check refuses only what is wrong: the second run of the same file writes add.Tensor."""
    assert run_cli(capfd, *RUN, "--op", "add.Tensor")[0] == 0
    assert "- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T\n" in (annotated_copy / "native_functions.yaml").read_text()


def _unrelated_module(folder: Path) -> None:
    (folder / "helpers.py").write_text("def helper():\n    return 1\n")


def _no_registration(folder: Path) -> None:
    _unrelated_module(folder)
    (folder / "tensor_typing.py").write_text("from typing import TypeVar\n\nTFloat = TypeVar('TFloat')\n")


@pytest.mark.parametrize(
    ("make", "missing"),
    [(_unrelated_module, "it has no tensor_typing.py"), (_no_registration, "no module registers an ATen overload with @torch_op")],
)
def test_a_torchlib_folder_that_is_not_torchlib_is_refused(make, missing, real_copy, capfd, monkeypatch):
    folder = real_copy.parent
    monkeypatch.chdir(folder)
    PLAN.write(folder / "plan.json")
    (folder / "mine").mkdir()
    make(folder / "mine")
    before = snapshot(folder)
    code, _, err = run_cli(capfd, "--native-functions", "native_functions.yaml", "--torchlib", "mine", "--plan", "plan.json", "--out", "out")
    assert (code, err) == (2, f"dtype-migrate: error: mine: not onnxscript's torch_lib: {missing}; nothing was written\n")
    assert snapshot(folder) == before and not (folder / "out").exists()
