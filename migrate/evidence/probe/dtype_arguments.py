"""Returns whose dtype a ``ScalarType`` argument sets: that argument called at every dtype.

``to.device(Tensor self, Device device, ScalarType dtype, ...)`` returns a tensor of whatever
``dtype`` says; so do ``_to_copy``, ``zeros``, ``full``, ``arange``, ``randn``, ``empty``,
``sum(..., dtype=)`` and ``ones_like(..., dtype=)``. Samples pass a few ``dtype=`` values, so the
return's set was the few they happened to pass (``to.device`` written ``[torch.float64]``). An optional argument is
also left None beside the tensors cast to each dtype: what the return is then (``_to_copy(x)`` has ``x``'s dtype,
``sum`` of an int32 tensor is int64).

For each overload of the installed torch with a CPU kernel, a ``ScalarType`` argument and a
tensor return (out= aside), a worker builds calls from the schema with that argument at
``torch.float32`` (``migrate.evidence.probe.schema_calls``, one per base dtype of its tensors), then calls
each again with the argument at each dtype of the universe, and the first once more with its tensors cast
to that dtype too: what ATen accepts, what each call returns, and each refusal's message (``randn(dtype=torch.int64)``: ``"normal_kernel_cpu" not implemented for 'Long'``). A call
on tensors without elements proves nothing, as everywhere. A return slot that had the argument's
dtype in every accepted call *is the argument's value*; its variable is then exactly the dtypes
the argument was accepted at (``migrate.infer.dtype_arguments``). A return that took other dtypes gets every dtype it returned.

The reports depend on the torch release and this code only: a stage of their own, built once in
workers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from migrate.evidence.probe.catalogue import RECIPES, TorchName
from migrate.evidence.probe.catalogue_calls import is_quantized, recipe_calls
from migrate.evidence.probe.schema_calls import built_calls, writes_out
from migrate.model.dtypes import DType, canonical
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT, call_aten
from migrate.runtime.runs import overload_key
from migrate.runtime.worker_stage import WorkerStage, each_overload, listed_in_worker, reports_by_chunk



@dataclass(frozen=True)
class DtypeArgument:
    """What one overload returned with its ``ScalarType`` argument at each dtype, on one built call."""

    overload: str  # 'to.dtype'
    argument: str  # 'dtype'
    returns: tuple[str, ...]  # its tensor return slots, 'return.0', ...
    accepted: tuple[tuple[DType, tuple[DType | None, ...]], ...]  # per call that ran: the dtype asked for, each return's dtype
    refused: tuple[tuple[DType, str], ...]  # per dtype no call ran at: ATen's first message
    unset_cast: tuple[str, ...] = ()  # an optional argument left None: the tensor arguments cast to each dtype
    unset: tuple[tuple[DType, tuple[DType | None, ...]], ...] = ()  # per such call that ran: their dtype, each return's

    @property
    def accepted_dtypes(self) -> tuple[DType, ...]:
        return canonical(d for d, _ in self.accepted)

    def follows_argument(self, slot: str) -> bool:
        """Whether the return slot had the argument's dtype in every accepted call."""
        at = self.returns.index(slot)
        return bool(self.accepted) and all(returned[at] == asked for asked, returned in self.accepted)

    def unset_follows_inputs(self, slot: str, computed: Callable[[DType], DType] = lambda cast: cast) -> bool:
        """Whether, with the argument None, the return slot had the cast tensors' dtype in every call that ran, two
        dtypes or more: the None case is the inputs' dtype (``_to_copy(x)`` is ``x``'s dtype, uint16 as float32), or
        the dtype ``computed`` gives for it (a reduction's promotion: ``sum`` of int8 is int64)."""
        at = self.returns.index(slot)
        return len(self.unset) >= 2 and all(returned[at] == computed(cast) for cast, returned in self.unset)

    def unset_returned(self, slot: str) -> tuple[DType, ...]:
        """What the return slot was, with the argument None, beside the tensors at each dtype (``sum`` of int32: int64)."""
        at = self.returns.index(slot)
        return canonical(returned[at] for _, returned in self.unset if returned[at] is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            "overload": self.overload,
            "argument": self.argument,
            "returns": list(self.returns),
            "accepted": _returned_json(self.accepted),
            "refused": [[d.name, message] for d, message in self.refused],
            "unset": {"cast": list(self.unset_cast), "returned": _returned_json(self.unset)},
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> DtypeArgument:
        unset = obj.get("unset", {"cast": [], "returned": []})
        return cls(
            obj["overload"],
            obj["argument"],
            tuple(obj["returns"]),
            _returned_of(obj["accepted"]),
            tuple((DType(d), message) for d, message in obj["refused"]),
            tuple(unset["cast"]),
            _returned_of(unset["returned"]),
        )


def _returned_json(calls: tuple[tuple[DType, tuple[DType | None, ...]], ...]) -> list[Any]:
    return [[d.name, [r.name if r is not None else None for r in returned]] for d, returned in calls]


def _returned_of(obj: list[Any]) -> tuple[tuple[DType, tuple[DType | None, ...]], ...]:
    return tuple((DType(d), tuple(None if r is None else DType(r) for r in returned)) for d, returned in obj)


def _dtype_argument(schema: Any) -> Any | None:
    return next((a for a in schema.arguments if "ScalarType" in str(getattr(a, "real_type", a.type))), None)


def targets() -> list[Any]:
    """Overloads with a CPU kernel, a ScalarType argument and a tensor return; not out=."""
    return [
        func
        for func in torch_private.cpu_overloads()
        if _dtype_argument(func._schema) is not None and torch_private.overload_slots(func).returns and not writes_out(func._schema)
    ]


def _cast(value: Any, dtype: Any, base: Any) -> Any:
    """The value with every tensor of dtype ``base`` in it cast to ``dtype`` (lists of tensors too)."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.dtype == base else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype, base) for v in value)
    return value


def _calls(func: Any, argument: Any, timeout: float) -> list[Any]:
    """Calls ATen accepts with the argument at float32: built from the catalogue's recipe for the overload if it has
    one (``sparse_bsr_tensor``'s blocks, ``randint``'s bounds; a recipe's own value of the argument stays), else
    from the schema."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    recipe = RECIPES.get(overload_key(torch_private.overload_slots(func).name) or "")
    if recipe is not None and (calls := recipe_calls(func, {argument.name: TorchName("float32"), **recipe}, timeout, [])):
        return calls
    return built_calls(func, timeout, {argument.name: torch.float32})


def _report(name: str, timeout: float) -> dict[str, Any] | None:
    """The overload's calls built with the argument at float32 (one per base dtype of its tensors), then each with
    the argument at each dtype of the universe, and the first again with its tensors of the call's base dtype cast
    to that dtype too: a return is the argument's value only if it is so beside inputs of other dtypes
    (``linalg_vector_norm`` of a complex tensor returns the real dtype ``dtype=`` names). Its index tensors stay:
    ``sparse_csr_tensor``'s values must have the dtype ``dtype=`` names, its indices an integer one."""
    from migrate.evidence.probe.prober import dtype_universe  # imports torch: workers only (the --op fast path)
    from migrate.runtime.recorders import dtype_name  # as above

    func = torch_private.aten_overload(name)
    argument = _dtype_argument(func._schema)
    calls = [c for c in _calls(func, argument, timeout) if c.nonempty]
    if not calls or any(is_quantized(d) for c in calls for d in c.dtypes[len(c.slots.arguments) :]):
        return None  # a quantized return (quantize_per_tensor_dynamic's quint8) no set can state: it stays free
    slots = calls[0].slots
    accepted, refused = [], {}
    tries = [(call, False) for call in calls] + [(calls[0], True)]
    for call, cast in tries:
        for dtype in dtype_universe():
            outcome, returned = _called_with(func, argument, call, dtype, dtype if cast else None, timeout)
            if outcome.refused:
                if not cast:  # a refusal beside tensors cast too may be about the tensors
                    refused.setdefault(dtype_name(dtype), outcome.refusal)
            elif returned is not None:
                accepted.append([dtype_name(dtype), returned])
    taken = {d for d, _ in accepted}
    names = [slot for _, slot, _ in slots.returns]
    refusals = [[d, message] for d, message in refused.items() if d not in taken]
    report = {"overload": slots.name, "argument": argument.name, "returns": names, "accepted": accepted, "refused": refusals}
    if "Optional" in str(getattr(argument, "real_type", argument.type)):
        report["unset"] = _unset(func, argument, calls[0], timeout)
    return report


def _unset(func: Any, argument: Any, call: Any, timeout: float) -> dict[str, Any]:
    """The call with the argument None and its tensors of the call's base dtype cast to each dtype: what each return
    is when the argument is left out (``sum`` of an int32 tensor is int64, ``_to_copy`` keeps the input's dtype)."""
    import torch  # here, as the modules below: the parent imports this module without torch (the --op fast path)

    from migrate.evidence.probe.prober import dtype_universe  # imports torch: workers only (the --op fast path)
    from migrate.runtime.recorders import dtype_name  # as above

    base = getattr(torch, call.sample_dtype)
    cast = [name for (_, name, _, _), held in zip(call.slots.arguments, call.dtypes) if held == base]
    found = []
    for dtype in dtype_universe():
        _, returned = _called_with(func, argument, call, None, dtype, timeout)
        if returned is not None:
            found.append([dtype_name(dtype), returned])
    return {"cast": cast, "returned": found}


def _called_with(func: Any, argument: Any, call: Any, value: Any, cast_to: Any, timeout: float) -> tuple[Any, list[str] | None]:
    """``call`` made again with ``argument`` at ``value`` (a dtype, or None) and, where ``cast_to`` is a dtype, its
    tensors of the call's base dtype cast to it: ATen's outcome, and each return's dtype where the call ran and every
    return has an element (else None)."""
    import torch  # here, as the modules below: the parent imports this module without torch (the --op fast path)

    from migrate.runtime.dispatch import has_elements  # imports torch: workers only (the --op fast path)
    from migrate.runtime.recorders import dtype_name  # as above

    args, kwargs = list(call.args), dict(call.kwargs)
    if cast_to is not None:
        base = getattr(torch, call.sample_dtype)
        args, kwargs = _cast(args, cast_to, base), {k: _cast(v, cast_to, base) for k, v in kwargs.items()}
    position = [a.name for a in func._schema.arguments].index(argument.name)
    if argument.kwarg_only or position >= len(call.args):
        kwargs[argument.name] = value
    else:
        args[position] = value
    outcome = call_aten(lambda: func(*args, **kwargs), timeout, 0)
    if outcome.refused:
        return outcome, None
    slots = call.slots
    outs = outcome.returned if slots.returns_tuple else (outcome.returned,)
    values = [outs[at] for at, _, _ in slots.returns]
    if not all(isinstance(v, torch.Tensor) and has_elements(v) for v in values):
        return outcome, None
    return outcome, [dtype_name(v.dtype) for v in values]


def _reports_of(name: str) -> Iterator[dict[str, Any]]:
    report = _report(name, PROBE_TIMEOUT)
    if report is not None:
        yield report


dtype_argument_reports = functools.partial(each_overload, _reports_of)
"""The job: for each overload named, announced, its report (if a call could be built)."""


def _names_report(_: None) -> Iterator[list[str]]:
    yield [torch_private.overload_slots(f).name for f in targets()]


def _called(jobs: int | None) -> list[dict[str, Any]]:
    """Reports for every target, in name order; an overload that ends its worker is left out and the rest go on."""
    names = sorted(listed_in_worker(_names_report, "the overloads with a dtype argument"))
    found, _ = reports_by_chunk(names, dtype_argument_reports, "dtype arguments", jobs)
    return sorted(found, key=lambda r: r["overload"])


def _facts(reports: list[dict[str, Any]]) -> dict[str, DtypeArgument]:
    found = (DtypeArgument.from_json(r) for r in reports)
    return {key: replace(fact, overload=key) for fact in found if (key := overload_key(fact.overload)) is not None}


STAGE = WorkerStage(
    "dtype-arguments",
    _called,
    "calling overloads with a dtype argument at each dtype, in workers (once)",
    _facts,
    after_sweep=True,
    evidence="probe",
)
"""Each overload's report; a run reads, per overload ('to.dtype'), what its ScalarType argument did."""
