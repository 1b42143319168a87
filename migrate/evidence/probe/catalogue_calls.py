"""Calls built from the catalogue (``migrate.evidence.probe.catalogue``), probed as a recorded call is.

For each overload the catalogue has a recipe for and the installed torch has, a worker builds
the recipe's values (a ``Data`` tensor of each base dtype in turn: float32, then int64), lets
``schema_calls`` build what the recipe leaves out, and calls it. Up to ``schema_calls.BASES``
calls ATen accepts are probed dtype by dtype (``prober.probe_call``), under the same rules as any
probed call: accepted only from calls whose tensors all have an element, rejected only from such
a call that raised, a ``dtype=`` argument at its opening value and then at the gate's. An overload
whose every call failed reports ATen's last refusal, which ``--report`` lists for an entry still
untyped.

The reports are a stage of their own, keyed by this code, the catalogue and torch's version: a
recipe edited builds these calls again, never the schema calls. Seeds come from the overload's
name, so results do not depend on ``-j`` or the chunking.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterator
from typing import Any

from migrate.cache import StageCache
from migrate.evidence.probe import schema_calls
from migrate.evidence.probe.catalogue import ARGUMENTS, RECIPES, SPARSE_LAYOUTS, Data, Fixed, Full, Ints, Made, Quantized, Storage, TorchName
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT, call_aten
from migrate.runtime.processes import one_line
from migrate.runtime.runs import overload_key
from migrate.runtime.worker_stage import WorkerStage, each_overload, listed_in_worker

BASE_DTYPES = ("float32", "int64")  # the dtypes of a recipe's Data tensors, one call each
UNIFORM = "uniform_lists"  # a report's list slots whose elements must share a dtype, with ATen's refusal of a mixed one
FREE_RETURNS = "free_returns"  # a report's returns say nothing of other calls: a ScalarType argument or a quantized dtype set them


def _value(spec: Any, base: Any, seed: int) -> Any:
    """The argument a spec stands for, its Data tensors of dtype ``base``."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    if isinstance(spec, list):
        return [_value(item, base, seed + 100 * i) for i, item in enumerate(spec)]
    if isinstance(spec, Data):
        dense = schema_calls.seeded_tensor(spec.shape, base, seed)
        return _sparse(dense.add(1) if spec.layout != "strided" else dense, spec.layout)  # sparse: no explicit zeros
    if isinstance(spec, Fixed):
        return torch.tensor(spec.values, dtype=getattr(torch, spec.dtype))
    if isinstance(spec, Full):
        return torch.full(spec.shape, spec.value, dtype=getattr(torch, spec.dtype) if spec.dtype else base)
    if isinstance(spec, Ints):
        generator = torch.Generator().manual_seed(seed)
        return torch.randint(0, spec.high, spec.shape, generator=generator).to(getattr(torch, spec.dtype))
    if isinstance(spec, Quantized):
        return torch.quantize_per_tensor(schema_calls.seeded_tensor(spec.shape, base, seed), 0.1, 0, getattr(torch, spec.dtype))
    if isinstance(spec, Storage):
        return torch.zeros(spec.nbytes, dtype=torch.uint8).untyped_storage()
    if isinstance(spec, Made):
        return torch_private.aten_overload(spec.overload)(*(_value(a, base, seed + i) for i, a in enumerate(spec.arguments)))
    if isinstance(spec, TorchName):
        return getattr(torch, spec.name)
    return spec


def _sparse(dense: Any, layout: str) -> Any:
    if layout == "strided":
        return dense
    if layout not in SPARSE_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} in the catalogue")
    if layout == "coo":
        return dense.to_sparse()
    if layout in ("csr", "csc"):
        return dense.to_sparse_csr() if layout == "csr" else dense.to_sparse_csc()
    return dense.to_sparse_bsr((1, 1)) if layout == "bsr" else dense.to_sparse_bsc((1, 1))


def _by_argument(schema: Any) -> dict[str, Any]:
    """The catalogue's values for this schema's arguments, by name and type (``ARGUMENTS``)."""
    kinds = ((a.name, str(getattr(a, "real_type", a.type))) for a in schema.arguments)
    return {name: ARGUMENTS[name, kind] for name, kind in kinds if (name, kind) in ARGUMENTS}


def recipe_calls(func: Any, recipe: dict[str, Any], timeout: float, refusals: list[str]) -> list[Any]:
    """Calls ATen accepts, as CapturedCalls: per base dtype the first that works, at most ``schema_calls.BASES``."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    seed = zlib.crc32(torch_private.overload_slots(func).name.encode())
    specs = {**_by_argument(func._schema), **recipe}
    calls = []
    for base_name in BASE_DTYPES:
        base = getattr(torch, base_name)
        try:  # a Made value of this base dtype may be refused (fbgemm packs float32 weights only)
            given = {name: _value(spec, base, seed + index) for index, (name, spec) in enumerate(sorted(specs.items()))}
        except Exception as exc:
            refusals.append(one_line(exc))
            continue
        for combination in schema_calls.argument_combinations(func._schema):
            made = schema_calls.schema_arguments(func._schema, (base, torch.int64, None, False), combination, seed, given)
            if made is None:
                refusals.append(f"no value for an argument of this schema: {func._schema}")
                return calls
            if (call := schema_calls.called(func, made, seed, timeout, base_name, refusals)) is not None:
                calls.append(call)
                break
        if len(calls) == schema_calls.BASES:
            break
    return calls


MIXED_TRIES = 3  # other dtypes a list's elements are given beside its first one's, each a call of its own


def _uniform_lists(call: Any, report: dict[str, Any], timeout: float) -> dict[str, str]:
    """The call's tensor lists whose elements ATen wants of one dtype, with its last refusal: the list's first element
    at its own dtype and the others at another dtype the whole list was accepted at (cast alone, else with the slots
    of its variable, as an RNN's ``params`` with its input; no gating argument set), refused for each of up to
    MIXED_TRIES such dtypes (``meshgrid``, ``lstm_cell``'s ``hx``). ``broadcast_tensors`` of such a list runs,
    and so does ``_foreach_powsum`` of float32 beside float64, though not beside int64: one that runs leaves the list
    free, since ``T[]``, every element of one dtype, would refuse it."""
    import torch  # here, as the recorders: the parent imports this module without torch (the --op fast path)

    from migrate.runtime.recorders import argument_of  # imports torch: workers only

    found = {}
    for position, name, keyword_only, _ in call.slots.arguments:
        value = argument_of(call.args, call.kwargs, (position, name, keyword_only, False))
        probes = report.get("probes", ())
        casts = [(rows, {row[0] for row in gated}) for cast, rows, _, gated in (*(p for p in probes if p[0] == [name]), *(p for p in probes if name in p[0]))]
        others = list(dict.fromkeys(dtype for rows, gated in casts for dtype, _ in rows if dtype not in gated))[:MIXED_TRIES]
        if not isinstance(value, list) or len(value) < 2 or report["again"] or not others:
            continue
        refusals = []
        for other in others:
            mixed = [value[0], *(element.to(getattr(torch, other)) for element in value[1:])]
            args, kwargs = list(call.args), dict(call.kwargs)
            if keyword_only or position >= len(args):
                kwargs[name] = mixed
            else:
                args[position] = mixed
            outcome = call_aten(lambda: call.func(*args, **kwargs), timeout)
            if outcome.refused:
                refusals.append(outcome.refusal)
        if len(refusals) == len(others):
            found[name] = refusals[-1]
    return found


def is_quantized(dtypes: Any) -> bool:
    """Whether a return held a dtype no plain CPU tensor has (``quantize_per_tensor``'s quint8)."""
    from migrate.evidence.probe.prober import dtype_universe  # imports torch: workers only (the --op fast path)

    return any(d is not None and d not in dtype_universe() for d in (dtypes if isinstance(dtypes, tuple) else (dtypes,)))


def _reports_of(name: str) -> Iterator[dict[str, Any]]:
    """The probes of the recipe's calls of the overload, else ATen's last refusal."""
    from migrate.evidence.probe.prober import probe_call  # imports torch: workers only (the --op fast path)

    refusals: list[str] = []
    func = torch_private.aten_overload(name)
    calls = recipe_calls(func, RECIPES[name], PROBE_TIMEOUT, refusals)
    for number, call in enumerate(calls):
        report = probe_call(call, f"{name}\0catalogue\0{number}", PROBE_TIMEOUT)
        free = schema_calls.takes_a_dtype(func._schema) or any(is_quantized(d) for d in call.dtypes[len(call.slots.arguments) :])
        yield {**report, UNIFORM: _uniform_lists(call, report, PROBE_TIMEOUT), FREE_RETURNS: free}
    if not calls:
        yield {"overload": torch_private.overload_slots(func).name, schema_calls.REFUSED: refusals[-1] if refusals else "no call"}


catalogue_reports = functools.partial(each_overload, _reports_of)
"""The job: for each overload named, announced, the probes of its recipe's calls, or ATen's last refusal."""


def _names_report(_: None) -> Iterator[list[str]]:
    """The recipes' overloads this torch has (a recipe for an overload another release lacks is skipped)."""
    found = []
    for name in sorted(RECIPES):
        try:
            torch_private.aten_overload(name)
        except AttributeError:
            continue
        found.append(name)
    yield found


def probe_catalogue_calls(jobs: int | None) -> list[dict[str, Any]]:
    """Reports for every recipe's overload this torch has, in name order; one whose probe ended its worker says so."""
    names = listed_in_worker(_names_report, "the catalogue's overloads")
    reports, lost = schema_calls.probe_built_calls(names, jobs, catalogue_reports, "catalogue calls")
    ended = [{"overload": f"aten::{name}", schema_calls.REFUSED: "a probe of its call ended its worker (a crash or a hang)"} for name in lost]
    return sorted(reports + ended, key=lambda report: report["overload"])


STAGE = WorkerStage(
    "catalogue-calls",
    probe_catalogue_calls,
    "building calls from the argument catalogue, in workers (once)",
    schema_calls.STAGE.load,
)
"""Each recipe's call report (or its last refusal); a run reads the probed calls."""


def _stored(cache: StageCache) -> list[dict[str, Any]]:
    return STAGE.stored(cache) or []


def uniform_lists(cache: StageCache) -> frozenset[tuple[str, str]]:
    """(overload, list slot) pairs whose mixed call ATen refused, from the stored reports."""
    reports = _stored(cache)
    return frozenset((key, slot) for r in reports for slot in r.get(UNIFORM, ()) if (key := overload_key(r["overload"])) is not None)


def free_returns(cache: StageCache) -> frozenset[str]:
    """The overloads whose catalogue calls' returns stay free (a ScalarType argument or a quantized dtype set them)."""
    reports = _stored(cache)
    return frozenset(key for r in reports if r.get(FREE_RETURNS) and (key := overload_key(r["overload"])) is not None)


def cached_catalogue_refusals(cache: StageCache) -> dict[str, str]:
    """Per recipe's overload no call could be made for, ATen's last refusal (empty before they were built)."""
    reports = _stored(cache)
    return {key: r[schema_calls.REFUSED] for r in reports if schema_calls.REFUSED in r and (key := overload_key(r["overload"])) is not None}
