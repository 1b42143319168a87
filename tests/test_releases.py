"""The full run on other releases' files: older and recent torch yaml (fetched once, cached), an older torchlib."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.evidence.torchlib.resolve import installed_torchlib
from tests.conftest import REAL_NATIVE_FUNCTIONS, lint_round_trip, run_cli
from tests.test_yaml_writer import _comment_owners

ROOT = Path(__file__).resolve().parent.parent
OLD_TORCH, RECENT_TORCH, OLD_ONNXSCRIPT = "2.5.1", "2.9.1", "0.1.0"


def fetch(spec: str) -> Path:
    """The release's cached files (scripts/fetch_release.py downloads them on first use); a failed fetch fails."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_release.py"), spec], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def _release_yaml(version: str, folder: Path) -> Path:
    folder.mkdir()
    path = folder / "native_functions.yaml"
    shutil.copyfile(fetch(f"torch=={version}") / "torchgen/packaged/ATen/native/native_functions.yaml", path)
    return path


@pytest.mark.parametrize("version", [OLD_TORCH, RECENT_TORCH])
def test_release_yaml_through_the_full_run(version, tmp_path, capfd):
    path = _release_yaml(version, tmp_path / "in")
    original = path.read_text()
    if version == OLD_TORCH:
        assert re.search(r"^- func: .*\bDimname\b", original, re.M), "the older release must still have Dimname schemas"
    torchlib = tmp_path / "torch_lib"
    shutil.copytree(installed_torchlib(), torchlib, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    code, stdout, err = run_cli(capfd, "--native-functions", path, "--torchlib", torchlib, "--out", out, "--report", out / "report.json")
    assert code == 0, err
    written = (out / "native_functions.yaml").read_text()
    assert written != original
    summary = json.loads((out / "report.json").read_text())["summary"]
    typed = summary["coverage"]["entries_typed"]
    assert typed > 500
    print(f"torch {version}: {typed} entries typed; {len(summary['validation']['schemas_unchecked'])} schemas unchecked")
    if version == OLD_TORCH:
        assert summary["validation"]["schemas_unchecked"]
    assert run_cli(capfd, "lower", out / "native_functions.yaml", "-o", tmp_path / "lowered.yaml")[0] == 0
    assert (tmp_path / "lowered.yaml").read_text() == original
    assert lint_round_trip(written) == written
    assert _comment_owners(written.splitlines()) == _comment_owners(original.splitlines())


def _registrations(folder: Path) -> dict[str, list[str]]:
    """Each module's decorator lines that register a function (torch_op / onnx_impl)."""
    found = {}
    for module in sorted(folder.rglob("*.py")):
        lines = [line.strip() for line in module.read_text().splitlines() if re.match(r"\s*@(torch_op|onnx_impl)\b", line)]
        found[str(module.relative_to(folder))] = lines
    return found


def _annotations(folder: Path) -> dict[str, int]:
    """Each function's count of annotated parameters, keyed by module, name and occurrence (line numbers move)."""
    found = {}
    for module in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.FunctionDef):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                key = f"{module.relative_to(folder)}:{node.name}"
                occurrence = sum(1 for k in found if k.rsplit("#", 1)[0] == key)
                found[f"{key}#{occurrence}"] = sum(a.annotation is not None for a in args)
    return found


def test_older_torchlib_through_the_full_run(tmp_path, capfd):
    torchlib = tmp_path / "torch_lib"
    shutil.copytree(fetch(f"onnxscript=={OLD_ONNXSCRIPT}") / "onnxscript/function_libs/torch_lib", torchlib)
    yaml = tmp_path / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, yaml)
    before_registrations, before_annotations = _registrations(torchlib), _annotations(torchlib)
    code, stdout, err = run_cli(capfd, "--native-functions", yaml, "--torchlib", torchlib)
    assert code == 0, err
    for module in torchlib.rglob("*.py"):
        compile(module.read_text(), str(module), "exec")
    assert _registrations(torchlib) == before_registrations
    after = _annotations(torchlib)
    variants = [name for name in before_annotations if re.search(r":\w+_(float|int|bool|complex)\w*#", name)]
    assert variants, "the older torch_lib has dtype-variant functions"
    assert set(after) == set(before_annotations)
    for name in before_annotations:
        assert after[name] >= before_annotations[name], name


def _source_tree(tmp_path: Path) -> Path:
    """A PyTorch source-tree layout of the older release: its yaml under aten/src/ATen/native/, its torchgen at the root."""
    release = fetch(f"torch=={OLD_TORCH}")
    assert (release / "torchgen" / "model.py").is_file()
    root = tmp_path / "pytorch"
    shutil.copytree(release / "torchgen", root / "torchgen", ignore=shutil.ignore_patterns("__pycache__", "packaged"))
    native = root / "aten/src/ATen/native"
    native.mkdir(parents=True)
    for name in ("native_functions.yaml", "tags.yaml"):
        shutil.copyfile(release / "torchgen/packaged/ATen/native" / name, native / name)
    return native / "native_functions.yaml"


def test_source_tree_layout_is_validated_by_the_trees_torchgen(tmp_path, capfd):
    path = _source_tree(tmp_path)
    code, stdout, err = run_cli(capfd, "--native-functions", path, "--yaml-only", "--out", tmp_path / "out")
    assert code == 0, err
    assert f"validation: the source tree's {path.parents[4] / 'torchgen'}; 0 schemas" in stdout + err


def test_compat_names_the_torchgen_an_older_file_needs(tmp_path):
    from migrate.compat import parse_native_yaml
    from migrate.errors import InputError

    path = _release_yaml(OLD_TORCH, tmp_path / "in")
    with pytest.raises(InputError, match=r"needs the torchgen of the release it comes from") as caught:
        parse_native_yaml(path, fetch(f"torch=={OLD_TORCH}") / "torchgen/packaged/ATen/native/tags.yaml")
    assert "Dimname" in str(caught.value) and caught.value.line is not None

