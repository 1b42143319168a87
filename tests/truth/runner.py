"""The verdict of each truth case on each dtype, from calling torch on CPU.

A dtype is accepted when some alternative call ran and gave non-empty outputs, rejected
when every alternative raised (the first refusal is kept). Before calling, the runner
binds the arguments to the overload's schema and checks the case says what it does:
every tensor argument is one of its cast slots (in the dtype under test) or one of its
``given`` slots (in that dtype), no tensor is empty, and each of its ``scalars`` is a Python number beside
which the dtype under test keeps its dtype. A case that breaks this is
wrong, and raises ``CaseError`` instead of giving a verdict.

    python -m tests.truth.runner            # prints every case's accepted dtypes
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from migrate.model.named_sets import ANY
from migrate.runtime.processes import reference_cpu_paths
from tests.truth.cases import AUTOCAST, BACKWARD, CASES, MIXED, VALUES, Autocast, Case, Mixed, Valued

RETURN = "return."  # a case slot ``return.0``: the call must return the dtype under test there
DTYPES: tuple[str, ...] = tuple(d.name for d in ANY)
"""The 21 dtypes of the project's vocabulary (``TAny``), in canonical order."""


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    message: str  # the first alternative's refusal when rejected, else ""
    returned: tuple[str, ...] = ()  # an autocast call's: the dtype of each tensor it returned


class CaseError(Exception):
    """A truth case that does not call what it claims: fix the case, it has no verdict."""


def aten_op(overload: str) -> torch._ops.OpOverload:
    base, _, name = overload.partition(".")
    return getattr(getattr(torch.ops.aten, base), name or "default")


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def _check_arguments(case: Case, op: torch._ops.OpOverload, args: tuple, kwargs: dict, dtype: torch.dtype) -> None:
    names = [argument.name for argument in op._schema.arguments]
    if len(args) > len(names) or set(kwargs) - set(names):
        raise CaseError(f"{case.key}: arguments do not fit {op._schema}")
    bound = dict(zip(names, args)) | kwargs
    wanted = {slot: dtype for slot in case.slots if not slot.startswith(RETURN)} | {slot: getattr(torch, name) for slot, name in case.given}
    for slot in wanted:
        if isinstance(bound.get(slot), torch.dtype):  # a ScalarType argument (``dtype=``) names the dtype under test
            if bound[slot] != wanted[slot]:
                raise CaseError(f"{case.key}: {slot} is {bound[slot]}, the case says {wanted[slot]}")
        elif not _tensors(bound.get(slot)):
            raise CaseError(f"{case.key}: no tensor is passed as {slot}")
    for slot in case.scalars:
        if not _keeps(bound.get(slot), dtype):
            raise CaseError(f"{case.key}: {slot} is {bound.get(slot)!r}, which does not keep the computation at {dtype}")
    for name, value in bound.items():
        for tensor in _tensors(value):
            if name in case.companions:  # any dtype, but never empty
                if tensor.numel() == 0:
                    raise CaseError(f"{case.key}: {name} is empty; an empty tensor proves nothing")
                continue
            if name not in wanted:
                raise CaseError(f"{case.key}: tensor argument {name} is neither cast nor given")
            if tensor.dtype != wanted[name]:
                raise CaseError(f"{case.key}: {name} is {tensor.dtype}, the case says {wanted[name]}")
            if tensor.numel() == 0:
                raise CaseError(f"{case.key}: {name} is empty; an empty tensor proves nothing")


def _keeps(value: Any, dtype: torch.dtype) -> bool:
    """Whether ``value`` is a Python number beside which a ``dtype`` tensor keeps its dtype (``1`` beside uint16, not ``0.5``)."""
    if not isinstance(value, (bool, int, float, complex)):
        return False
    try:
        return torch.result_type(torch.ones(1, dtype=dtype), value) == dtype
    except RuntimeError:  # float8 beside a complex number
        return False


def verdict(case: Case, dtype_name: str) -> Verdict:
    dtype = getattr(torch, dtype_name)
    op = aten_op(case.overload)
    refusals = []
    for build in case.calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # complex32 and float8 tensors warn that they are experimental
            args, kwargs = build(dtype)
            _check_arguments(case, op, args, kwargs, dtype)
            try:
                result = op(*args, **kwargs)
            except Exception as exc:  # any refusal: RuntimeError, TypeError, NotImplementedError, ...
                refusals.append((str(exc).strip().splitlines() or [type(exc).__name__])[0])
                continue
        if any(tensor.numel() == 0 for tensor in _tensors(result)):
            raise CaseError(f"{case.key} on {dtype_name}: an output is empty; an empty result proves nothing")
        returned = _returned_otherwise(case, result, dtype)
        if returned:
            refusals.append(returned)
            continue
        return Verdict(True, "")
    return Verdict(False, refusals[0])


def _returned_otherwise(case: Case, result: Any, dtype: torch.dtype) -> str:
    """Why a call that ran does not show the dtype at a return the case casts (``return.0``: ``zeros(dtype=d)``
    returns ``d``); '' when every such return has it."""
    outs = result if isinstance(result, (list, tuple)) else (result,)
    for slot in case.slots:
        if slot.startswith(RETURN):
            got = outs[int(slot.removeprefix(RETURN))]
            if not isinstance(got, torch.Tensor) or got.dtype != dtype:
                return f"{slot} is {getattr(got, 'dtype', got)}, not {dtype}"
    return ""


def run_cases(cases: tuple[Case, ...] = CASES) -> dict[str, dict[str, Verdict]]:
    """Every case's verdict on every dtype, keyed by case key, then dtype name."""
    keys = [case.key for case in cases]
    if len(set(keys)) != len(keys):
        raise CaseError("two cases share a key: " + ", ".join(sorted({k for k in keys if keys.count(k) > 1})))
    with reference_cpu_paths():  # the paths every host has, which the yaml states (docs/evidence.md)
        return {case.key: {name: verdict(case, name) for name in DTYPES} for case in cases}


def mixed_verdict(call: Mixed | Autocast) -> Verdict:
    """A mixed call's verdict: accepted when it ran with every input and output non-empty; an autocast call's
    runs under CPU autocast at its dtype and keeps the dtypes it returned."""
    op = aten_op(call.overload)
    args, kwargs = call.call()
    if len(args) > len(op._schema.arguments) or any(t.numel() == 0 for t in _tensors((args, kwargs))):
        raise CaseError(f"{call.key}: arguments do not fit {op._schema} or a tensor is empty")
    autocast = isinstance(call, Autocast)
    with warnings.catch_warnings(), torch.autocast("cpu", dtype=getattr(torch, call.dtype) if autocast else None, enabled=autocast):
        warnings.simplefilter("ignore")
        try:
            result = op(*args, **kwargs)
        except Exception as exc:
            return Verdict(False, (str(exc).strip().splitlines() or [type(exc).__name__])[0])
    if any(tensor.numel() == 0 for tensor in _tensors(result)):
        raise CaseError(f"{call.key}: an output is empty; an empty result proves nothing")
    return Verdict(True, "", tuple(str(tensor.dtype).removeprefix("torch.") for tensor in _tensors(result)) if autocast else ())


def run_mixed(calls: tuple[Mixed | Autocast, ...] = MIXED) -> dict[str, Verdict]:
    """Every mixed (or autocast) call's verdict, keyed by its key."""
    keys = [call.key for call in calls]
    if len(set(keys)) != len(keys):
        raise CaseError("two single calls share a key: " + ", ".join(sorted({k for k in keys if keys.count(k) > 1})))
    with reference_cpu_paths():
        return {call.key: mixed_verdict(call) for call in calls}


def run_autocast(calls: tuple[Autocast, ...] = AUTOCAST) -> dict[str, Verdict]:
    """Every autocast call's verdict, keyed by its key."""
    return run_mixed(calls)


def run_backward(calls: tuple[Mixed, ...] = BACKWARD) -> dict[str, Verdict]:
    """Every mixed-precision training-step call's verdict, keyed by its key."""
    return run_mixed(calls)


def run_values(calls: tuple[Valued, ...] = VALUES) -> dict[str, Verdict]:
    """Every value-dependent call's verdict, keyed by its key."""
    return run_mixed(calls)


def main() -> int:
    for key, verdicts in run_cases().items():
        accepted = [name for name, v in verdicts.items() if v.accepted]
        print(f"{key}: {', '.join(accepted) or '(none)'}")
    for key, found in run_mixed().items():
        print(f"{key}: {'accepted' if found.accepted else 'rejected: ' + found.message}")
    for key, found in {**run_backward(), **run_values()}.items():
        print(f"{key}: {'accepted' if found.accepted else 'rejected: ' + found.message}")
    for key, found in run_autocast().items():
        print(f"{key}: {'returned ' + ', '.join(found.returned) if found.accepted else 'rejected: ' + found.message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
