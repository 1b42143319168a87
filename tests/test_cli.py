"""The command line end to end: dry run and git apply, --check, --out, --op, lower, and every bad input."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import migrate.pipeline.session as session_module
from migrate import cli
from migrate.torchlib_source.resolve import installed_torchlib
from migrate.model.dtypes import named
from migrate.model.native import NativeFunctions
from migrate.model.plan import OverloadPlan, Plan, Variable
from migrate.cli import main
from tests.conftest import FIXTURES, REAL_NATIVE_FUNCTIONS, all_slots_plan, run_cli, snapshot

# A run on the copies in the work folder: the yaml and torchlib, both edited in place.
ARGS = ("--native-functions", "native_functions.yaml", "--torchlib", "torch_lib", "--plan", "plan.json")
YAML_ONLY = ("--native-functions", "native_functions.yaml", "--plan", "plan.json", "--yaml-only")


@pytest.fixture
def workdir(tmp_path, real_copy, monkeypatch) -> Path:
    """The current folder: copies of the real yaml and torchlib, and the all-slots plan."""
    all_slots_plan(NativeFunctions.load(real_copy)).write(tmp_path / "plan.json")
    shutil.copytree(installed_torchlib(), tmp_path / "torch_lib", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow  # rewrites the whole torchlib copy, twice or more
def test_dry_run_writes_nothing_and_its_diff_applies_to_the_bytes_of_the_real_run(workdir, capfd, tmp_path_factory):
    before = snapshot(workdir)
    code, diff, err = run_cli(capfd, *ARGS, "--dry-run")
    assert code == 0 and snapshot(workdir) == before
    assert diff.startswith("diff --git a/native_functions.yaml b/native_functions.yaml\n")
    assert "new file mode 100644\n--- /dev/null\n+++ b/type_constraints.yaml\n" in diff
    assert "diff --git a/torch_lib/ops/core.py b/torch_lib/ops/core.py\n" in diff
    assert "constrained" in err

    copy = tmp_path_factory.mktemp("copy")
    shutil.copyfile(workdir / "native_functions.yaml", copy / "native_functions.yaml")
    shutil.copytree(workdir / "torch_lib", copy / "torch_lib")
    (copy / "d.patch").write_text(diff)
    subprocess.run(["git", "apply", "d.patch"], cwd=copy, check=True)

    code, _, _ = run_cli(capfd, *ARGS)
    assert code == 0
    (copy / "d.patch").unlink()
    assert snapshot(copy) == {k: v for k, v in snapshot(workdir).items() if k != "plan.json"}


@pytest.mark.slow  # rewrites the whole torchlib copy, twice or more
def test_check_exits_1_while_changes_are_pending_and_0_after(workdir, capfd):
    args = ARGS
    before = snapshot(workdir)
    code, _, err = run_cli(capfd, *args, "--check")
    assert code == 1 and "would change: native_functions.yaml\n" in err  # the paths as given (here relative)
    assert "would change: type_constraints.yaml\n" in err and "would change: torch_lib/ops/core.py\n" in err
    assert snapshot(workdir) == before
    assert run_cli(capfd, *args)[0] == 0
    code, _, err = run_cli(capfd, *args, "--check")
    assert code == 0 and "would change" not in err
    code, diff, _ = run_cli(capfd, *args, "--dry-run")
    assert code == 0 and diff == ""


def test_op_limits_the_run_to_those_overloads(workdir, capfd):
    original = (workdir / "native_functions.yaml").read_text().splitlines()
    code, _, _ = run_cli(capfd, *YAML_ONLY, "--op", "aten::where.self", "--op", "abs")
    assert code == 0
    written = (workdir / "native_functions.yaml").read_text().splitlines()
    changed = {line.split("(")[0] for line in written if line.startswith("- func:") and line not in original}
    assert changed == {"- func: where.self", "- func: abs", "- func: abs.out"}


def test_unknown_op_is_an_error_listing_close_matches(workdir, capfd):
    code, _, err = run_cli(capfd, *YAML_ONLY, "--op", "scaled_dot_product_atention")
    assert code == 2
    assert "unknown operator 'scaled_dot_product_atention'" in err and "scaled_dot_product_attention" in err


def test_default_inputs_are_never_written_and_out_mirrors_them(tmp_path, capfd):
    plan = tmp_path / "plan.json"
    Plan((), (OverloadPlan("abs", (Variable("T", named("float32"), ("self", "return.0")),)),)).write(plan)
    installed = REAL_NATIVE_FUNCTIONS.read_bytes()
    code, _, err = run_cli(capfd, "--plan", plan)
    assert code == 2 and "--out" in err and str(REAL_NATIVE_FUNCTIONS) in err
    out = tmp_path / "out"
    assert run_cli(capfd, "--plan", plan, "--out", out)[0] == 0
    assert REAL_NATIVE_FUNCTIONS.read_bytes() == installed
    assert "- func: abs(T self) -> T\n  type_constraints: {T: [torch.float32]}\n" in (out / "native_functions.yaml").read_text()
    assert not (out / "type_constraints.yaml").exists()


def test_lower_command_restores_the_original(workdir, capfd):
    original = (workdir / "native_functions.yaml").read_bytes()
    run_cli(capfd, *YAML_ONLY)
    assert run_cli(capfd, "lower", "native_functions.yaml", "-o", "lowered.yaml")[0] == 0
    assert (workdir / "lowered.yaml").read_bytes() == original


def _hard_cases(folder: Path) -> Path:
    """The annotated fixture, with its sets beside it as type_constraints.yaml."""
    shutil.copyfile(FIXTURES / "hard_cases.expected_type_constraints.yaml", folder / "type_constraints.yaml")
    return Path(shutil.copyfile(FIXTURES / "hard_cases.expected.yaml", folder / "native_functions.yaml"))


def test_module_entry_point_runs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "migrate", "lower", str(_hard_cases(tmp_path))], capture_output=True, check=True)
    assert result.stdout == (FIXTURES / "hard_cases.yaml").read_bytes()


# Bad input: one line naming file, line and op; exit 2; nothing written.


def _bad_yaml(folder: Path) -> None:
    path = folder / "native_functions.yaml"
    path.write_text(path.read_text().replace("  variants: function\n", "  variants: [function\n", 1))


def _no_func(folder: Path) -> None:
    path = folder / "native_functions.yaml"
    path.write_text(path.read_text().replace("- func: _cast_Char(", "- fun: _cast_Char(", 1))


def _bad_schema(folder: Path) -> None:
    path = folder / "native_functions.yaml"
    path.write_text(path.read_text().replace("- func: _cast_Char(Tensor self,", "- func: _cast_Char(Tensor self,,", 1))


def _edit_plan(folder: Path, overload: str, **changes) -> None:
    obj = json.loads((folder / "plan.json").read_text())
    for item in obj["overloads"]:
        if item["name"] == overload:
            item.update(changes)
    (folder / "plan.json").write_text(json.dumps(obj, indent=1))


def _version_1(folder: Path) -> None:
    obj = json.loads((folder / "plan.json").read_text())
    (folder / "plan.json").write_text(json.dumps({**obj, "version": 1}, indent=1))


BAD_INPUTS = {
    "yaml that does not parse": (_bad_yaml, r"native_functions.yaml:10: _cast_Byte: yaml does not parse"),
    "an entry without func": (_no_func, r"native_functions.yaml:13: entry has no 'func:' key"),
    "an unparsable schema": (_bad_schema, r"native_functions.yaml:13: _cast_Char: unparsable schema"),
    "an unknown overload": (
        lambda f: _edit_plan(f, "add.Tensor", name="add.Tensr"),
        r"plan.json:\d+: add.Tensr: unknown overload \(close matches: add.Tensor",
    ),
    "an unknown dtype": (
        lambda f: _edit_plan(f, "add.Tensor", variables=[{"name": "T", "dtypes": ["torch.float33"], "binds": ["self"]}]),
        r"plan.json:\d+: add.Tensor: plan names an unknown dtype 'torch.float33'",
    ),
    "an unresolved type variable": (
        lambda f: _edit_plan(f, "add.Tensor", variables=[{"name": "TNowhere", "dtypes": [], "binds": ["self"]}]),
        r"plan.json:\d+: add.Tensor: unresolved type variable TNowhere",
    ),
    "a plan whose verdicts are text (format version 1)": (
        _version_1,
        r"plan.json:1: plan format version 1 spells its verdicts as text and has no sets per backend, which version 2 keeps as records: write the plan again with --report",
    ),
    "a variable bound to a non-tensor argument": (
        lambda f: _edit_plan(f, "add.Tensor", variables=[{"name": "T", "dtypes": ["torch.float32"], "binds": ["alpha"]}]),
        r"plan.json:\d+: add.Tensor: type variable T binds alpha, a Scalar and not a tensor",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_clear_line_exit_2_and_nothing_written(case, workdir, capfd):
    corrupt, message = BAD_INPUTS[case]
    corrupt(workdir)
    before = snapshot(workdir)
    code, out, err = run_cli(capfd, *ARGS)
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("dtype-migrate: error: ")
    import re

    assert re.search(message, err), err
    assert snapshot(workdir) == before


def test_unwritable_output_writes_nothing(workdir, capfd):
    out = workdir / "out"
    out.mkdir()
    (out / "type_constraints.yaml").mkdir()  # a folder where a file must go: the second write fails
    (out / "type_constraints.yaml" / "keep").write_text("x")
    before = snapshot(workdir)
    code, _, err = run_cli(capfd, *ARGS, "--out", out)
    assert code == 2 and "nothing was written" in err and len(err.splitlines()) == 1
    assert snapshot(workdir) == before


def test_input_changed_on_disk_between_read_and_write(workdir, capfd, monkeypatch):
    real_migrate = session_module.Session.migrate

    def migrate_then_someone_edits(session, *args, **kwargs):
        migration = real_migrate(session, *args, **kwargs)
        session.native.path.write_text(session.native.path.read_text() + "\n# edited meanwhile\n")
        return migration

    monkeypatch.setattr(session_module.Session, "migrate", migrate_then_someone_edits)
    code, _, err = run_cli(capfd, *ARGS)
    assert code == 2 and "changed on disk since it was read" in err and "native_functions.yaml" in err
    assert (workdir / "native_functions.yaml").read_text().endswith("# edited meanwhile\n")
    assert not (workdir / "type_constraints.yaml").exists()


@pytest.mark.parametrize("command", [["show", "add"], ["lower"]])
def test_a_reader_that_left_ends_the_command_quietly(command, tmp_path):
    """`dtype-migrate show X | head`: the pipe's reader is gone; no BrokenPipeError traceback, exit 141 as for SIGPIPE."""
    if command == ["lower"]:
        command = ["lower", str(_hard_cases(tmp_path))]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "migrate", *command], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == cli.EXIT_BROKEN_PIPE


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.parametrize(("mask", "file_mode", "folder_mode"), [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_outputs_are_created_with_the_process_umask(mask, file_mode, folder_mode, workdir, capfd):
    """As open() and mkdir create them: a run's outputs, its report, the docs pages and lower -o."""
    (workdir / "native_functions.yaml").chmod(0o640)  # a replaced file keeps its own mode
    with _umask(mask):
        assert run_cli(capfd, *ARGS, "--op", "abs", "--out", "out", "--report", "out/reports/report.json")[0] == 0
        assert run_cli(capfd, "docs", "out/native_functions.yaml", "--report", "out/reports/report.json", "-o", "out/docs")[0] == 0
        assert run_cli(capfd, "lower", "out/native_functions.yaml", "-o", "out/plain.yaml")[0] == 0
        assert run_cli(capfd, *YAML_ONLY, "--op", "abs")[0] == 0
    out = workdir / "out"
    files = [p for p in out.rglob("*") if p.is_file()]
    folders = [out, *(p for p in out.rglob("*") if p.is_dir())]
    expected = {"native_functions.yaml", "type_constraints.yaml", "report.json", "index.html", "OperatorDtypes.md", "plain.yaml"}
    assert expected <= {p.name for p in files} and any(p.parts[-2:] == ("ops", "core.py") for p in files)
    assert {p.relative_to(out).as_posix(): oct(p.stat().st_mode & 0o777) for p in files} == {p.relative_to(out).as_posix(): oct(file_mode) for p in files}
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in folders} == {p.name: oct(folder_mode) for p in folders}
    assert (workdir / "native_functions.yaml").stat().st_mode & 0o777 == 0o640
    assert (workdir / "type_constraints.yaml").stat().st_mode & 0o777 == file_mode


def test_a_mistyped_command_is_named_with_the_close_one(capfd):
    code, out, err = run_cli(capfd, "acepts", "add", "self=float32")
    assert (code, out) == (2, "")
    assert err == "dtype-migrate: error: unknown command 'acepts'; did you mean 'accepts'?\n"
    code, _, err = run_cli(capfd, "frobnicate")
    assert code == 2 and err.startswith("dtype-migrate: error: unknown command 'frobnicate' (commands: lower, show,")


def test_version_names_this_tool_torch_and_onnxscript(capfd):
    import importlib.metadata

    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    out, _ = capfd.readouterr()
    assert exited.value.code == 0
    assert out == f"dtype-migrate {importlib.metadata.version('dtype-migrate')}, torch {importlib.metadata.version('torch')}, onnxscript {importlib.metadata.version('onnxscript')}\n"


def test_the_summary_counts_every_torchlib_function_the_diff_touches(capfd):
    """add's torchlib functions keep their annotations, but their docstrings' schema lines take the yaml's variables."""
    code, out, err = run_cli(capfd, "--op", "add", "--dry-run", "--evidence", "torchlib")
    assert code == 0
    rewritten = [line for line in out.splitlines() if line.startswith('+    """add')]
    assert len(rewritten) == 3
    assert "torchlib: 3 functions rewritten in 1 modules (0 annotations, 3 docstrings);" in err


def test_the_report_is_written_with_the_outputs_or_not_at_all(tmp_path, capfd):
    """A run whose outputs cannot all be written leaves no report behind (it used to be written first)."""
    out, report = tmp_path / "out", tmp_path / "report.json"
    (out / "type_constraints.yaml").mkdir(parents=True)  # no file can replace a folder
    code, _, err = run_cli(capfd, "--op", "add", "--evidence", "torchlib", "--yaml-only", "--out", out, "--report", report)
    assert code == 2 and "nothing was written" in err
    assert not report.exists() and sorted(p.name for p in out.iterdir()) == ["type_constraints.yaml"]
    code, _, err = run_cli(capfd, "--op", "add", "--evidence", "torchlib", "--yaml-only", "--dry-run", "--report", report)
    assert code == 0 and json.loads(report.read_text())["overloads"]  # the review's report, under --dry-run


def test_show_reads_the_given_yaml_else_the_migrated_one_in_out_else_the_installed(tmp_path, monkeypatch):
    from migrate.show import native_functions_to_show

    monkeypatch.chdir(tmp_path)
    assert native_functions_to_show(None) is None
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "native_functions.yaml").write_text("")
    assert native_functions_to_show(None) == Path("out/native_functions.yaml")
    assert native_functions_to_show(tmp_path / "given.yaml") == tmp_path / "given.yaml"


def test_lower_of_a_plain_file_says_there_is_nothing_to_lower(tmp_path, capfd):
    code, out, err = run_cli(capfd, "lower", REAL_NATIVE_FUNCTIONS, "-o", tmp_path / "plain.yaml")
    assert code == 0 and (tmp_path / "plain.yaml").read_bytes() == REAL_NATIVE_FUNCTIONS.read_bytes()
    assert err == f"dtype-migrate lower: {REAL_NATIVE_FUNCTIONS} declares no dtype (no type variable or annotation line): nothing to lower\n"


def test_an_op_run_says_what_it_changed_and_v_the_whole_files_statistics(tmp_path, capfd):
    out = tmp_path / "out"
    code, _, err = run_cli(capfd, "--op", "add", "--evidence", "torchlib", "--out", out)
    assert code == 0
    assert [line.split(":")[0].split(" ")[0] for line in err.splitlines()] == ["overloads", "torchlib", "torchlib", "wrote"]
    code, _, verbose = run_cli(capfd, "--op", "add", "--evidence", "torchlib", "--out", tmp_path / "v", "-v")
    assert code == 0 and "coverage of the written yaml:" in verbose and len(verbose.splitlines()) > 2 * len(err.splitlines())


@pytest.mark.slow  # three --op runs on the real files
def test_each_ops_dry_run_patch_applies_at_the_roots_of_the_checkouts_in_turn(tmp_path, capfd):
    """A yaml laid out as in a pytorch checkout and a torch_lib as in an onnxscript one: each patch names the files by
    their paths in their checkout, `git apply` at each root takes its part, the next op's patch applies on top, and
    the result lowers to the original bytes."""
    pytorch, onnxscript = tmp_path / "pytorch", tmp_path / "onnxscript"
    native = pytorch / "aten" / "src" / "ATen" / "native" / "native_functions.yaml"
    torchlib = onnxscript / "onnxscript" / "function_libs" / "torch_lib"
    native.parent.mkdir(parents=True)
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, native)
    shutil.copytree(installed_torchlib(), torchlib, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for root in (pytorch, onnxscript):
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run([*git, "add", "-A"], cwd=root, check=True)
        subprocess.run([*git, "commit", "-qm", "plain"], cwd=root, check=True)
    touched = set()
    for op in ("softmax", "add"):  # the second patch applies on top of the first
        code, patch, err = run_cli(capfd, "--native-functions", native, "--torchlib", torchlib, "--op", op, "--dry-run")
        assert code == 0, err
        (tmp_path / f"{op}.patch").write_text(patch)
        paths = {line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git ")}
        assert all(p.startswith(("aten/src/ATen/native/", "onnxscript/function_libs/torch_lib/")) for p in paths), paths
        touched |= paths
        subprocess.run(["git", "apply", "--include=aten/*", tmp_path / f"{op}.patch"], cwd=pytorch, check=True)
        subprocess.run(["git", "apply", "--include=onnxscript/*", tmp_path / f"{op}.patch"], cwd=onnxscript, check=True)
    assert "aten/src/ATen/native/type_constraints.yaml" in touched and "onnxscript/function_libs/torch_lib/ops/core.py" in touched
    assert run_cli(capfd, "--native-functions", native, "--torchlib", torchlib, "--op", "add", "--dry-run")[1] == ""  # applied
    assert run_cli(capfd, "lower", native, "-o", tmp_path / "lowered.yaml")[0] == 0
    assert (tmp_path / "lowered.yaml").read_bytes() == REAL_NATIVE_FUNCTIONS.read_bytes()


def test_shows_help_states_the_defaults_it_reads(capsys):
    """show reads out/ and the torch_lib beside the yaml first: its --help says so, not the installed files alone."""
    with pytest.raises(SystemExit):
        main(["show", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: out/native_functions.yaml when it exists, else the installed torch's packaged copy)" in text
    assert "(default: the torch_lib/ beside the yaml when it exists, else the installed one)" in text
