"""export-check judges each value of the arguments that change the graph apart: how a call's value is told
(``reduce='amax'``; an optional Scalar as None, an int or a float; an optional tensor given or absent), which
values the schema reaches from a sampled call, a case's calls split by value, and how the rewrite, the table
and the provisioning list read the per-value cases (``test_export_values_slow`` has the real exports)."""

from __future__ import annotations

from pathlib import Path

import torch

from migrate.audit.export import CallResult, CaseResult, ExportCheck, missing, table
from migrate.audit.export_worker import Case, _prepare, call_value, derived_calls
from migrate.model.dtypes import DType, named
from migrate.model.export_status import OK, PARTIAL, RUNTIME_ERROR
from migrate.model.plan import Variable
from migrate.runtime.recorders import CapturedCall, dtypes_of
from migrate.runtime.torch_private import overload_slots
from migrate.write.torchlib.narrowing import settle, tied_statuses

aten = torch.ops.aten
U8, BOOL, F32 = DType("uint8"), DType("bool"), DType("float32")


def _call(func, *args, **kwargs) -> CapturedCall:
    """A sampled call as the capture keeps it: its slots and each slot's dtypes."""
    slots = overload_slots(func)
    values = []
    for position, name, keyword_only, holds_list in slots.arguments:
        value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
        values.append(dtypes_of(value, holds_list))
    return CapturedCall(func, slots, tuple(args), dict(kwargs), tuple(values), True, "float32")


# --- how a call's value is told ---------------------------------------------------------------------


def test_a_str_option_is_told_by_its_value():
    x, index = torch.zeros(4), torch.zeros(2, dtype=torch.long)
    assert call_value(aten.scatter_reduce.two, (x, 0, index, torch.ones(2), "amax"), {}) == "reduce='amax'"
    assert call_value(aten.scatter_reduce.two, (x, 0, index, torch.ones(2)), {"reduce": "sum", "include_self": False}) == "reduce='sum'"
    assert call_value(aten.gelu.default, (x,), {}) == "approximate='none'"  # absent: the schema's default
    assert call_value(aten.gelu.default, (x,), {"approximate": "tanh"}) == "approximate='tanh'"
    assert call_value(aten.nll_loss.default, (x, index), {}) == "weight=None, reduction=1"  # an int reduction, an optional tensor


def test_an_optional_scalar_is_none_an_int_or_a_float_and_an_optional_tensor_given_or_absent():
    x = torch.zeros(3)
    assert call_value(aten.clamp.default, (x, -1, 1), {}) == "min=int, max=int"
    assert call_value(aten.clamp.default, (x, None, 0.5), {}) == "min=None, max=float"
    assert call_value(aten.clamp.default, (x,), {"max": 2}) == "min=None, max=int"
    assert call_value(aten.clamp.Tensor, (x, x), {}) == "min=tensor, max=None"
    assert call_value(aten.add.Tensor, (x, x), {}) == ""  # nothing that changes the graph: one case, as before


def test_the_schema_reaches_defaults_and_the_other_kind_of_number():
    """clamp(x, -1, 1): each bound absent, and each bound a float; clamp.Tensor's absent bound leaves its slot without a dtype."""
    x = torch.zeros(3)
    derived = derived_calls(_call(aten.clamp.default, x, -1, 1))
    assert [call_value(c.func, c.args, c.kwargs) for c in derived] == [
        "min=None, max=int",
        "min=float, max=int",
        "min=int, max=None",
        "min=int, max=float",
    ]
    tensor = derived_calls(_call(aten.clamp.Tensor, x, x, x))
    assert [call_value(c.func, c.args, c.kwargs) for c in tensor] == ["min=None, max=tensor", "min=tensor, max=None"]
    assert tensor[0].dtypes[1] is None and tensor[0].dtypes[2] is not None
    assert derived_calls(_call(aten.gelu.default, x)) == []  # the default already


def test_a_case_keeps_calls_of_each_value_apart_and_reports_one_result_per_value():
    """scatter_reduce's samples of two variants: the case of bool runs both values; eager refuses none."""
    x, index, src = torch.zeros(5), torch.tensor([0, 1, 1]), torch.ones(3)
    calls = [_call(aten.scatter_reduce.two, x, 0, index, src, reduce) for reduce in ("sum", "amax", "sum")]
    case = Case("scatter_reduce.two", ("self", "src"), "bool")
    _prepare(case, calls, "none")
    assert [run.value for run in case.runs] == ["reduce='sum'", "reduce='amax'"]  # the third is the first again
    assert all(run.dtypes["self"] == "torch.bool" for run in case.runs)
    for run, status in zip(case.runs, (OK, RUNTIME_ERROR)):
        run.status = status
    reports = case.reports("aten_scatter_reduce")
    assert [(r["value"], r["status"]) for r in reports] == [("reduce='sum'", OK), ("reduce='amax'", RUNTIME_ERROR)]


def test_an_absent_bound_eager_refuses_is_no_value():
    """clamp(x) with both bounds absent raises in eager PyTorch: the value is not reached."""
    case = Case("clamp", ("self",), "uint8")
    _prepare(case, [_call(aten.clamp.default, torch.arange(4.0), None, 2)], "none")
    assert sorted({run.value for run in case.runs}) == ["min=None, max=float", "min=None, max=int"]


# --- reading the per-value cases --------------------------------------------------------------------


def _result(dtype: DType, value: str, status: str, function: str = "aten_scatter_reduce") -> CaseResult:
    call = CallResult((("self", f"torch.{dtype.name}"), ("src", f"torch.{dtype.name}")), status, "", (function,), (function,))
    return CaseResult("scatter_reduce.two", ("self", "src"), dtype, function, call.dtypes, status, "", (call,), (status, ""), value=value)


def test_a_dtype_joins_only_when_every_value_exports():
    """bool: sum ok, amax a runtime error (onnxruntime's ScatterElements takes no bool min/max): bool stays out of
    TReal; uint8, ok at both, joins. A dtype of the original that one value fails stays (partial)."""
    results = [_result(BOOL, "reduce='sum'", OK), _result(BOOL, "reduce='amax'", RUNTIME_ERROR), _result(U8, "reduce='sum'", OK), _result(U8, "reduce='amax'", OK)]
    results += [_result(F32, "reduce='sum'", OK), _result(F32, "reduce='amax'", RUNTIME_ERROR)]
    exported = {"scatter_reduce.two": tuple(r.export_status() for r in results)}
    slots = ("self", "src")
    verdicts = tied_statuses(exported, slots, {"scatter_reduce.two": [slots]}, "aten_scatter_reduce")
    assert verdicts[BOOL][0] == PARTIAL and verdicts[U8][0] == OK
    settled = settle({BOOL, U8, F32}, {F32}, verdicts, {})
    assert settled.dtypes == (U8, F32) and [c.dtype for c in settled.added] == [U8]
    assert settle({BOOL, F32}, {F32}, {BOOL: (PARTIAL, "", "export")}, {}).dtypes == (F32,)  # before: bool joined


def test_the_table_and_the_provisioning_list_show_each_value():
    results = (_result(BOOL, "reduce='sum'", OK), _result(BOOL, "reduce='amax'", RUNTIME_ERROR))
    check = ExportCheck(results, Path("torch_lib"), 1, 1, 0.0)
    text = table(check)
    assert "reduce='amax'" in text and "2 cases (per value; 1 overload, slots and dtype)" in text
    declared = {"scatter_reduce.two": (Variable("T", named("bool"), ("self", "src")),)}
    (row,) = missing(check, declared, {})
    assert [(g.kind, g.value, g.dtypes) for g in row.gaps] == [("runtime", "reduce='amax'", (BOOL,))]
    assert CaseResult.from_json(results[1].to_json()) == results[1]
