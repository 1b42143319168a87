"""Every private torch API the OpInfo evidence uses, in one place, behind small functions.

The recorders lean on torch internals that change between releases: the dispatch
mode stacks (``torch.utils._python_dispatch``, ``torch._ops``), the Python
dispatcher switches in ``torch._C``, the PreDispatch key, and the OpInfo database
under ``torch.testing._internal``. Nothing else in the package touches them. Each
is looked up through ``_private`` (modules, functions) or ``_attribute`` (attributes
of OpInfos and OpOverloads), so when torch moves one the failure is one line that
names it, instead of an AttributeError deep inside a worker process.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

TESTED_TORCH = "2.13.0"


class TorchAPIChanged(RuntimeError):
    """A private torch API the recorders need is missing or behaves differently in this torch."""


@functools.cache
def torch_version() -> str:
    """The installed torch's version, read without importing torch (a warm cache must load fast)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        import torch  # here: only when the version is not installed metadata (a warm cache must load fast)

        return torch.__version__


def api_changed(api: str, detail: str = "is missing") -> TorchAPIChanged:
    """The one-line error for a private API that is not what the recorders expect, with the version check."""
    version = torch_version()
    if version.split("+")[0] == TESTED_TORCH:
        why = f"torch {TESTED_TORCH} is the tested release, so this is a bug in dtype-migrate"
    else:
        why = f"the OpInfo recorders were written against torch {TESTED_TORCH} and need updating for {version}"
    return TorchAPIChanged(f"torch {version}: {api} {detail}; {why}")


@functools.cache
def _private(path: str) -> Any:
    """``module.attr.attr`` resolved, or TorchAPIChanged naming exactly what moved."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attr in parts[split:]:
                value = getattr(value, attr)
        except AttributeError:
            break
        return value
    raise api_changed(path)


def _attribute(obj: Any, name: str, api: str) -> Any:
    """``obj.name``, or TorchAPIChanged naming ``api`` (attributes of OpInfos and OpOverloads)."""
    try:
        return getattr(obj, name)
    except AttributeError:
        raise api_changed(api) from None


# --- the OpInfo database ------------------------------------------------------------------------


_OPINFO_MODULE = "torch.testing._internal.common_methods_invocations"


def op_db() -> list[Any]:
    """PyTorch's OpInfos: ``op_db`` and the foreach lists beside it (``foreach_*_op_db``, which op_db leaves out).

    Importing them takes seconds: done once per sweep, in the fork server.
    """
    module = importlib.import_module(_OPINFO_MODULE)
    foreach = sorted(name for name in vars(module) if re.fullmatch(r"foreach_\w+_op_db", name))
    return list(_private(f"{_OPINFO_MODULE}.op_db")) + [op for name in foreach for op in getattr(module, name)]


def opinfo_identity(op: Any) -> tuple[str, str]:
    """(name, variant_test_name): what tells two OpInfos apart."""
    return op.name, _attribute(op, "variant_test_name", "OpInfo.variant_test_name")


def opinfo_cpu_dtypes(op: Any) -> frozenset[Any]:
    return frozenset(_attribute(op, "supported_dtypes", "OpInfo.supported_dtypes")("cpu"))


CURRENT_GPU = (9, 0)  # the capability OpInfo's CUDA claims are evaluated for: a Hopper GPU (sm_90)
CURRENT_CUDA = (13, 0)  # and the CUDA release its torch is built with
CURRENT_GPU_TEXT = f"as on a GPU of capability {CURRENT_GPU[0]}.{CURRENT_GPU[1]} with CUDA {CURRENT_CUDA[0]}.{CURRENT_CUDA[1]}"

_CLAIMS_ON_A_CURRENT_GPU = """
import json, re, sys
import torch.testing._internal.common_cuda as cuda
gpu, release = tuple(json.loads(sys.argv[1])), tuple(json.loads(sys.argv[2]))
for name in dir(cuda):
    if (found := re.fullmatch(r"SM(\\d+)OrLater", name)):
        setattr(cuda, name, (int(found.group(1)) // 10, int(found.group(1)) % 10) <= gpu)
    elif (found := re.fullmatch(r"IS_SM(\\d+)", name)):
        setattr(cuda, name, (int(found.group(1)) // 10, int(found.group(1)) % 10) == gpu)
    elif name.startswith("PLATFORM_SUPPORTS_"):
        setattr(cuda, name, True)
cuda._get_torch_cuda_version = lambda: release
from migrate.runtime import torch_private
claims = [[*torch_private.opinfo_identity(op), sorted(str(d).removeprefix("torch.") for d in torch_private.opinfo_declared_dtypes(op)["cuda"])] for op in torch_private.op_db()]
print(json.dumps(claims))
"""


@functools.cache
def opinfo_claims_on_a_current_gpu() -> Callable[[], dict[tuple[str, str], tuple[str, ...]]]:
    """Each OpInfo's CUDA claim (dtype names), as ``dtypesIfCUDA`` is on a current GPU (``CURRENT_GPU``, ``CURRENT_CUDA``):
    the database evaluates ``SM53OrLater``, ``SM80OrLater``, ``PLATFORM_SUPPORTS_*`` and the CUDA release when it is
    imported, as False on a host without one (``bilinear``'s bfloat16, attention's). Read in a fresh interpreter whose
    ``common_cuda`` says so: the sweep's own database stays as this host makes it, so its samples do not change.

    The interpreter starts at the process's first call and the claims are read by calling what this returns: the caller
    works meanwhile. They depend on the installed torch alone: a process reads them once (a test suite's cold catalogues)."""
    import json
    import os
    import subprocess
    import sys
    import threading
    from pathlib import Path

    arguments = [json.dumps(list(CURRENT_GPU)), json.dumps(list(CURRENT_CUDA))]
    package_root = str(Path(__file__).resolve().parents[2])  # the interpreter reads the database through this module
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(
        [sys.executable, "-c", _CLAIMS_ON_A_CURRENT_GPU, *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )

    read: list[dict[tuple[str, str], tuple[str, ...]]] = []
    reading = threading.Lock()  # the interpreter is read once, whichever thread asks first

    def claims() -> dict[tuple[str, str], tuple[str, ...]]:
        with reading:
            if not read:
                out, err = process.communicate()
                if process.returncode != 0:
                    raise TorchAPIChanged(f"OpInfo's CUDA claims on a current GPU could not be read: {err.strip().splitlines()[-1:]}")
                read.append({(name, variant): tuple(dtypes) for name, variant, dtypes in json.loads(out.strip().splitlines()[-1])})
        return read[0]

    return claims


def opinfo_declared_dtypes(op: Any) -> dict[str, frozenset[Any]]:
    """Dtypes the OpInfo claims for another device that PyTorch's CI tests: CUDA's (``dtypesIfCUDA``, as
    ``supported_dtypes('cuda')`` gives it; ``test_ops.py::TestCommon::test_dtypes`` checks it). The MPS, XPU
    and HPU sets an OpInfo derives by default are tested by nobody: not evidence. Readable with no CUDA."""
    return {"cuda": frozenset(_attribute(op, "supported_dtypes", "OpInfo.supported_dtypes")("cuda"))}


def opinfo_operator_names(op: Any) -> frozenset[str]:
    """Operator names the OpInfo is about (its name, aten_name, aliases, last dotted part of each)."""
    aten_name = _attribute(op, "aten_name", "OpInfo.aten_name")
    names = {op.name, aten_name or op.name, getattr(op, "decomp_aten_name", None) or op.name}
    names.update(alias.name for alias in _attribute(op, "aliases", "OpInfo.aliases"))
    return frozenset(name.rsplit(".", 1)[-1] for name in names)


def opinfo_aliases(op: Any) -> tuple[tuple[str, str], ...]:
    """(alias, target) operator names, spelled as ATen names them: ``special.expit`` is ``special_expit``."""
    target = _attribute(op, "aten_name", "OpInfo.aten_name") or op.name
    return tuple(sorted((_aten_spelling(alias.name), _aten_spelling(target)) for alias in _attribute(op, "aliases", "OpInfo.aliases")))


def _aten_spelling(name: str) -> str:
    """``torch.special.gammainc`` -> ``special_gammainc``; ``nn.functional.x`` keeps its last part."""
    name = name.removeprefix("torch.")
    if name.startswith("nn.functional."):
        return name.rsplit(".", 1)[-1]
    return name.replace(".", "_")


def opinfo_backward_dtypes(op: Any) -> frozenset[Any]:
    """The CPU dtypes the OpInfo declares for backward; none when it does not support autograd."""
    if not _attribute(op, "supports_autograd", "OpInfo.supports_autograd"):
        return frozenset()
    return frozenset(_attribute(op, "supported_backward_dtypes", "OpInfo.supported_backward_dtypes")("cpu"))


def run_backward(result: Any) -> bool:
    """Backward from every output that requires grad, with ones as its gradient: autograd calls the ``*_backward`` overloads.

    False when no output requires grad (nothing ran).
    """
    import torch  # here: the parent imports this module without torch (the --op fast path)

    flat = result if isinstance(result, (tuple, list)) else (result,)
    outputs = [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is not None]
    if outputs:
        torch.autograd.backward(outputs, [torch.ones_like(t) for t in outputs])
    return bool(outputs)


def opinfo_samples(op: Any, dtype: Any, requires_grad: bool = False, device: str = "cpu") -> Iterator[Any]:
    """The OpInfo's samples of one dtype on ``device`` (CPU; a recording's other device), generated lazily (samples of
    big ops are big).

    Calls the OpInfo's sample function itself: ``sample_inputs()`` wraps it to crawl the
    stack for a unittest method and to reseed every RNG before each sample (which queues
    a traceback per device type); in a sweep that is most of the time, for nothing. The
    sweep seeds once per (OpInfo, dtype) instead.
    """
    return iter(_attribute(op, "sample_inputs_func", "OpInfo.sample_inputs_func")(op, device, dtype, requires_grad))


def call_sample(op: Any, sample: Any) -> Any:
    """Run the OpInfo's function on one sample, as OpInfo tests do, then its aliases (``special.expit`` ...).

    The aliases are ATen overloads of their own (``special_expit``): only calling them shows them.
    """
    result = op(sample.input, *sample.args, **sample.kwargs)
    for alias in getattr(op, "aliases", ()):
        alias.op(sample.input, *sample.args, **sample.kwargs)
    return result


# --- operator overloads -------------------------------------------------------------------------


_TENSOR_TYPES = {
    "Tensor": False,
    "Optional[Tensor]": False,
    "List[Tensor]": True,
    "List[Optional[Tensor]]": True,
    "Optional[List[Tensor]]": True,
}
"""Schema types that hold tensors, mapped to whether they hold a list of them."""


@dataclass(frozen=True)
class OverloadSlots:
    """Where an overload's tensors are: what a recorder reads from each call."""

    name: str  # 'aten::add.Tensor'; 'aten::add' for a default overload
    arguments: tuple[tuple[int, str, bool, bool], ...]  # (position, name, keyword-only, holds a list)
    returns: tuple[tuple[int, str, bool], ...]  # (position, 'return.N', holds a list)
    returns_tuple: bool  # the call returns a tuple (more than one return)
    mutates: bool = False  # writes to an argument (in-place, out=): probing calls it on clones taken before the call


@functools.cache
def overload_slots(func: Any) -> OverloadSlots:
    """Read once per overload from its schema; a recorder then needs no schema work per call."""
    schema = _attribute(func, "_schema", "OpOverload._schema")
    name = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    arguments = tuple(
        (position, argument.name, argument.kwarg_only, _TENSOR_TYPES[str(argument.type)])
        for position, argument in enumerate(schema.arguments)
        if str(argument.type) in _TENSOR_TYPES
    )
    returns = tuple(
        (position, f"return.{position}", _TENSOR_TYPES[str(ret.type)])
        for position, ret in enumerate(schema.returns)
        if str(ret.type) in _TENSOR_TYPES
    )
    mutates = _attribute(schema, "is_mutable", "FunctionSchema.is_mutable")
    return OverloadSlots(name, arguments, returns, len(schema.returns) > 1, bool(mutates))


@functools.cache
def argument_positions(func: Any) -> dict[str, tuple[int, bool]]:
    """Every argument of an overload's schema by name: its position and whether it is keyword-only."""
    schema = _attribute(func, "_schema", "OpOverload._schema")
    return {argument.name: (position, argument.kwarg_only) for position, argument in enumerate(schema.arguments)}


@functools.cache
def written_arguments(func: Any) -> frozenset[str]:
    """The arguments an overload writes into (``Tensor(a!) self`` of an in-place overload, ``out``)."""
    schema = _attribute(func, "_schema", "OpOverload._schema")
    return frozenset(a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write)


def overload_schema(func: Any) -> Any:
    """An OpOverload's FunctionSchema (``torch._C.FunctionSchema``: arguments with types and defaults)."""
    return _attribute(func, "_schema", "OpOverload._schema")


_ONNX_PROMOTION_RULES = "torch.onnx._internal.fx.passes.type_promotion._GENERATED_ATEN_TYPE_PROMOTION_RULE_SET"


def onnx_promotion_rules() -> list[tuple[str, str, tuple[int, ...], tuple[str, ...], str]]:
    """torch.onnx's generated elementwise promotion table as (namespace, op name, positions, keyword names, kind
    name in lower case), in op name order."""
    rules = []
    for rule in _private(_ONNX_PROMOTION_RULES):
        kind = _attribute(rule, "promotion_kind", "ElementwiseTypePromotionRule.promotion_kind")
        positions = tuple(_attribute(rule, "promote_args_positions", "ElementwiseTypePromotionRule.promote_args_positions"))
        names = tuple(_attribute(rule, "promote_kwargs_names", "ElementwiseTypePromotionRule.promote_kwargs_names"))
        rules.append((rule.namespace, rule.op_name, positions, names, kind.name.lower()))
    return sorted(rules, key=lambda r: (r[1], r[0]))


def aten_overload(name: str) -> Any:
    """'aten::add.Tensor' (or 'aten::add', the default overload) as its OpOverload."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    operator, _, overload = name.removeprefix("aten::").partition(".")
    return getattr(getattr(torch.ops.aten, operator), overload or "default")


def call_arguments(schema: Any, named: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """A call's positional and keyword arguments from values by name: positional ones up to the last
    given, defaults where a later one is given, keyword-only ones given by name."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    given = [i for i, a in enumerate(positional) if a.name in named]
    args = [named[a.name] if a.name in named else a.default_value for a in positional[: given[-1] + 1 if given else 0]]
    kwargs = {a.name: named[a.name] for a in schema.arguments if a.kwarg_only and a.name in named}
    return args, kwargs


_COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd")


def composite_overloads() -> list[tuple[Any, str]]:
    """Every ``aten`` overload whose kernel is composite (one for every backend) and that writes to no
    argument, by name, with its kernel's key: ``CompositeImplicitAutograd`` first."""
    has_kernel = _private("torch._C._dispatch_has_kernel_for_dispatch_key")
    keys = [(name, _private(f"torch._C.DispatchKey.{name}")) for name in _COMPOSITE_KEYS]
    found = {}
    for schema in _private("torch._C._jit_get_all_schemas")():
        if not schema.name.startswith("aten::") or _attribute(schema, "is_mutable", "FunctionSchema.is_mutable"):
            continue
        full = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
        try:
            key = next((name for name, key in keys if has_kernel(full, key)), None)
        except RuntimeError:  # a schema of the JIT's with no operator behind it ('aten::has_torch_function')
            continue
        if key is not None:
            found[full] = (aten_overload(full), key)
    return [found[name] for name in sorted(found)]


_CPU_REACHING_KEYS = ("CPU", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def cpu_overloads() -> list[Any]:
    """Every ``aten`` overload with a kernel a CPU call reaches (the CPU's own or a composite one), by name."""
    has_kernel = _private("torch._C._dispatch_has_kernel_for_dispatch_key")
    keys = [_private(f"torch._C.DispatchKey.{name}") for name in _CPU_REACHING_KEYS]
    found = {}
    for schema in _private("torch._C._jit_get_all_schemas")():
        if not schema.name.startswith("aten::"):
            continue
        full = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
        try:
            reached = any(has_kernel(full, key) for key in keys)
        except RuntimeError:  # a schema of the JIT's with no operator behind it
            continue
        if reached:
            found[full] = aten_overload(full)
    return [found[name] for name in sorted(found)]


def run_composite_kernel(func: Any, key: str, args: tuple, kwargs: dict) -> Any:
    """Run the overload's kernel of that composite key: the calls it makes reach the kernel mode."""
    return _attribute(func, "_op_dk", "OpOverload._op_dk")(_private(f"torch._C.DispatchKey.{key}"), *args, **kwargs)


# --- the dispatcher's registrations (the autocast worker) ----------------------------------------


def dispatch_key_registrations(key: str) -> list[str]:
    """The operators registered at a dispatch key ('AutocastCPU'), as the dispatcher names them ('aten::mm')."""
    return list(_private("torch._C._dispatch_get_registrations_for_dispatch_key")(key))


def has_kernel(name: str, key: str | None = None) -> bool:
    """Whether the operator ('aten::polar.int') has a kernel at all (a TorchScript-only one has none), or at ``key``."""
    if key is None:
        return bool(_private("torch._C._dispatch_has_kernel")(name))
    return bool(_private("torch._C._dispatch_has_kernel_for_dispatch_key")(name, key))


def fake_tensor_mode() -> Any:
    """A fake tensor mode that takes real tensors too: calls on any device, without the device."""
    return _private("torch._subclasses.fake_tensor.FakeTensorMode")(allow_non_fake_inputs=True)


def destroy_library(library: Any) -> None:
    """Remove every kernel a ``torch.library.Library`` registered."""
    _attribute(library, "_destroy", "torch.library.Library._destroy")()


# --- dispatch modes -----------------------------------------------------------------------------


@functools.cache
def kernel_mode_base() -> type:
    """Base of a mode on the Python dispatch key: it sees every call that reaches a kernel."""

    class KernelMode(_private("torch.utils._python_dispatch.TorchDispatchMode")):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Modes wrap __torch_dispatch__ in dynamo.disable by default: an import of
            # torch._dynamo and a wrapper on every call, for no use in an eager run.
            return False

    return KernelMode


@functools.cache
def pre_dispatch_mode_base() -> type:
    """Base of a mode on the PreDispatch key, where calls arrive before any decomposition.

    torch admits only its own modes there (``torch._ops._set_mode_pre_dispatch``);
    SchemaCheckMode is the one meant for eager runs on real tensors, so this base
    subclasses it, binds it to the key and leaves ``__torch_dispatch__`` to the recorder.
    """
    dispatch_mode = _private("torch.utils._python_dispatch.TorchDispatchMode")
    pre_dispatch = _private("torch._C.DispatchKey.PreDispatch")

    class PreDispatchMode(_private("torch._subclasses.schema_check_mode.SchemaCheckMode")):
        def __init__(self) -> None:
            dispatch_mode.__init__(self, _dispatch_key=pre_dispatch)

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

    return PreDispatchMode


@contextlib.contextmanager
def pre_dispatch_mode_active(mode: Any) -> Iterator[None]:
    """Route every call made from Python to ``mode`` first, CompositeImplicitAutograd ones included.

    The Python dispatcher makes the PreDispatch key reachable; a mode pushed on that
    key's own stack then receives each call at its own name, before it decomposes.
    """
    pre_dispatch = _private("torch._C.DispatchKey.PreDispatch")
    with _private("torch._C._EnablePythonDispatcher")():
        try:
            _private("torch.utils._python_dispatch._push_mode")(mode)
        except AssertionError as exc:
            raise api_changed("torch.utils._python_dispatch._push_mode", f"refuses a PreDispatch mode ({exc})") from exc
        try:
            yield
        finally:
            _private("torch.utils._python_dispatch._pop_mode")(pre_dispatch)


def plain_dispatch(func: Any, args: tuple, kwargs: dict) -> Any:
    """Call an overload with the Python dispatcher off, so that it runs and decomposes as in a plain run."""
    with _private("torch._C._DisablePythonDispatcher")():
        return func(*args, **kwargs)


def memoise_pre_dispatch_handler(func: Any, mode: Any, handler: Any) -> None:
    """Send the next calls of ``func`` that reach ``mode`` on the PreDispatch key to ``handler(func, args, kwargs)``.

    For a mode on that key torch builds a handler on every call (``OpOverload._get_dispatch``
    caches none, since the mode stack may change) and pops and re-pushes the mode around
    it: some 40 µs a call, most of what recording costs. While ``mode`` is the only one
    there, the handler is the same each time, so it goes into the overload's dispatch
    cache, which the Python dispatcher reads first. Should another mode be on the key
    when it is called, the entry removes itself and torch routes the call as usual.
    """
    pre_dispatch = _private("torch._C.DispatchKey.PreDispatch")
    python_key = _private("torch._C.DispatchKey.Python")
    is_excluded = _private("torch._C._dispatch_tls_is_dispatch_key_excluded")
    stack = _private("torch._ops.mode_stack_state_for_pre_dispatch")
    cache = _attribute(func, "_dispatch_cache", "OpOverload._dispatch_cache")
    _attribute(stack(), "_schema_check_mode", "torch._ops._ModeStackStateForPreDispatch._schema_check_mode")

    def memoised(*args: Any, **kwargs: Any) -> Any:
        state = stack()
        if state._schema_check_mode is not mode or state.count() != 1:
            cache.pop(pre_dispatch, None)
            return func._get_dispatch(pre_dispatch)(*args, **kwargs)
        if is_excluded(python_key):  # inside no_dispatch(): torch would not call the mode either
            return plain_dispatch(func, args, kwargs)
        return handler(func, args, kwargs)

    cache[pre_dispatch] = memoised


def forget_pre_dispatch_handlers(funcs: Iterable[Any]) -> None:
    """Take memoised handlers out again (before another PreDispatch mode may be pushed)."""
    pre_dispatch = _private("torch._C.DispatchKey.PreDispatch")
    for func in funcs:
        func._dispatch_cache.pop(pre_dispatch, None)


# --- the ONNX exporter (export-check workers) ---------------------------------------------------


def onnx_registry_class() -> Any:
    """The exporter's registry class (``ONNXRegistry``): ``from_torchlib()`` reads onnxscript's torchlib."""
    return _private("torch.onnx._internal.exporter._registration.ONNXRegistry")


def memoise_onnx_registry() -> Any:
    """Build the exporter's registry once per process and hand every export that one.

    torch.onnx.export builds it anew on each call from the same torchlib (0.8 s, most of a
    small export); an export-check worker loads one torch_lib and exports many graphs.
    Returns the registry.
    """
    registry_class = onnx_registry_class()
    build = _attribute(registry_class, "from_torchlib", "ONNXRegistry.from_torchlib")
    built: dict[tuple, Any] = {}

    def memoised(cls: Any, *args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        if key not in built:
            built[key] = build(*args, **kwargs)
        return built[key]

    registry_class.from_torchlib = classmethod(memoised)
    return registry_class.from_torchlib()


def memoise_export_tables() -> None:
    """Compute once per process, while the operators registered stay the same, the tables every export rebuilds.

    Each ``torch.onnx.export`` walks every operator namespace for the CompositeImplicitAutograd
    ops it may keep (``_collect_all_valid_cia_ops``, twice: torch.export's decompositions and the
    exporter's) and rebuilds its decomposition table from the registry: 0.2 s of a 0.4 s export of
    a small graph. They depend only on the operators registered (keyed here by the namespaces and the
    dispatcher's CompositeImplicitAutograd registrations) and on the registry's operators.
    """
    exported_program = _private("torch.export.exported_program")
    decomp_utils = _private("torch.export.decomp_utils")
    decomp = _private("torch.onnx._internal.exporter._decomp")
    collect = _attribute(exported_program, "_collect_all_valid_cia_ops", "exported_program._collect_all_valid_cia_ops")
    table = _attribute(decomp, "create_onnx_friendly_decomposition_table", "_decomp.create_onnx_friendly_decomposition_table")
    collected: dict[tuple, set] = {}
    tables: dict[tuple, dict] = {}

    def registered() -> tuple:
        import torch  # here: the parent imports this module without torch (the --op fast path)

        return tuple(torch.ops._dir), len(dispatch_key_registrations("CompositeImplicitAutograd"))

    def collect_once() -> set:
        key = registered()
        if key not in collected:
            collected.clear()
            collected[key] = set(collect())
        return set(collected[key])  # callers may change what they get

    def table_once(onnx_registered_ops: Any) -> dict:
        key = (registered(), frozenset(onnx_registered_ops))
        if key not in tables:
            tables.clear()
            tables[key] = table(onnx_registered_ops)
        return dict(tables[key])

    exported_program._collect_all_valid_cia_ops = collect_once
    decomp_utils._collect_all_valid_cia_ops = collect_once
    decomp.create_onnx_friendly_decomposition_table = table_once


def onnx_dtype_of(dtype: Any) -> Any:
    """The ONNX element type of a torch dtype, as the exporter maps it."""
    return _private("torch.onnx._internal.exporter._core.torch_dtype_to_onnx_dtype")(dtype)


@dataclass
class LoweredNode:
    """An operator node of the program the exporter translates (after its decompositions), and the
    ONNX function it dispatched the node to ('' when it did not get that far, or found none)."""

    target: Any  # the OpOverload
    scopes: tuple[str, ...]  # the module paths of the node's ``nn_module_stack``
    function: str = ""


def record_onnx_lowering(programs: list[list[LoweredNode]]) -> None:
    """From now on, every export of this process appends to ``programs`` the operator nodes of the program it
    translates (decompositions applied), each with the ONNX function it dispatches the node to.

    Which torchlib function ran cannot be told from the dispatch key: ``mT`` (CompositeImplicitAutograd) stays
    in the exported program, then the exporter decomposes it to ``transpose`` before dispatching.
    """
    core = _private("torch.onnx._internal.exporter._core")
    dispatching = _private("torch.onnx._internal.exporter._dispatching")
    prepare = _attribute(core, "_prepare_exported_program_for_export", "_core._prepare_exported_program_for_export")
    dispatch = _attribute(dispatching, "dispatch", "_dispatching.dispatch")
    lowered: dict[int, LoweredNode] = {}

    def prepared(*args: Any, **kwargs: Any) -> Any:
        program = prepare(*args, **kwargs)
        lowered.clear()  # only this program's nodes are dispatched next
        nodes = []
        for node in program.graph.nodes:
            if node.op == "call_function":
                stack = node.meta.get("nn_module_stack") or {}
                nodes.append(LoweredNode(node.target, tuple(str(path) for path, _ in stack.values())))
                lowered[id(node)] = nodes[-1]
        programs.append(nodes)
        return program

    def dispatched(node: Any, registry: Any) -> Any:
        function, message = dispatch(node, registry)
        if function is not None and id(node) in lowered:
            lowered[id(node)].function = onnx_function_name(function)
        return function, message

    core._prepare_exported_program_for_export = prepared
    dispatching.dispatch = dispatched


def onnx_function_name(function: Any) -> str:
    """A torchlib function's name (``aten_mT``), as the registry holds it (an OnnxFunction or a traced one)."""
    return str(getattr(function, "name", getattr(function, "__name__", function)))


def onnx_tracer(opset_version: int) -> tuple[Any, Any]:
    """The exporter's ``OpRecorder`` (an onnxscript evaluator that records the ONNX nodes a torchlib function
    makes when called, and the functions it calls) for the default domain at ``opset_version``, and that opset:
    a torchlib function called under it builds what the exporter would build (as onnxscript's op tests call it)."""
    import onnxscript  # here: the parent imports this module without onnxscript (the --op fast path)

    opset = onnxscript.values.Opset("", opset_version)
    return _private("torch.onnx._internal.exporter._building.OpRecorder")(opset, {}), opset


def onnx_symbolic_input(opset: Any, name: str, dtype: Any, shape: tuple[int, ...]) -> Any:
    """A graph input a torchlib function can be called on (the exporter's ``SymbolicTensor``), of a torch dtype."""
    import onnx_ir  # as above

    tensor = _private("torch.onnx._internal.exporter._tensors.SymbolicTensor")
    return tensor(opset, name=name, shape=onnx_ir.Shape(shape), type=onnx_ir.TensorType(onnx_dtype_of(dtype)))


def onnx_ir_version() -> int:
    """The IR version of the models the exporter writes."""
    return _private("torch.onnx._internal.exporter._constants.ONNX_IR_VERSION")


# --- type promotion -----------------------------------------------------------------------------

_REFS_MODULES = {"torch._refs": "", "torch._refs.nn": "", "torch._refs.linalg": "linalg_", "torch._refs.special": "special_", "torch._refs.nn.functional": ""}
"""The ref modules torch.onnx's generator reads, with the prefix their operators have in ATen (``special_i1e``)."""


def refs_type_promotions() -> list[tuple[str, tuple[int, ...], str]]:
    """(ATen operator name, positions of the promoting arguments, kind in lower case) per ref that
    ``elementwise_type_promotion_wrapper`` wraps: the source torch.onnx's table is generated from
    (``torch/onnx/_internal/fx/passes/type_promotion.py``, whose generator walks the closures the same way).
    Positions count the ref's parameters, which follow the ATen schema's positional arguments."""
    wrapper = _private("torch._prims_common.wrappers.elementwise_type_promotion_wrapper")
    found = []
    for module_name, prefix in _REFS_MODULES.items():
        module = _private(module_name)
        for name in _attribute(module, "__all__", f"{module_name}.__all__"):
            op, fn, promotion = getattr(module, name), getattr(module, name), None
            while callable(fn):
                try:
                    closure = inspect.getclosurevars(fn)
                except TypeError:
                    break
                if isinstance(closure.nonlocals.get("self"), wrapper):
                    promotion = closure.nonlocals["self"]
                    break
                if "fn" not in closure.nonlocals:
                    break
                fn = closure.nonlocals["fn"]
            if promotion is None:
                continue
            names = _attribute(promotion, "type_promoting_arg_names", "elementwise_type_promotion_wrapper.type_promoting_arg_names") or ()
            kind = _attribute(promotion, "type_promotion_kind", "elementwise_type_promotion_wrapper.type_promotion_kind")
            parameters = list(inspect.signature(op).parameters.values())
            positions = tuple(
                i for i, p in enumerate(parameters) if p.name in names and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            )
            if positions:
                operator = op.__name__ if op.__name__.startswith(prefix) else prefix + op.__name__
                found.append((operator, positions, kind.name.lower()))
    return sorted(set(found))


def promoted_dtypes(values: list[Any], kind: str) -> tuple[Any, Any]:
    """(computation, result) dtypes torch's elementwise rules give these values under a promotion kind
    (``torch._prims_common.elementwise_dtypes``); raises where torch refuses to promote them."""
    kinds = _private("torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND")
    return _private("torch._prims_common.elementwise_dtypes")(*values, type_promotion_kind=getattr(kinds, kind.upper()))
