"""A call as autocast hands it to the kernel, under the policy its ``autocast:`` line declares.

The checker sees a call made from Python above the Autocast dispatch keys (float32 inputs, a
bfloat16 result under CPU autocast); the kernel gets the inputs autocast cast. So that the call is
judged as the kernel takes it, its arguments are replaced by what the declared policy hands on, as
ATen's ``autocast_mode.h`` does (docs/autocast.md):

- eligible tensors are floating ones on the autocast's device, float64 excepted (``is_eligible``);
  a ``Tensor[]``'s and a ``Tensor?``'s tensors each;
- ``lower_precision_fp`` casts them to the autocast dtype (``torch.get_autocast_dtype``), ``fp32`` to
  float32, ``promote`` to float32 when one of them is float32, else to the autocast dtype;
- ``fp32_set_opt_dtype`` passes ``dtype=torch.float32`` when the first argument is eligible and the
  call gives no dtype; ``fp32_append_dtype`` calls another overload with a float32 dtype, so only
  the arguments, not the returns, are this overload's (``returns_judged`` is False);
- ``banned`` raises, so the call never reaches a kernel.

The stand-ins are meta tensors of the same shape (no data is allocated), made by the caller's ``make``
(the checker makes them unobserved: its own calls are no user's).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import torch

KEY_OF_DEVICE = {"cpu": "CPU", "cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "mtia": "MTIA", "maia": "MAIA", "hpu": "HPU", "ipu": "IPU", "xla": "XLA"}
"""The autocast key (``migrate.model.autocast.KEYS``) of a torch device type; not imported from there, which reads yaml."""


@dataclass(frozen=True)
class AutocastPolicy:
    """The policy a call under autocast was judged by: the key, the policy ('' where the entry declares none), the line."""

    key: str  # 'CPU'
    policy: str  # 'lower_precision_fp'; ''
    where: str  # 'native_functions.yaml:1234': the autocast line, else the line that declares the variables

    def __str__(self) -> str:
        return f"autocast {{{self.key}: {self.policy}}}, declared at {self.where}" if self.policy else f"no autocast policy for {self.key} (entry at {self.where})"


@dataclass(frozen=True)
class Handed:
    """A call's arguments as autocast hands them to the kernel, and the policy that did it."""

    args: tuple
    kwargs: dict
    policy: AutocastPolicy
    cast: tuple[str, ...]  # the argument names whose tensors it cast (or whose dtype it set)
    returns_judged: bool = True  # False: the kernel is another overload's (fp32_append_dtype)


def active_key(args: tuple, kwargs: dict) -> str:
    """The autocast key a call goes through: its first tensor's device's, when autocast is on there ('' otherwise)."""
    for value in (*args, *kwargs.values()):
        for tensor in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(tensor, torch.Tensor):
                key = KEY_OF_DEVICE.get(tensor.device.type, "")
                return key if key and torch.is_autocast_enabled(tensor.device.type) else ""
    return ""


def _eligible(value: Any, device: str) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == device and value.is_floating_point() and value.dtype != torch.float64


def _tensors_of(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def eligible_arguments(func: Any, key: str, args: tuple, kwargs: dict) -> frozenset[str]:
    """The arguments holding a tensor autocast may cast: whatever the policy, it decides their dtype at the kernel."""
    names = [a.name for a in func._schema.arguments]
    values = {**dict(zip(names, args)), **kwargs}
    return frozenset(n for n, v in values.items() if any(_eligible(t, key.lower()) for t in _tensors_of(v)))


Make = Callable[[torch.Size, torch.dtype], torch.Tensor]
"""Makes a stand-in tensor of a shape and dtype."""


def handed(func: Any, policy: AutocastPolicy, args: tuple, kwargs: dict, make: Make) -> Handed:
    """The call ``func(*args, **kwargs)`` as ``policy`` hands it to the kernel (unchanged where it names none)."""
    device = policy.key.lower()
    lower = torch.get_autocast_dtype(device)
    names = [a.name for a in func._schema.arguments]
    values = {**dict(zip(names, args)), **kwargs}
    changed: dict[str, Any] = {}
    if policy.policy in ("lower_precision_fp", "fp32", "promote"):
        to = {"lower_precision_fp": lower, "fp32": torch.float32}.get(policy.policy) or _promoted(list(values.values()), device, lower)
        cast = [n for n, v in values.items() if any(_eligible(t, device) and t.dtype != to for t in _tensors_of(v))]
        changed = {n: _cast(values[n], to, device, make) for n in cast}
    elif policy.policy == "fp32_set_opt_dtype" and names and _eligible(values.get(names[0]), device):
        dtype_argument = next((a.name for a in func._schema.arguments if str(a.real_type) == "Optional[ScalarType]"), "")
        changed = {dtype_argument: torch.float32} if dtype_argument and values.get(dtype_argument) is None else {}
    new_args = tuple(changed.get(n, a) for n, a in zip(names, args))
    new_kwargs = {**kwargs, **{n: v for n, v in changed.items() if names.index(n) >= len(args)}}
    return Handed(new_args, new_kwargs, policy, tuple(changed), policy.policy != "fp32_append_dtype")


def _promoted(values: list[Any], device: str, lower: torch.dtype) -> torch.dtype:
    """ATen's ``promote_type``: float32 when an eligible tensor is float32, else the autocast dtype."""
    eligible = [t for value in values for t in _tensors_of(value) if _eligible(t, device)]
    return torch.float32 if any(t.dtype == torch.float32 for t in eligible) else lower


def _cast(value: Any, to: torch.dtype, device: str, make: Make) -> Any:
    """A slot's value with each eligible tensor replaced by a stand-in of its shape at ``to``."""
    if isinstance(value, torch.Tensor):
        return make(value.shape, to) if _eligible(value, device) else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, to, device, make) for v in value)
    return value
