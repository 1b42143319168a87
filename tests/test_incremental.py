"""An --op run into an --out folder that holds an earlier run's output continues from it: only the selected
entries, their sets, their torchlib functions and their report entries change, and the printed counts compare
with the folder. A folder it cannot continue from is refused, unless --overwrite."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from migrate.model.native import NativeFunctions
from tests.conftest import REAL_NATIVE_FUNCTIONS, run_cli, snapshot

FAST = ("--yaml-only", "--evidence", "torchlib")  # no runtime evidence: a run takes about a second
TTENSOR = "TAllAndComplexAndBoolHalfBFloat16"  # torchlib's TTensor (add's), named as PyTorch's words say it
ADD = {"add.Tensor", "add.Scalar", "add.out"}
LE = {"le.Scalar", "le.Scalar_out", "le.Tensor", "le.Tensor_out"}
SDPA = {"scaled_dot_product_attention"}


def _entries(path: Path) -> dict[str, str]:
    """Each entry's text (its item lines), by overload."""
    native = NativeFunctions.load(path)
    return {e.name: "".join(native.lines[e.start : e.end]) for e in native.entries}


def _set_names(folder: Path) -> list[str]:
    return [line.split(": ", 1)[1].strip() for line in (folder / "type_constraints.yaml").read_text().splitlines() if line.startswith("- name: ")]


def test_op_runs_accumulate_in_the_folder(tmp_path, capfd):
    out = tmp_path / "out"
    assert run_cli(capfd, "--op", "add", "--out", out, *FAST)[0] == 0
    after_add = _entries(out / "native_functions.yaml")
    assert run_cli(capfd, "--op", "le", "--out", out, *FAST)[0] == 0
    after_le = _entries(out / "native_functions.yaml")
    plain = _entries(REAL_NATIVE_FUNCTIONS)
    assert all(after_le[name] == after_add[name] != plain[name] for name in ("add.Tensor", "add.Scalar"))
    assert all(after_le[name] != plain[name] for name in ("le.Tensor", "le.Scalar"))
    assert all(after_le[name] == plain[name] for name in after_le if name not in ADD | LE)
    assert {TTENSOR, "TBool"} <= set(_set_names(out))


def test_sets_no_entry_names_do_not_linger(tmp_path, capfd):
    out = tmp_path / "out"
    assert run_cli(capfd, "--op", "add", "--out", out, *FAST)[0] == 0
    with (out / "type_constraints.yaml").open("a") as f:
        f.write("- name: TUnused\n  dtypes: [torch.int8]\n  desc: named by no entry.\n")
    assert run_cli(capfd, "--op", "le", "--out", out, *FAST)[0] == 0
    names = _set_names(out)
    assert "TUnused" not in names and {TTENSOR, "TBool"} <= set(names)
    assert _entries(out / "native_functions.yaml")["add.Tensor"] != _entries(REAL_NATIVE_FUNCTIONS)["add.Tensor"]
    assert names == sorted(names)


def test_counts_compare_with_the_folder(tmp_path, capfd):
    out = tmp_path / "out"
    code, _, err = run_cli(capfd, "--op", "add", "--out", out, *FAST)
    assert code == 0 and err.rstrip().endswith(f"wrote 2 files (2 changed) under {out}")
    before = snapshot(out)
    code, _, err = run_cli(capfd, "--op", "add", "--out", out, *FAST)
    assert code == 0 and err.rstrip().endswith(f"wrote 2 files (0 changed) under {out}")
    assert snapshot(out) == before


@pytest.mark.parametrize("edit", ["hand-edited", "another-file", "unreadable"])
def test_a_folder_it_cannot_continue_from_is_refused(tmp_path, capfd, edit):
    out = tmp_path / "out"
    assert run_cli(capfd, "--op", "add", "--out", out, *FAST)[0] == 0
    written = out / "native_functions.yaml"
    text = written.read_text()
    if edit == "hand-edited":
        text = text.replace("- func: abs(Tensor self) -> Tensor", "- func: abs(Tensor input) -> Tensor", 1)
    elif edit == "another-file":
        text = text[: text.index("- func: le.")]
    else:
        text = text.replace("- func: abs(Tensor self) -> Tensor", "- func: abs(Tensor self -> Tensor\n  : [", 1)
    written.write_text(text)
    before = snapshot(out)
    code, _, err = run_cli(capfd, "--op", "le", "--out", out, *FAST)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"dtype-migrate: error: {written}: ") and "--overwrite" in err
    assert snapshot(out) == before
    code, _, err = run_cli(capfd, "--op", "le", "--out", out, "--overwrite", *FAST)
    assert code == 0
    assert _entries(written)["add.Tensor"] == _entries(REAL_NATIVE_FUNCTIONS)["add.Tensor"]  # started from the input


def test_in_place_op_run_keeps_the_other_entries_and_their_sets(tmp_path, capfd):
    annotated = tmp_path / "annotated"
    assert run_cli(capfd, "--op", "le", "--out", annotated, *FAST)[0] == 0
    with (annotated / "type_constraints.yaml").open("a") as f:
        f.write("- name: THand\n  dtypes: [torch.bool]\n  desc: written by hand.\n")
    path = annotated / "native_functions.yaml"
    path.write_text(path.read_text().replace("- func: le.Tensor(T self, T other) -> TBool", "- func: le.Tensor(T self, T other) -> THand"))
    before = _entries(path)
    assert run_cli(capfd, "--native-functions", path, "--op", "add", *FAST)[0] == 0
    after = _entries(path)
    assert after["add.Tensor"] != before["add.Tensor"]
    assert all(after[name] == before[name] for name in after if name not in ADD)
    assert "- func: le.Tensor(T self, T other) -> THand" in path.read_text()
    assert {"THand", "TBool", TTENSOR} <= set(_set_names(annotated))


@pytest.mark.parametrize("broken", ["set-redefined", "report-unreadable"])
def test_what_the_others_need_from_the_folder_is_checked(tmp_path, capfd, broken):
    """A set the other entries name, given other dtypes by hand (add's); an earlier report not a report."""
    out = tmp_path / "out"
    assert run_cli(capfd, "--op", "add", "--out", out, *FAST)[0] == 0
    if broken == "set-redefined":
        path, named = out / "type_constraints.yaml", f"{TTENSOR}: "
        path.write_text(path.read_text().replace("torch.bool, torch.uint8, ", "torch.uint8, ", 1))
    else:
        path, named = out / "report.json", ""
        path.write_text("[]\n")
    before = snapshot(out)
    code, _, err = run_cli(capfd, "--op", "le", "--out", out, "--report", out / "report.json", *FAST)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"dtype-migrate: error: {path}: {named}")
    assert snapshot(out) == before


def test_an_annotated_input_with_out_continues_too(tmp_path, capfd):
    annotated = tmp_path / "annotated"
    assert run_cli(capfd, "--op", "le", "--out", annotated, *FAST)[0] == 0
    out = tmp_path / "out"
    for op in ("add", "sub"):
        assert run_cli(capfd, "--native-functions", annotated / "native_functions.yaml", "--op", op, "--out", out, *FAST)[0] == 0
    ours, given = _entries(out / "native_functions.yaml"), _entries(annotated / "native_functions.yaml")
    assert all(ours[name] != given[name] for name in ("add.Tensor", "sub.Tensor"))
    assert all(ours[name] == given[name] for name in ours if name.split(".")[0] not in ("add", "sub"))


def test_a_continued_run_enters_infer_once(tmp_path, capfd):
    from migrate.pipeline import Options, RunRequest, Session
    from tests.test_infer_entry import calls_into_infer

    out = tmp_path / "out"
    assert run_cli(capfd, "--op", "add", "--out", out, *FAST)[0] == 0
    with calls_into_infer() as entered:
        migration = Session(Options(ops=("le",), evidence=("torchlib",))).migrate(RunRequest(yaml_only=True, out=out))
    assert entered == ["migrate.infer.run.infer"]
    assert f"  type_constraints: {{T: {TTENSOR}}}" in migration.outputs[0].after.decode().split("- func: add.Tensor(", 1)[1].split("\n", 2)[1]


# --- the real full run, torch_lib and report included ----------------------------------------------------


def _functions(path: Path, names: set[str]) -> list[str]:
    """The texts of the functions of these names (decorators included), in the module's order."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.append("".join(lines[first - 1 : node.end_lineno]))
    return found


@pytest.mark.slow
def test_op_run_into_a_full_runs_folder_changes_nothing_else(full_run, tmp_path, capfd):
    out = tmp_path / "out"
    shutil.copytree(full_run, out)
    code, _, err = run_cli(capfd, "--op", "add", "--out", out, "--report", out / "report.json")
    assert code == 0 and "(0 changed)" in err  # the same evidence: add's entries and functions as they were
    ours, full = snapshot(out), snapshot(full_run)
    assert ours.keys() == full.keys()
    assert [name for name in full if ours[name] != full[name]] == ["report.json"]
    report, earlier = json.loads(ours["report.json"]), json.loads(full["report.json"])
    assert report["overloads"] == earlier["overloads"] and report["global_sets"] == earlier["global_sets"]
    assert report["summary"]["scope"] == sorted(ADD) and report["summary"]["overloads"]["in_scope"] == len(ADD)


@pytest.mark.slow
def test_op_runs_then_a_full_run_equal_a_full_run_alone(full_run, tmp_path, capfd):
    out = tmp_path / "out"
    for op in ("add", "le", "scaled_dot_product_attention"):
        assert run_cli(capfd, "--op", op, "--out", out, "--report", out / "report.json")[0] == 0
    ours, full, plain = _entries(out / "native_functions.yaml"), _entries(full_run / "native_functions.yaml"), _entries(REAL_NATIVE_FUNCTIONS)
    assert all(ours[name] == (full[name] if name in ADD | LE | SDPA else plain[name]) for name in ours)
    core = Path("ops/core.py")
    for function in ("aten_add", "aten_le", "aten_scaled_dot_product_attention"):
        found = _functions(out / "torch_lib" / core, {function}) or _functions(out / "torch_lib/ops/nn.py", {function})
        assert found and found == (_functions(full_run / "torch_lib" / core, {function}) or _functions(full_run / "torch_lib/ops/nn.py", {function}))
    report = json.loads((out / "report.json").read_text())
    assert {o["name"] for o in report["overloads"]} >= ADD | LE | SDPA
    assert run_cli(capfd, "--out", out, "--report", out / "report.json")[0] == 0
    assert snapshot(out) == snapshot(full_run)
