"""export-check's cases on real exports of the installed torch_lib, declared as a run infers them: the calls a user
makes (every tied tensor at the dtype), several sampled calls per case and value (an optional tensor given or
absent), and the report's ``calls``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from migrate.model.export_status import EXPORT_ERROR, OK
from migrate.cli import main

pytestmark = pytest.mark.slow

MASK = "scaled_dot_product_attention"
OPS = ("addr", "bincount", MASK)


@pytest.fixture(scope="module")
def cases(export_cache) -> dict[tuple[str, tuple[str, ...], str, str], dict]:
    """The report of one export-check of addr, bincount and sdpa (their real exports, recorded: ``tests.recorded_exports``)."""
    report = export_cache / "export.json"
    argv = [arg for op in OPS for arg in ("--op", op)]
    assert main(["export-check", *argv, "-j", "2", "--cache-dir", str(export_cache), "--report", str(report)]) == 0
    return {(c["overload"], tuple(c["cast"]), c["dtype"], c["value"]): c for c in json.loads(Path(report).read_text())["cases"]}


def test_addr_with_every_tensor_bool_is_not_ok(cases):
    """One slot bool beside float32 ones exports; all three bool (what ATen runs) makes MatMul take bool."""
    diagonal = cases["addr", ("self", "vec1", "vec2"), "torch.bool", ""]  # addr has no argument whose value changes the graph
    assert diagonal["status"] != OK
    assert all(call["dtypes"] == {"self": "torch.bool", "vec1": "torch.bool", "vec2": "torch.bool"} for call in diagonal["calls"])
    assert "MatMul" in diagonal["message"]


def test_bincount_of_uint8_works_without_weights_and_fails_with_them_each_value_a_case(cases):
    without = cases["bincount", ("self",), "torch.uint8", "weights=None"]
    assert without["status"] == OK and all("weights" not in call["dtypes"] for call in without["calls"])
    given = cases["bincount", ("self",), "torch.uint8", "weights=tensor"]
    assert given["status"] == EXPORT_ERROR and "weights is not supported" in given["message"]
    assert all("weights" in call["dtypes"] for call in given["calls"])


def test_sdpa_bool_and_float32_masks_still_export(cases):
    for dtype in ("torch.bool", "torch.float32"):
        (case,) = [c for (o, cast, d, _), c in cases.items() if (o, cast, d) == (MASK, ("attn_mask",), dtype)]  # a mask given
        assert case["status"] == OK, case
        assert all(call["dtypes"]["attn_mask"] == dtype for call in case["calls"])


def test_each_case_runs_distinct_sampled_calls(cases):
    """Up to 3 calls per value; bincount's case of self runs one with weights and one without, each value apart."""
    assert all(1 <= len(case["calls"]) <= 3 for case in cases.values() if case["status"] != "no-sample")
    calls = Counter()
    for (overload, cast, dtype, _), case in cases.items():
        calls[overload, cast, dtype] += len(case["calls"])
    assert calls["bincount", ("self",), "torch.uint8"] >= 2
