"""Probing overloads no sample reaches: a call built from the schema, then probed like a recorded one.

Many overloads no OpInfo sample calls still have a CPU kernel: ``special_zeta.self_scalar``
(the Python API makes the scalar a tensor first), the ``*_copy`` of views, the window
functions, ``_add_relu``, ``fill_diagonal_``. For each overload of the installed torch
with a kernel a CPU call reaches and a tensor slot (out= overloads aside: their group
follows their functional overload), a worker builds arguments from the schema alone:
small tensors of one shape (2x3 first, then others), tensor lists of one tensor, then of two,
ints 1 or 0, int lists of the tensor's shape or ``[1]`` (of their length where the schema fixes it:
``adaptive_avg_pool2d(x, [1, 1])``), optional tensors and scalars given or
left to their defaults, fillers for floats, scalars and bools, defaults for the rest. The same
calls also probe every overload samples reach, beside the samples' own calls: a set is a
may-accept set, and ``remainder.Scalar`` is seen only inside ``take_along_dim``,
``count_nonzero`` only with dims its uint16 kernel lacks (``migrate.evidence.derived``). An overload with a dtype argument
(``ScalarType``) is left out: what it accepts may follow that argument, which probing
never varies.
The tensors take one base dtype (float32, then int64, bool, complex64; for float32 also
all but one argument given int64, for an overload that wants an index beside its data,
``_cummax_helper``, and then that one with the last dimension dropped, a target beside its
input: ``nll_loss`` of a 2x3 input and 2 classes). For up to ``BASES`` base dtypes, the first combination ATen accepts
becomes a call that ``migrate.evidence.probe.prober.probe_call`` probes, dtype by dtype,
as it probes a recorded one. An overload needing an argument of another kind (a string,
a storage, a dimension name) or refusing every combination is left out.

What this shows is what ATen accepted for such a call: sound where it accepted, and
possibly narrow where the data was the reason it refused (the same bound as probing a
recorded call). For an overload no sample, alias, group or metadata kernel speaks for,
``migrate.infer`` therefore widens these plans by torchlib's dtypes.

The calls depend on the torch release only: the reports are cached in the sweep cache
folder. Overloads are split into chunks run in parallel workers; a call that ends its
worker (a crash, a hang past the probe timeout) leaves that overload out, and a new worker
goes on after it. Seeds come from the overload's name, so the results do not depend on
the chunking or on ``-j``.
"""

from __future__ import annotations

import functools
import itertools
import zlib
from collections.abc import Iterator
from typing import Any

from migrate.cache import StageCache
from migrate.evidence.probe.merge import probe_plans
from migrate.model.plan import OverloadPlan
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT, call_aten
from migrate.runtime.runs import SCHEMA_CALL, ProbedCall, overload_key
from migrate.runtime.worker_stage import WorkerStage, each_overload, listed_in_worker, reports_by_chunk

BASES = 2  # calls probed per overload, each of another base dtype
_SHAPES = ((2, 3), (4,), (1, 2, 4, 4), ())
_BASE_DTYPES = ("float32", "int64", "bool", "complex64")
_INTS = (1, 0)
_FILLERS = {"float": 0.5, "Scalar": 1, "number": 1, "bool": False, "SymFloat": 0.5, "Device": "cpu"}
_TENSOR_LISTS = ("List[Tensor]", "List[Optional[Tensor]]", "Optional[List[Tensor]]")
REFUSED = "refused"  # the key of a report that holds ATen's last refusal instead of probes
_OPTIONAL_FILLERS = {"Optional[Scalar]": "Scalar", "Optional[number]": "number"}  # given with the optional tensors, else left to their default


def writes_out(schema: Any) -> bool:
    """Whether the overload writes a keyword-only ``out=`` tensor: its dtypes follow the functional overload's calls."""
    return any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def takes_a_dtype(schema: Any) -> bool:
    """Whether the schema has a ``ScalarType`` argument (the JIT holds it as an int): what the overload accepts,
    and the dtypes it returns, may follow it. Such overloads get no schema call (``targets``); the catalogue's
    calls of them (``catalogue_calls``) say their returns tell nothing of other calls."""
    return any("ScalarType" in str(getattr(a, "real_type", a.type)) for a in schema.arguments)


def targets() -> list[Any]:
    """The overloads to build calls for: a CPU-reaching kernel, a tensor slot, not out=, no dtype argument
    (a probe varies tensors, never the dtype a call asks for: ``sparse_csr_tensor`` with ``dtype=None``
    accepts only float32 values)."""
    found = []
    for func in torch_private.cpu_overloads():
        slots = torch_private.overload_slots(func)
        if (slots.arguments or slots.returns) and not writes_out(func._schema) and not takes_a_dtype(func._schema):
            found.append(func)
    return found


def seeded_tensor(shape: tuple[int, ...], dtype: Any, seed: int) -> Any:
    """A small tensor of this shape and dtype, the same for the same seed: values in [0, 2) for floating and
    complex dtypes, 0 or 1 otherwise (valid indices into any dimension of 2 or more)."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.rand(shape, generator=generator, dtype=torch.float32).mul_(2).to(dtype)
    return torch.randint(0, 2, shape, generator=generator).to(dtype)


def schema_arguments(schema: Any, dtypes: tuple[Any, Any, int | None, bool], combination: tuple, seed: int, given: dict[str, Any] | None = None):
    """Positional and keyword arguments for one combination (of ``argument_combinations``), or None when an
    argument cannot be made; the catalogue's calls give their recipe's values and let this build the rest.

    ``dtypes`` is (the tensors' dtype, another dtype, the tensor argument given that other one,
    whether that one lacks the last dimension); ``given`` are values by argument name.
    """
    shape, number, sizes, optional, length = combination
    dtype, other, at, short = dtypes
    named: dict[str, Any] = {}
    tensors = 0
    for index, argument in enumerate(schema.arguments):
        kind = str(getattr(argument, "real_type", argument.type))  # Layout, not the int the JIT holds it as
        required = not argument.has_default_value() and not kind.startswith("Optional[")
        own_shape = shape[:-1] if short and tensors == at else shape
        if given and argument.name in given:
            named[argument.name] = given[argument.name]
        elif kind == "Tensor" or (kind == "Optional[Tensor]" and optional):
            named[argument.name] = seeded_tensor(own_shape, other if tensors == at else dtype, seed + index)
            tensors += 1
        elif kind in _TENSOR_LISTS and (required or optional):
            chosen = other if tensors == at else dtype
            named[argument.name] = [seeded_tensor(own_shape, chosen, seed + index + 100 * i) for i in range(length)]
            tensors += 1
        elif kind in ("int", "SymInt") and required:
            named[argument.name] = number
        elif kind in ("List[int]", "List[SymInt]") and required:
            length = argument.N  # ``int[2] output_size``: exactly that many, the last dimensions' sizes or the int repeated
            named[argument.name] = (list(shape)[-length:] if sizes else [number] * length) if length else list(shape) if sizes else [number]
        elif kind in _FILLERS and required:
            named[argument.name] = _FILLERS[kind]
        elif kind in _OPTIONAL_FILLERS and optional:  # clamp(self, min, max) needs one of its optional bounds
            named[argument.name] = _FILLERS[_OPTIONAL_FILLERS[kind]]
        elif required:
            return None
        elif not argument.has_default_value():  # native_dropout's ``bool? train`` has no default: None is passed
            named[argument.name] = None
    return torch_private.call_arguments(schema, named)


def argument_combinations(schema: Any) -> list[tuple[tuple[int, ...], int, bool, bool, int]]:
    """The combinations ``schema_arguments`` tries, in order: (shape, int, int lists as the shape, optional
    tensors given, tensors in a list), varying only what the schema has.

    A list of one tensor comes first: ``index(self, [mask])`` with a mask of ``self``'s shape.
    """
    kinds = {str(getattr(a, "real_type", a.type)) for a in schema.arguments}
    numbers = _INTS if kinds & {"int", "SymInt"} else _INTS[:1]
    sizes = (True, False) if kinds & {"List[int]", "List[SymInt]"} else (True,)
    optional = (True, False) if kinds & {"Optional[Tensor]", "Optional[List[Tensor]]", "List[Optional[Tensor]]", *_OPTIONAL_FILLERS} else (True,)
    lengths = (1, 2) if kinds & set(_TENSOR_LISTS) else (2,)
    return list(itertools.product(_SHAPES, numbers, sizes, optional, lengths))


def _assignments(slots: Any) -> Iterator[list[tuple[str, int | None, bool]]]:
    """Per base dtype, the ways to give the tensors dtypes, tried in turn: all of it, then (float32 only) all
    but one argument given int64, for an overload that wants an index beside its data (``_cummax_helper``),
    then that one without the last dimension, a target beside its input (``nll_loss``)."""
    tensors = len(slots.arguments)
    for dtype in _BASE_DTYPES:
        mixed = range(tensors) if dtype == _BASE_DTYPES[0] and tensors > 1 else ()
        yield [(dtype, None, False), *((dtype, at, short) for short in (False, True) for at in mixed)]


def called(func: Any, made: tuple[list[Any], dict[str, Any]], seed: int, timeout: float, sample: str, refusals: list[str] | None) -> Any:
    """The call made once (seeded, bounded by ``timeout``), as a CapturedCall of its arguments as they were before
    it; None when ATen refused it, its message appended to ``refusals``. ``sample``: the base dtype's name."""
    from migrate.runtime.recorders import CapturedCall, call_has_elements, cloned, slot_dtypes  # imports torch: workers only (the --op fast path)

    slots = torch_private.overload_slots(func)
    args, kwargs = made
    kept = cloned((args, kwargs))
    outcome = call_aten(lambda: func(*args, **kwargs), timeout, seed)
    if outcome.refused:
        if refusals is not None:
            refusals.append(outcome.refusal)
        return None
    nonempty = call_has_elements(slots, args, kwargs, outcome.returned)
    args, kwargs = kept
    return CapturedCall(func, slots, tuple(args), kwargs, slot_dtypes(slots, args, kwargs, outcome.returned), True, sample, nonempty)


def built_calls(func: Any, timeout: float, given: dict[str, Any] | None = None, refusals: list[str] | None = None) -> list[Any]:
    """Calls ATen accepts, as CapturedCalls: per base dtype the first combination that works, at most BASES
    (``given``: values by argument name; ``refusals`` receives why each combination failed, in order)."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    slots = torch_private.overload_slots(func)
    seed = zlib.crc32(slots.name.encode())
    combinations = argument_combinations(func._schema)
    calls = []
    for assignments in _assignments(slots):
        for (dtype_name, at, short), combination in itertools.product(assignments, combinations):
            dtypes = (getattr(torch, dtype_name), torch.int64, at, short)
            made = schema_arguments(func._schema, dtypes, combination, seed, given)
            if made is None:
                if refusals is not None:
                    refusals.append(f"no value for an argument of this schema: {func._schema}")
                return calls
            if (call := called(func, made, seed, timeout, dtype_name, refusals)) is not None:
                calls.append(call)
                break
        if len(calls) == BASES:
            break
    return calls


def _reports_of(name: str) -> Iterator[dict[str, Any]]:
    """The probes of each call built for the overload, else ATen's last refusal of one (``{"overload", REFUSED}``)."""
    from migrate.evidence.probe.prober import probe_call  # imports torch: workers only (the --op fast path)

    refusals: list[str] = []
    calls = built_calls(torch_private.aten_overload(name), PROBE_TIMEOUT, refusals=refusals)
    for number, call in enumerate(calls):
        yield probe_call(call, f"{name}\0{number}", PROBE_TIMEOUT)
    if not calls and refusals:
        yield {"overload": name, REFUSED: refusals[-1]}


schema_call_reports = functools.partial(each_overload, _reports_of)
"""The job: for each overload named, announced, the probes of the call built for it (if one was)."""


def probe_built_calls(names: list[str], jobs: int | None, job: Any = schema_call_reports, what: str = "schema calls") -> tuple[list[dict[str, Any]], list[str]]:
    """Reports for every overload named, in name order, and those that ended their worker. An overload no
    call could be built for reports ATen's last refusal instead (``{"overload": ..., REFUSED: message}``).
    ``job`` builds and probes the calls of a chunk of names (``catalogue_calls`` passes its own)."""
    reports, lost = reports_by_chunk(names, job, what, jobs)
    return sorted(reports, key=lambda report: report["overload"]), lost


def _probed(reports: list[dict[str, Any]]) -> tuple[ProbedCall, ...]:
    return tuple(ProbedCall.from_report(SCHEMA_CALL, report) for report in reports if REFUSED not in report)


def _names_report(_: None) -> Iterator[list[str]]:
    yield [torch_private.overload_slots(f).name for f in targets()]


STAGE = WorkerStage(
    "schema-calls",
    lambda jobs: probe_built_calls(listed_in_worker(_names_report, "the overloads a CPU call reaches"), jobs)[0],
    "building calls from schemas, in workers (once)",
    _probed,
)
"""Each built call's report (or the overload's last refusal); a run reads the probed calls."""


def cached_refusals(cache: StageCache) -> dict[str, str]:
    """Per overload no call could be built for ('affine_grid_generator'), ATen's last refusal (empty before they were built)."""
    reports = STAGE.stored(cache) or []
    return {key: r[REFUSED] for r in reports if REFUSED in r and (key := overload_key(r["overload"])) is not None}


def schema_call_plans(
    calls: tuple[ProbedCall, ...], uniform: frozenset[tuple[str, str]] = frozenset(), free_returns: frozenset[str] = frozenset()
) -> dict[str, OverloadPlan]:
    """Per overload, the variables its built calls' probes show, over the slots such a call can speak for.

    A return no argument's dtype carries takes the dtypes the calls returned while their probes cast the
    inputs to every dtype (``isin.Tensor_Scalar -> bool``, ``_add_relu.Tensor``'s return apart from
    ``self``), as a sample's probes give it. An overload with no tensor input (a factory's default dtype)
    has no such probes: what it returned here says nothing of other calls, so it stays free; the
    overloads with a ``dtype=`` argument are not built here at all, and those the catalogue builds
    (``free_returns``: ``_sparse_sum.dtype``, or a quantized return) keep their returns free.
    A list's elements all had one dtype here; unless ATen refused a list of mixed dtypes
    (``uniform``: (overload, slot), found by ``catalogue_calls``), where ``T[]`` says just that,
    whether it takes such lists was never tried, so list slots stay free too. A returned list is ATen's own
    output, not a list it takes: it keeps the dtypes its elements had (``split.sizes``, ``where``), unless an
    argument's list stays free, whose mixed elements a returned list may carry (``broadcast_tensors``).
    """
    lists: dict[str, set[str]] = {}  # per overload, its slots that held a list whose elements may differ
    for call in calls:
        key = overload_key(call.overload)
        lists.setdefault(key, set()).update(n for n, dtypes in call.slots if isinstance(dtypes, tuple) and (key, n) not in uniform)
    plans = {}
    for name, plan in probe_plans(calls).items():
        returns = {slot for v in plan.variables for slot in v.binds if slot.startswith("return.")}
        free_lists = lists[name] if any(not n.startswith("return.") for n in lists[name]) else set()  # a returned list alone stays typed
        free = free_lists | (returns if name in free_returns else set())
        kept = plan.kept({slot for v in plan.variables for slot in v.binds} - free)
        if any(not slot.startswith("return.") for v in kept.variables for slot in v.binds):
            plans[name] = OverloadPlan(name, kept.variables, kept.conflicts)
    return plans
