"""Probing, in a sweep worker: recorded calls made again with tensor slots cast to other dtypes.

OpInfo samples show which dtypes were passed, not which ATen accepts. For each call a
``CallCapture`` kept (the first few of each overload with distinct input dtypes), this
module calls the overload again, once per dtype of the universe (every dtype a CPU
tensor can be cast to in this torch), with:

1. one tensor slot cast alone (the others as recorded);
2. all slots that had one dtype in the call cast together (a variable as the call shows it);
3. of those, the slots no dtype could be cast to alone, together (a variable as probing
   shows it), when they are fewer.

Accepted means the call returned (with its returns' dtypes); a rejection keeps its
message. Where an argument gates the dtypes (``GATES``: a ``dtype=`` argument, a scalar
(a float one promotes an integer tensor, so it is not tried at a floating or complex dtype), ``train``, ``half_to_float``; and a tensor cast alone beside
dimensioned ones, as a 0-dim tensor: ``zero_dim_gate``), a dtype refused as recorded is tried again with the argument at the value
that lets more dtypes in: ``mean(int64 tensor, dtype=torch.float32)`` is a valid call, so
``mean`` may accept int64. A ``dtype=`` argument is also tried at the dtype cast to (``CAST_DTYPE``):
``sparse_csr_tensor(crow, col, float64 values, dtype=torch.float64)`` is a valid call, though the
same values beside ``dtype=None`` (float32) are refused. Such an acceptance names the setting (``gated``). The unmodified call is made first: if it fails now (state or data it depended
on), nothing of it is probed. Calls run on the captured clones, cloned again per probe
for an overload that writes to an argument (one that writes nothing has each small slot cast once
per dtype, for every probe and gate that casts it so); every probe starts from its own fixed seed.
Within an OpInfo, a probe that repeats an earlier one but for its tensors' values (the same
overload, dtype at every slot, shapes and strides, other arguments and gate) takes that one's
answer (``Answers``) when ATen accepted it or refused it naming a dtype: the diagonal probes of
an overload's second and third calls, and of a sibling's second, are mostly such repeats. A
refusal naming no dtype (an index out of range) may depend on the values, and is asked again.

Then the in-place and out= siblings of the probed calls' overloads are called and probed the same
way, on calls built from those calls (``migrate.evidence.probe.siblings``).

Which calls: an OpInfo probes up to PROBE_CALLS calls of the overloads its samples call
themselves or that it is about, one call of those it reaches only inside others when no
OpInfo is about them (``detach``), none of the rest (``clone`` runs inside every OpInfo:
the ``clone`` OpInfo probes it); the capture chooses which (``CallCapture.chosen``). That
depends on the OpInfo database only, so results are the same for every ``jobs`` and
selection.

Bounds: each probe call gets ``timeout`` seconds, enforced by SIGALRM with its default
action, which ends the worker even inside a kernel that never returns to Python; the
sweep records that as a probe timeout, and a crash as a probe crash, after the
observations are safe (probing runs once every sample has run). The address space is
capped while probing, so a probe asking for absurd memory fails instead of swapping.
Importing this module imports torch and the OpInfo database, and reads both (the dtype
universe, every OpInfo's operator names): the sweep's fork server does it once for all
workers.
"""

from __future__ import annotations

import functools
import time
import warnings
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

import torch

from migrate.runtime import torch_private
from migrate.evidence.probe.contexts import context_reports
from migrate.evidence.probe.siblings import sibling_calls, written_slots
from migrate.runtime.aten_call import bounded, call_aten
from migrate.runtime.recorders import CapturedCall, argument_of, dtype_name, dtypes_of
from migrate.model.dtypes import DType
from migrate.model.verdict import names_a_dtype

PROBE_CALLS = 3  # calls probed per overload and OpInfo, each with input dtypes no other one had
CAST_KEPT_ELEMENTS = 1 << 16  # a probed call's slot with at most this many elements is cast once per dtype, then reused


@functools.cache
def dtype_universe() -> tuple[torch.dtype, ...]:
    """Every dtype of this torch that a CPU tensor can be cast to, in the canonical order."""
    found = {}
    for value in vars(torch).values():
        if isinstance(value, torch.dtype) and value not in found:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # complex32 is 'experimental'
                    torch.zeros(1).to(value)
            except Exception:  # quantized and bit-packed dtypes: no plain tensor of them
                continue
            found[value] = DType(dtype_name(value)).sort_key
    return tuple(sorted(found, key=found.__getitem__))


@functools.cache
def _operators_with_opinfos() -> frozenset[str]:
    return frozenset(name for op in torch_private.op_db() for name in torch_private.opinfo_operator_names(op))


def budget(op: Any) -> Callable[[str, bool], int]:
    """How many calls of an overload ('aten::add.Tensor', called directly or not) the OpInfo ``op`` probes."""
    own = torch_private.opinfo_operator_names(op)

    def calls(overload: str, direct: bool) -> int:
        namespace, _, name = overload.partition("::")
        operator = name.split(".", 1)[0]
        if namespace != "aten":
            return 0
        if direct or operator in own:
            return PROBE_CALLS
        return 0 if operator in _operators_with_opinfos() else 1

    return calls


def about(op: Any) -> Callable[[CapturedCall], bool]:
    """Whether the OpInfo ``op`` is about a captured call: its samples made it, or it is one of the op's own operators.
    Only such calls give sibling calls (``migrate.evidence.probe.siblings``): ``add.Tensor`` runs inside dozens of
    OpInfos, and its siblings need probing once, by the ``add`` OpInfo."""
    own = torch_private.opinfo_operator_names(op)
    return lambda call: call.direct or call.slots.name.removeprefix("aten::").split(".", 1)[0] in own


def _named(dtypes: Any) -> Any:
    """A slot's dtype(s) as names, for reports: 'float32', a tuple for a list, None."""
    if isinstance(dtypes, tuple):
        return tuple(None if d is None else dtype_name(d) for d in dtypes)
    return None if dtypes is None else dtype_name(dtypes)


def _single(dtypes: Any) -> torch.dtype | None:
    """The one dtype of a slot in a call (a list's common element dtype), or None (none, or mixed)."""
    if isinstance(dtypes, tuple):
        elements = {d for d in dtypes if d is not None}
        return next(iter(elements)) if len(elements) == 1 else None
    return dtypes


def _cast(value: Any, dtype: torch.dtype) -> Any:
    """A slot's value with its tensors cast (a list's elements; the holes of a ``Tensor?[]`` stay None)."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _elements(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    return sum(map(_elements, value)) if isinstance(value, (list, tuple)) else 0


def _fresh(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh(v) for v in value)
    return value


def describe(call: CapturedCall) -> str:
    """'aten::add.Tensor (self float32, other float32)': the call as a failure message names it."""
    inputs = [f"{name} {_named(d)}" for (_, name, _, _), d in zip(call.slots.arguments, call.dtypes) if d is not None]
    return f"{call.slots.name} ({', '.join(inputs)})"


def _scalar_type_gate(value: Any) -> Any:
    return torch.float32 if value != torch.float32 else None


def _number_gate(value: Any) -> Any:
    return value + 0.5 if isinstance(value, int) and not isinstance(value, bool) else None


GATES: dict[str, Callable[[str, Any], Any]] = {
    # per argument kind (the schema's type, or a bool's name): the value that lets more dtypes in, None when it has it
    "ScalarType": lambda name, value: _scalar_type_gate(value),  # mean(int64, dtype=float32): ints reduce into floats
    "number": lambda name, value: _number_gate(value),  # clamp(uint16, 0.5, 3.5) computes in float: a float scalar promotes
    "train": lambda name, value: False if value is not False else None,  # dropout off returns its input, any dtype
    "half_to_float": lambda name, value: not value,  # _softmax's other half of its dtype rule
}


def _promotes_nothing(gate: tuple[int, str, bool, Any], dtype: torch.dtype) -> bool:
    """Whether a gate cannot let ``dtype`` in: a float Python number (the ``number`` gate) moves integer and bool
    tensors to a floating computation, and leaves a floating or complex one as it was (never taken in a full run)."""
    value = gate[3]
    return isinstance(value, float) and (dtype.is_floating_point or dtype.is_complex)


class _CastDtype:
    """A gate's value: the dtype the probe casts its slots to (a ``dtype=`` argument that the values must match)."""

    def __repr__(self) -> str:
        return "the cast dtype"


CAST_DTYPE = _CastDtype()


def _schema_arguments(call: CapturedCall) -> Iterator[tuple[int, Any, str, bool]]:
    """The captured call's schema arguments: (position, argument, its type as text, whether it is passed by keyword)."""
    schema = getattr(call.func, "_schema", None)  # a plain function standing for an overload has none
    for position, argument in enumerate(schema.arguments if schema is not None else ()):
        yield position, argument, str(getattr(argument, "real_type", argument.type)), argument.kwarg_only or position >= len(call.args)


def _recorded(call: CapturedCall, position: int, argument: Any, keyword: bool) -> Any:
    """An argument's value in the captured call (its default where the call left it out)."""
    return call.kwargs.get(argument.name, argument.default_value) if keyword else call.args[position]


def gates(call: CapturedCall) -> list[tuple[int, str, bool, Any]]:
    """The arguments of a captured call that gate its dtypes, with the value to try: (position, name, keyword-only, value);
    a ``ScalarType`` argument also at ``CAST_DTYPE``, after its own alternative."""
    found = []
    for position, argument, kind, keyword_only in _schema_arguments(call):
        key = "ScalarType" if "ScalarType" in kind else "number" if kind in ("number", "Optional[number]") else None
        key = argument.name if kind in ("bool", "Optional[bool]") else key
        if key not in GATES:
            continue
        alternative = GATES[key](argument.name, _recorded(call, position, argument, keyword_only))
        if alternative is not None:
            found.append((position, argument.name, keyword_only, alternative))
        if key == "ScalarType":
            found.append((position, argument.name, keyword_only, CAST_DTYPE))
    return found


def number_kinds(call: CapturedCall) -> list[list[str]]:
    """``[[name, kind], ...]``: each Scalar argument of the call as recorded that holds a Python number, with its
    kind (``bool``, ``int``, ``float``, ``complex``): what it does to the promoted tensors' computation dtype."""
    found = []
    for position, argument, kind, keyword_only in _schema_arguments(call):
        if kind in ("number", "Optional[number]"):
            value = _recorded(call, position, argument, keyword_only)
            if isinstance(value, (bool, int, float, complex)):
                found.append([argument.name, type(value).__name__])
    return found


class _ZeroDim:
    """A gate's value: the argument itself, as a 0-dim tensor of its first element."""

    def __repr__(self) -> str:
        return "0-dim"


ZERO_DIM = _ZeroDim()


def zero_dim_gate(call: CapturedCall, index: int) -> list[tuple[int, str, bool, Any]]:
    """For one tensor argument cast alone beside another with dimensions: the same argument as a 0-dim tensor.

    ATen computes in the dimensioned operands' dtype then and casts the 0-dim one to it, so
    ``x - torch.tensor(1.0, dtype=torch.float8_e4m3fn)`` runs on a float32 ``x``, though
    ``x - y`` with ``y`` float8 of ``x``'s shape does not.

    None for an ``out=`` tensor: it is not promoted, and a 0-dim one is only resized before the same
    dtype check, so the call could only be refused again. (An in-place ``self`` keeps the gate:
    ``set_`` takes a 0-dim ``self`` of a dtype it refuses in the source's shape.)
    """
    position, name, keyword_only, _ = call.slots.arguments[index]
    if keyword_only and getattr(call.func, "_schema", None) is not None and index in written_slots(call):
        return []
    arguments = [argument_of(call.args, call.kwargs, slot) for slot in call.slots.arguments]
    others = [a for i, a in enumerate(arguments) if i != index and isinstance(a, torch.Tensor) and a.dim() > 0 and a.numel() > 0]
    own = arguments[index]
    if not others or not isinstance(own, torch.Tensor) or own.dim() == 0 or own.numel() == 0:
        return []
    return [(position, name, keyword_only or position >= len(call.args), ZERO_DIM)]


def _gate_text(gate: tuple[int, str, bool, Any], dtype: torch.dtype) -> str:
    """'dtype=torch.float32', 'other 0-dim': the setting of a gating argument, as evidence names it (``dtype``: the cast one)."""
    return f"{gate[1]} {gate[3]}" if gate[3] is ZERO_DIM else f"{gate[1]}={dtype if gate[3] is CAST_DTYPE else gate[3]}"


Answers = dict[tuple[Any, ...], tuple[tuple[Any, ...] | None, str]]  # an OpInfo's probe answers by the call made


def _layout(value: Any) -> Any:
    """A value as the key of a probe's answer: a tensor by shape and strides (its dtype is keyed apart), others as they print."""
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.stride() if value.layout == torch.strided else str(value.layout))
    if isinstance(value, (list, tuple)):
        return tuple(_layout(v) for v in value)
    return repr(value)


class _Prober:
    """Calls one captured call again with some slots cast; returns (returns' dtype names, '') or (None, message)."""

    def __init__(self, call: CapturedCall, label: str, timeout: float, answers: Answers | None = None):
        self.call = call
        self.label = label
        self.timeout = timeout
        self.count = 0
        self.answers = answers
        self._casts: dict[tuple[int, torch.dtype], Any] = {}

    def __call__(
        self, cast: dict[int, torch.dtype], gate: tuple[int, str, bool, Any] | None = None
    ) -> tuple[tuple[Any, ...] | None, str]:
        self.count += 1  # an answer given again still takes its seed: the calls after it keep theirs
        if self.answers is None:
            return self._made(cast, gate)
        dtypes = list(self._recorded)
        for index, dtype in cast.items():
            dtypes[index] = dtype
        key = (self._layout, *dtypes, gate)
        answer = self.answers.get(key)
        if answer is None:
            answer = self._made(cast, gate)
            if answer[0] is not None or names_a_dtype(answer[1]):
                self.answers[key] = answer
        return answer

    @functools.cached_property
    def _layout(self) -> str:
        """The call but its tensors' dtypes and values: the overload, each tensor's shape and strides, the other arguments
        (as text, whose hash Python keeps)."""
        return repr((self.call.slots.name, id(self.call.func), _layout(self.call.args), _layout(sorted(self.call.kwargs.items()))))

    @functools.cached_property
    def _recorded(self) -> tuple[Any, ...]:
        return self.call.dtypes[: len(self.call.slots.arguments)]

    def _made(self, cast: dict[int, torch.dtype], gate: tuple[int, str, bool, Any] | None) -> tuple[tuple[Any, ...] | None, str]:
        called = call_aten(lambda: self._cast_call(cast, gate), self.timeout, zlib.crc32(f"{self.label}\0{self.count}".encode()))
        if called.refused:  # ATen refused these dtypes (or a tensor could not take one): the finding
            return None, called.refusal
        slots = self.call.slots
        outs = called.returned if slots.returns_tuple else (called.returned,)
        return tuple(_named(dtypes_of(outs[position], holds_list)) for position, _, holds_list in slots.returns), ""

    def _cast_call(self, cast: dict[int, torch.dtype], gate: tuple[int, str, bool, Any] | None) -> Any:
        """The call with the ``cast`` slots cast and the gating argument set."""
        args, kwargs = self._arguments(cast)
        if gate is not None:
            position, name, keyword_only, value = gate
            if value is ZERO_DIM:
                value = (kwargs[name] if keyword_only else args[position]).reshape(-1)[0].clone()
            elif value is CAST_DTYPE:
                value = next(iter(cast.values()))
            if keyword_only:
                kwargs[name] = value
            else:
                args[position] = value
        return self.call.func(*args, **kwargs)

    def _cast_once(self, index: int, value: Any, dtype: torch.dtype) -> Any:
        """A small slot of an overload that writes nothing, cast once per dtype for every probe (and gate) that casts it so."""
        key = (index, dtype)
        if key not in self._casts:
            cast = _cast(value, dtype)
            if _elements(cast) > CAST_KEPT_ELEMENTS:
                return cast
            self._casts[key] = cast
        return self._casts[key]

    def _arguments(self, cast: dict[int, torch.dtype]) -> tuple[list[Any], dict[str, Any]]:
        """The captured arguments with the ``cast`` ones cast; all tensors copied for an overload that mutates."""
        call, slots = self.call, self.call.slots
        args, kwargs = list(call.args), dict(call.kwargs)
        for index, (position, name, keyword_only, _) in enumerate(slots.arguments):
            in_kwargs = keyword_only or position >= len(args)
            value = kwargs.get(name) if in_kwargs else args[position]
            if index in cast:
                value = _cast(value, cast[index]) if slots.mutates else self._cast_once(index, value, cast[index])
            elif slots.mutates:
                value = _fresh(value)
            else:
                continue
            if in_kwargs:
                kwargs[name] = value
            else:
                args[position] = value
        return args, kwargs


def probe_call(
    call: CapturedCall, label: str, timeout: float, alone: Collection[int] | None = None, answers: Answers | None = None
) -> dict[str, Any]:
    """One captured call's probes, as the sweep's report: the call as recorded, and per set of
    slots cast ``[slots, [[dtype, returns' dtypes], ...accepted], [[dtype, message], ...refused], [[dtype, gate], ...]]``
    (the last: the accepted dtypes refused as recorded, with the gating argument's setting that let them in and
    ATen's refusal as recorded); ``numbers``: the Python kind of each Scalar argument as recorded (``[other, float]``),
    since a float one moves an integer tensor's computation to float32 (``le(uint16 tensor, 0.5)`` runs where
    ``le(uint16 tensor, 1)`` is refused);
    ``again`` is why the unmodified call failed when made again ('' when it ran): then nothing was probed.
    ``alone``: the argument indices cast alone (default: every one; a sibling's call casts only what it writes).
    """
    names = [name for _, name, _, _ in call.slots.arguments] + [name for _, name, _ in call.slots.returns]
    report = {
        "overload": call.slots.name,
        "sample": call.sample_dtype,
        "direct": call.direct,
        "nonempty": call.nonempty,
        "slots": [[name, _named(d)] for name, d in zip(names, call.dtypes)],
        "numbers": number_kinds(call),
        "again": "",
        "probes": [],
    }
    prober = _Prober(call, label, timeout, answers)
    _, report["again"] = prober({})
    if report["again"]:
        return report
    original = {i: _single(d) for i, d in enumerate(call.dtypes[: len(call.slots.arguments)]) if d is not None}
    universe = dtype_universe()
    probes: list[list[Any]] = report["probes"]
    gating = gates(call)

    def probe(cast: tuple[int, ...], skip: torch.dtype | None) -> bool:
        """Cast ``cast`` to each other dtype (refused: again with each gating argument set); whether ATen accepted any."""
        accepted, refused, gated = [], [], []
        cast_gating = gating + (zero_dim_gate(call, cast[0]) if len(cast) == 1 else [])
        for dtype in universe:
            if dtype is not skip:
                returns, message = prober(dict.fromkeys(cast, dtype))
                for gate in cast_gating if returns is None else ():
                    if _promotes_nothing(gate, dtype):
                        continue
                    returns, _ = prober(dict.fromkeys(cast, dtype), gate)
                    if returns is not None:
                        gated.append([dtype_name(dtype), _gate_text(gate, dtype), message])
                        break
                if returns is None:
                    refused.append([dtype_name(dtype), message])
                else:
                    accepted.append([dtype_name(dtype), returns])
        probes.append([[names[i] for i in cast], accepted, refused, gated])
        return bool(accepted)

    movable = {index for index in original if (alone is None or index in alone) and probe((index,), original[index])}
    for group in _groups(original):
        probe(group, original[group[0]])
        core = tuple(index for index in group if index not in movable)
        if alone is None and 1 < len(core) < len(group):
            probe(core, original[group[0]])
    return report


def _groups(original: dict[int, torch.dtype | None]) -> list[tuple[int, ...]]:
    """Argument indices that had one dtype in the call, two or more of them, by first index."""
    by_dtype: dict[torch.dtype, list[int]] = {}
    for index, dtype in original.items():
        if dtype is not None:
            by_dtype.setdefault(dtype, []).append(index)
    return sorted(tuple(indices) for indices in by_dtype.values() if len(indices) > 1)


def probe_reports(
    calls: Iterable[CapturedCall], label: str, timeout: float, about: Callable[[CapturedCall], bool] = lambda call: True
) -> Iterator[dict[str, Any]]:
    """Reports for the sweep: ``{"probing": description}`` before each call, then ``{"probed": ...}``, then the CPU time.

    ``label`` (the OpInfo) and each call's position make the seeds, so results do not depend on the worker.
    """
    started = time.process_time()
    calls = list(calls)
    answers: Answers = {}
    with bounded():
        for number, call in enumerate(calls):
            yield {"probing": describe(call)}
            report = probe_call(call, f"{label}\0{number}", timeout, answers=answers)
            yield {"probed": report}
            again = _Prober(call, f"{label}\0{number}\0contexts", timeout, answers)
            for context in context_reports(call, report, again, dtype_universe(), dtype_name):
                yield {"probed": context}
        for number, call in enumerate(sibling_calls(c for c in calls if about(c))):  # in-place and out= siblings of the calls' overloads
            yield {"probing": describe(call)}
            yield {"probed": probe_call(call, f"{label}\0sibling\0{number}", timeout, written_slots(call), answers)}
    yield {"probe_seconds": time.process_time() - started}


def make_tables() -> None:
    """The tables every probe reads, made once where workers fork from (``migrate.evidence.probe.preloaded``)."""
    try:
        dtype_universe(), _operators_with_opinfos()
    except torch_private.TorchAPIChanged:
        pass  # a fork server must not die of it: each worker then fails with the one-line error
