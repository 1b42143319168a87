"""Real exports of clamp and scatter_reduce.two, a case per argument value: some values export uint8 clamp and bool
scatter_reduce (the one call the check once judged them by), others do not (a float bound on a uint8 tensor: Clip
infers uint8 where the model says float; onnxruntime's ScatterElements takes no bool min/max), so the rewrite
adds neither: aten_clamp keeps TReal, aten_scatter_reduce gains no bool."""

from __future__ import annotations

import json
import re

import pytest

from migrate.cli import main
from migrate.model.export_status import OK
pytestmark = pytest.mark.slow  # exports and onnxruntime

OPS = ("clamp", "scatter_reduce.two")


@pytest.fixture(scope="module")
def checked(export_cache, tmp_path_factory) -> dict:
    """The export-check report of both overloads, and the rewrite a run with --export-check writes."""
    folder = tmp_path_factory.mktemp("run")
    argv = [arg for op in OPS for arg in ("--op", op)]
    assert main(["export-check", *argv, "-j", "2", "--cache-dir", str(export_cache), "--report", str(folder / "export.json")]) == 0
    out = folder / "out"
    assert main(["--export-check", *argv, "-j", "2", "--cache-dir", str(export_cache), "--out", str(out), "--report", str(out / "report.json")]) == 0
    report = json.loads((folder / "export.json").read_text())
    return {
        "cases": report["cases"] + report["judged"],
        "core": (out / "torch_lib" / "ops" / "core.py").read_text(),
        "notes": json.loads((out / "report.json").read_text())["summary"]["torchlib"]["note_lines"],
    }


def _by_value(cases: list[dict], overload: str, dtype: str, judge: str) -> dict[str, str]:
    return {c["value"]: c["status"] for c in cases if c["overload"] == overload and c["dtype"] == dtype and c["judge"] == judge}


def test_scatter_reduce_of_bool_exports_at_sum_but_not_at_amax_so_bool_is_not_added(checked):
    statuses = _by_value(checked["cases"], "scatter_reduce.two", "torch.bool", "export")
    assert statuses["reduce='sum'"] == OK  # before: the one call the case kept, and bool joined TReal
    assert statuses["reduce='amax'"] != OK and statuses["reduce='amin'"] != OK
    self_type = re.search(r"def aten_scatter_reduce\(\s*self: (\w+),", checked["core"])[1]
    assert "Bool" not in self_type and "All" not in self_type  # TReal, or TReal with uint8: never bool
    assert not any("aten_scatter_reduce" in n and "torch.bool" in n and n.startswith("dtype-added") for n in checked["notes"])


def test_clamp_of_uint8_works_with_int_bounds_but_not_float_ones_so_aten_clamp_keeps_treal(checked):
    statuses = _by_value(checked["cases"], "clamp", "torch.uint8", "function")  # the exporter decomposes clamp: judged directly
    assert statuses["min=int, max=int"] == OK  # before: the one call the case kept, and uint8 joined TReal
    assert statuses["min=float, max=int"] != OK and statuses["min=int, max=float"] != OK
    assert re.search(r"def aten_clamp\(\s*self: TReal,", checked["core"])
    assert not any("aten_clamp " in n and "torch.uint8" in n and n.startswith("dtype-added") for n in checked["notes"])


def test_each_value_is_a_case_of_its_own_in_the_report(checked):
    values = {c["value"] for c in checked["cases"] if c["overload"] == "scatter_reduce.two"}
    assert values == {f"reduce='{r}'" for r in ("sum", "prod", "mean", "amax", "amin")}
    assert all(c["calls"] for c in checked["cases"] if c["overload"] == "clamp" and c["status"] != "no-sample")
