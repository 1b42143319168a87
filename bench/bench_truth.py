"""Score a written native_functions.yaml against the truth suite (tests/truth); prints, never asserts.

For every truth case and each of the 21 dtypes, the yaml declares the dtype or not (read with
its sibling type_constraints.yaml; a slot left plain ``Tensor`` declares every dtype), and
ATen accepts it or not (the case's verdict). Where the entry has a ``type_promotion:`` line, a case's dtype is
judged the same way on its calls. Each mixed call (tensors of different dtypes) is
declared when the computation dtype the entry's ``type_promotion:`` gives it (torch's own
``elementwise_dtypes``) is in the promoted variable's set and every other slot's dtype in its
own; without the line, when every slot's dtype is in its variable's set and slots sharing a
variable agree. Agreement is the share of (case, dtype) pairs and mixed calls where both say
the same, reported apart and together; a false claim is declared but rejected, a miss accepted
but not declared. Each autocast call (made under CPU autocast) is handed on as the entry's ``autocast:`` line
says for CPU (this module's own reading of ``autocast_mode.h``, sharing nothing with the checker's) and judged
as a mixed call; where ATen ran it, a return bound to the variable of the tensors handed on must be at their
dtype, else the declared policy is not what autocast did. Autocast calls are scored apart. The verdicts depend
only on torch and the suite's code, and are cached under the cache folder (``truth/``), so scoring again takes a second.

    PYTHONPATH=$PWD python -m bench.bench_truth /tmp/before/out/native_functions.yaml
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable
from pathlib import Path

from migrate.cache import StageCache
from migrate.model.autocast import declared_autocast
from migrate.model.declared import declared_variables, declared_with_backends
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import Variable
from migrate.model.promotion import PROMOTION_KEY, Promotion
from tests.truth.cases import AUTOCAST, BACKWARD, CASES, MIXED, VALUES, Autocast, Case, Mixed, Valued
from tests.truth.runner import DTYPES, Verdict, aten_op, run_autocast, run_backward, run_cases, run_mixed, run_values


ISSUE_ROWS: tuple[tuple[str, str], ...] = (
    ("mm[self mat2]", "bool"),
    ("clamp[self]", "int64"),
    ("remainder.Scalar[self]", "float32"),
    ("gather[index | self=float32]", "uint8"),
    ("mean[self]", "int64"),
    ("scaled_dot_product_attention[attn_mask | key=float32, query=float32, value=float32]", "float16"),
)
"""The table of issue 23: (case, dtype) pairs a reader checks first."""


def _suite_verdicts(cache: StageCache, stage: str, run: Callable[[], dict], what: str) -> dict:
    """What ``run`` gives, from the ``stage`` stage when torch and the suite's code are unchanged."""
    return cache.stage(stage, "tests.truth.cases", "tests.truth.runner").get((), run, dict, cold=f"running the truth suite's {what} (once)")


def truth_verdicts(cache: StageCache) -> dict[str, dict[str, Verdict]]:
    """Every case's verdicts (the ``truth`` stage)."""
    return _suite_verdicts(cache, "truth", run_cases, "calls")


def mixed_verdicts(cache: StageCache) -> dict[str, Verdict]:
    """Every mixed call's verdict (the ``truth-mixed`` stage)."""
    return _suite_verdicts(cache, "truth-mixed", run_mixed, "mixed calls")


def autocast_verdicts(cache: StageCache) -> dict[str, Verdict]:
    """Every autocast call's verdict (the ``truth-autocast`` stage)."""
    return _suite_verdicts(cache, "truth-autocast", run_autocast, "autocast calls")


def backward_verdicts(cache: StageCache) -> dict[str, Verdict]:
    """Every training-step call's verdict (the ``truth-backward`` stage)."""
    return _suite_verdicts(cache, "truth-backward", run_backward, "training-step calls")


def value_verdicts(cache: StageCache) -> dict[str, Verdict]:
    """Every value-dependent call's verdict (the ``truth-values`` stage)."""
    return _suite_verdicts(cache, "truth-values", run_values, "value-dependent calls")


@dataclass(frozen=True)
class AutocastRow:
    """One call under CPU autocast: the policy the yaml declares for CPU, whether it declares the call as handed on, and what ATen did."""

    call: Autocast
    policy: str  # '' where the entry names none for CPU
    declared: bool
    verdict: Verdict
    policy_differs: str = ""  # where ATen ran it: a return at another dtype than the declared policy hands its variable ('' when none)

    @property
    def agrees(self) -> bool:
        return self.declared == self.verdict.accepted


@dataclass(frozen=True)
class MixedRow:
    """One mixed call: whether the yaml declares it, and what ATen did."""

    call: Mixed
    declared: bool
    verdict: Verdict

    @property
    def agrees(self) -> bool:
        return self.declared == self.verdict.accepted


@dataclass(frozen=True)
class Row:
    """One case on one dtype: what the yaml declares and what ATen did."""

    case: Case
    dtype: str
    declared: bool
    verdict: Verdict
    other_device: bool = False  # declared as another device's claim (OpInfo's CUDA dtypes): a CPU call cannot judge it

    @property
    def judged(self) -> bool:
        """A CPU refusal of a dtype declared for another device says nothing against the declaration."""
        return not (self.other_device and self.declared and not self.verdict.accepted)

    @property
    def agrees(self) -> bool:
        return self.declared == self.verdict.accepted


def _agreement(rows) -> float:
    return sum(r.agrees for r in rows) / len(rows) if rows else 1.0


def _false_claims(rows) -> tuple:
    """Single calls declared that ATen rejects."""
    return tuple(r for r in rows if r.declared and not r.verdict.accepted)


def _misses(rows) -> tuple:
    """Single calls ATen accepts that are not declared."""
    return tuple(r for r in rows if r.verdict.accepted and not r.declared)


@dataclass(frozen=True)
class Score:
    rows: tuple[Row, ...]
    absent: tuple[str, ...]  # truth overloads the yaml has no entry for
    mixed: tuple[MixedRow, ...] = ()
    autocast: tuple[AutocastRow, ...] = ()  # scored apart: not in ``agreement``
    backward: tuple[MixedRow, ...] = ()  # a mixed-precision training step's calls, scored apart
    values: tuple[MixedRow, ...] = ()  # value-dependent calls, scored apart: a set cannot say them

    @property
    def autocast_agreement(self) -> float:
        return _agreement(self.autocast)

    @property
    def autocast_false_claims(self) -> tuple[AutocastRow, ...]:
        return _false_claims(self.autocast)

    @property
    def autocast_misses(self) -> tuple[AutocastRow, ...]:
        return _misses(self.autocast)

    @property
    def diagonal_agreement(self) -> float:
        return sum(r.agrees for r in self.judged) / len(self.judged)

    @property
    def mixed_agreement(self) -> float:
        return _agreement(self.mixed)

    @property
    def mixed_false_claims(self) -> tuple[MixedRow, ...]:
        return _false_claims(self.mixed)

    @property
    def mixed_misses(self) -> tuple[MixedRow, ...]:
        return _misses(self.mixed)

    @property
    def judged(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.judged)

    @property
    def agreement(self) -> float:
        """Diagonal verdicts and mixed calls together."""
        return (sum(r.agrees for r in self.judged) + sum(r.agrees for r in self.mixed)) / (len(self.judged) + len(self.mixed))

    @property
    def false_claims(self) -> tuple[Row, ...]:
        return tuple(r for r in self.judged if r.declared and not r.verdict.accepted)

    @property
    def misses(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.verdict.accepted and not r.declared)

    def row(self, case_key: str, dtype: str) -> Row | None:
        """None when the yaml lacks the case's overload."""
        return next((r for r in self.rows if r.case.key == case_key and r.dtype == dtype), None)

    def worst(self, count: int) -> list[tuple[str, int]]:
        """Overloads by their number of disagreements, most first (ties by name)."""
        wrong: dict[str, int] = defaultdict(int)
        for r in self.judged:
            if not r.agrees:
                wrong[r.case.overload] += 1
        return sorted(wrong.items(), key=lambda item: (-item[1], item[0]))[:count]


def declared_dtypes(case: Case, variables: tuple[Variable, ...]) -> frozenset[str]:
    """The dtypes the yaml lets the case's slots take together, with its ``given`` slots at their dtypes.

    A slot with no variable takes any dtype. A given slot bound to the same variable as a
    cast slot pins that variable to its dtype; a given dtype the yaml does not declare
    makes the whole call undeclared. A variable that follows another (a dependent
    constraint, ``U: [torch.bool, T]``) also takes that variable's dtype in the call:
    the given one when the case holds it, else any of its own. A ``ScalarType`` argument the
    case passes the dtype as (``dtype``) takes the dtypes the entry states for it (any when it
    states none); a variable set by that argument (``U: [dtype]``) is then that very dtype, and
    one whose argument the case leaves None takes the rest of its list.
    """
    of_slot = {slot: v for v in variables for slot in v.binds}
    by_name = {v.name: v for v in variables}
    held = {of_slot[slot].name: dtype for slot, dtype in case.given if slot in of_slot}
    stated = {v.argument.name: v.argument.dtypes for v in variables if getattr(v, "argument", None) is not None}

    def allowed(slot: str) -> frozenset[str]:
        variable = of_slot.get(slot)
        if variable is None:
            return frozenset(d.name for d in stated[slot]) if slot in stated else frozenset(DTYPES)
        argument = getattr(variable, "argument", None)  # the field comes with returns a ScalarType argument sets (issue 33)
        if argument is not None and argument.name in case.slots:
            return frozenset(DTYPES)  # exactly the dtype under test, which the argument's own slot judges
        dtypes = {d.name for d in variable.dtypes}
        for other in getattr(variable, "follows", ()):  # the field comes with dependent constraints (issue 23)
            dtypes |= {held[other]} if other in held else {d.name for d in by_name[other].dtypes}
        for other in getattr(variable, "opmath", ()):  # the field comes with norms' weights (issue 52)
            dtypes |= {_opmath(held[other])} if other in held else {_opmath(d.name) for d in by_name[other].dtypes}
        return frozenset(dtypes)

    dtypes = frozenset(DTYPES)
    for slot in case.slots:
        dtypes &= allowed(slot)
    cast_variables = {of_slot[s].name for s in case.slots if s in of_slot}
    for slot, dtype in case.given:
        if dtype not in allowed(slot):
            return frozenset()
        if slot in of_slot and of_slot[slot].name in cast_variables:
            dtypes &= {dtype}
    return dtypes


def computation_dtype(kind: str, values: list) -> str | None:
    """The dtype a kernel of this promotion kind is dispatched on for these promoted values (never the wider opmath
    type); None when torch refuses to promote them (float8 beside float32)."""
    import torch
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    try:
        promoted, _ = elementwise_dtypes(*values, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.NO_OPMATH)
        tensors = {x.dtype for x in values if isinstance(x, torch.Tensor)}
        for a in tensors:
            for b in tensors:
                torch.promote_types(a, b)  # ATen's own table refuses some pairs (uint16 with int8, float8 with float32)
    except Exception:
        return None
    if kind == "int_to_float" and not (promoted.is_floating_point or promoted.is_complex):
        promoted = torch.get_default_dtype()
    elif kind == "bool_to_long" and promoted == torch.bool:
        promoted = torch.int64
    elif kind == "int_to_long" and not (promoted.is_floating_point or promoted.is_complex):
        promoted = torch.int64  # torch._refs.sum with dtype=None
    return str(promoted).removeprefix("torch.")


def _bound(overload: str, args: tuple, kwargs: dict) -> dict:
    """A call's values by argument name."""
    names = [a.name for a in aten_op(overload)._schema.arguments]
    return dict(zip(names, args)) | kwargs


def _fills_a_mask(bound: dict) -> bool:
    """Whether ``index_put`` takes ATen's masked_fill path: one bool mask, values of one element, no accumulate."""
    import torch

    masks = [x for x in bound.get("indices") or () if x is not None]
    values = bound.get("values")
    one = isinstance(values, torch.Tensor) and values.numel() == 1
    return one and not bound.get("accumulate") and len(masks) == 1 and masks[0].dtype == torch.bool


def _opmath(dtype: str) -> str:
    """The dtype ATen computes a tensor of ``dtype`` in, as torch's own refs say (``get_computation_dtype``)."""
    import torch
    from torch._prims_common import get_computation_dtype

    return str(get_computation_dtype(getattr(torch, dtype))).removeprefix("torch.")


def _computation(promotion: Promotion, bound: dict) -> str | None:
    """The computation dtype of a call (its values by name) under the promotion's kind (``computation_dtype``)."""
    return computation_dtype(promotion.kind, [x for a in promotion.args if a in bound for x in _elements(bound[a]) if x is not None])


def _elements(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def declared_mixed(call: Mixed, variables: tuple[Variable, ...], promotion: Promotion | None) -> bool:
    """Whether the yaml declares this mixed call (see the module's docstring)."""
    return declared_call(call.overload, *call.call(), variables, promotion)


def declared_call(overload: str, args: tuple, kwargs: dict, variables: tuple[Variable, ...], promotion: Promotion | None) -> bool:
    """Whether the yaml declares this call: the promoted arguments at their computation dtype, every tensor slot's
    dtype in its variable's set, and the slots of one variable at one dtype."""
    import torch

    bound = _bound(overload, args, kwargs)
    at: dict[str, set[str]] = {}  # each tensor slot's dtypes in this call
    for name, value in bound.items():
        found = {str(x.dtype).removeprefix("torch.") for x in _elements(value) if isinstance(x, torch.Tensor)}
        if found:
            at[name] = found
    of_slot = {slot: v for v in variables for slot in v.binds}
    if promotion is not None and promotion.kind == "int_to_long" and bound.get("dtype") is not None:
        for a in promotion.args:  # a reduction computes in the dtype= given, which its own set judges
            at.pop(a, None)
    elif promotion is not None:
        computation = _computation(promotion, bound)
        if computation is None:
            return False
        promoted = {of_slot[a].name for a in promotion.args if a in of_slot}
        written = {a for a in _written(overload) & set(at) if a in promotion.args or (a in of_slot and of_slot[a].name in promoted)}
        if not all(_holds_result(at[a], computation, promotion.kind, of_slot.get(a)) for a in written):
            return False
        at.update({a: {computation} for a in set(promotion.args) | written if a in at})
    bound_to: dict[str, str] = {}
    for slot, dtypes in sorted(at.items(), key=lambda item: bool(getattr(of_slot.get(item[0]), "follows", ()) or getattr(of_slot.get(item[0]), "opmath", ()))):
        if len(dtypes) > 1:
            return False  # one list's elements of different dtypes: one variable cannot bind them
        (dtype,) = dtypes
        variable = of_slot.get(slot)
        if variable is None:
            continue
        allowed = {d.name for d in variable.dtypes} | {bound_to[f] for f in getattr(variable, "follows", ()) if f in bound_to}
        allowed |= {_opmath(bound_to[f]) for f in getattr(variable, "opmath", ()) if f in bound_to}
        excepted = [e for e in getattr(variable, "exceptions", ()) if e.condition == "masked_fill" and _fills_a_mask(bound)]  # issue 52
        if excepted:
            allowed = {d.name for e in excepted for d in e.dtypes}
        if dtype not in allowed or bound_to.setdefault(variable.name, dtype) != dtype:
            return False
    return True


def handed_on(policy: str, lower: str, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """A call's arguments as CPU autocast's ``policy`` casts them at the autocast dtype ``lower`` (ATen's
    ``autocast_mode.h``): floating CPU tensors but float64 ones, to ``lower`` (``lower_precision_fp``), float32
    (``fp32``), or float32 where one is float32 and else ``lower`` (``promote``, which refuses any other floating
    dtype: None); any other policy, or none, leaves them."""
    import torch

    def eligible(x) -> bool:
        return isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64

    found = [x for value in (*args, *kwargs.values()) for x in _elements(value) if eligible(x)]
    to = {"lower_precision_fp": lower, "fp32": "float32"}.get(policy)
    if policy == "promote":
        kinds = {str(x.dtype).removeprefix("torch.") for x in found}
        if kinds - {"float32", lower}:
            return None
        to = "float32" if "float32" in kinds else lower
    if to is None:
        return args, kwargs

    def cast(value):
        if isinstance(value, (list, tuple)):
            return type(value)(cast(x) for x in value)
        return value.to(getattr(torch, to)) if eligible(value) else value

    return tuple(cast(a) for a in args), {k: cast(x) for k, x in kwargs.items()}


def policy_differs(overload: str, args: tuple, kwargs: dict, variables: tuple[Variable, ...], returned: tuple[str, ...]) -> str:
    """The first return whose variable binds tensors handed on at one dtype, and that ATen returned at another ('' when none)."""
    import torch

    bound = _bound(overload, args, kwargs)
    for position, dtype in enumerate(returned):
        variable = next((v for v in variables if f"return.{position}" in v.binds), None)
        handed = {str(x.dtype).removeprefix("torch.") for slot in getattr(variable, "binds", ()) for x in _elements(bound.get(slot)) if isinstance(x, torch.Tensor)}
        if len(handed) == 1 and dtype not in handed:
            return f"return.{position} is {dtype}, the policy hands {variable.name} {handed.pop()}"
    return ""


def _written(overload: str) -> set[str]:
    """The arguments the overload writes into (``Tensor(a!) self``, ``out``), from torch's schema."""
    return {a.name for a in aten_op(overload)._schema.arguments if a.alias_info is not None and a.alias_info.is_write}


_REAL = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}  # complex_to_float's result


def _holds_result(dtypes: set[str], computation: str, kind: str, variable) -> bool:
    """Whether a tensor the call writes into (a promoting argument, or ``out`` of the promoted variable) can hold its
    result: its dtype is declared and torch casts the result to it (``int64.div_(int64)`` and ``add(float32, float32,
    out=int64)``: ``result type Float can't be cast to the desired output type Long``)."""
    import torch

    result = "bool" if kind == "always_bool" else _REAL.get(computation, computation) if kind == "complex_to_float" else computation
    if len(dtypes) != 1:
        return False
    (own,) = dtypes
    declared = variable is None or own in {d.name for d in variable.dtypes}
    return declared and torch.can_cast(getattr(torch, result), getattr(torch, own))


def promoted_case_dtypes(case: Case, variables: tuple[Variable, ...], promotion: Promotion) -> frozenset[str]:
    """The dtypes for which some alternative call of the case is declared, judged by its computation dtype
    (``exp`` of an int64 tensor computes in float32: the yaml declares it through ``int_to_float``)."""
    import warnings

    import torch

    found = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype in DTYPES:
            calls = [build(getattr(torch, dtype)) for build in case.calls]
            if any(declared_call(case.overload, *call, variables, promotion) and _returns_at(dtype, case, *call, variables, promotion) for call in calls):
                found.add(dtype)
    return frozenset(found)


def _returns_at(dtype: str, case: Case, args: tuple, kwargs: dict, variables: tuple[Variable, ...], promotion: Promotion) -> bool:
    """Whether a case that casts ``return.0`` gets it at ``dtype`` where the return follows the promoted variable
    (``U: [dtype, self.dtype]``): the ``dtype`` argument given, else the computation dtype (``sum`` of int8 is int64)."""
    of_slot = {slot: v for v in variables for slot in v.binds}
    promoted = {of_slot[a].name for a in promotion.args if a in of_slot}
    returned = of_slot.get("return.0")
    if "return.0" not in case.slots or returned is None or not promoted & set(getattr(returned, "follows", ())):
        return True
    bound = _bound(case.overload, args, kwargs)
    argument = getattr(returned, "argument", None)
    if argument is not None and bound.get(argument.name) is not None:
        return str(bound[argument.name]).removeprefix("torch.") == dtype
    return _computation(promotion, bound) == dtype


def other_device_dtypes(report: Path) -> dict[tuple[str, str], frozenset[str]]:
    """Per (overload, slot), the dtypes a run's ``--report`` declares from another device's claim only."""
    found = {}
    for overload in json.loads(report.read_text())["overloads"]:
        for variable in overload["variables"]:
            by_dtype = variable.get("verdicts", {}).get("by_dtype", {})
            claimed = frozenset(d.removeprefix("torch.") for d, verdict in by_dtype.items() if verdict == "other-device")
            for slot in variable["binds"]:
                found[overload["name"], slot] = claimed
    return found


def stated_value_refusals(report: Path) -> frozenset[tuple[str, str, str | None, str]]:
    """(overload, argument, value, dtype) of every refusal a run's ``--report`` lists at a value (``summary.values``)."""
    summary = json.loads(report.read_text())["summary"].get("values", {})
    return frozenset(
        (r["overload"], r["argument"], r["value"], d.removeprefix("torch.")) for r in summary.get("refusals", ()) for d in r["dtypes"]
    )


def score(
    native_functions: Path,
    verdicts: dict[str, dict[str, Verdict]],
    cases: tuple[Case, ...] = CASES,
    other_device: dict[tuple[str, str], frozenset[str]] | None = None,
    mixed: dict[str, Verdict] | None = None,
    mixed_calls: tuple[Mixed, ...] = MIXED,
    autocast: dict[str, Verdict] | None = None,
    autocast_calls: tuple[Autocast, ...] = AUTOCAST,
    backward: dict[str, Verdict] | None = None,
    values: dict[str, Verdict] | None = None,
    refused_values: frozenset[tuple[str, str, str | None, str]] = frozenset(),
) -> Score:
    native = NativeFunctions.load(native_functions)
    sets = GlobalSetsFile.load(sibling_constraints_path(Path(native_functions))).by_name
    rows, absent = [], []
    for case in cases:
        entry = native.by_name.get(case.overload)
        if entry is None:
            absent.append(case.overload)
            continue
        variables = declared_variables(native, entry, sets)
        raw = native.fields(entry).get(PROMOTION_KEY)
        promotion = Promotion.from_mapping(raw) if raw is not None else None
        if promotion is not None and set(case.slots) & set(promotion.args):
            declared = promoted_case_dtypes(case, variables, promotion)
        else:
            declared = declared_dtypes(case, variables)
        elsewhere = frozenset.union(frozenset(), *((other_device or {}).get((case.overload, slot), frozenset()) for slot in case.slots))
        rows += [Row(case, dtype, dtype in declared, verdicts[case.key][dtype], dtype in elsewhere) for dtype in DTYPES]

    def single_rows(calls: tuple[Mixed, ...], found: dict[str, Verdict] | None) -> tuple[MixedRow, ...]:
        judged = []
        for call in calls if found is not None else ():
            entry = native.by_name.get(call.overload)
            if entry is None:
                absent.append(call.overload)
                continue
            raw = native.fields(entry).get(PROMOTION_KEY)
            promotion = Promotion.from_mapping(raw) if raw is not None else None
            stated = isinstance(call, Valued) and (call.overload, call.argument, call.value, call.dtype) in refused_values
            judged.append(MixedRow(call, declared_mixed(call, declared_with_backends(native, entry, sets), promotion) and not stated, found[call.key]))
        return tuple(judged)

    mixed_rows = single_rows(mixed_calls, mixed)
    autocast_rows = []
    for call in autocast_calls if autocast is not None else ():
        entry = native.by_name.get(call.overload)
        if entry is None:
            absent.append(call.overload)
            continue
        autocast_rows.append(_autocast_row(native, entry, sets, call, autocast[call.key]))
    backward_rows, value_rows = single_rows(BACKWARD, backward), single_rows(VALUES, values)
    return Score(tuple(rows), tuple(sorted(set(absent))), mixed_rows, tuple(autocast_rows), backward_rows, value_rows)


def _autocast_row(native: NativeFunctions, entry, sets, call: Autocast, verdict: Verdict) -> AutocastRow:
    """An autocast call as the entry declares it: handed on by its CPU policy, then judged as a mixed call."""
    import warnings

    policy = dict(declared_autocast(native, entry)).get("CPU", "")
    raw = native.fields(entry).get(PROMOTION_KEY)
    promotion = Promotion.from_mapping(raw) if raw is not None else None
    variables = declared_variables(native, entry, sets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        handed = handed_on(policy, call.dtype, *call.call())
    if handed is None:
        return AutocastRow(call, policy, False, verdict)
    differs = policy_differs(call.overload, *handed, variables, verdict.returned) if verdict.accepted else ""
    return AutocastRow(call, policy, declared_call(call.overload, *handed, variables, promotion) and not differs, verdict, differs)


def _dtype_list(rows) -> str:
    return ", ".join(r.dtype for r in rows)


def report(result: Score, worst: int) -> str:
    rows = result.rows
    overloads = {r.case.overload for r in rows}
    claims, misses = result.false_claims, result.misses
    mixed = result.mixed
    lines = [
        f"truth: {len(rows) // len(DTYPES)} cases on {len(overloads)} overloads x {len(DTYPES)} dtypes = {len(rows)} verdicts"
        f" ({sum(r.verdict.accepted for r in rows)} accepted); {len(mixed)} mixed calls on {len({r.call.overload for r in mixed})} overloads"
        f" ({sum(r.verdict.accepted for r in mixed)} accepted)",
        f"agreement: {100 * result.agreement:.2f}% in all; diagonal {100 * result.diagonal_agreement:.2f}% "
        f"({sum(r.agrees for r in result.judged)}/{len(result.judged)}), mixed {100 * result.mixed_agreement:.2f}% "
        f"({sum(r.agrees for r in mixed)}/{len(mixed)}); "
        f"{len(rows) - len(result.judged)} declared for another device (OpInfo's CUDA claim) that the CPU refuses, set apart",
        f"false claims (declared, ATen rejects): diagonal {len(claims)} on {len({r.case.overload for r in claims})} overloads, "
        f"mixed {len(result.mixed_false_claims)}",
        f"misses (ATen accepts, not declared): diagonal {len(misses)} on {len({r.case.overload for r in misses})} overloads, "
        f"mixed {len(result.mixed_misses)}",
    ]
    for r in result.mixed_false_claims + result.mixed_misses:
        said = "accepts" if r.verdict.accepted else f"rejects ({r.verdict.message[:90]})"
        lines.append(f"  mixed {r.call.key}: declared {'yes' if r.declared else 'no'}; ATen {said}")
    if result.autocast:
        auto = result.autocast
        lines.append(
            f"autocast (apart): {len(auto)} calls under CPU autocast on {len({r.call.overload for r in auto})} overloads"
            f" ({sum(r.verdict.accepted for r in auto)} accepted); agreement {100 * result.autocast_agreement:.2f}%"
            f" ({sum(r.agrees for r in auto)}/{len(auto)}); false claims {len(result.autocast_false_claims)},"
            f" misses {len(result.autocast_misses)}, of them the policy's {sum(bool(r.policy_differs) for r in auto)}"
        )
        for r in (*result.autocast_false_claims, *result.autocast_misses):
            said = f"returns {', '.join(r.verdict.returned)}" if r.verdict.accepted else f"rejects ({r.verdict.message[:90]})"
            why = f": {r.policy_differs}" if r.policy_differs else ""
            lines.append(f"  autocast {r.call.key} ({{CPU: {r.policy or 'none'}}}): declared {'yes' if r.declared else 'no'}{why}; ATen {said}")
    for group, judged in (("backward", result.backward), ("values", result.values)):
        if not judged:
            continue
        claims, missed = _false_claims(judged), _misses(judged)
        lines.append(
            f"{group} (apart): {len(judged)} calls on {len({r.call.overload for r in judged})} overloads ({sum(r.verdict.accepted for r in judged)} accepted);"
            f" agreement {100 * _agreement(judged):.2f}% ({sum(r.agrees for r in judged)}/{len(judged)}); false claims {len(claims)}, misses {len(missed)}"
        )
        for r in (*claims, *missed):
            said = "accepts" if r.verdict.accepted else f"rejects ({r.verdict.message[:90]})"
            lines.append(f"  {group} {r.call.key}: declared {'yes' if r.declared else 'no'}; ATen {said}")
    if result.absent:
        lines.append(f"overloads the yaml lacks: {', '.join(result.absent)}")
    lines.append(f"worst {worst} overloads (disagreements of {len(DTYPES)} dtypes per case):")
    for overload, count in result.worst(worst):
        lines.append(f"  {overload}: {count}")
        for case in dict.fromkeys(r.case for r in rows if r.case.overload == overload):
            mine = [r for r in result.judged if r.case is case]
            wrong_claims = [r for r in mine if r.declared and not r.verdict.accepted]
            missed = [r for r in mine if r.verdict.accepted and not r.declared]
            if wrong_claims:
                lines.append(f"    {case.key} false claims: {_dtype_list(wrong_claims)}")
            if missed:
                lines.append(f"    {case.key} misses: {_dtype_list(missed)}")
    lines.append("issue 23 table:")
    for key, dtype in ISSUE_ROWS:
        row = result.row(key, dtype)
        if row is None:
            lines.append(f"  {key} {dtype}: the yaml lacks the overload")
            continue
        said = "accepts" if row.verdict.accepted else f"rejects ({row.verdict.message[:90]})"
        lines.append(f"  {key} {dtype}: declared {'yes' if row.declared else 'no'}; ATen {said}")
    return "\n".join(lines)


def score_run(native_functions: Path, cache: StageCache, run_report: Path | None) -> Score:
    """A written yaml scored on every group of the suite, with what the run's ``--report`` sets apart or states."""
    return score(
        native_functions,
        truth_verdicts(cache),
        other_device=other_device_dtypes(run_report) if run_report is not None else None,
        mixed=mixed_verdicts(cache),
        autocast=autocast_verdicts(cache),
        backward=backward_verdicts(cache),
        values=value_verdicts(cache),
        refused_values=stated_value_refusals(run_report) if run_report is not None else frozenset(),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("native_functions", type=Path, help="a written native_functions.yaml (type_constraints.yaml beside it)")
    parser.add_argument("--worst", type=int, default=15, help="how many overloads to list by disagreements")
    parser.add_argument("--cache-dir", default=None, help="cache folder (default: dtype-migrate's)")
    parser.add_argument("--json", type=Path, default=None, help="also write every disagreement to this file")
    parser.add_argument("--report", type=Path, default=None, help="the run's --report: sets apart the dtypes declared for another device")
    args = parser.parse_args(argv)
    result = score_run(args.native_functions, StageCache.at(args.cache_dir), args.report)
    print(report(result, args.worst))
    if args.json is not None:
        wrong = [
            {"case": r.case.key, "dtype": r.dtype, "declared": r.declared, "accepted": r.verdict.accepted, "message": r.verdict.message}
            for r in result.judged
            if not r.agrees
        ]
        wrong += [
            {"mixed": r.call.key, "declared": r.declared, "accepted": r.verdict.accepted, "message": r.verdict.message}
            for r in result.mixed
            if not r.agrees
        ]
        wrong += [
            {"autocast": r.call.key, "policy": r.policy, "declared": r.declared, "accepted": r.verdict.accepted, "message": r.verdict.message or r.policy_differs}
            for r in result.autocast
            if not r.agrees
        ]
        summary = {"agreement": result.agreement, "diagonal": result.diagonal_agreement, "mixed": result.mixed_agreement, "autocast": result.autocast_agreement}
        args.json.write_text(json.dumps(summary | {"disagreements": wrong}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
