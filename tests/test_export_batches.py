"""A batch of calls exported together, on the real exporter: a conversion error is pinned on the call it names,
so the others are exported once more, not halved into many exports; and the tables each export would rebuild
(the CompositeImplicitAutograd ops it may keep, its decomposition table) are built once per worker."""

from __future__ import annotations

import pytest

from migrate.audit import export_worker
from migrate.model.export_status import EXPORT_ERROR, OK

pytestmark = pytest.mark.slow  # real exports and onnxruntime sessions (about 5 s)


def _run(torch, func, tensor):
    return export_worker.Run(func.__name__, func, [tensor], {}, {"self": str(tensor.dtype)}, [func(tensor)])


def test_a_failing_input_is_pinned_on_its_call_and_the_tables_are_built_once(monkeypatch):
    import importlib

    import torch

    from migrate.runtime import torch_private

    program, utils = importlib.import_module("torch.export.exported_program"), importlib.import_module("torch.export.decomp_utils")
    decomp = importlib.import_module("torch.onnx._internal.exporter._decomp")

    for module, name in ((program, "_collect_all_valid_cia_ops"), (utils, "_collect_all_valid_cia_ops")):
        monkeypatch.setattr(module, name, getattr(module, name))  # restored after the test
    monkeypatch.setattr(decomp, "create_onnx_friendly_decomposition_table", decomp.create_onnx_friendly_decomposition_table)
    torch_private.memoise_export_tables()
    exports = []
    attempt = export_worker._attempt
    monkeypatch.setattr(export_worker, "_attempt", lambda runs: exports.append(len(runs)) or attempt(runs))
    clone, neg = torch.ops.aten.clone.default, torch.ops.aten.neg.default
    runs = [
        _run(torch, neg, torch.randn(3)),
        _run(torch, clone, torch.ones(3).to(torch.float8_e8m0fnu)),  # the exporter has no ONNX type for it: fails at the input
        _run(torch, neg, torch.arange(4, dtype=torch.int32)),
        _run(torch, clone, torch.ones(2).to(torch.float8_e8m0fnu)),
    ]
    export_worker._check(runs)
    assert [r.status for r in runs] == [OK, EXPORT_ERROR, OK, EXPORT_ERROR], [(r.status, r.message) for r in runs]
    assert "float8_e8m0fnu" in runs[1].message and runs[1].message == runs[3].message
    assert exports == [4, 3, 2]  # each failure pinned on its call, the rest exported again; never halved
    collected = program._collect_all_valid_cia_ops
    assert collected() == collected() and collected() is not collected()  # one table, a copy to each caller


def test_an_error_is_pinned_on_the_call_whose_inputs_it_names_where_decompositions_renumber_the_nodes():
    """Two ``atleast_1d.default`` calls are decomposed away before translation, so the exporter names the complex
    call's ``atleast_1d.Sequence`` node as the float32 call's was named in the exported program: its inputs say
    which call it is."""
    import torch

    single, sequence = torch.ops.aten.atleast_1d.default, torch.ops.aten.atleast_1d.Sequence

    def run(func, tensors):
        args = [tensors] if func is sequence else tensors
        expected = [t for t in torch.utils._pytree.tree_leaves(func(*args)) if isinstance(t, torch.Tensor)]
        return export_worker.Run(str(func), func, args, {}, {"tensors": str(tensors[0].dtype)}, expected)

    runs = [
        run(single, [torch.tensor(2.0)]),
        run(single, [torch.tensor(3.0)]),
        *(run(sequence, [torch.tensor(1.0, dtype=dtype), torch.ones(3, dtype=dtype)]) for dtype in (torch.float32, torch.float64, torch.complex64)),
    ]
    export_worker._check(runs)
    assert [r.status for r in runs] == [OK, OK, OK, OK, EXPORT_ERROR], [(r.status, r.message) for r in runs]
    assert "complex-valued" in runs[4].message
