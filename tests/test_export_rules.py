"""export-check's rules without exporting: statuses from onnxruntime's messages, how calls combine, which cases
an overload gets (the diagonal first), and how the torchlib rewrite narrows or widens an annotation from
ATen's rejections and export verdicts (fake ones here; ``test_export_check`` has the real exports)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
import torch

from migrate.audit.export import CaseRequest, requests
from migrate.audit.export_worker import Run, _compare, _spec_error
from migrate.cache import StageCache
from migrate.evidence.probe.merge import probe_site
from migrate.torchlib_source.resolve import scan_torchlib
from migrate.model.dtypes import DType, named
from migrate.model.export_status import (
    EXPORT_ERROR,
    INVALID_MODEL,
    MISMATCH,
    NO_KERNEL,
    NO_SAMPLE,
    OK,
    PARTIAL,
    RUNTIME_ERROR,
    combined,
    load_failure_status,
)
from migrate.model.native import NativeFunctions
from migrate.model.plan import PROBE, Evidence, Plan, Variable
from migrate.model.verdict import REJECTED, Verdict
from migrate.write.torchlib.decide import DTYPE_ADDED, DTYPE_REMOVED
from migrate.write.torchlib.narrowing import ExportStatus, rejected_dtypes, settle
from migrate.write.torchlib.rewrite import rewrite_torchlib

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codemod"


# --- statuses -------------------------------------------------------------------------------------

ORT = "[ONNXRuntimeError] : "


@pytest.mark.parametrize(
    "message, status",
    [
        (f"{ORT}9 : NOT_IMPLEMENTED : Could not find an implementation for Acos(7) node with name 'node_acos'", NO_KERNEL),
        (f"{ORT}9 : NOT_IMPLEMENTED : Could not find an implementation for MatMul(13) node with name 'node_MatMul'", NO_KERNEL),
        (
            f"{ORT}10 : INVALID_GRAPH : This is an invalid model. Type Error: Type 'tensor(int8)' of input parameter (x) "
            "of operator (MatMul) in node (node_MatMul) is invalid.",
            INVALID_MODEL,
        ),
        (f"{ORT}1 : FAIL : Type Error: Type parameter (T) of Optype (Add) bound to different types (tensor(float16) and tensor(float)", INVALID_MODEL),
        (f"{ORT}9 : NOT_IMPLEMENTED : something else", INVALID_MODEL),  # not a missing kernel: the spec's side
    ],
)
def test_a_refused_model_is_a_spec_error_or_a_missing_kernel(message, status):
    assert load_failure_status(message) == status


def _one_node_model(op: str, inputs: int, element_type: int, out_shape: list[int]):
    import onnx_ir
    from onnx import TensorProto, helper

    names = [f"x{i}" for i in range(inputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"])],
        "g",
        [helper.make_tensor_value_info(name, element_type, [2, 2]) for name in names],
        [helper.make_tensor_value_info("y", element_type, out_shape)],
    )
    model = onnx_ir.serde.deserialize_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    return model, list(model.graph.outputs)


def test_a_missing_kernel_is_a_spec_error_only_when_the_checker_objects_to_a_type():
    from onnx import TensorProto

    assert "unsupported type: tensor(int8)" in _spec_error(*_one_node_model("MatMul", 2, TensorProto.INT8, [2, 2]))
    assert _spec_error(*_one_node_model("MatMul", 2, TensorProto.DOUBLE, [2, 2])) == ""
    # a shape the checker infers otherwise (unique_dim's Identity) is the function's bug for every dtype, not a type's
    assert _spec_error(*_one_node_model("Identity", 1, TensorProto.UINT8, [0, 2])) == ""


def test_calls_combine_into_ok_partial_or_the_first_failure():
    assert combined([(OK, ""), (OK, "")]) == (OK, "")
    assert combined([(EXPORT_ERROR, "weights not supported"), (OK, "")]) == (PARTIAL, "weights not supported")
    assert combined([(OK, ""), (MISMATCH, "values"), (EXPORT_ERROR, "e")]) == (PARTIAL, "values")
    assert combined([(INVALID_MODEL, "MatMul bool"), (EXPORT_ERROR, "e")]) == (INVALID_MODEL, "MatMul bool")
    assert combined([(PARTIAL, "p"), (EXPORT_ERROR, "e")]) == (PARTIAL, "e")  # overloads: one partly works
    assert combined([]) == (NO_SAMPLE, "no call")


def _topk_run(source, k: int = 2):
    values, indices = torch.topk(source, k)
    return Run("topk", args=[source, k], expected=[values, indices])


def test_an_index_output_that_breaks_ties_otherwise_is_no_mismatch():
    """topk of integers: onnxruntime may pick the other of two equal elements; the indices still pick eager's values."""
    source = torch.tensor([[5, 1, 5, 2], [3, 3, 0, 3]], dtype=torch.int16)
    run = _topk_run(source)
    values = run.expected[0]
    other_ties = torch.tensor([[2, 0], [3, 1]])
    assert not torch.equal(other_ties, run.expected[1])
    assert _compare(run, [values, other_ties]) == (OK, "")


def test_an_index_output_that_picks_other_values_is_a_mismatch():
    source = torch.tensor([[5, 1, 7, 2], [3, 4, 0, 9]], dtype=torch.int16)  # no ties: one right answer
    run = _topk_run(source)
    values = run.expected[0]
    status, message = _compare(run, [values, torch.tensor([[0, 3], [1, 0]])])
    assert (status, message.split(":")[0]) == (MISMATCH, "output 1")
    status, message = _compare(run, [values + 1, run.expected[1]])  # wrong values are never excused
    assert (status, message.split(":")[0]) == (MISMATCH, "output 0")


# --- cases ----------------------------------------------------------------------------------------


def test_tied_slots_make_one_diagonal_case_per_dtype():
    """addr ties its three tensors: bool is checked with all three bool, never one slot alone."""
    declared = {"addr": (Variable("T", named("bool", "float32"), ("self", "vec1", "vec2", "return.0")),)}
    assert requests(declared, ["addr"]) == {
        "addr": (CaseRequest("addr", ("self", "vec1", "vec2"), DType("bool")), CaseRequest("addr", ("self", "vec1", "vec2"), DType("float32")))
    }


def test_independent_variables_get_the_diagonal_first_then_each_variable_alone():
    """The diagonal casts every slot that declares the dtype (a uint8 bincount does not make its float weights uint8)."""
    declared = {
        "bincount": (
            Variable("T", named("uint8", "int64"), ("self",)),
            Variable("U", named("float32", "float64", "int64"), ("weights",)),
        )
    }
    cases = [(c.cast, c.dtype.name) for c in requests(declared, ["bincount"])["bincount"]]
    assert cases == [
        (("self",), "uint8"),  # the diagonal: uint8 only self declares
        (("self", "weights"), "int64"),  # int64 both declare (listed once for the two variables)
        (("weights",), "float32"),
        (("weights",), "float64"),
        (("self",), "int64"),  # then each variable alone, where that is not a diagonal already
        (("weights",), "int64"),
    ]


def test_dtypes_onnx_cannot_express_and_return_only_variables_make_no_case():
    declared = {"neg": (Variable("T", named("complex32", "float32"), ("self", "return.0")), Variable("R", named("int64"), ("return.1",)))}
    assert [(c.cast, c.dtype.name) for c in requests(declared, ["neg"])["neg"]] == [(("self",), "float32")]


# --- the rewrite's rule -------------------------------------------------------------------------


def test_settle_keeps_what_nobody_refuted_and_changes_only_on_proof():
    f32, f64, i64, b = (DType(n) for n in ("float32", "float64", "int64", "bool"))
    # No export results, nothing rejected: the original stays whole although the declaration is narrower.
    assert settle({f32}, {f32, f64, i64}, {}, {}).dtypes == (i64, f32, f64)
    # ATen rejects int64: it leaves, with the message; float64 (unknown) stays.
    settled = settle({f32}, {f32, f64, i64}, {}, {i64: "not implemented for 'Long'"})
    assert settled.dtypes == (f32, f64) and [(c.dtype, c.why) for c in settled.removed] == [(i64, "ATen rejects it: not implemented for 'Long'")]
    # A rejection never removes a declared dtype (accepted in another context).
    assert settle({f32, i64}, {f32, i64}, {}, {i64: "mask"}).dtypes == (i64, f32)
    # Export verdicts: failing leaves, no-kernel and no-sample stay, ok joins, no-sample does not join.
    exported = {f32: (OK, ""), f64: (NO_KERNEL, "Acos(7)"), i64: (INVALID_MODEL, "MatMul int64"), b: (NO_SAMPLE, "")}
    settled = settle({f32, f64, i64, b}, {f64, i64}, exported, {})
    assert settled.dtypes == (f32, f64)
    assert [c.dtype for c in settled.added] == [f32] and [c.dtype for c in settled.removed] == [i64]
    assert settled.removed[0].why == "export invalid-model: MatMul int64"
    assert settle({f32}, {f32, b}, {f32: (PARTIAL, "3D"), b: (RUNTIME_ERROR, "")}, {}).dtypes == (b, f32)
    assert settle({f32}, set(), {f32: (NO_KERNEL, "")}, {}).dtypes == ()  # no-kernel does not join
    c64 = DType("complex64")
    assert settle({f32, c64}, {f32}, {c64: (OK, "")}, {}).dtypes == (f32,)  # another function exported the complex call
    failed = {c64: (EXPORT_ERROR, "DispatchError: No ONNX function found for <OpOverload(op='aten.expand')>")}
    assert settle({f32, c64}, {f32, c64}, failed, {}).dtypes == (f32, c64)  # nor did this one fail it
    i64 = DType("int64")
    unsupported = {d: (EXPORT_ERROR, "NotImplementedError: aten::bincount with weights is not supported.") for d in (f32, i64)}
    assert settle({f32, i64}, {f32, i64}, unsupported, {}).dtypes == (i64, f32)  # every dtype fails alike: not a dtype's failure
    assert settle({f32, i64}, {f32, i64}, unsupported | {f32: (OK, "")}, {}).dtypes == (f32,)  # int64's failure tells now


def test_rejected_dtypes_come_from_probe_rejections_one_message_per_dtype():
    refusals = {DType("int8"): "\"gelu\" not implemented for 'Char'", DType("int64"): "\"gelu\" not implemented for 'Long'"}
    verdict = Verdict(REJECTED, probe_site(("self",), "OpInfo x (2 calls)"), tuple(refusals.items()))
    variable = Variable("T", named("float32"), ("self",), (Evidence(PROBE, "", named("int8", "int64"), ("self",), 2, verdict),))
    assert rejected_dtypes(variable) == {DType("int8"): "\"gelu\" not implemented for 'Char'", DType("int64"): "\"gelu\" not implemented for 'Long'"}
    accepted = dataclasses.replace(variable, dtypes=named("float32", "int64"))
    assert list(rejected_dtypes(accepted)) == [DType("int8")]  # a dtype the variable declares is never rejected


@pytest.fixture(scope="module")
def fixture_inputs():
    native = NativeFunctions.load(FIXTURES / "native_functions.yaml")
    cache = StageCache.at(tempfile.mkdtemp())
    return native, scan_torchlib(FIXTURES / "before", native, cache), Plan.read(FIXTURES / "plan.json"), cache


def _without_rejections(plan: Plan, overload: str) -> Plan:
    def stripped(o):
        if o.name != overload:
            return o
        variables = tuple(dataclasses.replace(v, evidence=tuple(e for e in v.evidence if not e.refused)) for v in o.variables)
        return dataclasses.replace(o, variables=variables)

    return dataclasses.replace(plan, overloads=tuple(stripped(o) for o in plan.overloads))


def _signature(rewrite, path: str, function: str) -> str:
    text = dict((p, after) for p, _, after in rewrite.files).get(path, (FIXTURES / "before" / path).read_bytes()).decode()
    start = text.index(f"def {function}(")
    return text[start : text.index(":\n", start)]


def test_without_a_rejection_the_annotation_is_not_narrowed(fixture_inputs):
    """clamp is declared [int64, float32]; the fixture's torchlib says TReal. Without ATen rejecting the rest, TReal stays."""
    native, evidence, plan, cache = fixture_inputs
    narrowed = rewrite_torchlib(evidence, plan, native, cache, {"clamp"}, reuse=False)
    kept = rewrite_torchlib(evidence, _without_rejections(plan, "clamp"), native, cache, {"clamp"}, reuse=False)
    assert "self: TInt64OrFloat32" in _signature(narrowed, "ops/safety.py", "aten_clamp")
    assert "self: TReal" in _signature(kept, "ops/safety.py", "aten_clamp") and kept.files == () and kept.narrowed == 0
    assert narrowed.narrowed == 1 and all("ATen rejects it" in n for n in narrowed.notes_of(DTYPE_REMOVED))


def test_export_verdicts_remove_failing_dtypes_and_add_ok_ones(fixture_inputs):
    """sin is FLOAT in the fixture's torchlib, declared [float32, float64]: an ok float64 export joins it (today it is
    kept narrower); clamp's failing dtypes leave TReal, and what is left is the declared set."""
    native, evidence, plan, cache = fixture_inputs
    plan = _without_rejections(_without_rejections(plan, "clamp"), "sin")
    failing = [("int8", MISMATCH), ("int16", MISMATCH), ("int32", MISMATCH), ("float16", EXPORT_ERROR), ("bfloat16", EXPORT_ERROR), ("float64", INVALID_MODEL)]
    exported = {
        "sin": (ExportStatus(("self",), DType("float64"), OK, ""), ExportStatus(("self",), DType("float32"), OK, "")),
        "clamp": tuple(ExportStatus(("self",), DType(d), status, f"{d} fails") for d, status in failing)
        + (ExportStatus(("self",), DType("float32"), OK, ""),),  # one that works: the failures are the dtypes'
    }
    rewrite = rewrite_torchlib(evidence, plan, native, cache, {"sin", "clamp"}, reuse=False, exported=exported)
    assert "self: TFloating" in _signature(rewrite, "ops/safety.py", "aten_sin")
    assert rewrite.notes_of(DTYPE_ADDED) == (f"{DTYPE_ADDED}: ops/safety.py:48 aten_sin (sin) self, return.0: torch.float64 (export ok)",)
    assert "self: TInt64OrFloat32" in _signature(rewrite, "ops/safety.py", "aten_clamp")  # what is left of TReal
    assert rewrite.notes_of(DTYPE_REMOVED) == tuple(
        f"{DTYPE_REMOVED}: ops/safety.py:33 aten_clamp (clamp) self, return.0: torch.{d} (export {status}: {d} fails)" for d, status in failing
    )
    assert (rewrite.narrowed, rewrite.widened) == (1, 1)


def test_a_variable_of_returns_only_takes_no_verdict():
    from migrate.write.torchlib.narrowing import by_dtype

    verdicts = [ExportStatus(("self",), DType("int64"), INVALID_MODEL, "m"), ExportStatus(("self", "other"), DType("int64"), OK, "")]
    assert by_dtype(verdicts, ()) == {}
    assert by_dtype(verdicts, ("self",)) == {DType("int64"): [(INVALID_MODEL, "m", "export"), (OK, "", "export")]}
    assert by_dtype(verdicts, ("other",)) == {DType("int64"): [(OK, "", "export")]}


def test_a_variable_is_judged_by_the_calls_that_pass_it_a_tensor():
    """bincount's diagonal at int64: the call without weights is ok, the one with them fails. Self is partial; weights fails."""
    from migrate.write.torchlib.narrowing import by_dtype

    calls = ((("self", "weights"), EXPORT_ERROR, "weights is not supported", ("aten_bincount",)), (("self",), OK, "", ("aten_bincount",)))
    verdicts = [ExportStatus(("self", "weights"), DType("int64"), PARTIAL, "weights is not supported", calls)]
    assert combined(o[:2] for o in by_dtype(verdicts, ("self",))[DType("int64")]) == (PARTIAL, "weights is not supported")
    assert combined(o[:2] for o in by_dtype(verdicts, ("weights",))[DType("int64")]) == (EXPORT_ERROR, "weights is not supported")



def test_slots_one_annotation_ties_are_judged_by_calls_that_give_them_all_the_dtype():
    """embedding_bag.padding_idx ties indices and offsets; _embedding_bag declares them apart, and torchlib's one
    function serves both under one TypeVar. int32 indices beside int64 offsets export; both int32 do not."""
    from migrate.write.torchlib.narrowing import tied_statuses

    i32, i64 = DType("int32"), DType("int64")
    both = ("indices", "offsets")
    exported = {
        "_embedding_bag": (
            ExportStatus(both, i32, INVALID_MODEL, "Concat bound to different types"),
            ExportStatus(("indices",), i32, OK, ""),
            ExportStatus(("offsets",), i32, OK, ""),
            ExportStatus(both, i64, PARTIAL, "values"),
        ),
        "embedding_bag.padding_idx": (ExportStatus(both, i32, INVALID_MODEL, "Concat"), ExportStatus(both, i64, OK, "")),
    }
    declared = {"_embedding_bag": [("indices",), ("offsets",)], "embedding_bag.padding_idx": [both + ("return.1",)]}
    assert tied_statuses(exported, both, declared) == {
        i32: (INVALID_MODEL, "Concat bound to different types", "export"),
        i64: (PARTIAL, "values", "export"),
    }
    alone = {"_embedding_bag": declared["_embedding_bag"]}  # a class of indices alone: the call with int64 offsets proves int32
    assert tied_statuses(exported, ("indices",), alone)[i32] == (PARTIAL, "Concat bound to different types", "export")
