"""Calls that show whether ATen promotes an overload's arguments, made in workers and cached.

For every overload a CPU call reaches that has two or more tensor or Scalar inputs (positional,
``Tensor``, ``Tensor?``, ``Tensor[]``, ``Scalar``), or that torch's refs declare promoting, a
worker builds a call from the schema (``migrate.evidence.probe.schema_calls``) and, for each
candidate set of promoting arguments (the refs' set first, then every positional tensor and
Scalar input, then each of those but one), makes:

- **mixed calls**, non-empty: int64 with float32, bool with float16 and int32 with int64 (each
  tensor in turn the lower one; bitwise ops have no float kernel), each
  tensor as a 0-dim float64 beside float32 ones, a Python float beside int64 tensors (a
  promoting Scalar, else in a tensor's place where the schema lets a number in) and a Python int
  beside bool ones (a promoting Scalar: ``bitwise_left_shift(bool tensor, 1)`` runs in int64, though
  no shift has a float kernel);
- **diagonal calls**: every promoted tensor at one dtype, for each dtype of the universe, and each promoting
  Scalar a Python number of no higher kind than that dtype (``le(bool tensor, True)``: ``1`` would move the
  computation to int64); where only numbers promote, a number of that dtype's own kind (``where.Scalar``'s
  ``True``, ``1``, ``1.5``, ``1j``).

A loss's call refused is made again with ``reduction`` none: ``l1_loss`` of integers runs, only
their mean has no dtype.

Each call keeps what it returned (the first return's dtype) or ATen's message, and the result
dtype torch's rules (``torch._prims_common.elementwise_dtypes``) predict for each promotion kind.
``migrate.infer.promotion_findings`` reads them. Data never fed to a kernel by a refusal to
promote: the promoted tensors hold values from 1 to 3 (``floor_divide`` by zero raises).

The calls depend on the torch release and this module only: a stage of their own. In-place
overloads are left out (a promoted result must also cast back to ``self``); so are those with a
``dtype`` argument, as for schema calls.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterator
from typing import Any

from migrate.evidence.probe import schema_calls
from migrate.model.promotion import KINDS
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT, call_aten
from migrate.runtime.worker_stage import WorkerStage, each_overload, listed_in_worker, reports_by_chunk

_PROMOTING_TYPES = {"Tensor": "tensor", "Optional[Tensor]": "tensor", "List[Tensor]": "list", "number": "scalar", "Optional[number]": "scalar"}
"""Schema types of inputs that may promote (a ``Scalar`` is a ``number`` to the JIT)."""
_REDUCTION = "reduction"  # a loss's reduction: 0 (none) lets integer losses run, as a dtype= argument would
_NOT_MADE = "Expected a value of type"  # the argument parser refused a number in a tensor's place: no call was made


def candidates(schema: Any) -> list[tuple[str, str]]:
    """Positional inputs that may promote, in schema order: (name, 'tensor' | 'list' | 'scalar')."""
    return [
        (a.name, _PROMOTING_TYPES[str(a.type)])
        for a in schema.arguments
        if not a.kwarg_only and str(a.type) in _PROMOTING_TYPES and a.alias_info is None
    ]


@functools.cache
def declared_rules() -> dict[str, tuple[tuple[int, ...], str]]:
    """torch's declared promotions by ATen operator name: (positions, kind). The refs' first; torch.onnx's generated
    table for an operator the refs do not wrap (``logit``: int_to_float of ``self``)."""
    onnx = {name: (positions, kind) for namespace, name, positions, _, kind in torch_private.onnx_promotion_rules() if namespace == "aten"}
    return {**onnx, **{name: (positions, kind) for name, positions, kind in torch_private.refs_type_promotions()}}


def _declared(schema: Any, rules: dict[str, tuple[tuple[int, ...], str]]) -> dict[str, Any] | None:
    """The refs' promotion of this overload, its positions mapped onto the schema's arguments, or None."""
    rule = rules.get(schema.name.removeprefix("aten::"))
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if rule is None or any(p >= len(positional) for p in rule[0]):
        return None
    return {"kind": rule[1], "args": [positional[p].name for p in rule[0]]}


def _argument_sets(schema: Any, declared: dict[str, Any] | None) -> list[list[str]]:
    """Candidate sets of promoting arguments, tried in turn (see the module's docstring)."""
    found = [declared["args"]] if declared else []
    inputs = [name for name, _ in candidates(schema)]
    if len(inputs) >= 2:
        found.append(inputs)
        if len(inputs) >= 3:
            found += [[n for n in inputs if n != left] for left in inputs]
    unique = []
    for names in found:
        if names not in unique:
            unique.append(names)
    return unique


def targets(rules: dict[str, tuple[tuple[int, ...], str]]) -> list[str]:
    """Overloads (``aten::add.Tensor``) to make calls for: a schema call target, not in-place, with two or more
    candidate inputs or a ref's promotion."""
    names = []
    for func in schema_calls.targets():
        schema = func._schema
        if schema.is_mutable or not torch_private.overload_slots(func).returns:
            continue
        if len(candidates(schema)) >= 2 or _declared(schema, rules) is not None:
            names.append(torch_private.overload_slots(func).name)
    return names


class _Caller:
    """Calls one overload with its promoted inputs replaced, from a call built from its schema."""

    def __init__(self, func: Any, args: list[Any], kwargs: dict[str, Any], timeout: float):
        import torch  # here: the parent imports this module without torch (the --op fast path)

        self.torch = torch
        self.func, self.timeout = func, timeout
        self.schema = func._schema
        self.positional = [a.name for a in self.schema.arguments if not a.kwarg_only]
        self.values = {name: args[i] for i, name in enumerate(self.positional) if i < len(args)}
        self.kwargs = kwargs
        self.seed = zlib.crc32(self.schema.name.encode())

    def value(self, name: str) -> Any:
        return self.values.get(name)

    def tensor(self, like: Any, dtype: Any, zero_dim: bool = False) -> Any:
        """A tensor of ``like``'s shape (or 0-dim), values 1 to 3, in ``dtype``."""
        torch = self.torch
        base = torch.empty(() if zero_dim else like.shape).uniform_(1, 3, generator=torch.Generator().manual_seed(self.seed))
        return base.to(dtype)

    def call(self, replaced: dict[str, Any]) -> tuple[Any, str, list[Any]]:
        """(the first return's dtype name or None, ATen's message or '', the promoted values in schema order)."""
        torch = self.torch
        values = dict(self.values, **replaced)
        last = max((self.positional.index(n) for n in values), default=-1)
        args = [values[n] if n in values else self._default(n) for n in self.positional[: last + 1]]
        outcome = call_aten(lambda: self.func(*args, **self.kwargs), self.timeout, self.seed)
        if outcome.refused:
            if _REDUCTION in self.positional and _REDUCTION not in replaced:  # a loss's mean of integers has no dtype
                returned, _, _ = self.call(dict(replaced, **{_REDUCTION: 0}))
                if returned is not None:
                    return returned, "", []
            return None, outcome.refusal, []
        out = outcome.returned
        first = out[0] if isinstance(out, (tuple, list)) else out
        if not isinstance(first, torch.Tensor) or first.numel() == 0:
            return None, "" if isinstance(first, torch.Tensor) else "returns no tensor", []
        return str(first.dtype).removeprefix("torch."), "", []

    def _default(self, name: str) -> Any:
        argument = next(a for a in self.schema.arguments if a.name == name)
        return argument.default_value


def _predicted(values: list[Any]) -> dict[str, list[str] | None]:
    """Per kind, the [computation, result] dtypes torch's rules give these promoted values (None: torch refuses to
    promote them). The computation dtype is the one the kernel is dispatched on, never the wider internal opmath
    type: the promoted dtype, which ``int_to_float`` and ``bool_to_long`` move to their result's."""
    found = _predicted_for(tuple(_promotion_signature(value) for value in values))
    return {kind: list(dtypes) if dtypes else dtypes for kind, dtypes in found.items()}


def _promotion_signature(value: Any) -> tuple[Any, ...]:
    """What torch's rules read of a promoted value: a tensor's dtype and whether it is 0-dim, a number's type."""
    if hasattr(value, "dtype"):
        return (value.dtype, value.dim() == 0)
    return (type(value),)


@functools.cache
def _predicted_for(signatures: tuple[tuple[Any, ...], ...]) -> dict[str, tuple[str, str] | None]:
    """``_predicted`` of values with these signatures, once per signature: the rules run in Python, and a
    diagonal call's values repeat across the overloads."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    values = [torch.empty(() if signature[1] else (1,), dtype=signature[0]) if len(signature) == 2 else signature[0](1) for signature in signatures]
    found = {}
    for kind in KINDS:
        try:
            promoted, _ = torch_private.promoted_dtypes(values, "no_opmath")
            _, result = torch_private.promoted_dtypes(values, kind)
        except torch_private.TorchAPIChanged:
            raise
        except Exception:
            found[kind] = None
            continue
        computation = result if kind in ("int_to_float", "bool_to_long") else promoted
        found[kind] = (_spelled(computation), _spelled(result))
    return found


def _units(caller: _Caller, names: list[str], kinds: dict[str, str]) -> list[tuple[str, int | None]] | None:
    """The promoted tensors: (argument, index in its list or None); None when one is missing from the call."""
    units = []
    for name in names:
        value = caller.value(name)
        if kinds[name] == "scalar":
            continue
        if kinds[name] == "list":
            if not isinstance(value, (list, tuple)) or not value:
                return None
            units += [(name, 0), (name, 1)]  # two elements, the first repeated when the call had one
        elif value is None:
            return None
        else:
            units.append((name, None))
    return units


def _assigned(caller: _Caller, names: list[str], kinds: dict[str, str], units, dtypes: list[tuple[Any, bool]], scalar: Any = None):
    """The replaced promoted values: each unit at (dtype, 0-dim); each promoting Scalar at ``scalar`` (None: as built)."""
    replaced: dict[str, Any] = {}
    for (name, index), (dtype, zero_dim) in zip(units, dtypes):
        value = caller.value(name)
        if index is None:
            replaced[name] = dtype if not hasattr(dtype, "is_floating_point") else caller.tensor(value, dtype, zero_dim)
        else:
            replaced.setdefault(name, []).append(caller.tensor(value[min(index, len(value) - 1)], dtype))
    for name in names:
        if kinds[name] == "scalar":
            replaced[name] = scalar if scalar is not None else caller.value(name)
    return replaced


def _own_kind(number: Any, dtype: Any) -> Any:
    """The Scalar as a Python number of no higher kind than ``dtype`` (bool, int, float, complex), so that a
    diagonal call computes in ``dtype``: a complex's real part, a float's integer part (1 where that is 0, as the
    promoted tensors hold 1 to 3), an integer's truth."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    if isinstance(number, complex) and not dtype.is_complex:
        number = number.real
    if isinstance(number, float) and not (dtype.is_floating_point or dtype.is_complex):
        number = int(number) or 1
    if isinstance(number, int) and not isinstance(number, bool) and dtype == torch.bool:
        number = bool(number)
    return number


def _of_kind(number: Any, dtype: Any) -> Any:
    """Where only numbers promote (``where.Scalar``), the Scalar as a Python number of ``dtype``'s own kind (True, 1,
    1.5, 1j), whatever it was built as: the numbers alone set the computation, each kind its dtype."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    if dtype == torch.bool:
        return True
    if dtype.is_complex:
        return 1j
    return 1.5 if dtype.is_floating_point else 1


def _promoted_values(names: list[str], replaced: dict[str, Any]) -> list[Any]:
    values = []
    for name in names:
        value = replaced.get(name)
        if isinstance(value, list):
            values += value
        elif value is not None:
            values.append(value)
    return values


def _mixed(units, has_scalar: bool) -> Iterator[tuple[str, list[tuple[Any, bool]], Any]]:
    """(description naming the promoted argument, each unit's (dtype, 0-dim), the promoting Scalars' value) of each mixed call."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    n = len(units)
    if n >= 2:
        for low, high in ((torch.int64, torch.float32), (torch.bool, torch.float16), (torch.int32, torch.int64)):
            for i in range(n):  # each in turn the lower one: two integers could meet a kernel's own refusal (addcdiv)
                yield f"{_spelled(low)} with {_spelled(high)} [{units[i][0]}]", [(low if j == i else high, False) for j in range(n)], None
        for i, (name, index) in enumerate(units):
            if index is None:
                text = f"0-dim float64 beside float32 [{', '.join(u[0] for j, u in enumerate(units) if j != i)}]"
                yield text, [(torch.float64, True) if j == i else (torch.float32, False) for j in range(n)], None
    if has_scalar and n >= 1:
        promoted = ", ".join(dict.fromkeys(u[0] for u in units))
        yield f"a Python float beside int64 [{promoted}]", [(torch.int64, False)] * n, 0.5
        yield f"a Python int beside bool [{promoted}]", [(torch.bool, False)] * n, 1
    elif n >= 2 and units[-1][1] is None:
        yield f"a Python float beside int64 [{', '.join(u[0] for u in units[:-1])}]", [(torch.int64, False)] * (n - 1) + [(0.5, False)], None


def _spelled(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _tried(caller: _Caller, names: list[str], kinds: dict[str, str], universe) -> dict[str, Any] | None:
    """One candidate set's mixed and diagonal calls: ``{"args", "tensors", "mixed": [[text, returned, message, predicted]],
    "diagonal": [[dtype, returned, message, predicted]]}``."""
    units = _units(caller, names, kinds)
    if units is None:
        return None
    has_scalar = any(kinds[n] == "scalar" for n in names)
    mixed = []
    for text, dtypes, scalar in _mixed(units, has_scalar):
        replaced = _assigned(caller, names, kinds, units, dtypes, scalar)
        returned, message, _ = caller.call(replaced)
        if _NOT_MADE in message:
            continue
        mixed.append([text, returned, message, _predicted(_promoted_values(names, replaced))])
    diagonal = []
    if not mixed or any(m[1] is not None for m in mixed):
        for dtype in universe:
            replaced = _assigned(caller, names, kinds, units, [(dtype, False)] * len(units))
            scalar = _own_kind if units else _of_kind
            replaced.update({n: scalar(replaced[n], dtype) for n in names if kinds[n] == "scalar"})
            returned, message, _ = caller.call(replaced)
            diagonal.append([_spelled(dtype), returned, message, _predicted(_promoted_values(names, replaced))])
    return {"args": names, "tensors": [n for n in names if kinds[n] != "scalar"], "mixed": mixed, "diagonal": diagonal}


def _reports_of(name: str) -> Iterator[dict[str, Any]]:
    """The overload's report: ``{"overload", "declared", "tried": [...]}``."""
    from migrate.evidence.probe.prober import dtype_universe  # imports torch: workers only (the --op fast path)

    func = torch_private.aten_overload(name)
    built = schema_calls.built_calls(func, PROBE_TIMEOUT)
    declared = _declared(func._schema, declared_rules())
    report = {"overload": name, "declared": declared, "tried": []}
    if built:
        caller = _Caller(func, list(built[0].args), dict(built[0].kwargs), PROBE_TIMEOUT)
        kinds = dict(candidates(func._schema))
        for names_ in _argument_sets(func._schema, declared):
            if not set(names_) <= set(kinds):
                continue
            tried = _tried(caller, names_, kinds, dtype_universe())
            if tried is not None:
                report["tried"].append(tried)
                if tried["diagonal"] and consistent_kinds(tried):
                    break
    yield report


promotion_reports = functools.partial(each_overload, _reports_of)
"""The job: for each overload named, announced, its report."""


def consistent_kinds(tried: dict[str, Any]) -> list[str]:
    """The kinds torch's rules agree with on these calls (none: these arguments are not seen to promote).

    Every promoted tensor argument was the one promoted in some mixed call that ran (``masked_select`` runs
    with a float ``self`` beside a bool ``mask``, never the other way round), diagonal calls ran in two
    computation dtypes or more (an argument that takes one dtype, ``scatter``'s index, is no promoted
    variable), every call that ran returned the kind's result dtype, and no call was refused whose
    computation dtype under the kind is one a diagonal call ran in, nor a mixed call whose promoted arguments'
    own dtype a diagonal call ran in too: ``lerp(float64 0-dim, float32, float32)`` is refused though float32
    lerp runs, ``addcdiv`` of integers is refused so it is not ``int_to_float``; ``bitwise_and(int64, float32)``
    is refused for want of a float kernel and ``sub(bool, float16)`` for a bool tensor, neither of which
    promotion contradicts.
    """
    calls = tried["mixed"] + tried["diagonal"]
    diagonal_ran = {dtype for dtype, returned, _, _ in tried["diagonal"] if returned is not None}
    promoted = {name for text, returned, _, _ in tried["mixed"] if returned is not None for name in _lower(text)}
    if len(tried["tensors"]) > 1 and not set(tried["tensors"]) <= promoted:
        return []
    found = []
    for kind in KINDS:
        ran = [(returned, predicted[kind]) for _, returned, _, predicted in calls if returned is not None]
        refused = [
            predicted[kind]
            for text, returned, _, predicted in calls
            if returned is None and predicted[kind] and (" " not in text or own_dtype(text) in diagonal_ran)  # a diagonal call, or a mixed one
        ]
        computed = {predicted[kind][0] for dtype, returned, _, predicted in tried["diagonal"] if returned is not None and predicted[kind]}
        if len(computed) < 2:
            continue
        if all(p is not None and p[1] == returned for returned, p in ran) and not any(p[0] in diagonal_ran for p in refused):
            found.append(kind)
    return found


def own_dtype(text: str) -> str:
    """The dtype the promoted arguments of a mixed call have before promotion ('int64 with float32 [self]': int64)."""
    if " beside " in text:
        return text.split(" beside ")[1].split(" ")[0]
    return text.split(" with ")[0]


def _lower(text: str) -> list[str]:
    """The arguments a mixed call's description names as the promoted one ('int64 with float32 [self]')."""
    return text.rsplit("[", 1)[1].rstrip("]").split(", ") if text.endswith("]") else []


def make_reports(names: list[str], jobs: int | None) -> list[dict[str, Any]]:
    """Reports for every overload named, in name order; an overload that ends its worker is left out."""
    found, _ = reports_by_chunk(names, promotion_reports, "promotion calls", jobs)
    reports = {report["overload"]: report for report in found}
    return [reports[name] for name in sorted(reports)]


def _names_report(_: None) -> Iterator[list[str]]:
    yield targets(declared_rules())


STAGE = WorkerStage(
    "promotion-calls",
    lambda jobs: make_reports(listed_in_worker(_names_report, "the overloads to call with mixed dtypes"), jobs),
    "calling overloads with mixed dtypes, in workers (once)",
    after_sweep=True,
    evidence="probe",
)
"""The reports (``decide`` reads them)."""
