"""``promotion-gen --compare``: the yaml's rules against the installed torch.onnx's generated table.

Each op name is equal (same positions, keyword names and kind), different, or only on one side. A
difference is explained by a call ATen runs: for an argument one side promotes and the other does not,
the op with that argument at float64 beside float32 tensors (a Scalar: 2.5 beside int64 tensors) shows
whether its dtype reaches the result (or ATen refuses the pair, as lerp does); for a kind, the op on
int64 (then bool, then complex64) tensors shows which kind's result ATen returns. A call that cannot be
built from the schema (a required int, a shape the op needs) says so instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

from migrate.runtime import torch_private
from migrate.check.promotion import PromotionRefused, computation_dtype, result_dtype
from migrate.model.names import OverloadName
from migrate.model.native import NativeFunctions
from migrate.model.promotion import KEEP_OWN_DTYPE
from migrate.write.promotion_gen import NameRule, Rule, name_rules

EQUAL, DIFFERENT, ONLY_YAML, ONLY_ONNX = "equal", "different", "only in the yaml", "only in torch.onnx"


@dataclass(frozen=True)
class Comparison:
    """One op name on both sides."""

    name: str
    status: str
    ours: Rule | None
    theirs: Rule | None
    explanation: str = ""  # for every status but EQUAL: what the yaml has, and the call that shows ATen's side


def installed_rules() -> dict[str, Rule]:
    """The installed torch.onnx's rules of the ``aten`` namespace, by op name."""
    return {name: Rule(name, positions, kwargs, kind) for namespace, name, positions, kwargs, kind in torch_private.onnx_promotion_rules() if namespace == "aten"}


def compare(native: NativeFunctions, theirs: dict[str, Rule] | None = None, observe: bool = True) -> list[Comparison]:
    """Every op name either side has a rule for, in name order; ``observe`` runs the calls that explain differences."""
    theirs = installed_rules() if theirs is None else theirs
    ours = {r.rule.op_name: r for r in name_rules(native)}
    operators: dict[str, list[str]] = {}
    for entry in native.entries:
        operators.setdefault(OverloadName.parse(entry.name).operator, []).append(entry.name)
    found = []
    for name in sorted(set(ours) | set(theirs)):
        mine, other = ours.get(name), theirs.get(name)
        if mine is not None and other == mine.rule:
            found.append(Comparison(name, EQUAL, mine.rule, other, _disagreeing(mine)))
            continue
        status = DIFFERENT if mine is not None and other is not None else ONLY_YAML if mine is not None else ONLY_ONNX
        notes = [_disagreeing(mine)] if mine is not None and mine.disagreement else []
        if status == ONLY_ONNX:
            notes.append(f"the yaml has no type_promotion line for {name}" if name in operators else f"the yaml has no operator {name} (a ref of no ATen op of that name)")
            if name in operators and other.kind in KEEP_OWN_DTYPE and len(other.positions) + len(other.kwargs) == 1:
                notes.append("one tensor promoted alone computes in its own dtype, which its variable states: the yaml writes no line for it")
        elif status == ONLY_YAML:
            notes.append("no ref declares it")
        if observe and name in operators:
            notes.append(_observed(name, operators[name], mine.rule if mine else None, other, ours))
        found.append(Comparison(name, status, mine.rule if mine else None, other, "; ".join(n for n in notes if n)))
    return found


def _disagreeing(mine: NameRule) -> str:
    return f"its overloads disagree: {mine.disagreement}" if mine.disagreement else ""


def report(comparisons: list[Comparison]) -> str:
    """Counts first, then each op that is not equal with both rules and the explanation."""
    counts = {status: sum(1 for c in comparisons if c.status == status) for status in (EQUAL, DIFFERENT, ONLY_YAML, ONLY_ONNX)}
    lines = [f"promotion rules against torch {torch_private.torch_version()}'s torch.onnx table: " + ", ".join(f"{n} {s}" for s, n in counts.items())]
    for status in (DIFFERENT, ONLY_YAML, ONLY_ONNX):
        chosen = [c for c in comparisons if c.status == status]
        if chosen:
            lines.append(f"{status}:")
        for c in chosen:
            sides = " vs ".join(f"{side} {rule.brief()}" for side, rule in (("yaml", c.ours), ("torch.onnx", c.theirs)) if rule is not None)
            lines.append(f"  {c.name}: {sides}" + (f": {c.explanation}" if c.explanation else ""))
    disagreeing = [c for c in comparisons if c.status == EQUAL and c.explanation]
    if disagreeing:
        lines.append("equal, with overloads that disagree:")
        lines += [f"  {c.name}: {c.explanation}" for c in disagreeing]
    return "\n".join(lines) + "\n"


# --- the calls that show which side ATen agrees with --------------------------------------------

SHAPES = ((2, 2), (4,))  # tensors of the calls: 2-D first (matrices, elementwise ops), then 1-D (dot, addr's vectors)
MESSAGE_LENGTH = 160


def _observed(name: str, overloads: list[str], ours: Rule | None, theirs: Rule | None, functional: dict[str, NameRule]) -> str:
    """What ATen does on the calls that separate the two rules, on a functional overload of the name."""
    func = _functional_overload(name, overloads, ours or theirs)
    if func is None:
        base = functional.get(name.rstrip("_"))
        if name.endswith("_") and base is not None:
            return f"an in-place name: its result is written into self whatever the promotion; the yaml's rule for {base.rule.op_name} is {base.rule.brief()}"
        return "no functional overload to call"
    arguments = list(torch_private.overload_schema(func).arguments)
    order = [a.name for a in arguments]
    mine, other = _promoted(arguments, ours), _promoted(arguments, theirs)
    if ours is None or theirs is None:
        return "; ".join(_promotes(func, arguments, a) for a in sorted(mine | other, key=order.index))
    notes = [_promotes(func, arguments, a) for a in sorted(mine ^ other, key=order.index)]
    if ours.kind != theirs.kind and mine & other:
        notes.append(_which_kind(func, arguments, sorted(mine & other, key=order.index), ours.kind, theirs.kind))
    return "; ".join(notes)


def _promoted(arguments: list, rule: Rule | None) -> set[str]:
    """The names of the arguments a rule promotes, on this schema."""
    if rule is None:
        return set()
    names = {arguments[p].name for p in rule.positions if p < len(arguments)}
    return names | {k for k in rule.kwargs if any(a.name == k for a in arguments)}


def _functional_overload(name: str, overloads: list[str], rule: Rule | None) -> Any:
    """The overload of the name that writes into no argument and whose schema the rule's positions fit, one whose
    promoted positions are all tensors first (``lerp.Tensor`` before ``lerp.Scalar``: a tensor weight can be float64)."""
    packet = getattr(torch.ops.aten, name, None)
    fitting = []
    for overload in overloads:
        func = getattr(packet, OverloadName.parse(overload).overload or "default", None) if packet is not None else None
        if func is None:
            continue
        schema = torch_private.overload_schema(func)
        if schema.is_mutable:
            continue
        if rule is None or all(p < len(schema.arguments) for p in rule.positions):
            tensors = rule is not None and all(_is_tensor(schema.arguments[p]) for p in rule.positions)
            fitting.append((not tensors, len(fitting), func))
    return min(fitting, key=lambda f: f[:2])[2] if fitting else None


def _is_tensor(argument: Any) -> bool:
    return str(argument.type) in ("Tensor", "Optional[Tensor]")


def _is_number(argument: Any) -> bool:
    return str(argument.type) in ("number", "Optional[number]", "float", "int")


def _call(func: Any, arguments: list, values: dict[str, Any]) -> tuple[Any, str]:
    """The call's result, or None and why it was not made or raised."""
    missing = next((a for a in arguments if a.name not in values and not a.has_default_value() and not str(a.type).startswith("Optional")), None)
    if missing is not None:
        return None, f"no call built: {missing.name} is a {missing.type}"
    args, kwargs = torch_private.call_arguments(torch_private.overload_schema(func), values)
    try:
        return func(*args, **kwargs), ""
    except Exception as exc:  # ATen's refusal is the observation
        message = str(exc).splitlines()[0] if str(exc) else ""
        message = message if len(message) <= MESSAGE_LENGTH else message[: MESSAGE_LENGTH - 1] + "…"
        return None, f"{type(exc).__name__}: {message}"


@dataclass(frozen=True)
class Layout:
    """The tensors' shape, and the arguments an op needs otherwise: class indices (``nll_loss``'s target: int64, one
    per row), a channel-sized weight (``prelu``'s)."""

    shape: tuple[int, ...]
    indices: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    also: tuple[str, ...] = ()  # optional tensors given too (``clamp.Tensor`` wants one of its bounds)


INDEX_NAMES = ("target", "index", "indices")


def _layouts(arguments: list) -> list[Layout]:
    """The layouts tried, in order: every tensor of one shape (2-D, then 1-D), then with the index and weight arguments
    the schema has shaped as the op wants them."""
    names = {a.name for a in arguments if _is_tensor(a)}
    indices, channels = tuple(n for n in INDEX_NAMES if n in names), tuple(n for n in ("weight",) if n in names)
    found = [Layout(shape) for shape in SHAPES]
    found += [Layout(SHAPES[0], indices, ()), Layout(SHAPES[0], (), channels), Layout(SHAPES[0], indices, channels)] if indices or channels else []
    return list(dict.fromkeys(found))


def _values(arguments: list, dtype_of: Any, number: Any, given: set[str], layout: Layout) -> dict[str, Any]:
    """A value for every tensor, number and bool argument without a default, and for the ``given`` ones: a tensor
    of the layout's shape at ``dtype_of(name)`` (zeros of int64, one per row, for its indices; a weight the size of
    its channels), a list of two such tensors, ``number(name)``, an int 1 (a dimension), False."""
    values = {}
    given = given | set(layout.also)
    for argument in arguments:
        if argument.has_default_value() and argument.name not in given:
            continue
        kind = str(argument.type)
        if _is_tensor(argument) and argument.name in layout.indices:
            values[argument.name] = torch.zeros(layout.shape[:1], dtype=torch.int64)
        elif _is_tensor(argument):
            shape = layout.shape[1:2] if argument.name in layout.channels else layout.shape
            values[argument.name] = torch.ones(shape, dtype=dtype_of(argument.name))
        elif kind in ("int", "SymInt") and argument.name not in given:
            values[argument.name] = 1
        elif _is_number(argument):
            values[argument.name] = number(argument.name)
        elif kind == "List[Tensor]":
            values[argument.name] = [torch.ones(layout.shape, dtype=dtype_of(argument.name)) for _ in range(2)]
        elif kind == "bool":
            values[argument.name] = False
    return values


def _spell(func: Any, values: dict[str, Any]) -> str:
    def one(value):
        if hasattr(value, "dtype"):
            return str(value.dtype).removeprefix("torch.")
        if isinstance(value, list):
            return "[" + ", ".join(one(v) for v in value) + "]"
        return repr(value)

    return f"{func.__name__.replace('.default', '')}({', '.join(f'{k}={one(v)}' for k, v in values.items())})"


def _diagonal_layout(func: Any, arguments: list, dtype: Any, number: Any, given: set[str]) -> tuple[Layout | None, str]:
    """The first layout at which the call with every tensor at ``dtype`` runs; None and the last call's refusal."""
    refusal = ""
    for layout in _layouts(arguments):
        values = _values(arguments, lambda _: dtype, number, given, layout)
        out, why = _call(func, arguments, values)
        if out is not None:
            return layout, ""
        refusal = f"{_spell(func, values)} raises ({why})"  # the last layout's: the one shaped most as the op wants
    optional = tuple(a.name for a in arguments if str(a.type) == "Optional[Tensor]" and a.name not in given)
    for layout in (replace(layout, also=optional) for layout in _layouts(arguments)) if optional else ():
        if _call(func, arguments, _values(arguments, lambda _: dtype, number, given, layout))[0] is not None:
            return layout, ""
    return None, refusal


def _promotes(func: Any, arguments: list, argument: str) -> str:
    """Whether ATen lets one argument's dtype reach the result.

    Judged only where the call with every argument at one dtype runs (else a refusal says nothing of
    promotion); a refused mixed call means no promotion only where the call at the wider dtype alone runs.
    """
    target = next(a for a in arguments if a.name == argument)
    if _is_number(target):  # int64 tensors beside a float
        base, widened = torch.int64, torch.get_default_dtype()
        narrow, wide = (lambda _: 2), (lambda n: 2.5 if n == argument else 2)
        mixed_dtype, wide_dtype, wide_number = (lambda _: base), widened, (lambda _: 2.5)
        layout, refusal = _diagonal_layout(func, arguments, base, narrow, {argument})
        if layout is None:
            return _float_tensors_only(func, arguments, argument, refusal)
    else:  # one tensor at float64 beside float32 ones; an op of integers only: int64 beside int32
        for base, widened in ((torch.float32, torch.float64), (torch.int32, torch.int64)):
            layout, refusal = _diagonal_layout(func, arguments, base, lambda _: 2, {argument})
            if layout is not None:
                break
        if layout is None:
            return f"{refusal}: no observation for {argument}"
        narrow = wide = wide_number = lambda _: 2
        mixed_dtype, wide_dtype = (lambda n: widened if n == argument else base), widened
    values = _values(arguments, mixed_dtype, wide, {argument}, layout)
    if argument not in values:
        return f"{argument}: no call built ({target.type})"
    out, why = _call(func, arguments, values)
    call = _spell(func, values)
    if out is None:
        alone, _ = _call(func, arguments, _values(arguments, lambda _: wide_dtype, wide_number, {argument}, layout))
        if alone is None:
            return f"{call} raises ({why}), as the call at {str(wide_dtype).removeprefix('torch.')} alone does: no observation for {argument}"
        return f"{call} raises ({why}): ATen does not promote {argument}"
    dtype = _dtype(out)
    verdict = "promotes" if dtype == widened else "does not promote"
    return f"{call} returns {str(dtype).removeprefix('torch.')}: ATen {verdict} {argument}"


def _float_tensors_only(func: Any, arguments: list, argument: str, refusal: str) -> str:
    """A Scalar beside tensors ATen takes only at floating dtypes: a Python float keeps a float32 call at float32, so
    the Scalar moves no call ATen runs; said with both calls."""
    layout, _ = _diagonal_layout(func, arguments, torch.float32, lambda _: 2.5, {argument})
    if layout is None:
        return f"{refusal}: no observation for {argument}"
    values = _values(arguments, lambda _: torch.float32, lambda _: 2.5, {argument}, layout)
    out, _ = _call(func, arguments, values)
    returned = str(_dtype(out)).removeprefix("torch.")
    return f"{refusal}, and {_spell(func, values)} returns {returned}: ATen takes no integer tensors here, so {argument} moves no call it runs"


def _which_kind(func: Any, arguments: list, promoted: list[str], ours: str, theirs: str) -> str:
    """Which kind's result ATen returns, on the first of int64, bool, complex64 tensors where the kinds differ and ATen runs."""
    refusals = []
    for dtype in (torch.int64, torch.bool, torch.complex64):
        layout, refusal = _diagonal_layout(func, arguments, dtype, lambda _: 2, set(promoted))
        values = _values(arguments, lambda _: dtype, lambda _: 2, set(promoted), layout or Layout(SHAPES[0]))
        given = [values[a] for a in promoted if a in values]
        try:
            predicted = {kind: result_dtype(kind, computation_dtype(kind, given)) for kind in (ours, theirs)}
        except PromotionRefused:
            continue
        if predicted[ours] == predicted[theirs]:
            continue
        if layout is None:
            refusals.append(refusal)
            continue
        got = _dtype(_call(func, arguments, values)[0])
        agrees = [side for side, kind in (("the yaml", ours), ("torch.onnx", theirs)) if predicted[kind] == got]
        return f"{_spell(func, values)} returns {str(got).removeprefix('torch.')}: ATen agrees with " + (" and ".join(agrees) if agrees else "neither kind")
    if refusals:
        return f"{refusals[0]}: ATen refuses the inputs the two kinds differ on, so the kind changes no call it runs"
    return "no input dtype separates the two kinds"


def _dtype(out: Any) -> Any:
    return (out[0] if isinstance(out, (tuple, list)) else out).dtype
