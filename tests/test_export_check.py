"""export-check on real exports: torch.onnx.export(dynamo=True) with the installed torch_lib and a rewritten one,
onnxruntime sessions, eager PyTorch; a few cases of each status, the CLI, and the verdicts a main run reads back.

The cases of each status export anew (``refresh``), in a cache seeded with the release's facts only: the export
stage run live. The rewrite's and the CLI's tests read the recorded results of their cases (``tests.recorded_exports``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.audit.export import CONFIRMED, REFUTED, ResultStore, run_export_check
from migrate.audit.export_worker import EXPORT_ERROR, INVALID_MODEL, MISMATCH, NO_SAMPLE, OK, RUNTIME_ERROR
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import installed_torchlib
from migrate.model.dtypes import named
from migrate.model.plan import Variable
from tests.conftest import run_cli, seeded_cache

pytestmark = pytest.mark.slow  # exports and onnxruntime

MASK = "scaled_dot_product_attention"
# Each status from a real export of the installed torch_lib (onnxscript 0.7.2, torch 2.13, onnxruntime 1.23):
CASES = {
    (MASK, ("attn_mask",), "bool"): OK,
    (MASK, ("attn_mask",), "float32"): OK,
    ("sin", ("self",), "float32"): OK,
    ("sin", ("self",), "complex64"): EXPORT_ERROR,  # no complex function registered for aten::sin
    ("sin", ("self",), "bfloat16"): INVALID_MODEL,  # ONNX Sin has no bfloat16 kernel type
    ("angle", ("self",), "int64"): MISMATCH,  # the model returns int64 where eager PyTorch gives float32
    ("abs", ("self",), "bool"): NO_SAMPLE,  # eager PyTorch refuses abs of bool
    ("scatter_add", ("self", "src"), "float16"): RUNTIME_ERROR,  # onnxruntime's CPU ScatterElements lacks float16 adds
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A cache folder holding the release's facts (and no export results)."""
    return seeded_cache(tmp_path_factory)


def _declared(cases) -> dict[str, tuple[Variable, ...]]:
    found: dict[str, list[Variable]] = {}
    for overload, cast, dtype in cases:
        found.setdefault(overload, []).append(Variable(f"T{len(found.get(overload, []))}", named(dtype), cast))
    return {overload: tuple(variables) for overload, variables in found.items()}


@pytest.fixture(scope="module")
def original(cache) -> dict:
    check = run_export_check(_declared(CASES), {o for o, _, _ in CASES}, installed_torchlib(), StageCache.at(cache), jobs=2, refresh=True)
    return {(c.overload, c.cast, c.dtype.name): c for c in check.cases}


@pytest.mark.parametrize("case", sorted(CASES), ids=lambda case: f"{case[0]}-{','.join(case[1])}-{case[2]}")
def test_each_status_from_a_real_export(original, case):
    result = original[case]
    assert result.status == CASES[case], result
    assert (result.message == "") == (result.status == OK), result
    if result.status not in (NO_SAMPLE,):
        assert dict(result.dtypes)[case[1][0]] == f"torch.{case[2]}"


def test_the_exporter_reports_the_function_it_dispatched(original):
    assert original[MASK, ("attn_mask",), "bool"].function == "aten_scaled_dot_product_attention"
    assert original["sin", ("self",), "float32"].function == "aten_sin"


def test_a_message_does_not_depend_on_the_cases_exported_with_it(original, cache):
    alone = ("sin", ("self",), "bfloat16")
    check = run_export_check(_declared([alone]), {"sin"}, installed_torchlib(), StageCache.at(cache), jobs=1, refresh=True)
    (result,) = check.cases
    assert result.status == INVALID_MODEL
    assert result.message == original[alone].message
    assert "node_sin)" in result.message and "tensors_N" in result.message


def test_a_rewritten_torch_lib_exports_sdpa_with_both_masks(export_cache, tmp_path, capfd):
    cache = export_cache
    out = tmp_path / "out"
    code, _, err = run_cli(capfd, "--out", str(out), "--op", MASK, "--cache-dir", str(cache))
    assert code == 0, err
    report = tmp_path / "rewritten.json"
    argv = ["--native-functions", str(out / "native_functions.yaml"), "--torchlib", str(out / "torch_lib"), "--op", MASK]
    code, _, err = run_cli(capfd, "export-check", *argv, "--cache-dir", str(cache), "--report", str(report))
    assert code == 0, err
    statuses = {(tuple(c["cast"]), c["dtype"]): c["status"] for c in json.loads(report.read_text())["cases"]}
    assert statuses[("attn_mask",), "torch.bool"] == OK
    assert statuses[("attn_mask",), "torch.float32"] == OK
    assert ResultStore.of(out / "torch_lib", StageCache.at(cache)).get(MASK) is not None  # cached for the rewritten one's functions


def test_the_command_prints_a_table_writes_the_report_and_the_run_reads_verdicts(export_cache, tmp_path, capfd):
    cache = export_cache
    report = tmp_path / "export.json"
    code, out, err = run_cli(capfd, "export-check", "--op", "sin", "--op", "angle", "--cache-dir", str(cache), "--report", str(report))
    assert code == 0, err
    header = out.splitlines()[0].split()
    assert header[:2] == ["overload", "slots"] and "bfloat16" in header
    assert any(line.startswith("sin ") and "INV" in line for line in out.splitlines())
    written = json.loads(report.read_text())
    assert {"overload", "function", "dtypes", "status", "message"} <= set(written["cases"][0])
    assert written["summary"]["cases"] == len(written["cases"]) > 10
    assert sum(written["summary"]["by_status"].values()) == len(written["cases"])
    assert ResultStore.of(installed_torchlib(), StageCache.at(cache)).get("sin") is not None
    # Without --export-check the main run reads no export result (its outputs never depend on what the cache holds);
    # with it, it marks the coverage gaps of those overloads confirmed or refuted from the cached results.
    plain_path, plan_path = tmp_path / "plain.json", tmp_path / "report.json"
    code, _, err = run_cli(capfd, "--dry-run", "--op", "sin", "--op", "angle", "--cache-dir", str(cache), "--report", str(plain_path))
    assert code == 0, err
    plain = json.loads(plain_path.read_text())
    assert all(not c.get("export") for o in plain["overloads"] for c in o["conflicts"])
    code, _, err = run_cli(
        capfd, "--dry-run", "--export-check", "--op", "sin", "--op", "angle", "--cache-dir", str(cache), "--report", str(plan_path)
    )
    assert code == 0, err
    plan = json.loads(plan_path.read_text())
    gaps = [c for o in plan["overloads"] for c in o["conflicts"] if c["kind"] == "export-coverage-gap"]
    assert gaps and all(c.get("export") in (CONFIRMED, REFUTED) for c in gaps)
    assert plan["summary"]["export_check"]["conflicts"] == len(gaps)
    assert written["summary"]["conflicts"]["confirmed"] + written["summary"]["conflicts"]["refuted"] == len(gaps)
