"""Overloads that forward to another: a composite kernel that is one call of another overload.

``__and__.Tensor`` is ``bitwise_and.Tensor``, ``clip.Tensor`` is ``clamp.Tensor``, ``moveaxis.int`` is
``permute``, ``norm.Scalar`` is ``norm.ScalarOpt_dim``: torch's own kernels say so when run. A
worker runs each CompositeImplicitAutograd or CompositeExplicitAutograd kernel (the kernel of
every backend, the CPU's included) once on meta tensors (no data, no compute) under the kernel
mode, for a float32, else int64, else bool tensor; when it makes exactly one call, every
tensor of that call is one of the overload's own tensors, and its outputs are the call's,
the overload forwards to that callee, slot by slot. ``migrate.evidence.opinfo.aliases``
lets it take the callee's constraints.

A kernel of one tensor argument that makes no call at all (``is_floating_point``, ``numel``,
``dim``) reads only its tensor's metadata: it is run for a tensor of every dtype, and the
dtypes it raised for none of are what that argument accepts (provenance ``kernel``).

The tables depend only on the torch release and this code: they are cached as the ``forwards`` stage. A
kernel that crashes its worker is left out, and a new worker goes on after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from migrate.model.dtypes import named
from migrate.model.names import OverloadName
from migrate.model.native import NativeFunctions
from migrate.model.plan import KERNEL, Evidence, OverloadPlan, Variable
from migrate.runtime import torch_private
from migrate.runtime.processes import DONE, Job, run_in_workers
from migrate.runtime.worker_stage import WorkerStage

_FILLERS = {"int": 1, "SymInt": 1, "float": 1.0, "bool": False, "Scalar": 1, "number": 1, "List[int]": [1], "List[SymInt]": [1]}
"""Values for required non-tensor arguments: small, valid for most kernels; an overload needing others is left out."""
_TENSOR_DTYPES = ("float32", "int64", "bool")  # tried in turn: a kernel may refuse one


@dataclass(frozen=True)
class Forward:
    """``overload`` is one call of ``target``: each (overload slot, target slot) pair carries the same tensor."""

    overload: str  # 'clip.Tensor'
    target: str  # 'clamp.Tensor'
    slots: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class MetadataKernel:
    """``overload``'s kernel made no call for a tensor of each of ``dtypes`` at ``slot``, and raised for none of them.

    Its returns stay free: one that is the tensor itself here may be a converted one elsewhere (autocast).
    """

    overload: str
    slot: str
    dtypes: tuple[str, ...]  # dtype names, in the universe's canonical order


def _key(name: str) -> str:
    """'aten::clip.Tensor' -> 'clip.Tensor'; 'aten::permute' -> 'permute' (the yaml's spelling)."""
    return str(OverloadName.parse(name))


def _arguments(schema: Any, dtype: Any, fill_optional: bool) -> tuple[list[Any], dict[str, Any], dict[str, Any]] | None:
    """Positional and keyword arguments, and each by name: a fresh meta tensor per tensor, fillers for the
    rest, defaults where a later positional argument is given; None when one cannot be made."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    named: dict[str, Any] = {}
    for argument in schema.arguments:
        kind = str(argument.type)
        if kind in ("Tensor", "Optional[Tensor]"):
            named[argument.name] = torch.ones(2, 2, dtype=dtype, device="meta")
        elif kind in ("List[Tensor]", "List[Optional[Tensor]]", "Optional[List[Tensor]]"):
            named[argument.name] = [torch.ones(2, 2, dtype=dtype, device="meta")]
        elif fill_optional and kind.startswith("Optional[") and kind[9:-1] in _FILLERS:
            named[argument.name] = _FILLERS[kind[9:-1]]
        elif argument.default_value is not None or kind.startswith("Optional["):
            continue  # its default
        elif kind in _FILLERS:
            named[argument.name] = _FILLERS[kind]
        else:
            return None
    return *torch_private.call_arguments(schema, named), named


class _Calls:
    """The calls that reach the kernel mode while it is entered, each with its arguments and result."""

    def __init__(self) -> None:
        base = torch_private.kernel_mode_base()
        calls: list[tuple[Any, tuple, dict, Any]] = []

        class Mode(base):  # type: ignore[misc, valid-type]
            def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
                result = func(*args, **(kwargs or {}))
                calls.append((func, args, kwargs or {}, result))
                return result

        self.mode = Mode()
        self.calls = calls


def _forward(func: Any, key: str) -> Forward | None:
    """What the overload's kernel forwards to, if it is one call passing its own tensors through."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    schema = func._schema
    name = _key(f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name)
    for dtype_name in _TENSOR_DTYPES:
        for fill_optional in (False, True):
            made = _arguments(schema, getattr(torch, dtype_name), fill_optional)
            if made is None:
                return None
            args, kwargs, arguments = made
            calls = _Calls()
            try:
                with calls.mode:
                    result = torch_private.run_composite_kernel(func, key, tuple(args), kwargs)
            except Exception:
                continue
            if not calls.calls:  # nothing to do for this dtype ('_cast_Float' of a float32 tensor): try another
                continue
            if len(calls.calls) > 1:
                return None
            return _slots(name, arguments, calls.calls[0], result)
    return None


def _slots(name: str, arguments: dict[str, Any], call: tuple, result: Any) -> Forward | None:
    import torch  # here: the parent imports this module without torch (the --op fast path)

    callee, callee_args, callee_kwargs, callee_result = call
    mine = {id(value): key for key, value in arguments.items()}
    pairs = []
    positional = list(callee_args)
    for index, argument in enumerate(callee._schema.arguments):
        value = positional[index] if index < len(positional) else callee_kwargs.get(argument.name)
        if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            if id(value) not in mine:
                return None  # a list of tensors of its own making
            pairs.append((mine[id(value)], argument.name))
        elif isinstance(value, torch.Tensor):
            if id(value) not in mine:
                return None  # a tensor of its own making: the callee's constraints may not hold for ours
            pairs.append((mine[id(value)], argument.name))
    outputs = callee_result if isinstance(callee_result, (tuple, list)) else (callee_result,)
    returned = result if isinstance(result, (tuple, list)) else (result,)
    for position, value in enumerate(returned):
        found = [i for i, out in enumerate(outputs) if out is value] if isinstance(value, torch.Tensor) else []
        if found:
            pairs.append((f"return.{position}", f"return.{found[0]}"))
    callee_name = callee._schema
    target = _key(f"{callee_name.name}.{callee_name.overload_name}" if callee_name.overload_name else callee_name.name)
    return Forward(name, target, tuple(pairs)) if pairs and target != name else None


def _metadata_kernel(func: Any, key: str) -> MetadataKernel | None:
    """What a kernel of one tensor argument accepts, if it makes no call for any dtype."""
    from migrate.evidence.probe.prober import dtype_universe  # imports torch: workers only (the --op fast path)
    from migrate.runtime.recorders import dtype_name  # as above

    schema = func._schema
    tensors = [a.name for a in schema.arguments if str(a.type) in ("Tensor", "Optional[Tensor]")]
    if len(tensors) != 1 or any("Tensor" in str(a.type) for a in schema.arguments if a.name != tensors[0]):
        return None
    accepted = []
    for dtype in dtype_universe():
        made = _arguments(schema, dtype, False)
        if made is None:
            return None
        args, kwargs, _ = made
        calls = _Calls()
        try:
            with calls.mode:
                torch_private.run_composite_kernel(func, key, tuple(args), kwargs)
        except Exception:
            continue
        if calls.calls:
            return None
        accepted.append(dtype_name(dtype))
    if not accepted:
        return None
    name = _key(f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name)
    return MetadataKernel(name, tensors[0], tuple(accepted))


def forward_reports(after: str) -> Iterator[dict[str, Any]]:
    """The job: each composite overload after ``after`` (in name order), announced, then its forward."""
    for func, key in torch_private.composite_overloads():
        name = str(func._schema.name) + (f".{func._schema.overload_name}" if func._schema.overload_name else "")
        if name <= after:
            continue
        yield {"trying": name}
        forward = _forward(func, key)
        if forward is not None:
            yield {"forward": [forward.overload, forward.target, [list(p) for p in forward.slots]]}
        elif (kernel := _metadata_kernel(func, key)) is not None:
            yield {"metadata": [kernel.overload, kernel.slot, list(kernel.dtypes)]}


def _find_forwards() -> tuple[tuple[Forward, ...], tuple[MetadataKernel, ...]]:
    found, metadata, after = [], [], ""
    while True:
        (outcome,) = run_in_workers([Job(forward_reports, after, "forwards")], jobs=1, progress=False)
        found += [r["forward"] for r in outcome.reports if "forward" in r]
        metadata += [r["metadata"] for r in outcome.reports if "metadata" in r]
        tried = [r["trying"] for r in outcome.reports if "trying" in r]
        if outcome.status == DONE:
            break
        if not tried:
            raise torch_private.TorchAPIChanged(f"finding the overloads that forward to others failed: {outcome.reason}")
        after = tried[-1]  # the kernel that ended the worker: the next worker starts after it
    forwards = tuple(Forward(overload, target, tuple((a, b) for a, b in slots)) for overload, target, slots in found)
    kernels = tuple(MetadataKernel(overload, slot, tuple(dtypes)) for overload, slot, dtypes in metadata)
    return forwards, kernels


STAGE = WorkerStage(
    "forwards",
    lambda jobs: _find_forwards(),  # one worker at a time, one after each that crashed
    "finding the kernels that forward to another overload, in workers (once)",
    kind=tuple,
)
"""The tables: the overloads that forward to another, and the kernels that read only metadata."""


def kernel_plans(native: NativeFunctions, kernels: Iterable[MetadataKernel]) -> dict[str, OverloadPlan]:
    """A plan per metadata-reading kernel of the yaml: one variable over what it accepted, at its tensor."""
    plans = {}
    for kernel in kernels:
        if kernel.overload in native.by_name:
            dtypes = named(*kernel.dtypes)
            binds = (kernel.slot,)
            evidence = Evidence(KERNEL, f"{kernel.overload}'s kernel, run on meta tensors: no call", dtypes, binds)
            plans[kernel.overload] = OverloadPlan(kernel.overload, (Variable("T", dtypes, binds, (evidence,)),))
    return plans

