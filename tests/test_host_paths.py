"""The evidence is made on the CPU kernels' reference paths, whatever the host; --report lists where the host's differ."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from migrate.evidence.probe.host_paths import PathDifference, differences
from migrate.runtime.processes import CPU_CAPABILITY, CPU_CAPABILITY_VARIABLE, DONE, Job, run_in_workers


def _scaled_mm_with_a_float64_bias(_: None) -> Iterator[tuple[str | None, str]]:
    import torch

    a, scale = torch.ones(16, 16).to(torch.float8_e4m3fn), torch.tensor(1.0)
    bias = torch.ones(16, dtype=torch.float64)
    try:
        torch._scaled_mm(a, a.t(), scale, scale, bias=bias, out_dtype=torch.float32)
        outcome = "ran"
    except RuntimeError as exc:
        outcome = str(exc)
    yield os.environ.get(CPU_CAPABILITY_VARIABLE), outcome


@pytest.mark.slow
def test_a_worker_takes_the_reference_paths_whatever_the_capability_asked(monkeypatch):
    """On AMX hardware oneDNN's _scaled_mm refuses a float64 bias; a worker's call runs, at the pinned capability,
    even when the caller asked for another one."""
    monkeypatch.setenv(CPU_CAPABILITY_VARIABLE, "avx2")
    (outcome,) = run_in_workers([Job(_scaled_mm_with_a_float64_bias, None, "_scaled_mm")], jobs=1, progress=False)
    assert outcome.status == DONE, outcome.reason
    assert outcome.reports == ((CPU_CAPABILITY, "ran"),)


def _report(overload: str, probes: list, again: str = "") -> dict:
    return {"overload": overload, "slots": [["self", "float32"], ["bias", "float32"]], "again": again, "probes": probes}


def test_differences_list_each_verdict_the_host_paths_give_otherwise():
    refusal = "RuntimeError: itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor inputDouble"
    reference = [
        _report("aten::_scaled_mm", [[["bias"], [["float64", ["float32"]], ["float32", ["float32"]]], [["uint16", "no"]], []]]),
        {"overload": "aten::never_built", "refused": "no call"},
    ]
    host = [_report("aten::_scaled_mm", [[["bias"], [["float32", ["float32"]]], [["float64", refusal], ["uint16", "no"]], []]])]
    assert differences(reference, host) == (PathDifference("aten::_scaled_mm", ("bias",), "float64", "accepted", refusal),)


def test_a_call_the_host_paths_refuse_as_built_is_listed_once():
    reference = [_report("aten::_convolution", [[["input"], [["float32", ["float32"]]], [], []]])]
    host = [_report("aten::_convolution", [], again="RuntimeError: mkldnn refuses")]
    assert differences(reference, host) == (PathDifference("aten::_convolution", ("self", "bias"), "as built", "accepted", "RuntimeError: mkldnn refuses"),)
