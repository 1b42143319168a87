"""The dtype a promoting call computes in, as ATen decides it before dispatching the kernel.

ATen's ``result_type`` (``aten/src/ATen/native/TypeProperties.cpp``, what TensorIterator's common
dtype is) promotes within three tiers: tensors with dimensions, 0-dim tensors, Python numbers. The
tiers combine by category (bool < integer < floating < complex): a lower tier decides the dtype only
when its category is higher, and then a Python number takes the default dtype of its category.
Within a tier, dtypes promote by ``torch.promote_types``, which refuses what ATen refuses (float8
beside another float, uint16 beside int8). The refs' ``elementwise_dtypes`` states the same rules but
promotes those pairs silently, so the checker computes ATen's type itself (checked against
``torch.result_type`` and ``elementwise_dtypes`` in tests/test_promotion_checker.py).

The kind then maps that dtype as ``elementwise_dtypes`` does with no opmath (the kernel is dispatched on
float16 for float16 inputs, never on the wider type it may accumulate in): ``int_to_float`` computes
integers and bool in the default float dtype, ``bool_to_long`` bool in int64; a reduction's ``int_to_long``
bool and integers in int64, and in the dtype its ``dtype`` argument names where the call gives one. The result is the computation
dtype, except ``always_bool`` (bool) and ``complex_to_float`` (a complex type's real counterpart). Those rules
are the data model's, on dtype names (``migrate.model.promotion``): here they are tables on ``torch.dtype``,
converted once.

One case Python cannot see: a C++ composite that wraps a Python number into a 0-dim tensor (ATen's
"wrapped number", promoted as a number) passes it on to the kernel it calls as a plain 0-dim tensor, so a
call seen at the kernel key with such a tensor is judged as ATen judges a 0-dim tensor. A full ``verify``
of the OpInfo samples showed no call where that made a difference.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import migrate.model.promotion as by_name
from migrate.runtime import torch_private
from migrate.errors import InputError

_DTYPES = {str(value).removeprefix("torch."): value for value in vars(torch).values() if isinstance(value, torch.dtype)}
_COMPLEX_OF = {_DTYPES[real]: _DTYPES[complex_] for real, complex_ in by_name.COMPLEX_OF.items()}
DTYPE_ARGUMENT = "dtype"  # a reduction's ScalarType argument (int_to_long)
_AT_DEFAULT = "the default dtype"  # in the tables' making: the default dtype at the call, which a program may set


def _computed_in(kind: str) -> dict[torch.dtype, torch.dtype | None]:
    """Per dtype that ``kind`` computes in another dtype, that one (None: the default dtype at the call)."""
    table: dict[torch.dtype, torch.dtype | None] = {}
    for name, dtype in _DTYPES.items():
        found = by_name.computation_dtype(kind, name, default_float=_AT_DEFAULT)
        if found != name:
            table[dtype] = None if found == _AT_DEFAULT else _DTYPES[found]
    return table


_COMPUTED_IN = {kind: _computed_in(kind) for kind in by_name.DECLARED_KINDS}
_RESULT_OF = {kind: {dtype: _DTYPES[found] for name, dtype in _DTYPES.items() if (found := by_name.result_dtype(kind, name)) != name} for kind in by_name.DECLARED_KINDS}


_UNSEEN = object()  # no promoting value read yet


class PromotionRefused(Exception):
    """torch refuses to promote the call's arguments (its message)."""


def _promote(a: torch.dtype | None, b: torch.dtype) -> torch.dtype:
    if a is None or a == b:
        return b
    try:
        return torch.promote_types(a, b)
    except RuntimeError as exc:
        raise PromotionRefused(str(exc).splitlines()[0]) from None


def _is_float(dtype: torch.dtype | None) -> bool:
    return dtype is not None and dtype.is_floating_point


def _is_complex(dtype: torch.dtype | None) -> bool:
    return dtype is not None and dtype.is_complex


def _combine(higher: torch.dtype | None, lower: torch.dtype | None) -> torch.dtype | None:
    """ATen's ``combine_categories``: a lower tier counts only where its category is higher."""
    if _is_complex(higher):
        return higher
    if _is_complex(lower):
        if _is_float(higher):
            if higher not in _COMPLEX_OF:
                raise PromotionRefused(f"no complex type of {higher} to promote it with {lower}")
            return _COMPLEX_OF[higher]
        return lower
    if _is_float(higher):
        return higher
    if lower is not None and (higher == torch.bool or _is_float(lower)):
        return _promote(higher, lower)
    return higher if higher is not None else lower


def _number_dtype(value: Any) -> torch.dtype | None:
    """A Python number's dtype as ATen's result type counts it (floats and complex at the defaults)."""
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, int):
        return torch.int64
    if isinstance(value, float):
        return torch.get_default_dtype()
    if isinstance(value, complex):
        return _COMPLEX_OF[torch.get_default_dtype()]
    return None


def result_type(values: Iterable[Any]) -> torch.dtype | None:
    """ATen's result type of tensors and Python numbers (None: no value takes part)."""
    dimensioned = zero_dim = numbers = None
    for value in values:
        if isinstance(value, torch.Tensor):
            if value.dim() > 0:
                dimensioned = _promote(dimensioned, value.dtype)
            else:
                zero_dim = _promote(zero_dim, value.dtype)
        elif (dtype := _number_dtype(value)) is not None:
            numbers = _promote(numbers, dtype)
    return _combine(dimensioned, _combine(zero_dim, numbers))


def computation_dtype(kind: str, values: Iterable[Any]) -> torch.dtype | None:
    """The dtype the kernel of a promoting call is dispatched on; raises PromotionRefused as ATen would."""
    return _of_kind(kind, result_type(values))


def _of_kind(kind: str, dtype: torch.dtype | None) -> torch.dtype | None:
    """The computation dtype of a call whose promoting values promote to ``dtype`` (``by_name.computation_dtype``)."""
    if dtype is None:
        return None
    computed = _COMPUTED_IN[kind].get(dtype, dtype)
    return torch.get_default_dtype() if computed is None else computed


def result_dtype(kind: str, computation: torch.dtype) -> torch.dtype:
    """The dtype a functional promoting call returns, given its computation dtype (``by_name.result_dtype``)."""
    return _RESULT_OF[kind].get(computation, computation)


def promoting_values(values: Iterable[Any]) -> Iterator[Any]:
    """The tensors and numbers of promoting arguments' values: a list's elements, no None."""
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from (v for v in value if v is not None)
        elif value is not None:
            yield value


def spelled(name: str, value: Any) -> str:
    """How a promoting argument took part, for a message: ``self is torch.int64``, ``other is a Python float``."""
    if isinstance(value, torch.Tensor):
        shape = "" if value.dim() > 0 else " (0-dim)"
        return f"{name} is {value.dtype}{shape}"
    if isinstance(value, (list, tuple)):
        return f"{name} is [{', '.join(spelled('', v).strip().removeprefix('is ') for v in value if v is not None)}]"
    return f"{name} is a Python {type(value).__name__}"


# --- the checker's part: an overload's promotion compiled, and a call checked through it ---------------

COMPUTED_OUTSIDE_SET = "computed-outside-set"  # a promoting call's computation dtype is not in its variable's set
PROMOTION_REFUSED = "promotion-refused"  # torch refuses to promote the call's promoting arguments
RESULT_DTYPE = "result-dtype"  # another slot of the promoted variable does not hold the dtype the promotion gives


@dataclass(frozen=True)
class CompiledPromotion:
    """Where a promoting overload's arguments are, and which of its variable's slots follow the promotion.

    The promoting tensors' own dtypes are free: the variable binds the call's computation dtype. Its other
    slots hold the result (the computation dtype, or the kind's result for a return); in an overload that
    writes into an argument (in-place, out=) they hold any dtype of the set that torch casts the result to
    (``torch.can_cast``). So does each argument it writes into, promoting or not: ``self`` of ``div_``
    (``int64.div_(int64)`` computes in float32 and is refused), ``out`` of ``add.out`` (``add(float32, float32,
    out=int64)``: ``result type Float can't be cast to the desired output type Long``).
    """

    kind: str
    variable: int  # the promoted variable's index
    where: str  # 'native_functions.yaml:12', the type_promotion line
    arguments: tuple[tuple[int, str, bool], ...]  # (position, name, keyword-only) of each promoting argument
    others: tuple[tuple[int, str, bool, bool], ...]  # the variable's other argument slots it does not write: (position, name, keyword-only, holds a list)
    returns: tuple[tuple[int, str, bool], ...]  # the variable's returns: (position, 'return.N', holds a list)
    mutates: bool
    written: tuple[tuple[int, str, bool, bool], ...] = ()  # the promoting arguments and the variable's slots it writes into: (position, name, keyword-only, holds a list)
    dtype_argument: tuple[int, str, bool] | None = None  # int_to_long: the ``dtype`` argument that, given, is the computation dtype, judged by its own set


def compile_promotion(path: Path, declared: Any, func: Any, slots: Any, bound_arguments: list, bound_returns: list) -> tuple[CompiledPromotion | None, list, list]:
    """The promotion's check, and the checker's slot lists without the promoted variable's slots (checked here).

    None (and the lists as they are) when no variable binds a promoting tensor: there is no set to check against.
    """
    promotion = declared.promotion
    promoted = {index for index, _, name, _, _ in bound_arguments if name in promotion.args}
    if not promoted:
        return None, bound_arguments, bound_returns
    (variable,) = promoted  # the yaml reader refused promoted tensors on two variables
    positions = torch_private.argument_positions(func)
    writes = torch_private.written_arguments(func)
    holds_list = {name: holds for _, _, name, _, holds in bound_arguments}
    missing = [name for name in promotion.args if name not in positions]
    if missing:
        raise InputError(f"type_promotion names {missing[0]}, but this torch's {slots.name} has no argument of that name", path, promotion.line, declared.name)
    compiled = CompiledPromotion(
        promotion.kind,
        variable,
        f"{path.name}:{promotion.line}",
        tuple((positions[name][0], name, positions[name][1]) for name in promotion.args),
        tuple((position, name, keyword_only, holds) for index, position, name, keyword_only, holds in bound_arguments if index == variable and name not in promotion.args and name not in writes),
        tuple((position, name, holds) for index, position, name, holds in bound_returns if index == variable),
        slots.mutates,
        tuple(
            (positions[name][0], name, positions[name][1], holds_list.get(name, False))
            for name in positions
            if name in writes and (name in promotion.args or any(index == variable and slot == name for index, _, slot, _, _ in bound_arguments))
        ),
        (positions[DTYPE_ARGUMENT][0], DTYPE_ARGUMENT, positions[DTYPE_ARGUMENT][1]) if promotion.kind == by_name.INT_TO_LONG and DTYPE_ARGUMENT in positions else None,
    )
    rest_arguments = [a for a in bound_arguments if a[0] != variable]
    rest_returns = [r for r in bound_returns if r[0] != variable]
    return compiled, rest_arguments, rest_returns


def _value(args: tuple, kwargs: dict, position: int, name: str, keyword_only: bool) -> Any:
    return kwargs.get(name) if keyword_only or position >= len(args) else args[position]


def _given_dtype(promotion: CompiledPromotion, args: tuple, kwargs: dict) -> torch.dtype | None:
    """The dtype a reduction's ``dtype`` argument names in the call (None: not given, or no such argument)."""
    return None if promotion.dtype_argument is None else _value(args, kwargs, *promotion.dtype_argument)


def _tensors(value: Any, holds_list: bool) -> Iterator[tuple[str, torch.dtype]]:
    """('', dtype) of a tensor, ('[i]', dtype) of each tensor a list holds."""
    if isinstance(value, torch.Tensor):
        yield "", value.dtype
    elif holds_list and value:
        for position, element in enumerate(value):
            if isinstance(element, torch.Tensor):
                yield f"[{position}]", element.dtype


def _promoting(promotion: CompiledPromotion, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """(name, value) of each promoting argument the call gives (None left out)."""
    named = ((name, _value(args, kwargs, position, name, keyword_only)) for position, name, keyword_only in promotion.arguments)
    return [(name, value) for name, value in named if value is not None]


def _holds(promotion: CompiledPromotion, dtype: torch.dtype, expected: torch.dtype, allowed: frozenset[torch.dtype]) -> bool:
    """Whether a slot of the promoted variable holds the result ``expected``: that very dtype, or, where the overload
    writes into an argument, any dtype of the set that torch casts it to."""
    return dtype in allowed and torch.can_cast(expected, dtype) if promotion.mutates else dtype == expected


def _written_hold(promotion: CompiledPromotion, dtype: torch.dtype, own: frozenset[torch.dtype], args: tuple, kwargs: dict) -> Iterator[tuple[str, torch.dtype]]:
    """(slot, dtype) of each tensor the call writes into that cannot hold its result (``_holds``)."""
    result = _RESULT_OF[promotion.kind].get(dtype, dtype)  # result_dtype, inline: every call of the fast path passes here
    for position, name, keyword_only, holds_list in promotion.written:
        for suffix, held in _tensors(_value(args, kwargs, position, name, keyword_only), holds_list):
            if not _holds(promotion, held, result, own):
                yield name + suffix, held


def promoted_arguments_fit(promotion: CompiledPromotion, allowed: tuple[frozenset[torch.dtype], ...], args: tuple, kwargs: dict, seen: list[Any]) -> bool:
    """The fast check of a call's arguments; sets the variable's dtype in ``seen`` to the computation dtype.

    A call whose promoting arguments are all tensors of one dtype (most calls) computes in that dtype's kind
    at once; any other goes through ATen's tiers.
    """
    if promotion.dtype_argument is not None and (given := _value(args, kwargs, *promotion.dtype_argument)) is not None:
        seen[promotion.variable] = given  # the argument's own set judges it (the test inline: every call passes here)
        return True
    values, common = [], _UNSEEN
    for position, name, keyword_only in promotion.arguments:
        value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
        if value is not None:
            values.append(value)
            if common is not None:
                common = value.dtype if isinstance(value, torch.Tensor) and common in (_UNSEEN, value.dtype) else None
    if isinstance(common, torch.dtype):  # _of_kind, inline: the one lookup most calls take
        dtype = _COMPUTED_IN[promotion.kind].get(common, common) or torch.get_default_dtype()
    else:
        try:
            dtype = computation_dtype(promotion.kind, promoting_values(values))
        except PromotionRefused:
            return False
    if dtype is None:
        return True
    seen[promotion.variable] = dtype
    own = allowed[promotion.variable]
    fits = dtype in own and not any(_written_hold(promotion, dtype, own, args, kwargs))
    for position, name, keyword_only, holds_list in promotion.others:
        for _, found in _tensors(_value(args, kwargs, position, name, keyword_only), holds_list):
            fits = _holds(promotion, found, dtype, own) and fits
    return fits


def promoted_returns_fit(promotion: CompiledPromotion, allowed: tuple[frozenset[torch.dtype], ...], outs: tuple, seen: list[Any]) -> bool:
    """The fast check of a call's returns bound to the promoted variable (after ``promoted_arguments_fit``)."""
    dtype = seen[promotion.variable]
    if dtype is None:
        return True
    expected = _RESULT_OF[promotion.kind].get(dtype, dtype)  # result_dtype, inline
    return all(_holds(promotion, found, expected, allowed[promotion.variable]) for position, _, holds in promotion.returns for _, found in _tensors(outs[position], holds))


def promotion_violations(
    promotion: CompiledPromotion, allowed: tuple[frozenset[torch.dtype], ...], args: tuple, kwargs: dict, outs: tuple | None, seen: list[Any]
) -> list[tuple[str, str, torch.dtype, str]]:
    """(kind, slot, dtype, how) of each way the call breaks the promotion (the slow path, described in full)."""
    if (named := _given_dtype(promotion, args, kwargs)) is not None:
        seen[promotion.variable] = named  # the argument's own set judges it
        return []
    given = _promoting(promotion, args, kwargs)
    took = ", ".join(spelled(name, value) for name, value in given)
    slot = ", ".join(name for name, _ in given)
    line = f"type_promotion {promotion.kind} at {promotion.where}"
    try:
        dtype = computation_dtype(promotion.kind, promoting_values(v for _, v in given))
    except PromotionRefused as exc:
        first = next((t.dtype for _, v in given for t in promoting_values([v]) if isinstance(t, torch.Tensor)), torch.float32)
        return [(PROMOTION_REFUSED, slot, first, f"{took}: {exc} ({line})")]
    if dtype is None:
        return []
    seen[promotion.variable] = dtype
    own = allowed[promotion.variable]
    found = []
    if dtype not in own:
        found.append((COMPUTED_OUTSIDE_SET, slot, dtype, f"{took}; {line}"))
    expected = result_dtype(promotion.kind, dtype)
    for name, held in _written_hold(promotion, dtype, own, args, kwargs):
        found.append((RESULT_DTYPE, name, held, _result_text(promotion, dtype, expected, held, own, line)))
    for position, name, keyword_only, holds_list in promotion.others:
        for suffix, held in _tensors(_value(args, kwargs, position, name, keyword_only), holds_list):
            if not _holds(promotion, held, dtype, own):
                found.append((RESULT_DTYPE, name + suffix, held, _result_text(promotion, dtype, dtype, held, own, line)))
    if outs is not None:
        for position, name, holds_list in promotion.returns:
            for suffix, held in _tensors(outs[position], holds_list):
                if not _holds(promotion, held, expected, own):
                    found.append((RESULT_DTYPE, name + suffix, held, _result_text(promotion, dtype, expected, held, own, line)))
    return found


def _result_text(promotion: CompiledPromotion, computed: torch.dtype, expected: torch.dtype, held: torch.dtype, own: frozenset[torch.dtype], line: str) -> str:
    """Why a slot cannot hold the result; in ATen's words where torch cannot cast the result to its dtype."""
    if promotion.mutates and held in own:
        return f"result type {scalar_type_name(expected)} can't be cast to the desired output type {scalar_type_name(held)} (the call computes in {computed}; {line})"
    if promotion.mutates:
        return f"the call computes in {computed} and writes it into a tensor whose dtype must be in the set ({line})"
    gives = f" and its kind gives {expected}" if expected != computed else ""
    return f"the call computes in {computed}{gives} ({line})"


@functools.lru_cache(maxsize=None)
def scalar_type_name(dtype: torch.dtype) -> str:
    """ATen's ScalarType name of a dtype, as its messages spell it (``Float``, ``Long``, ``ComplexHalf``)."""
    with warnings.catch_warnings():  # complex32's "support is experimental": only its name is asked for
        warnings.simplefilter("ignore")
        return torch.empty(0, dtype=dtype).type().removeprefix("torch.").removesuffix("Tensor")


def describe_promotion(kind: str, slot: str, dtype: Any, how: str, declared: str) -> str:
    """A promotion violation's text (``Violation.describe``): ``how`` says how the promoting arguments took part."""
    if kind == COMPUTED_OUTSIDE_SET:
        return f"computes in {dtype} ({how}), not in {declared}"
    if kind == PROMOTION_REFUSED:
        return f"torch refuses to promote {how}; {declared}"
    label = slot if slot.startswith("return.") else f"argument {slot}"
    return f"{label} has dtype {dtype}: {how}; {declared}"
