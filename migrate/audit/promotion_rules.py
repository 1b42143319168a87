"""``promotion-gen --compare``: the yaml's rules against the installed torch.onnx's generated table.

Each op name is equal (same positions, keyword names and kind), different, or only on one side. A
difference is explained by a call ATen runs: for an argument one side promotes and the other does not,
the op with that argument at float64 beside float32 tensors (a Scalar: 2.5 beside int64 tensors) shows
whether its dtype reaches the result (or ATen refuses the pair, as lerp does); for a kind, the op on
int64 (then bool, then complex64) tensors shows which kind's result ATen returns. A call that cannot be
built from the schema (a required int, a shape the op needs) says so instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.runtime import torch_private
from migrate.check.promotion import PromotionRefused, computation_dtype, result_dtype
from migrate.model.names import OverloadName
from migrate.model.native import NativeFunctions
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
        elif status == ONLY_YAML:
            notes.append("no ref declares it")
        if observe and name in operators:
            notes.append(_observed(name, operators[name], mine.rule if mine else None, other))
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


def _observed(name: str, overloads: list[str], ours: Rule | None, theirs: Rule | None) -> str:
    """What ATen does on the calls that separate the two rules, on a functional overload of the name."""
    import torch

    func = _functional_overload(name, overloads, ours or theirs)
    if func is None:
        return "no functional overload to call"
    arguments = list(torch_private.overload_schema(func).arguments)
    order = [a.name for a in arguments]
    mine, other = _promoted(arguments, ours), _promoted(arguments, theirs)
    if ours is None or theirs is None:
        return _promotes_all(func, arguments, mine | other, torch)
    notes = [_promotes(func, arguments, a, torch) for a in sorted(mine ^ other, key=order.index)]
    if ours.kind != theirs.kind and mine & other:
        notes.append(_which_kind(func, arguments, sorted(mine & other, key=order.index), ours.kind, theirs.kind, torch))
    return "; ".join(notes)


def _promoted(arguments: list, rule: Rule | None) -> set[str]:
    """The names of the arguments a rule promotes, on this schema."""
    if rule is None:
        return set()
    names = {arguments[p].name for p in rule.positions if p < len(arguments)}
    return names | {k for k in rule.kwargs if any(a.name == k for a in arguments)}


def _functional_overload(name: str, overloads: list[str], rule: Rule | None) -> Any:
    """The first overload of the name that writes into no argument and whose schema the rule's positions fit."""
    import torch

    packet = getattr(torch.ops.aten, name, None)
    for overload in overloads:
        func = getattr(packet, OverloadName.parse(overload).overload or "default", None) if packet is not None else None
        if func is None:
            continue
        schema = torch_private.overload_schema(func)
        if schema.is_mutable:
            continue
        if rule is None or all(p < len(schema.arguments) for p in rule.positions):
            return func
    return None


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
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _values(arguments: list, tensor: Any, number: Any, given: set[str]) -> dict[str, Any]:
    """A value for every tensor and number argument without a default, and for the ``given`` ones."""
    values = {}
    for argument in arguments:
        if argument.has_default_value() and argument.name not in given:
            continue
        if _is_tensor(argument):
            values[argument.name] = tensor(argument.name)
        elif _is_number(argument):
            values[argument.name] = number(argument.name)
        elif str(argument.type) == "List[Tensor]":
            values[argument.name] = [tensor(argument.name), tensor(argument.name)]
    return values


def _spell(func: Any, values: dict[str, Any]) -> str:
    def one(value):
        if hasattr(value, "dtype"):
            return str(value.dtype).removeprefix("torch.")
        if isinstance(value, list):
            return "[" + ", ".join(one(v) for v in value) + "]"
        return repr(value)

    return f"{func.__name__.replace('.default', '')}({', '.join(f'{k}={one(v)}' for k, v in values.items())})"


def _promotes(func: Any, arguments: list, argument: str, torch: Any) -> str:
    """Whether ATen lets one argument's dtype reach the result: the call with it wider than the rest, after the
    call with every argument at one dtype ran (else a refusal says nothing of promotion)."""
    target = next(a for a in arguments if a.name == argument)
    if _is_number(target):
        base, widened, wide = (lambda _: torch.arange(1, 5).reshape(2, 2)), torch.get_default_dtype(), 2.5
        values = _values(arguments, base, lambda n: wide if n == argument else 2, {argument})
        diagonal = _values(arguments, base, lambda _: 2, {argument})
    else:
        widened = torch.float64
        values = _values(arguments, lambda n: torch.ones(2, 2, dtype=widened if n == argument else torch.float32), lambda _: 2, {argument})
        diagonal = _values(arguments, lambda _: torch.ones(2, 2), lambda _: 2, {argument})
    if argument not in values:
        return f"{argument}: no call built ({target.type})"
    out, why = _call(func, arguments, diagonal)
    if out is None:
        return f"{_spell(func, diagonal)} raises ({why}): no observation for {argument}"
    out, why = _call(func, arguments, values)
    call = _spell(func, values)
    if out is None:
        return f"{call} raises ({why}): ATen does not promote {argument}"
    dtype = _dtype(out)
    verdict = "promotes" if dtype == widened else "does not promote"
    return f"{call} returns {str(dtype).removeprefix('torch.')}: ATen {verdict} {argument}"


def _promotes_all(func: Any, arguments: list, promoted: set[str], torch: Any) -> str:
    """For a rule only one side has: whether ATen promotes each of its arguments."""
    order = [a.name for a in arguments]
    return "; ".join(_promotes(func, arguments, a, torch) for a in sorted(promoted, key=order.index))


def _which_kind(func: Any, arguments: list, promoted: list[str], ours: str, theirs: str, torch: Any) -> str:
    """Which kind's result ATen returns, on the first of int64, bool, complex64 tensors where the kinds differ."""
    for dtype in (torch.int64, torch.bool, torch.complex64):
        values = _values(arguments, lambda _: torch.ones(2, 2, dtype=dtype), lambda _: 2, set(promoted))
        given = [values[a] for a in promoted if a in values]
        try:
            predicted = {kind: result_dtype(computation_dtype(given, kind), kind) for kind in (ours, theirs)}
        except PromotionRefused:
            continue
        if predicted[ours] == predicted[theirs]:
            continue
        out, why = _call(func, arguments, values)
        call = _spell(func, values)
        if out is None:
            return f"{call} raises ({why})"
        got = _dtype(out)
        agrees = [side for side, kind in (("the yaml", ours), ("torch.onnx", theirs)) if predicted[kind] == got]
        return f"{call} returns {str(got).removeprefix('torch.')}: ATen agrees with " + (" and ".join(agrees) if agrees else "neither kind")
    return "no input dtype separates the two kinds"


def _dtype(out: Any) -> Any:
    return (out[0] if isinstance(out, (tuple, list)) else out).dtype
