"""Calls built from the argument catalogue type entries no sample reaches and the schema alone cannot call:
checked against real torch, entry by entry (each a call the tool makes, then the same call made here by hand)."""

from __future__ import annotations

import pytest
import torch

from migrate.evidence.probe.catalogue import ARGUMENTS, LEFT_OUT, RECIPES, Data
from migrate.evidence.probe.catalogue_calls import FREE_RETURNS, UNIFORM, catalogue_reports
from migrate.evidence.probe.schema_calls import schema_call_plans
from migrate.evidence.untyped import MIXED_LISTS
from migrate.model.dtypes import named
from migrate.model.plan import OverloadPlan
from migrate.runtime import torch_private
from migrate.runtime.runs import SCHEMA_CALL, ProbedCall, overload_key
from migrate.runtime.worker_stage import REPORT

pytestmark = pytest.mark.live  # calls made here, in this process, as the stage's workers make them


def _reports(*names: str) -> list[dict]:
    return [r[REPORT] for r in catalogue_reports(names) if REPORT in r]


def _plans(reports: list[dict]) -> dict[str, OverloadPlan]:
    calls = tuple(ProbedCall.from_report(SCHEMA_CALL, r) for r in reports if "refused" not in r)
    uniform = frozenset((overload_key(r["overload"]), slot) for r in reports for slot in r.get(UNIFORM, ()))
    return schema_call_plans(calls, uniform, frozenset(overload_key(r["overload"]) for r in reports if r.get(FREE_RETURNS)))


def _refusal(plan: OverloadPlan, slot: str, dtype: str) -> str:
    """ATen's message for ``dtype`` at ``slot``, as the plan keeps it (probes of that slot, alone or with its variable)."""
    (variable,) = [v for v in plan.variables if slot in v.binds]
    found = [e.messages[named(dtype)[0]] for e in variable.evidence if e.refused and named(dtype)[0] in e.dtypes]
    assert found, f"{plan.name}: no refusal of {dtype} at {slot}"
    return found[0]


def _dtypes(plan: OverloadPlan, slot: str) -> set[str]:
    (variable,) = [v for v in plan.variables if slot in v.binds]
    return {d.name for d in variable.dtypes}


def _message(call) -> str:
    with pytest.raises(Exception) as raised:
        call()
    return f"{type(raised.value).__name__}: {str(raised.value).splitlines()[0]}"


def test_every_recipe_names_arguments_of_its_overload():
    for name, recipe in RECIPES.items():
        schema = torch_private.aten_overload(name)._schema
        assert set(recipe) <= {a.name for a in schema.arguments}, name
    assert all(isinstance(kind, str) for _, kind in ARGUMENTS)
    assert not set(RECIPES) & set(LEFT_OUT)


def test_formerly_untyped_entries_are_typed_with_atens_refusals():
    """nll_loss2d (a 4-d input, a 3-d target of classes), quantize_per_tensor (a ScalarType naming a quantized
    dtype) and _sparse_mm (a SparseCPU kernel only): no sample reaches them and no call from the schema ran."""
    plans = _plans(_reports("nll_loss2d", "quantize_per_tensor", "_sparse_mm"))

    nll = plans["nll_loss2d"]
    assert {"float32", "float64"} <= _dtypes(nll, "self") and "int64" not in _dtypes(nll, "self")
    assert _dtypes(nll, "target") >= {"int64"} and "float32" not in _dtypes(nll, "target")
    by_hand = _message(lambda: torch.ops.aten.nll_loss2d(torch.rand(2, 3, 4, 4), torch.zeros(2, 4, 4)))
    assert _refusal(nll, "target", "float32") == by_hand == "RuntimeError: expected target dtype to be Long or Byte, but got Float"

    quantize = plans["quantize_per_tensor"]
    assert _dtypes(quantize, "self") == {"float32"}
    by_hand = _message(lambda: torch.quantize_per_tensor(torch.rand(2, 3, dtype=torch.float64), 0.1, 0, torch.quint8))
    assert _refusal(quantize, "self", "float64") == by_hand == "RuntimeError: Quantize only works on Float Tensor, got Double"

    product = plans["_sparse_mm"]
    assert {"float32", "float64", "int64"} <= _dtypes(product, "sparse") and "bool" not in _dtypes(product, "sparse")
    sparse, dense = torch.ones(2, 3, dtype=torch.bool).to_sparse(), torch.ones(3, 2, dtype=torch.bool)
    by_hand = _message(lambda: torch.ops.aten._sparse_mm(sparse, dense))
    assert _refusal(product, "sparse", "bool") == by_hand == "NotImplementedError: \"addmm_sparse_dense\" not implemented for 'Bool'"


def test_a_return_a_scalar_type_argument_or_a_quantized_dtype_sets_stays_free():
    """_sparse_sum(self, dtype=torch.float32) returns float32 whatever self is, and would return float64 at dtype=float64."""
    plans = _plans(_reports("_sparse_sum.dtype", "quantize_per_tensor", "_make_per_tensor_quantized_tensor"))
    assert {"int64", "float64"} <= _dtypes(plans["_sparse_sum.dtype"], "self")
    assert not [slot for plan in plans.values() for v in plan.variables for slot in v.binds if slot.startswith("return.")]


def test_a_list_whose_mixed_call_aten_refuses_is_typed_and_one_it_runs_stays_free():
    reports = _reports("meshgrid", "broadcast_tensors", "_foreach_powsum.Scalar")
    mixed = {r["overload"]: r[UNIFORM] for r in reports}
    assert mixed["aten::meshgrid"]["tensors"] == _message(lambda: torch.meshgrid(torch.rand(2), torch.arange(3), indexing="ij"))
    assert mixed["aten::broadcast_tensors"] == {}  # broadcast_tensors([float32, int64]) runs
    torch.ops.aten._foreach_powsum.Scalar([torch.rand(2), torch.rand(2, dtype=torch.float64)])  # runs, though [float32, int64] does not
    assert mixed["aten::_foreach_powsum.Scalar"] == {}
    plans = _plans(reports)
    assert "int64" in _dtypes(plans["meshgrid"], "tensors")
    assert "broadcast_tensors" not in plans and "_foreach_powsum.Scalar" not in plans  # T[] would refuse what ATen runs
    assert "mixed dtypes" in MIXED_LISTS


def test_a_recipe_s_data_tensors_take_each_base_dtype():
    from migrate.evidence.probe.catalogue_calls import _value

    assert _value(Data((2, 3), "csr"), torch.float64, 1).layout == torch.sparse_csr
    assert _value([Data((2,)), Data((3,))], torch.int64, 1)[1].dtype == torch.int64


def test_the_report_says_why_an_entry_the_catalogue_reached_stays_untyped(tmp_path):
    from migrate.cache import StageCache
    from migrate.evidence.probe import catalogue_calls
    from migrate.evidence.untyped import NOT_BUILT, last_refusals

    cache = StageCache(tmp_path)
    catalogue_calls.STAGE.stage(cache).write(_reports("broadcast_tensors"))
    found = last_refusals(["broadcast_tensors", "_batch_norm_with_update", "nested_to_padded_tensor"], cache, {})
    assert found["broadcast_tensors"] == MIXED_LISTS
    assert found["_batch_norm_with_update"] == f"left out of the argument catalogue: {LEFT_OUT['_batch_norm_with_update']}"
    assert found["nested_to_padded_tensor"] == NOT_BUILT



def test_an_optional_tensor_a_recipe_passes_is_judged_per_dtype():
    """Samples leave nll_loss2d's weight, mkldnn_convolution's bias and stft's window None; the recipes pass them."""
    plans = _plans(_reports("nll_loss2d", "mkldnn_convolution", "stft.center"))

    loss = plans["nll_loss2d"]
    (variable,) = [v for v in loss.variables if "weight" in v.binds]
    assert {"self", "weight"} <= set(variable.binds) and {"float32", "float64"} <= _dtypes(loss, "weight")  # weight follows self
    alone = [e for e in variable.evidence if e.refused and e.slots == ("weight",)]
    target = torch.zeros(2, 4, 4, dtype=torch.int64)
    by_hand = _message(lambda: torch.ops.aten.nll_loss2d(torch.rand(2, 3, 4, 4), target, torch.rand(3, dtype=torch.float64)))
    assert alone[0].messages[named("float64")[0]] == by_hand == "RuntimeError: expected scalar type Float but found Double"

    bias = plans["mkldnn_convolution"]
    assert "float32" in _dtypes(bias, "bias") and "float64" not in _dtypes(bias, "bias")
    convolution = torch.ops.aten.mkldnn_convolution
    by_hand = _message(lambda: convolution(torch.rand(1, 2, 4, 4), torch.rand(2, 2, 3, 3), torch.rand(2, dtype=torch.float64), [0, 0], [1, 1], [1, 1], 1))
    assert _refusal(bias, "bias", "float64") == by_hand

    window = plans["stft.center"]
    torch.ops.aten.stft.center(torch.rand(16), 4, window=torch.ones(4, dtype=torch.int64), return_complex=True)  # runs
    assert {"float32", "int64"} <= _dtypes(window, "window")


def test_an_input_beside_a_dtype_argument_at_none_is_judged():
    """_sobol_engine_draw's quasi: no sample passes it, and dtype= makes the schema's own call unfit for probing."""
    plan = _plans(_reports("_sobol_engine_draw"))["_sobol_engine_draw"]
    assert _dtypes(plan, "quasi") == {"int64"}
    draw = torch.ops.aten._sobol_engine_draw
    by_hand = _message(lambda: draw(torch.zeros(2), 3, torch.ones(2, 30, dtype=torch.int64), 2, 0, torch.float32))
    assert _refusal(plan, "quasi", "float32") == by_hand == "RuntimeError: quasi needs to be of type Long"


def test_a_returned_list_keeps_its_elements_dtype_unless_an_argument_s_list_stays_free():
    """meshgrid refuses mixed lists, so its returned list is its tensors' variable; broadcast_tensors runs a mixed
    list and returns it mixed, so neither list is typed."""
    plans = _plans(_reports("meshgrid", "broadcast_tensors"))
    (variable,) = plans["meshgrid"].variables
    assert set(variable.binds) == {"tensors", "return.0"}
    assert {t.dtype for t in torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")} == {torch.int64}
    assert "int64" in _dtypes(plans["meshgrid"], "return.0")
    assert {t.dtype for t in torch.broadcast_tensors(torch.rand(2, 3), torch.arange(3))} == {torch.float32, torch.int64}
    assert "broadcast_tensors" not in plans


def test_a_list_cast_only_with_its_variable_is_tried_mixed_too():
    """rnn_tanh's params are accepted at float64 only with the input and hidden state; a mixed list is refused."""
    (report,) = _reports("rnn_tanh.input")
    x, hx = torch.rand(3, 2, 3), torch.rand(1, 2, 4)
    params = [torch.rand(4, 3), torch.rand(4, 4, dtype=torch.float64), torch.rand(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64)]
    by_hand = _message(lambda: torch.ops.aten.rnn_tanh.input(x, hx, params, True, 1, 0.0, False, False, False))
    assert report[UNIFORM]["params"].startswith("RuntimeError: self and mat2 must have the same dtype") and by_hand.startswith("RuntimeError: self and mat2")
    assert {"input", "hx", "params"} <= set(next(v.binds for v in _plans([report])["rnn_tanh.input"].variables if "params" in v.binds))


def test_compressed_values_are_judged_with_dtype_at_their_own_dtype():
    """sparse_csr_tensor's values must have the dtype its dtype= names (float32 when None): probing tries each
    dtype of the values with dtype= at it, so the values take every dtype ATen takes there."""
    (report,) = _reports("sparse_csr_tensor.crow_col_value")
    (values,) = [p for p in report["probes"] if p[0] == ["values"]]
    gated = {dtype: gate for dtype, gate, _ in values[3]}
    assert gated["float64"] == "dtype=torch.float64" and gated["bool"] == "dtype=torch.bool"
    crow, col = torch.tensor([0, 1, 2]), torch.tensor([0, 1])
    assert torch.ops.aten.sparse_csr_tensor.crow_col_value(crow, col, torch.ones(2, dtype=torch.bool), dtype=torch.bool).dtype == torch.bool
    by_hand = _message(lambda: torch.ops.aten.sparse_csr_tensor.crow_col_value(crow, col, torch.ones(2, dtype=torch.float64)))
    assert by_hand == "RuntimeError: dtype of values (Double) must match dtype of sparse tensor (Float)"
    plan = _plans([report])["sparse_csr_tensor.crow_col_value"]
    assert len(_dtypes(plan, "values")) == 21
    assert not [slot for v in plan.variables for slot in v.binds if slot.startswith("return.")]  # dtype= sets it


def test_scaled_mm_s_optional_bias_is_judged_per_dtype():
    """No sample passes _scaled_mm's or _scaled_mm_v2's bias: their recipes do, and ATen's CPU kernels differ."""
    plans = _plans(_reports("_scaled_mm", "_scaled_mm_v2"))
    assert {"float64", "int64", "bool"} <= _dtypes(plans["_scaled_mm"], "bias")
    assert _dtypes(plans["_scaled_mm"], "scale_result") == {"float32"}
    assert _dtypes(plans["_scaled_mm_v2"], "bias") == {"float16", "bfloat16", "float32"}
    a = torch.full((16, 16), 0.5, dtype=torch.float8_e4m3fn)
    scale, recipe, swizzle = [torch.tensor([1.0])], [0], [0]
    bias = torch.ones(16, dtype=torch.bool)
    by_hand = _message(lambda: torch.ops.aten._scaled_mm_v2(a, a, scale, recipe, swizzle, scale, recipe, swizzle, bias, None))
    assert _refusal(plans["_scaled_mm_v2"], "bias", "bool") == by_hand == "ValueError: Bias must be Float32 or BFloat16 or Half, but got Bool"
