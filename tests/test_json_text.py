"""The report's JSON writer: ``json.dumps(obj, indent=1)``'s bytes, faster."""

from __future__ import annotations

import json

import pytest

from migrate.model.json_text import indented


@pytest.mark.parametrize(
    "value",
    [
        {"a": [], "b": {}, "c": [1, 2.5, -0.0, 1e300, -7, True, False, None], "d": [[[]]], "e": {"x": {"y": [{}]}}},
        ["é", "\u2028", '"\\\n\t', "", "\x00"],
        (1, (2, ("three",))),
        {"ints keyed": {1: 2}},  # the standard library writes keys it converts: left to it
        [float("nan"), float("inf"), float("-inf")],
        [2**70, 0.1, 1.0],
        "a string",
        None,
    ],
)
def test_values_are_written_as_the_standard_librarys_indenting_encoder_writes_them(value):
    assert indented(value) == json.dumps(value, indent=1)


def test_the_full_runs_report_is_written_as_the_standard_library_writes_it(full_run):
    text = (full_run / "report.json").read_text()
    value = json.loads(text)
    assert indented(value) + "\n" == text == json.dumps(value, indent=1) + "\n"
