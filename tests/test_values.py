"""Dtypes some value of a string argument refuses and another takes (``migrate.infer.values``): the rule on probe
reports, the report's listing, the reference page, and the run on the installed files."""

from __future__ import annotations

import json

import pytest

from migrate.evidence.probe.value_calls import VALUES, valued_argument
from migrate.infer.values import value_refusals
from migrate.model.dtypes import named
from migrate.model.values import ValueRefusal
from migrate.pipeline.plan_summary import ValuesSummary

FLOOR = "NotImplementedError: \"div_floor_cpu\" not implemented for '{}'"


def _report(value, accepted, rejected, cast=("self", "other")):
    """A probe report of div.Tensor_mode's built call at ``rounding_mode=value``, as ``prober.probe_call`` writes it."""
    return {
        "overload": "aten::div.Tensor_mode",
        "sample": "float32",
        "direct": True,
        "nonempty": True,
        "slots": [["self", "float32"], ["other", "float32"], ["return.0", "float32"]],
        "numbers": [],
        "again": "",
        "probes": [[list(cast), [[d, [d]] for d in accepted], [[d, m] for d, m in rejected], []]],
        "argument": "rounding_mode",
        "value": value,
    }


def test_a_value_refusing_a_dtype_another_value_takes_is_said_once_with_aten_s_message():
    reports = [
        _report(None, ["float32", "complex64", "bool"], []),
        _report("floor", ["float32"], [("complex64", FLOOR.format("ComplexFloat")), ("bool", FLOOR.format("Bool")), ("uint16", FLOOR.format("UInt16"))]),
    ]
    (refusal,) = value_refusals(reports)
    # uint16: no value took it, so it is the set's business, not the value's
    assert refusal == ValueRefusal(
        "div.Tensor_mode", "rounding_mode", "floor", ("self", "other"), named("bool", "complex64"), FLOOR.format("{Bool|ComplexFloat}"), (None,)
    )
    assert str(refusal).startswith("rounding_mode='floor' refuses bool, complex64 at self, other (taken at None): ")
    assert ValueRefusal.from_json(json.loads(json.dumps(refusal.to_json()))) == refusal


def test_a_refusal_naming_no_dtype_says_nothing_of_the_value():
    reports = [_report(None, ["int64"], []), _report("floor", [], [("int64", "RuntimeError: ZeroDivisionError")])]
    assert value_refusals(reports) == ()


def test_the_summary_counts_overloads_and_pairs_and_says_the_sets_keep_the_union():
    reports = [_report(None, ["complex64", "bool"], []), _report("trunc", [], [("complex64", FLOOR.format("ComplexFloat")), ("bool", FLOOR.format("Bool"))])]
    summary = ValuesSummary(value_refusals(reports))
    assert summary.to_json()["overloads"] == 1 and len(summary.to_json()["refusals"]) == 1
    assert "1 overloads refuse" in summary.lines()[0] and "(2 (value, dtype) pairs" in summary.lines()[0]


def test_the_domains_name_aten_s_string_arguments():
    assert VALUES["rounding_mode", "Optional[str]"] == (None, "trunc", "floor")
    import torch

    assert valued_argument(torch.ops.aten.scatter_reduce.two._schema) == "reduce"
    assert valued_argument(torch.ops.aten.add.Tensor._schema) == ""


@pytest.mark.slow
def test_the_run_lists_div_s_floor_refusals_and_the_page_shows_them(full_run, tmp_path, capfd):
    from tests.conftest import run_cli

    out = full_run
    refusals = [ValueRefusal.from_json(r) for r in json.loads((out / "report.json").read_text())["summary"]["values"]["refusals"]]
    floor = [r for r in refusals if r.overload == "div.Tensor_mode" and r.value == "floor" and r.slots == ("self", "other")]
    assert floor and set(named("bool", "uint16", "complex64")) <= set(floor[0].dtypes), refusals
    amax = [r for r in refusals if r.overload == "scatter_reduce.two" and r.value == "amax"]
    assert amax and named("complex64")[0] in amax[0].dtypes
    assert run_cli(capfd, "docs", out / "native_functions.yaml", "--report", out / "report.json", "-o", tmp_path / "ref")[0] == 0
    assert "rounding_mode=&#x27;floor&#x27; refuses" in (tmp_path / "ref" / "index.html").read_text() or "rounding_mode='floor' refuses" in (
        tmp_path / "ref" / "index.html"
    ).read_text()
