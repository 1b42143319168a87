"""The full run on other releases' files: an older and a recent torch yaml (fetched once, cached), an older torchlib.

Each release's yaml goes through one full default run (module-scoped, against the installed torchlib); the
tests read its outputs. The lint round trip, verify and the source tree's torchgen reading the written file (seconds
each) take the older release's alone; the installed release's written file has them in test_run, test_verify and
test_compat. Nothing here names an overload of a release: what a test looks at is found in the files.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate.cli import main
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import scan_torchlib
from migrate.model.native import NativeFunctions
from tests.conftest import REAL_NATIVE_FUNCTIONS, lint_round_trip, report_of, run_cli
from tests.test_yaml_writer import _comment_owners

pytestmark = pytest.mark.slow  # full runs on other releases' files

ROOT = Path(__file__).resolve().parent.parent
OLD_TORCH, RECENT_TORCH, OLD_ONNXSCRIPT = "2.5.1", "2.9.1", "0.1.0"
PACKAGED = Path("torchgen/packaged/ATen/native")
OLDER_ONLY = pytest.mark.parametrize("release_run", [OLD_TORCH], indirect=True)  # its grammar is the further from the installed one


def fetch(spec: str) -> Path:
    """The release's cached files (scripts/fetch_release.py downloads them on first use); a failed fetch fails."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_release.py"), spec], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def _release_yaml(version: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "native_functions.yaml"
    shutil.copyfile(fetch(f"torch=={version}") / PACKAGED / "native_functions.yaml", path)
    return path


def _main(*argv) -> tuple[int, str]:
    """The CLI in-process (module-scoped fixtures have no capfd); its standard error."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


@dataclass(frozen=True)
class ReleaseRun:
    version: str
    original: Path
    out: Path
    code: int
    stderr: str

    @property
    def written(self) -> Path:
        return self.out / "native_functions.yaml"

    @property
    def summary(self) -> dict:
        return self.report["summary"]

    @property
    def report(self) -> dict:
        return report_of(self.out)


@pytest.fixture(scope="module", params=[OLD_TORCH, RECENT_TORCH])
def release_run(request, tmp_path_factory) -> ReleaseRun:
    """The full default run on the release's packaged yaml, against the installed torchlib, written under --out."""
    folder = tmp_path_factory.mktemp(f"torch-{request.param}")
    path = _release_yaml(request.param, folder / "in")
    out = folder / "out"
    code, err = _main("--native-functions", path, "--out", out, "--report", out / "report.json")
    return ReleaseRun(request.param, path, out, code, err)


def test_the_older_release_still_has_dimname_schemas():
    text = (fetch(f"torch=={OLD_TORCH}") / PACKAGED / "native_functions.yaml").read_text()
    assert re.search(r"^- func: .*\bDimname\b", text, re.M)


def test_release_yaml_through_the_full_run(release_run):
    assert release_run.code == 0, release_run.stderr
    coverage = release_run.summary["coverage"]
    print(f"torch {release_run.version}: {coverage['entries_typed']} of {coverage['entries_with_tensor_slots']} entries typed")
    assert coverage["entry_share"] > 0.5
    assert release_run.written.read_text() != release_run.original.read_text()
    assert (release_run.out / "torch_lib").is_dir() and (release_run.out / "type_constraints.yaml").is_file()


def test_lower_gives_the_original_bytes(release_run, tmp_path, capfd):
    assert run_cli(capfd, "lower", release_run.written, "-o", tmp_path / "lowered.yaml")[0] == 0
    assert (tmp_path / "lowered.yaml").read_bytes() == release_run.original.read_bytes()


@OLDER_ONLY
def test_the_lint_round_trip_changes_nothing_and_comments_stay(release_run):
    for name in ("native_functions.yaml", "type_constraints.yaml"):
        text = (release_run.out / name).read_text()
        assert lint_round_trip(text) == text, name
    written, original = release_run.written.read_text(), release_run.original.read_text()
    assert _comment_owners(written.splitlines()) == _comment_owners(original.splitlines())


def test_the_validation_line_counts_the_schemas_torchgen_cannot_check(release_run):
    """Schemas with a type word the installed torchgen does not know are grouped anyway, counted and named."""
    unchecked = release_run.summary["validation"]["schemas_unchecked"]
    assert f"validation: the installed torchgen; {len(unchecked)} schemas with type words it does not know" in release_run.stderr
    native = NativeFunctions.load(release_run.original)
    from torchgen.model import BaseTy

    known = {b.name for b in BaseTy}
    unknown = {e.name for e in native.entries if {s.word for s in e.schema.slots} - known - {"Tensor"}}
    assert unknown and set(unchecked) == unknown


def _arguments(schema) -> tuple[tuple[str, bool], ...]:
    return tuple((s.name, s.is_tensor) for s in schema.slots)


def test_runtime_evidence_of_the_installed_torch_meets_the_release(release_run):
    """Observed overloads the file lacks are skipped; where the schema differs only slots of the same name keep evidence."""
    aligned = release_run.summary["runtime_evidence"]
    installed, native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS), NativeFunctions.load(release_run.original)
    assert aligned["overloads_skipped"] == len(aligned["skipped"]) and aligned["overloads_remapped"] == len(aligned["remapped"])
    assert aligned["skipped"], "a release's file lacks some overload the installed torch was seen to call"
    assert all(name in installed.by_name and name not in native.by_name for name in aligned["skipped"])
    differing = {n for n, e in native.by_name.items() if n in installed.by_name and _arguments(e.schema) != _arguments(installed.by_name[n].schema)}
    assert {r["name"] for r in aligned["remapped"]} <= differing
    typed = {o["name"]: o for o in release_run.report["overloads"]}
    for remapped in aligned["remapped"]:
        bound = {s for v in typed.get(remapped["name"], {"variables": []})["variables"] for s in v["binds"]}
        assert not bound & set(remapped["dropped"])
    counts = f"{aligned['overloads_skipped']} overloads with runtime evidence the yaml lacks skipped, {aligned['overloads_remapped']} whose schema differs"
    assert counts in release_run.stderr


@OLDER_ONLY  # one more run of a release's file: the older one's
def test_an_argument_renamed_in_the_release_keeps_only_the_evidence_that_maps(release_run, tmp_path):
    """The release's own file with one observed argument renamed: its evidence is dropped, listed, never a crash."""
    native = NativeFunctions.load(release_run.original)
    report = release_run.report["overloads"]
    chosen = next(
        (o, v)
        for o in report
        for v in o["variables"]
        if "opinfo" in v["sources"] and len(v["binds"]) >= 2 and not v["binds"][0].startswith("return.")
    )
    overload, variable = chosen
    renamed_slot = variable["binds"][0]
    entry = native.by_name[overload["name"]]
    lines = release_run.original.read_text().splitlines(keepends=True)
    func = lines[entry.func_line]
    lines[entry.func_line] = re.sub(rf"(?<=\s){renamed_slot}(?=\s*[,)=])", f"{renamed_slot}_renamed", func, count=1)  # the argument, not the name
    assert lines[entry.func_line] != func
    path = _release_yaml(release_run.version, tmp_path / "in")
    path.write_text("".join(lines))
    out = ("--out", tmp_path / "out", "--report", tmp_path / "out" / "report.json")
    code, err = _main("--native-functions", path, "--yaml-only", "--op", overload["name"], *out)  # the alignment is the whole file's
    assert code == 0, err
    aligned = json.loads((tmp_path / "out" / "report.json").read_text())["summary"]["runtime_evidence"]
    listed = {r["name"]: r for r in aligned["remapped"]}
    assert renamed_slot in listed[overload["name"]]["dropped"]
    written = NativeFunctions.load(tmp_path / "out" / "native_functions.yaml").by_name[overload["name"]].schema
    assert written.slot(f"{renamed_slot}_renamed").word == "Tensor"
    assert written.variables(), "the slots that still map keep their evidence"


@OLDER_ONLY
def test_verify_on_the_written_release_yaml(release_run, capfd):
    """Declarations of the release's file judged by the installed torch's OpInfo samples (the remapped ones and one more)."""
    names = [r["name"] for r in release_run.summary["runtime_evidence"]["remapped"]][:2]
    names.append(next(o["name"] for o in release_run.report["overloads"] if o["name"] not in names and o["variables"]))
    code, out, err = run_cli(capfd, "verify", "--native-functions", release_run.written, *(a for n in names for a in ("--op", n)))
    assert code == 0, out + err
    assert "verify: 0 violations" in out


def test_compat_names_the_torchgen_the_release_needs(release_run):
    """With the installed torchgen, a file that uses a type word it does not know is a clear error: file, line, op, which torchgen."""
    from torchgen.model import BaseTy

    from migrate.compat import parse_native_yaml
    from migrate.errors import InputError

    tags = fetch(f"torch=={release_run.version}") / PACKAGED / "tags.yaml"
    with pytest.raises(InputError, match=r"needs the torchgen of the release it comes from") as caught:
        parse_native_yaml(release_run.written, tags)
    word = re.search(r"unrecognized type (\w+)", str(caught.value))
    assert word and word.group(1) not in {b.name for b in BaseTy}
    assert caught.value.line is not None and str(release_run.written) in str(caught.value)


def _source_tree(tmp_path: Path, version: str, yaml_files: Path) -> Path:
    """A PyTorch source-tree layout: the release's torchgen at the root, the yaml files under aten/src/ATen/native/."""
    release = fetch(f"torch=={version}")
    assert (release / "torchgen" / "model.py").is_file()
    root = tmp_path / "pytorch"
    shutil.copytree(release / "torchgen", root / "torchgen", ignore=shutil.ignore_patterns("__pycache__", "packaged"))
    native = root / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copyfile(release / PACKAGED / "tags.yaml", native / "tags.yaml")
    for path in yaml_files.glob("*.yaml"):
        shutil.copyfile(path, native / path.name)
    return native / "native_functions.yaml"


def test_source_tree_layout_is_validated_by_the_trees_torchgen(tmp_path, capfd):
    path = _source_tree(tmp_path, OLD_TORCH, fetch(f"torch=={OLD_TORCH}") / PACKAGED)
    code, stdout, err = run_cli(capfd, "--native-functions", path, "--yaml-only", "--out", tmp_path / "out")
    assert code == 0, err
    assert f"validation: the source tree's {path.parents[4] / 'torchgen'}; 0 schemas" in stdout + err


_TREE_COMPAT = """
import sys, torchgen
from torchgen.gen import parse_native_yaml as plain
from migrate.compat import parse_native_yaml
typed, lowered = parse_native_yaml(sys.argv[1]), plain(sys.argv[2], sys.argv[3])
print(torchgen.__file__)
print(len(typed.native_functions), [str(f.func) for f in typed.native_functions] == [str(f.func) for f in lowered.native_functions])
"""


@OLDER_ONLY
def test_compat_reads_the_written_release_yaml_with_its_source_trees_torchgen(release_run, tmp_path):
    """With the tree's root on the path (as PyTorch's codegen runs), compat parses the typed file as torchgen parses the plain one."""
    path = _source_tree(tmp_path, release_run.version, release_run.out)
    plain = tmp_path / "plain.yaml"
    shutil.copyfile(release_run.original, plain)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path.parents[4]), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", _TREE_COMPAT, str(path), str(plain), str(path.with_name("tags.yaml"))],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    imported, counts = done.stdout.splitlines()
    assert Path(imported).is_relative_to(path.parents[4] / "torchgen")
    count, same = counts.split()
    assert int(count) > 0 and same == "True"


def test_compat_on_a_source_tree_without_its_torchgen_says_how_to_get_it(release_run, tmp_path):
    from migrate.compat import parse_native_yaml
    from migrate.errors import InputError

    path = _source_tree(tmp_path, release_run.version, release_run.out)
    with pytest.raises(InputError, match=rf"its source tree's, on the path with PYTHONPATH={re.escape(str(path.parents[4].resolve()))}"):
        parse_native_yaml(path)


# -- an older torchlib -----------------------------------------------------------------------------


def _registrations(folder: Path) -> dict[tuple[str, str], tuple]:
    """Each function's registrations as the scan reads them: names and flags."""
    scanned = scan_torchlib(folder, NativeFunctions.load(REAL_NATIVE_FUNCTIONS), StageCache.at())
    return {(r.path, r.function): (r.names, r.complex, r.private, r.trace_only, r.condition) for r in scanned.registrations}


def _variant_evidence(folder: Path) -> dict[tuple[str, str, tuple[str, ...]], tuple]:
    """Per overload that several functions register (dtype variants) and per function: the dtypes its annotations give each slot."""
    scanned = scan_torchlib(folder, NativeFunctions.load(REAL_NATIVE_FUNCTIONS), StageCache.at())
    found = {}
    for overload, registrations in scanned.by_overload.items():
        if len(registrations) < 2 and not any(r.complex for r in registrations):
            continue
        plan = scanned.overloads.get(overload)
        for variable in plan.variables if plan else ():
            for evidence in variable.evidence:
                function = evidence.where.split()[-1]
                found[(overload, function, evidence.slots)] = evidence.dtypes
    return found


@pytest.fixture(scope="module")
def older_torchlib(tmp_path_factory) -> tuple[Path, Path, int, str]:
    """onnxscript 0.1.0's torch_lib (several dtype variants per op, private helpers) through the full run."""
    folder = tmp_path_factory.mktemp("onnxscript")
    original = folder / "torch_lib"
    shutil.copytree(fetch(f"onnxscript=={OLD_ONNXSCRIPT}") / "onnxscript/function_libs/torch_lib", original)
    out = folder / "out"
    code, err = _main("--torchlib", original, "--out", out)
    return original, out / "torch_lib", code, err


def test_older_torchlib_through_the_full_run(older_torchlib):
    original, written, code, err = older_torchlib
    assert code == 0, err
    changed = [p for p in sorted(written.rglob("*.py")) if p.read_bytes() != (original / p.relative_to(written)).read_bytes()]
    assert changed
    for module in sorted(written.rglob("*.py")):
        compile(module.read_text(), str(module), "exec")
    assert _registrations(written) == _registrations(original)


def test_every_dtype_variant_keeps_its_specialisation(older_torchlib):
    """Every variant's annotated slots stay annotated, never wider than before; complex=True variants unchanged."""
    original, written, code, _ = older_torchlib
    assert code == 0
    before, after = _variant_evidence(original), _variant_evidence(written)
    assert len({overload for overload, _, _ in before}) > 10, "the older torch_lib has dtype-variant functions"
    assert set(before) <= set(after)  # an annotation that allowed any dtype may have become a set: never the reverse
    for key, dtypes in before.items():
        assert set(after[key]) <= set(dtypes), key
    assert _complex_variants(written) == _complex_variants(original)


def _complex_variants(folder: Path) -> dict[tuple, tuple]:
    """complex=True functions' annotations as the scan reads them (their real-view annotations are never rewritten)."""
    scanned = scan_torchlib(folder, NativeFunctions.load(REAL_NATIVE_FUNCTIONS), StageCache.at())
    found = {(r.path, r.function, r.names): (r.params, r.returns) for r in scanned.registrations if r.complex}
    assert found
    return found
