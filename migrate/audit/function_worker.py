"""The function-level judge inside a worker: a torchlib function called directly on a sampled call's tensors.

For the functions the exporter does not reach on its own (it decomposes their overload
before dispatch, as ``mT`` to ``transpose``, or dispatches the overload to another function
registered first), an export says nothing of them. This judge does what onnxscript's own op
tests do: call the ONNX function on symbolic inputs of the call's dtypes and shapes (the
exporter's tracer records the nodes it makes), build a one-function model, check it with
``onnx.checker.check_model(full_check=True)``, run it on onnxruntime and compare with eager
ATen. The statuses are the export's: the function raises (``export-error``), the checker
objects to a type (``invalid-model``), onnxruntime has no kernel (``no-kernel``) or fails
(``runtime-error``), a dtype, shape or value differs (``mismatch``), else ``ok``.

The job's calls are captured, cast and split by value as the export check's (``export_worker``); a report per
case and value.
Importing this module imports torch and onnxscript: only workers do (``migrate.audit.export`` imports it where it starts
them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx
import onnx_ir
import onnxscript
import torch

from migrate.audit.export_worker import _TYPE_OBJECTION, Case, Run, _compare, _first_line, _ort_value, _prepare, _run, gathered_calls, use_torchlib
from migrate.model.export_status import EXPORT_ERROR, INVALID_MODEL, NO_SAMPLE, combined
from migrate.runtime import torch_private

TORCHLIB_DOMAINS = ("pkg.onnxscript.torch_lib", "pkg.onnxscript.torch_lib.common")


def function_reports(argument: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The job: per overload and function to judge, a report per case (``{"phase": ...}`` before each overload)."""
    use_torchlib(argument["torchlib"])
    registry = torch_private.memoise_onnx_registry()
    for request, found, why_none in gathered_calls(argument["groups"]):
        overload = request["overload"]
        yield {"phase": f"judging the functions of {overload}"}
        registered = {
            torch_private.onnx_function_name(meta.onnx_function): meta.onnx_function
            for meta in registry.functions.get(f"aten::{overload}", ())
            if not meta.is_complex
        }
        for function in request["functions"]:
            for cast, dtype in request["cases"]:
                case = Case(overload, tuple(cast), dtype)
                if function not in registered:
                    case.status, case.message = EXPORT_ERROR, f"the exporter's registry has no {function} for aten::{overload}"
                else:
                    _prepare(case, found, why_none)
                    for run in case.runs:
                        try:
                            run.status, run.message = _judge(registered[function], run, registry.opset_version)
                        except Exception as exc:  # as the exporter fails on it (a dtype ONNX cannot name: float8_e8m0fnu)
                            run.status, run.message = EXPORT_ERROR, f"calling the function failed: {_first_line(exc)}"
                        run.ran.add(function)
                values = list(dict.fromkeys(run.value for run in case.runs)) or [""]
                for value in values:
                    yield _report(case, function, value)


def _report(case: Case, function: str, value: str) -> dict[str, Any]:
    """The case's result at one value (as the export's, ``Case.report``)."""
    runs = [r for r in case.runs if r.value == value]
    status, message = (case.status, case.message) if case.status else combined((r.status, r.message) for r in runs)
    return {
        "overload": case.overload,
        "cast": list(case.cast),
        "dtype": case.dtype,
        "value": value,
        "dtypes": runs[0].dtypes if runs else {},
        "function": function,
        "judge": "function",
        "status": status,
        "message": message,
        "calls": [run.report() for run in runs],
    }


def _judge(function: Any, run: Run, opset_version: int) -> tuple[str, str]:
    """The function called on the call's tensors as one model: checked, run, compared with eager ATen."""
    recorder, opset = torch_private.onnx_tracer(opset_version)
    inputs: list[Any] = []
    feeds: dict[str, Any] = {}

    def symbolic(value: Any) -> Any:
        """An argument as the exporter passes it: a tensor as a graph input, a dtype as its ONNX number."""
        if isinstance(value, torch.Tensor):
            name = f"input_{len(inputs)}"
            inputs.append(torch_private.onnx_symbolic_input(opset, name, value.dtype, tuple(value.shape)))
            feeds[name] = _ort_value(value)
            return inputs[-1]
        if isinstance(value, (list, tuple)):
            return [symbolic(v) for v in value] if any(isinstance(v, torch.Tensor) for v in value) else value
        if isinstance(value, torch.dtype):
            return int(torch_private.onnx_dtype_of(value))
        if isinstance(value, (torch.device, torch.memory_format, torch.layout)):
            return str(value)
        return value

    if any(t.is_complex() for t in torch.utils._pytree.tree_leaves((run.args, run.kwargs)) if isinstance(t, torch.Tensor)):
        return NO_SAMPLE, "complex inputs go to a complex=True function, not this one"
    args = [symbolic(a) for a in run.args]
    kwargs = {k: (-1 if k == "dtype" and v is None else symbolic(v)) for k, v in run.kwargs.items()}
    try:
        with onnxscript.evaluator.default_as(recorder):
            returned = function(*args, **kwargs)
    except Exception as exc:
        return EXPORT_ERROR, _first_line(exc)
    outputs = list(returned) if isinstance(returned, (list, tuple)) else [returned]
    if not all(isinstance(v, onnx_ir.Value) for v in outputs):
        return EXPORT_ERROR, f"the function returned {type(next(v for v in outputs if not isinstance(v, onnx_ir.Value))).__name__}, not ONNX values"
    nodes = list(recorder.nodes)
    for index, value in enumerate(outputs):  # an input returned as it is: through an Identity, named as an output
        if value in inputs or value in outputs[:index]:
            identity = onnx_ir.Node("", "Identity", [value])
            nodes.append(identity)
            outputs[index] = value = identity.outputs[0]
        value.name = f"output_{index}"
        if index < len(run.expected):  # a graph output needs a type and shape: eager's, where the tracer inferred none
            value.type = value.type or onnx_ir.TensorType(torch_private.onnx_dtype_of(run.expected[index].dtype))
            value.shape = value.shape or onnx_ir.Shape(tuple(run.expected[index].shape))
    graph = onnx_ir.Graph(inputs, outputs, nodes=nodes, opset_imports={"": opset_version}, name="main_graph")
    model = onnx_ir.Model(graph, ir_version=torch_private.onnx_ir_version(), producer_name="dtype-migrate")
    for identifier, called in recorder.functions.items():
        model.functions[identifier] = called if isinstance(called, onnx_ir.Function) else onnx_ir.serde.deserialize_function(called.to_function_proto())
    for domain in {n.domain for n in nodes} | {f.domain for f in model.functions.values()} | set(TORCHLIB_DOMAINS):
        graph.opset_imports.setdefault(domain, 1)
    for called in model.functions.values():
        for domain, version in called.opset_imports.items():
            graph.opset_imports.setdefault(domain, version)
    proto = onnx_ir.serde.serialize_model(model)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as exc:
        objection = _first_line(exc)
        if _TYPE_OBJECTION.search(objection):
            return INVALID_MODEL, f"onnx.checker: {objection}"
    got = _run(proto.SerializeToString(), feeds, [outputs])
    if isinstance(got, tuple):
        status, _, message = got
        return status, message
    return _compare(run, got[0])

