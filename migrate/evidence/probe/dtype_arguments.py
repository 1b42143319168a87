"""Returns whose dtype a ``ScalarType`` argument sets: that argument called at every dtype.

``to.device(Tensor self, Device device, ScalarType dtype, ...)`` returns a tensor of whatever
``dtype`` says; so do ``_to_copy``, ``zeros``, ``full``, ``arange``, ``randn``, ``empty``,
``sum(..., dtype=)`` and ``ones_like(..., dtype=)``. Samples pass a few ``dtype=`` values, so the
return's set was the few they happened to pass (``to.device`` written ``[torch.float64]``).

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

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from migrate.cache import Stage, StageCache
from migrate.model.dtypes import DType, canonical
from migrate.runtime import torch_private
from migrate.runtime.processes import DONE, Job, run_in_workers
from migrate.runtime.runs import interned_dtype, overload_key

CHUNK = 40  # overloads per worker job


@dataclass(frozen=True)
class DtypeArgument:
    """What one overload returned with its ``ScalarType`` argument at each dtype, on one built call."""

    overload: str  # 'to.dtype'
    argument: str  # 'dtype'
    returns: tuple[str, ...]  # its tensor return slots, 'return.0', ...
    accepted: tuple[tuple[DType, tuple[DType | None, ...]], ...]  # per call that ran: the dtype asked for, each return's dtype
    refused: tuple[tuple[DType, str], ...]  # per dtype no call ran at: ATen's first message

    @property
    def accepted_dtypes(self) -> tuple[DType, ...]:
        return canonical(d for d, _ in self.accepted)

    def follows_argument(self, slot: str) -> bool:
        """Whether the return slot had the argument's dtype in every accepted call."""
        at = self.returns.index(slot)
        return bool(self.accepted) and all(returned[at] == asked for asked, returned in self.accepted)

    def to_json(self) -> dict[str, Any]:
        return {
            "overload": self.overload,
            "argument": self.argument,
            "returns": list(self.returns),
            "accepted": [[d.name, [r.name if r is not None else None for r in returned]] for d, returned in self.accepted],
            "refused": [[d.name, message] for d, message in self.refused],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> DtypeArgument:
        return cls(
            obj["overload"],
            obj["argument"],
            tuple(obj["returns"]),
            tuple((interned_dtype(d), tuple(None if r is None else interned_dtype(r) for r in returned)) for d, returned in obj["accepted"]),
            tuple((interned_dtype(d), message) for d, message in obj["refused"]),
        )


def _dtype_argument(schema: Any) -> Any | None:
    return next((a for a in schema.arguments if "ScalarType" in str(getattr(a, "real_type", a.type))), None)


def targets() -> list[Any]:
    """Overloads with a CPU kernel, a ScalarType argument and a tensor return; not out=."""
    from migrate.evidence.probe.schema_calls import writes_out

    return [
        func
        for func in torch_private.cpu_overloads()
        if _dtype_argument(func._schema) is not None and torch_private.overload_slots(func).returns and not writes_out(func._schema)
    ]


def _cast(value: Any, dtype: Any, base: Any) -> Any:
    """The value with every tensor of dtype ``base`` in it cast to ``dtype`` (lists of tensors too)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.dtype == base else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype, base) for v in value)
    return value


def _calls(func: Any, argument: Any, timeout: float) -> list[Any]:
    """Calls ATen accepts with the argument at float32: built from the catalogue's recipe for the overload if it has
    one (``sparse_bsr_tensor``'s blocks, ``randint``'s bounds; a recipe's own value of the argument stays), else
    from the schema."""
    import torch

    from migrate.evidence.probe.catalogue import RECIPES, TorchName
    from migrate.evidence.probe.catalogue_calls import recipe_calls
    from migrate.evidence.probe.schema_calls import built_calls

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
    import signal

    import torch

    from migrate.evidence.probe.catalogue_calls import is_quantized
    from migrate.evidence.probe.prober import dtype_universe
    from migrate.runtime.dispatch import has_elements
    from migrate.runtime.processes import one_line
    from migrate.runtime.recorders import dtype_name

    func = torch_private.aten_overload(name)
    argument = _dtype_argument(func._schema)
    calls = [c for c in _calls(func, argument, timeout) if c.nonempty]
    if not calls or any(is_quantized(d) for c in calls for d in c.dtypes[len(c.slots.arguments) :]):
        return None  # a quantized return (quantize_per_tensor_dynamic's quint8) no set can state: it stays free
    slots = calls[0].slots
    position = [a.name for a in func._schema.arguments].index(argument.name)
    accepted, refused = [], {}
    tries = [(call, False) for call in calls] + [(calls[0], True)]
    for call, cast in tries:
        keyword = argument.kwarg_only or position >= len(call.args)
        for dtype in dtype_universe():
            args, kwargs = list(call.args), dict(call.kwargs)
            if cast:
                base = getattr(torch, call.sample_dtype)
                args, kwargs = _cast(args, dtype, base), {k: _cast(v, dtype, base) for k, v in kwargs.items()}
            if keyword:
                kwargs[argument.name] = dtype
            else:
                args[position] = dtype
            torch.default_generator.manual_seed(0)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                out = func(*args, **kwargs)
            except Exception as exc:
                if not cast:  # a refusal beside tensors cast too may be about the tensors
                    refused.setdefault(dtype_name(dtype), one_line(exc))
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            outs = out if slots.returns_tuple else (out,)
            values = [outs[at] for at, _, _ in slots.returns]
            if all(isinstance(v, torch.Tensor) and has_elements(v) for v in values):
                accepted.append([dtype_name(dtype), [dtype_name(v.dtype) for v in values]])
    taken = {d for d, _ in accepted}
    names = [slot for _, slot, _ in slots.returns]
    refusals = [[d, message] for d, message in refused.items() if d not in taken]
    return {"overload": slots.name, "argument": argument.name, "returns": names, "accepted": accepted, "refused": refusals}


def dtype_argument_reports(names: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The job: for each overload named, announced, its report (if a call could be built)."""
    from migrate.evidence.probe.prober import PROBE_TIMEOUT, bounded

    with warnings.catch_warnings(), bounded():
        warnings.simplefilter("ignore")
        for name in names:
            yield {"trying": name}
            report = _report(name, PROBE_TIMEOUT)
            if report is not None:
                yield {"called": report}


def _names_report(_: None) -> Iterator[list[str]]:
    yield [torch_private.overload_slots(f).name for f in targets()]


def _called(jobs: int | None) -> list[dict[str, Any]]:
    """Reports for every target, in name order; an overload that ends its worker is left out and the rest go on."""
    (outcome,) = run_in_workers([Job(_names_report, None, "dtype argument targets")], jobs=1, progress=False)
    if outcome.status != DONE:
        raise torch_private.TorchAPIChanged(f"listing the overloads with a dtype argument failed: {outcome.reason}")
    names = sorted(name for report in outcome.reports for name in report)
    chunks = [tuple(names[i : i + CHUNK]) for i in range(0, len(names), CHUNK)]
    found: list[dict[str, Any]] = []
    while chunks:
        work = [Job(dtype_argument_reports, chunk, f"dtype arguments {chunk[0]}") for chunk in chunks]
        chunks = []
        for outcome in run_in_workers(work, jobs=jobs, progress=False, unit="chunk", desc="dtype arguments"):
            tried = [r["trying"] for r in outcome.reports if "trying" in r]
            found += [r["called"] for r in outcome.reports if "called" in r]
            if outcome.status != DONE and tried:
                chunk = outcome.job.argument
                rest = chunk[chunk.index(tried[-1]) + 1 :]
                if rest:
                    chunks.append(rest)
    return sorted(found, key=lambda r: r["overload"])


def stage(cache: StageCache) -> Stage:
    return cache.stage("dtype-arguments", __name__)


def _facts(reports: list[dict[str, Any]]) -> dict[str, DtypeArgument]:
    found = (DtypeArgument.from_json(r) for r in reports)
    return {key: replace(fact, overload=key) for fact in found if (key := overload_key(fact.overload)) is not None}


def load_dtype_arguments(cache: StageCache, jobs: int | None) -> dict[str, DtypeArgument]:
    """Per overload ('to.dtype'), what its ScalarType argument did: from the cache, else called in workers and stored."""
    return _facts(entry(cache, jobs))


def entry(cache: StageCache, jobs: int | None) -> list[dict[str, Any]]:
    """The stage's entry: each overload's report, made in workers on a miss."""
    return stage(cache).get((), lambda: _called(jobs), list, cold="calling overloads with a dtype argument at each dtype, in workers (once)")


def cached_dtype_arguments(cache: StageCache) -> dict[str, DtypeArgument]:
    """What ``load_dtype_arguments`` gives, when this code has called them already; else empty."""
    return _facts(stage(cache).read(kind=list) or [])
