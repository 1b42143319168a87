"""The torchlib codemod on copies of the installed onnxscript, rewritten by full runs.

Two copies: one rewritten with the plan the full default run infers (read from its cache), one with a
hand-built plan that changes sets (a narrower set on a mask, a new global set, a set
wider than the function, a dtype ONNX lacks, a union across overloads). For each copy
a process whose ``sys.path`` starts at the copy imports onnxscript and dumps its registry and
every function's signature (the test process does the same for the installed original);
it also exports a small attention block (float mask, bool mask) and a small MLP with
``torch.onnx.export(..., dynamo=True)``, comparing onnxruntime with PyTorch. The work is
done once per session and shared by pytest-xdist workers through a file lock.

Run as a script with the copies' folders, this file is one interpreter that imports torch and the exporter's other
dependencies once and probes each copy in a child forked from it (torch.onnx keeps the first onnxscript it imports, so
no process probes two): it prints the probes as JSON, by folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

TOLERANCE = 1e-4
OPSET = 18  # torchlib's opset: newer ones let torch's own implementations of sdpa and gelu win
PACKAGE = "onnxscript.function_libs.torch_lib"


def probe(exports: bool = True) -> dict:
    """What the onnxscript on sys.path registers, each function's signature, and (``exports``) the three exports."""
    import numpy as np
    import onnxruntime
    import onnxscript
    import torch
    from onnxscript.function_libs.torch_lib import ops, registration  # noqa: F401  (ops registers)

    def dtypes(constraint) -> list[str]:
        return sorted({t.dtype.name for t in constraint.allowed_types}) if constraint is not None else []

    def schema_arguments(name: str) -> set[str] | None:
        """The argument names of the registered name's schema as torch itself has it: the keywords torch.onnx passes."""
        namespace, _, op = name.partition("::")
        base, _, overload = op.partition(".")
        try:
            return {a.name for a in getattr(getattr(getattr(torch.ops, namespace), base), overload or "default")._schema.arguments}
        except (AttributeError, RuntimeError):
            return None

    registry, functions, keyword_misses = {}, {}, {}
    for name, overloaded in sorted(registration.default_registry.items()):
        registry[name] = sorted(f.name for f in overloaded.overloads) + sorted(f"complex:{f.name}" for f in overloaded.complex)
        arguments = schema_arguments(name)
        for function in (*overloaded.overloads, *overloaded.complex):
            signature = function.op_signature
            python = getattr(function, "function", None) or function.func  # scripted or traced
            key = f"{python.__module__}:{function.name}"
            functions[key] = {
                "params": {p.name: dtypes(getattr(p, "type_constraint", None)) for p in signature.params},
                "outputs": [dtypes(o.type_constraint) for o in signature.outputs],
            }
            missing = [p.name for p in signature.params if arguments is not None and p.name not in arguments]
            if missing:
                keyword_misses[f"{name} {key}"] = missing

    class Attention(torch.nn.Module):
        def __init__(self, dim: int = 16, heads: int = 2):
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.out = torch.nn.Linear(dim, dim)

        def forward(self, x, mask):
            b, n, d = x.shape
            q, k, v = (t.reshape(b, n, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.out(y.transpose(1, 2).reshape(b, n, d))

    torch.manual_seed(0)
    attention = Attention().eval()
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8), torch.nn.ReLU()).eval()
    x = torch.randn(2, 5, 16)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    cases = {
        "attention, float mask": (attention, (x, torch.zeros(5, 5).masked_fill(~causal, -1e4))),
        "attention, bool mask": (attention, (x, causal)),
        "mlp": (mlp, (torch.randn(3, 16),)),
    }
    found, torchlib_registry = {}, None
    if exports:  # the copy's exports share one registry and one decomposition table, as export-check's workers do
        from torch.onnx._internal.exporter import _registration

        from migrate.runtime import torch_private

        torch_private.memoise_export_tables()
        torchlib_registry = _registration.ONNXRegistry.from_torchlib(opset_version=OPSET)
        _registration.ONNXRegistry.from_torchlib = classmethod(lambda cls, **_: torchlib_registry)  # every export here asks for OPSET
    for case, (model, args) in cases.items() if exports else ():
        program = torch.onnx.export(model, args, dynamo=True, opset_version=OPSET, verbose=False)
        session = onnxruntime.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(None, {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)})[0]
        with torch.no_grad():
            want = model(*args).numpy()
        found[case] = float(np.abs(got - want).max())

    sdpa_file = None
    if torchlib_registry is not None:
        sdpa = torchlib_registry.get_decomps(torch.ops.aten.scaled_dot_product_attention.default)[0]
        sdpa_file = (getattr(sdpa.onnx_function, "function", None) or sdpa.onnx_function.func).__code__.co_filename
    return {
        "onnxscript": onnxscript.__file__,
        "registry": registry,
        "functions": functions,
        "keyword_misses": keyword_misses,
        "exports": found,
        "sdpa_file": sdpa_file,
    }


def probe_copies(folders: list[str]) -> dict[str, dict]:
    """Each folder's onnxscript probed in a child of this process, the children at once."""
    import numpy  # noqa: F401  (everything the probe needs but onnxscript, imported once for every child)
    import onnx_ir  # noqa: F401
    import onnxruntime  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch.export  # noqa: F401

    children = {}
    for folder in folders:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                sys.path.insert(0, folder)
                os.chdir(folder)
                Path(folder, "probe.json").write_text(json.dumps(probe()))
                code = 0
            except BaseException:
                traceback.print_exc()  # os._exit below would end the child before the traceback is printed
            finally:
                sys.stderr.flush()
                os._exit(code)
        children[folder] = pid
    for folder, pid in children.items():
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"the probe of {folder} failed (wait status {status})")
    return {folder: json.loads(Path(folder, "probe.json").read_text()) for folder in folders}


if __name__ == "__main__":
    json.dump(probe_copies(sys.argv[1:]), sys.stdout)
    sys.exit(0)

# -- the tests ------------------------------------------------------------------------------------

import importlib.util  # noqa: E402

import pytest  # noqa: E402
from filelock import FileLock  # noqa: E402  (a dependency of torch)

from migrate.cache import StageCache  # noqa: E402
from migrate.torchlib_source.resolve import scan_torchlib  # noqa: E402
from migrate.pipeline import Options, Session  # noqa: E402
from migrate.model.dtypes import DType, canonical, named  # noqa: E402
from migrate.model.native import NativeFunctions, installed_native_functions  # noqa: E402
from tests.conftest import probed  # noqa: E402
from migrate.model.plan import HAND, Evidence, GlobalSet, OverloadPlan, Plan, Variable  # noqa: E402
from migrate.write.torchlib.decide import DROPPED_NON_ONNX, GLOBAL_SET, KEPT_NARROWER, UNION  # noqa: E402
from migrate.write.torchlib.parameter_names import RENAMED  # noqa: E402
from migrate.write.torchlib.parameters import OVERLOADS_DISAGREE, SCHEMA_LACKS_IT  # noqa: E402
from migrate.write.torchlib.rewrite import rewrite_torchlib  # noqa: E402

pytestmark = pytest.mark.slow  # full runs, exports and onnxruntime

VARIANTS = ("inferred", "hand")
FLOATS = ("float16", "bfloat16", "float32", "float64")
ONNX_DTYPES = tuple(DType(n) for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", *FLOATS, "complex64", "complex128"))


def hand_plan(inferred: Plan) -> Plan:
    """Today's plan with sets changed the way other evidence will change them."""

    def variable(name: str, dtypes: tuple[str, ...], *binds: str) -> Variable:
        """A variable of these dtypes, whose evidence says ATen rejects every other ONNX dtype (so the rewrite may narrow)."""
        refused = tuple(d for d in ONNX_DTYPES if d.name not in dtypes)
        rejection = probed(binds, refused, refused="refused by hand", made_by="the hand plan (1 call)")
        return Variable(name, named(*dtypes), binds, (Evidence(HAND, "tests/test_codemod_torchlib.py", named(*dtypes), binds), rejection))

    sdpa = next(o for o in inferred.overloads if o.name == "scaled_dot_product_attention")
    changes = {
        # The mask: bool or float; torchlib says any tensor (narrower: rewritten).
        "scaled_dot_product_attention": (*sdpa.variables, variable("M", ("bool", *FLOATS), "attn_mask")),
        # A global set torchlib does not define: added to tensor_typing.py.
        "relu": (variable("TFloatNoBFloat16", ("float16", "float32", "float64"), "self", "return.0"),),
        # Wider than the function (complex64): kept, and reported.
        "gelu": (variable("T", (*FLOATS, "complex64"), "self", "return.0"),),
        # complex32 has no ONNX type: dropped, and reported.
        "linear": (variable("T", (*FLOATS, "complex32"), "input", "weight", "bias", "return.0"),),
        # One function serves both: their union.
        "fmod.Tensor": (variable("T", ("float32", "float64"), "self", "other", "return.0"),),
        "fmod.Scalar": (variable("T", ("float16", "float32"), "self", "return.0"),),
        # Another existing global set, narrower than the function's.
        "tanh": (variable("TFloatHighPrecision", ("float32", "float64"), "self", "return.0"),),
    }
    overloads = tuple(OverloadPlan(o.name, changes.get(o.name, o.variables), o.conflicts) for o in inferred.overloads)
    new_set = GlobalSet("TFloatNoBFloat16", named("float16", "float32", "float64"), "Floating-point tensors other than bfloat16.")
    mask = GlobalSet("TFloatOrBool", named("bool", *FLOATS), "The mask's set, named as if more entries used it.")
    return Plan((*inferred.global_sets, new_set, mask), overloads)


def _start_probes(folders: list[Path]) -> subprocess.Popen:
    """The probes of the rewritten copies, in an interpreter of their own (see ``probe_copies``)."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen([sys.executable, __file__, *map(str, folders)], cwd=folders[0].parent, **pipes)


def _finish(process: subprocess.Popen) -> dict[str, dict]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-4000:]
    return json.loads(out)


def _expected(plan: Plan, record: dict) -> dict[str, set[str]]:
    """Each TypeVar's ONNX types from the plan alone: the union, over the function's overloads, of the sets its slots have
    (a list's: every dtype it may take, ``[dtype, self.dtype]`` the argument's and ``self``'s)."""
    by_name = {o.name: o for o in plan.overloads}
    sets = {g.name: g.dtypes for g in plan.global_sets}
    found: dict[str, set[DType]] = {}
    for slot, typevar, _ in record["slots"]:
        for overload in record["overloads"]:
            declared = by_name[overload].variable_of(slot)
            if declared is not None:
                dtypes = by_name[overload].possible(declared) if declared.listed else declared.dtypes or sets[declared.name]
                found.setdefault(typevar, set()).update(dtypes)
    return {typevar: {d.onnx for d in canonical(dtypes) if d.onnx is not None} for typevar, dtypes in found.items()}


def _record(function, plan: Plan) -> dict:
    """A rewritten function as the tests read it, with each TypeVar's types by the plan: the workers get no plan."""
    record = {
        "path": function.path,
        "function": function.function,
        "overloads": list(function.overloads),
        "changed": function.changed,
        "slots": [[s.slot, s.typevar, [str(d) for d in s.dtypes]] for s in function.slots],
    }
    return {**record, "expected": {typevar: sorted(types) for typevar, types in _expected(plan, record).items()}}


def _build(shared: Path) -> dict:
    """Copies, rewrites and probes; everything the tests read, as JSON."""
    started = time.perf_counter()
    native = NativeFunctions.load(installed_native_functions())
    installed = Path(next(iter(importlib.util.find_spec("onnxscript").submodule_search_locations)))
    stages = StageCache.at()  # keyed by content: the copies read what any run derived from the same torch_lib
    # the full default run's plan (the plans stage: inferred once per suite, whichever test asks first)
    inferred = Session(Options()).inference.plan
    plans = {"inferred": inferred, "hand": hand_plan(inferred)}
    rewrites, roots = {}, {}
    for variant, plan in plans.items():
        copy = shared / variant
        shutil.copytree(installed, copy / "onnxscript")  # its bytecode too: a rewritten module's no longer matches, and is compiled again
        roots[variant] = root = copy / "onnxscript" / "function_libs" / "torch_lib"
        rewrites[variant] = rewrite = rewrite_torchlib(scan_torchlib(root, native, stages), plan, native, stages)
        for path, _, after in rewrite.files:
            (root / path).write_bytes(after)
    probing = _start_probes([shared / variant for variant in plans])
    results = {}
    for variant, plan in plans.items():
        rewrite, root = rewrites[variant], roots[variant]
        again = rewrite_torchlib(scan_torchlib(root, native, stages), plan, native, stages)
        results[variant] = {
            "root": str(root),
            "files": [path for path, _, _ in rewrite.files],
            "notes": list(rewrite.notes),
            "functions": [_record(f, plan) for f in rewrite.functions],
            "parameters": [[p.path, p.function, p.param, p.new, p.outcome] for p in rewrite.parameters],
            "second_run_files": [path for path, _, _ in again.files],
        }
    # The installed onnxscript, which the copies' registry and signatures are compared with, probed here while the
    # copies' probes run: its exports would test onnxscript, not the rewrite.
    results["original"] = {"probe": probe(exports=False)}
    probed_copies = _finish(probing)
    for variant in plans:
        results[variant]["probe"] = probed_copies[str(shared / variant)]
    results["seconds"] = time.perf_counter() - started
    return results


@pytest.fixture(scope="session")
def real(tmp_path_factory, worker_id) -> dict:
    """The shared results: built by the first worker to get here, read by the others."""
    base = tmp_path_factory.getbasetemp()
    shared = (base if worker_id == "master" else base.parent) / "codemod_torchlib"
    with FileLock(str(shared) + ".lock"):
        done = shared / "results.json"
        if not done.exists():
            shared.mkdir(exist_ok=True)
            done.write_text(json.dumps(_build(shared)))
        return json.loads(done.read_text())


@pytest.fixture(params=VARIANTS)
def variant(request, real) -> dict:
    return real[request.param]


def test_the_rewrite_changes_modules_and_a_second_run_changes_nothing(variant):
    assert "ops/core.py" in variant["files"] and "ops/nn.py" in variant["files"]
    assert any(f["changed"] for f in variant["functions"])
    assert variant["second_run_files"] == []


def test_every_module_compiles(variant):
    for path in sorted(Path(variant["root"]).rglob("*.py")):
        compile(path.read_bytes(), str(path), "exec")


def test_the_copy_imports_and_registers_the_same_functions(real, variant):
    assert variant["probe"]["onnxscript"].startswith(str(Path(variant["root"]).parents[2]))
    assert variant["probe"]["registry"] == real["original"]["probe"]["registry"]
    assert len(variant["probe"]["registry"]) > 400


def test_rewritten_signatures_have_the_declared_sets(variant):
    functions = variant["probe"]["functions"]
    checked = 0
    for record in variant["functions"]:
        module = f"{PACKAGE}.{record['path'][:-3].replace('/', '.')}"
        signature = functions[f"{module}:{record['function']}"]
        expected = record["expected"]
        for slot, typevar, written in record["slots"]:
            if slot.startswith("return."):
                actual = signature["outputs"][int(slot.split(".")[1])]
            else:
                actual = signature["params"][slot]
            assert set(actual) == {DType.parse(d).onnx for d in written}, (record["function"], slot)
            assert set(expected[typevar]) <= set(actual), (record["function"], slot)  # without export results, nothing declared leaves
            checked += 1
    assert checked > 200  # hundreds of slots in either plan (295 and 300+ today): not a vacuous pass


def _renamed(variant: dict) -> dict[str, dict[str, str]]:
    """Per registered function (as the probe names it), its renamed parameters: old -> new."""
    renamed: dict[str, dict[str, str]] = {}
    for path, function, old, new, outcome in variant["parameters"]:
        if outcome == RENAMED:
            renamed.setdefault(f"{PACKAGE}.{path[:-3].replace('/', '.')}:{function}", {})[old] = new
    return renamed


def test_functions_not_rewritten_keep_their_signatures(real, variant):
    """Their parameters' dtypes, under the names they have after the run (a renamed parameter keeps its dtypes)."""
    original = real["original"]["probe"]["functions"]
    changed = {f"{PACKAGE}.{r['path'][:-3].replace('/', '.')}:{r['function']}" for r in variant["functions"] if r["changed"]}
    renamed = _renamed(variant)
    kept = {key: value for key, value in variant["probe"]["functions"].items() if key not in changed}
    expected = {}
    for key, value in original.items():
        if key not in changed:
            names = renamed.get(key, {})
            expected[key] = {**value, "params": {names.get(p, p): dtypes for p, dtypes in value["params"].items()}}
    assert kept == expected


def test_renamed_functions_take_the_yamls_names_and_register_as_before(real, variant):
    """Renamed parameters are the schema's argument names in the imported functions' signatures, in their order."""
    renamed = _renamed(variant)
    assert len(renamed) >= 10  # the clamp_min/max, upsample *_vec, atleast_*d_sequence, unique_consecutive
    original = real["original"]["probe"]["functions"]
    for key, names in renamed.items():
        before = list(original[key]["params"])
        after = list(variant["probe"]["functions"][key]["params"])
        assert after == [names.get(p, p) for p in before], key
    left = {(function, param): outcome for _, function, param, _, outcome in variant["parameters"] if outcome != RENAMED}
    assert left[("aten_sort", "stable")] == SCHEMA_LACKS_IT and left[("aten_linalg_det", "A")] == OVERLOADS_DISAGREE


def test_torch_passes_every_renamed_parameter_by_its_keyword(real, variant):
    """Against torch's own schemas (the keywords torch.onnx dispatches with): the parameters no argument of the
    registered name takes are the original's, less exactly those the run renamed."""
    renamed = _renamed(variant)
    before = real["original"]["probe"]["keyword_misses"]
    assert "min_" in before[f"aten::clamp_min {PACKAGE}.ops.core:aten_clamp_min"]
    expected = {}
    for key, params in before.items():
        left = [p for p in params if p not in renamed.get(key.split(" ", 1)[1], {})]
        if left:
            expected[key] = left
    assert variant["probe"]["keyword_misses"] == expected
    assert len(expected) < len(before)


@pytest.mark.parametrize("library", VARIANTS)
def test_exports_match_pytorch(real, library):
    exports = real[library]["probe"]["exports"]
    assert set(exports) == {"attention, float mask", "attention, bool mask", "mlp"}
    for case, error in exports.items():
        assert error <= TOLERANCE, (library, case, error)


def test_the_hand_plan_reaches_the_exporter_and_the_report(real):
    hand = real["hand"]
    assert hand["probe"]["sdpa_file"].startswith(hand["root"])
    sdpa = hand["probe"]["functions"][f"{PACKAGE}.ops.nn:aten_scaled_dot_product_attention"]
    assert sdpa["params"]["attn_mask"] == sorted(["BOOL", "FLOAT16", "BFLOAT16", "FLOAT", "DOUBLE"])
    assert sdpa["params"]["query"] == sorted(["FLOAT16", "BFLOAT16", "FLOAT", "DOUBLE"])
    notes = hand["notes"]
    assert any(n.startswith(f"{UNION}: ops/core.py:") and " aten_fmod: " in n for n in notes)
    assert f"{DROPPED_NON_ONNX}: linear: T drops [torch.complex32]: no ONNX type" in notes
    assert any(n.startswith(f"{KEPT_NARROWER}: ops/nn.py:") and " aten_gelu (gelu) " in n for n in notes)
    assert f"{GLOBAL_SET}: added TFloatNoBFloat16 [torch.float16, torch.float32, torch.float64] to tensor_typing.py" in notes
    assert "tensor_typing.py" in hand["files"]
    relu = hand["probe"]["functions"][f"{PACKAGE}.ops.nn:aten_relu"]
    assert relu["params"]["self"] == sorted(["FLOAT16", "FLOAT", "DOUBLE"])
