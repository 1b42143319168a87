"""The migration run end to end on the real torch yaml and onnxscript torchlib, with every evidence source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from migrate.evidence.opinfo.sweep import run_sweep
from migrate.evidence.runtime.records import overload_key
from migrate.evidence.torchlib.resolve import installed_torchlib
from migrate.model.declared import declared_variables
from migrate.model.dtypes import DType
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from tests.conftest import REAL_NATIVE_FUNCTIONS, run_cli, snapshot


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """One full run on the installed files, written under --out, with its report."""
    from migrate.cli import main

    out = tmp_path_factory.mktemp("migrated")
    assert main(["--out", str(out), "--report", str(out / "report.json")]) == 0
    return out


def _copies(folder: Path) -> tuple[str, ...]:
    folder.mkdir()
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, folder / "native_functions.yaml")
    shutil.copytree(installed_torchlib(), folder / "torch_lib", ignore=shutil.ignore_patterns("__pycache__"))
    return ("--native-functions", str(folder / "native_functions.yaml"), "--torchlib", str(folder / "torch_lib"))


def _element_dtypes(dtypes) -> set[str]:
    """The dtypes an observed slot carried: one, or a list's elements (holes and mixed lists aside)."""
    if dtypes is None or isinstance(dtypes, str):
        return set() if dtypes is None or dtypes == "mixed" else {dtypes}
    if isinstance(dtypes, DType):
        return {str(dtypes)}
    found = set()
    for item in dtypes:
        found |= _element_dtypes(item)
    return found


def test_every_declared_variable_accepts_every_observed_dtype(migrated):
    """Soundness over the whole cached sweep: zero violations."""
    native = NativeFunctions.load(migrated / "native_functions.yaml")
    sets = GlobalSetsFile.load(sibling_constraints_path(migrated / "native_functions.yaml")).by_name
    declared = {e.name: {s: v for v in declared_variables(native, e, sets) for s in v.binds} for e in native.entries}
    sweep = run_sweep(progress=False)
    violations, checked = [], 0
    for observation in sweep.observations:
        variables = declared.get(overload_key(observation.overload) or "", {})
        for slot, dtypes in observation.slots:
            variable = variables.get(slot)
            if variable is None:
                continue
            allowed = {str(d) for d in variable.dtypes}
            for dtype in _element_dtypes(dtypes):
                checked += 1
                if dtype not in allowed:
                    violations.append(f"{observation.overload} {slot}: {dtype} not in {variable.name} ({observation.opinfo})")
    assert checked > 10_000
    assert violations == []


def test_coverage_and_sources_are_in_the_report(migrated):
    report = json.loads((migrated / "report.json").read_text())
    coverage = report["summary"]["coverage"]
    assert coverage["entries_with_tensor_slots"] > 2000
    assert 0 < coverage["entries_typed"] <= coverage["entries_with_tensor_slots"]
    assert {"torchlib", "opinfo", "groups"} <= set(report["summary"]["by_source"])
    assert report["summary"]["opinfo"]["overloads_observed"] >= 758
    written = NativeFunctions.load(migrated / "native_functions.yaml")
    assert sum(1 for e in written.entries if e.schema.variables()) == coverage["entries_typed"]


def test_written_entries_of_the_must_show_ops(migrated):
    native = NativeFunctions.load(migrated / "native_functions.yaml")
    sets = GlobalSetsFile.load(sibling_constraints_path(migrated / "native_functions.yaml")).by_name
    by_slot = {e: {s: v for v in declared_variables(native, native.by_name[e], sets) for s in v.binds} for e in ("add.Tensor", "where.self", "scaled_dot_product_attention")}
    assert by_slot["add.Tensor"]["self"] is not by_slot["add.Tensor"]["other"]
    assert [d.name for d in by_slot["where.self"]["condition"].dtypes][0] == "bool"
    sdpa = by_slot["scaled_dot_product_attention"]
    assert sdpa["query"] is sdpa["key"] is sdpa["value"] is sdpa["return.0"]
    assert [d.name for d in sdpa["query"].dtypes] == ["float16", "bfloat16", "float32", "float64"]
    mask = sdpa["attn_mask"]
    assert mask is not sdpa["query"] and {"bool", "float32"} <= {d.name for d in mask.dtypes}
    assert {d.name for d in by_slot["where.self"]["condition"].dtypes} == {"bool", "uint8"}


def test_coverage_target_and_probe_counts_in_the_summary(migrated):
    summary = json.loads((migrated / "report.json").read_text())["summary"]
    assert summary["coverage"]["entry_share"] >= 0.60
    assert summary["probe"]["slots_widened"] > 0 and summary["probe"]["variables_split"] > 0


def test_lower_restores_the_original_and_a_second_run_changes_nothing(tmp_path, capfd):
    args = _copies(tmp_path / "work")
    original = (tmp_path / "work" / "native_functions.yaml").read_bytes()
    assert run_cli(capfd, *args)[0] == 0
    assert run_cli(capfd, *args, "--check")[0] == 0
    assert run_cli(capfd, "lower", tmp_path / "work" / "native_functions.yaml", "-o", tmp_path / "lowered.yaml")[0] == 0
    assert (tmp_path / "lowered.yaml").read_bytes() == original


def test_op_then_full_run_gives_the_bytes_of_a_full_run_alone(tmp_path, capfd):
    incremental, alone = _copies(tmp_path / "incremental"), _copies(tmp_path / "alone")
    assert run_cli(capfd, *incremental, "--op", "scaled_dot_product_attention")[0] == 0
    changed = snapshot(tmp_path / "incremental")
    assert changed != snapshot(tmp_path / "alone")
    assert run_cli(capfd, *incremental)[0] == 0
    assert run_cli(capfd, *alone)[0] == 0
    assert snapshot(tmp_path / "incremental") == snapshot(tmp_path / "alone")


def test_hand_written_constraints_survive_and_the_conflict_is_reported(tmp_path, capfd):
    args = _copies(tmp_path / "work")
    path = tmp_path / "work" / "native_functions.yaml"
    hand = "- func: where.self(C condition, Tensor self, Tensor other) -> Tensor\n  type_constraints: {C: [torch.bool, torch.float32]}\n"
    path.write_text(path.read_text().replace("- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor\n", hand, 1))
    code, _, err = run_cli(capfd, *args, "--report", tmp_path / "report.json")
    assert code == 0
    assert hand in path.read_text()
    assert "conflict: where.self: kept the declared C(condition)" in err
    report = json.loads((tmp_path / "report.json").read_text())
    (where,) = [o for o in report["overloads"] if o["name"] == "where.self"]
    assert any(c["kind"] == "hand-written-kept" for c in where["conflicts"])
    assert run_cli(capfd, *args, "--overwrite")[0] == 0
    assert hand not in path.read_text()


def test_show_prints_each_source(migrated, capfd):
    code, out, _ = run_cli(capfd, "show", "aten::where.self")
    assert code == 0
    sections = [line.strip() for line in out.splitlines() if line.strip() in ("torchlib:", "opinfo:", "probe:")]
    assert sections == ["torchlib:", "opinfo:", "probe:"]
    probe = out[out.index("probe:") :]
    assert "[torch.bool, torch.uint8]: condition" in probe
