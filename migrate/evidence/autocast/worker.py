"""Run in a subprocess: the dispatcher's autocast registrations, and what each does to the dtypes of a call.

For every autocast key with registrations, each registered overload is called three times under
autocast for that key's device (CPU tensors for CPU; fake tensors on the device for the others, so a
CPU-only wheel observes the CUDA, XPU, MPS and MTIA kernels too; MAIA fake tensors carry no MAIA keys,
so no MAIA run shows a cast):

- ``float32``: every tensor float32 (a ``lower_precision_fp`` kernel lowers them);
- ``lower``: every tensor at the key's autocast dtype (``fp32`` raises them, ``fp32_set_opt_dtype``
  passes ``dtype=torch.float32``, ``fp32_append_dtype`` redispatches to the overload taking a dtype);
- ``mixed``: the first tensor float32 and the others lower (``promote`` raises all to float32; only
  mixed inputs show it).
- ``banned``: the call raises autocast's "unsafe to autocast" error.

A Python kernel registered directly below the Autocast keys (at Autograd, or CompositeImplicitAutograd),
on every overload of the op's name, records the overload reached and the dtypes that reached it, then
stops the call: no kernel runs, so calls built from the schema with any shapes do. Only floating,
non-double tensors are cast, so every tensor is float32 or lower; no tensor requires grad and the cast
cache (which keeps casts of leaves that require grad) is off, so no cached cast hides one.

Prints one JSON object: {"torch", "keys": {key: {"dtype", "registrations", "observed": {overload: runs}}}}.
"""

from __future__ import annotations

import contextlib
import json
import sys
import warnings
from typing import Any

import torch

from migrate.model.autocast import DISPATCH_KEY, KEYS
from migrate.runtime import torch_private

DEVICE = {"CPU": "cpu", "CUDA": "cuda", "XPU": "xpu", "MPS": "mps", "MTIA": "mtia", "MAIA": "maia", "HPU": "hpu", "IPU": "ipu", "XLA": "xla"}
RUNS = ("float32", "lower", "mixed")


class Reached(Exception):
    """Raised by the recorder: the call got below autocast; nothing more needs to run."""

    def __init__(self, overload: str, dtypes: dict[str, Any], dtype_argument: str | None):
        super().__init__(overload)
        self.record = {"reached": overload, "dtypes": dtypes, "dtype_argument": dtype_argument}


def registrations(key: str) -> list[str]:
    """The overloads registered at the key's autocast dispatch key, as the yaml names them ('mm', 'conv1d.padding')."""
    names = torch_private.dispatch_key_registrations(DISPATCH_KEY[key])
    return sorted(n.removeprefix("aten::") for n in names if n.startswith("aten::"))


def overload_of(name: str) -> Any:
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _named_dtypes(schema: Any, args: tuple, kwargs: dict) -> tuple[dict[str, Any], str | None]:
    """Each tensor argument's dtype (a list for a tensor list) and the dtype argument, by argument name."""
    values = dict(zip((a.name for a in schema.arguments), args))
    values.update(kwargs)
    dtypes: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            dtypes[name] = str(value.dtype)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            dtypes[name] = [str(v.dtype) if isinstance(v, torch.Tensor) else None for v in value]
    dtype = values.get("dtype")
    return dtypes, str(dtype) if isinstance(dtype, torch.dtype) else None


def _recorder(name: str, schema: Any):
    def record(*args, **kwargs):
        raise Reached(name, *_named_dtypes(schema, args, kwargs))

    return record


@contextlib.contextmanager
def recorders(names: list[str]):
    """The recorder on every overload of every op name in ``names``, at the key a call on any device reaches first
    below the Autocast keys: the op's CompositeImplicitAutograd kernel when it has one (a composite decomposes
    there), else the Autograd keys."""
    library = torch.library.Library("aten", "IMPL")
    try:
        for base in sorted({n.split(".")[0] for n in names}):
            packet = getattr(torch.ops.aten, base)
            for overload in packet.overloads():
                func = getattr(packet, overload)
                name = base if overload == "default" else f"{base}.{overload}"
                if not torch_private.has_kernel(f"aten::{name}"):  # a TorchScript-only overload (polar.int)
                    continue
                composite = torch_private.has_kernel(f"aten::{name}", "CompositeImplicitAutograd")
                library.impl(name, _recorder(name, func._schema), "CompositeImplicitAutograd" if composite else "Autograd")
        yield
    finally:
        torch_private.destroy_library(library)


def _value(argument: Any, make: Any) -> Any:
    """A value for one schema argument: a tensor where a tensor goes, else its default, else a plain value."""
    kind = str(argument.type)
    if "Tensor" in kind:
        if kind.startswith("List") or kind.endswith("[]"):
            return [make(), make()]
        return make()
    if argument.has_default_value():
        return argument.default_value
    if kind.startswith("Optional"):
        return None
    return {
        "int": 1,
        "SymInt": 1,
        "float": 1.0,
        "bool": False,
        "Scalar": 1.0,
        "str": "fro",
        "ScalarType": torch.float32,
        "List[int]": [1, 1],
        "List[SymInt]": [1, 1],
        "List[float]": [1.0, 1.0],
        "List[bool]": [False, False],
    }.get(kind, 1)


def _error(exc: Exception) -> str:
    """An exception as one short line: its type and its message's first line."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def call(name: str, device: str, run: str, lower: torch.dtype) -> dict[str, Any]:
    """One built call of ``name`` under the current autocast; what reached the kernel, or the error."""
    func = overload_of(name)
    made = []

    def make() -> torch.Tensor:
        dtype = torch.float32 if run == "float32" or (run == "mixed" and not made) else lower
        tensor = torch.ones(2, 2, dtype=dtype, device=device)
        made.append(tensor)
        return tensor

    args, kwargs = [], {}
    for argument in func._schema.arguments:
        if argument.is_out:
            continue
        value = _value(argument, make)
        if argument.kwarg_only:
            kwargs[argument.name] = value
        else:
            args.append(value)
    if run == "mixed" and len(made) < 2:
        return {"skipped": "one tensor: promote cannot show"}
    try:
        func(*args, **kwargs)
    except Reached as reached:
        return reached.record
    except Exception as exc:  # the autocast wrapper raised (banned) or the call could not be made
        return {"error": _error(exc)}
    return {"error": "the call returned without reaching the recorder"}


@contextlib.contextmanager
def autocast_on(key: str, device: str, dtype: torch.dtype):
    """Autocast enabled for the device, as ``torch.autocast`` does (which refuses devices this build lacks)."""
    if key == "CPU":
        with torch.autocast("cpu", dtype=dtype, cache_enabled=False):
            yield
        return
    was = torch.is_autocast_enabled(device), torch.get_autocast_dtype(device), torch.is_autocast_cache_enabled()
    torch.set_autocast_enabled(device, True)
    torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(False)
    torch.autocast_increment_nesting()
    try:
        with torch_private.fake_tensor_mode():
            yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled(device, was[0])
        torch.set_autocast_dtype(device, was[1])
        torch.set_autocast_cache_enabled(was[2])


def observe_key(key: str, names: list[str]) -> tuple[str, dict[str, Any]]:
    """The key's autocast dtype and the three runs of every overload it registers."""
    device = DEVICE[key]
    lower = torch.get_autocast_dtype(device)
    observed: dict[str, Any] = {}
    with recorders(names):
        for name in names:
            runs = {}
            for run in RUNS:
                try:
                    with autocast_on(key, device, lower):
                        runs[run] = call(name, device, run, lower)
                except Exception as exc:  # the device cannot even hold a fake tensor
                    runs[run] = {"error": _error(exc)}
            observed[name] = runs
    return str(lower), observed


def main() -> None:
    warnings.simplefilter("ignore")
    if sys.argv[1:2] == ["--settle"]:  # pairs of overload and run kind
        pairs = sys.argv[2:]
        json.dump({f"{n} {r}": settle(n, r) for n, r in zip(pairs[::2], pairs[1::2])}, sys.stdout)
        return
    keys: dict[str, Any] = {}
    for key in KEYS:
        names = registrations(key)
        if not names:
            continue
        entry: dict[str, Any] = {"registrations": names, "dtype": None, "observed": {}}
        if key in DEVICE:
            entry["dtype"], entry["observed"] = observe_key(key, names)
        keys[key] = entry
    json.dump({"torch": torch.__version__, "keys": keys}, sys.stdout)



def settle(name: str, run: str) -> str:
    """A real call on CPU under autocast, the kernel running: 'ran' (it takes what autocast feeds it) or the error.

    ``run`` is 'float32' (what a lower_precision_fp kernel gets lowered) or 'lower' (what an fp32 kernel gets raised).
    """
    lower = torch.get_autocast_dtype("cpu")
    func = overload_of(name)
    args, kwargs = [], {}
    dtype = torch.float32 if run == "float32" else lower
    for argument in func._schema.arguments:
        if not argument.is_out:
            value = _value(argument, lambda: torch.ones(2, 2, dtype=dtype))
            if argument.kwarg_only:
                kwargs[argument.name] = value
            else:
                args.append(value)
    try:
        with torch.autocast("cpu", dtype=lower, cache_enabled=False):
            func(*args, **kwargs)
    except Exception as exc:
        return f"raised {_error(exc)}"
    return "ran"


if __name__ == "__main__":
    main()
