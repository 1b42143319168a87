"""Type promotion as the yaml declares it: ``type_promotion: {kind: default, args: [self, other]}``, and PyTorch's
rules it stands for, on dtype names.

``kind`` is PyTorch's ``ELEMENTWISE_TYPE_PROMOTION_KIND`` in lower case, or a reduction's ``int_to_long``; ``args`` are the promoting
arguments (tensors and Scalars) in schema order. The promoted tensors share one type variable, which
binds the call's computation dtype (torch's ``elementwise_dtypes``), not each argument's own dtype.

The rules: a dtype's category (bool < integer < floating < complex); what a tensor's dtype and Python numbers beside
it promote to (``with_numbers``); the dtype the kernel is dispatched on under each kind (``computation_dtype``: with
no opmath, float16 inputs compute in float16; ``int_to_float`` moves bool and integers to the default float dtype,
``bool_to_long`` bool to int64, ``int_to_long`` bool and integers); and what a call of each kind returns (``result_dtype``: bool for ``always_bool``, a
complex type's real counterpart for ``complex_to_float``). Inference reads them on ``DType`` names, the runtime
checker on ``torch.dtype`` through tables it converts once (``migrate.check.promotion``), which also combines ATen's
tiers (tensors with dimensions, 0-dim tensors, numbers) with torch's own ``promote_types``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from migrate.model.schema import TypedSchema

PROMOTION_KEY = "type_promotion"
KINDS = ("default", "int_to_float", "always_bool", "complex_to_float", "bool_to_long", "no_opmath")
"""``torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND`` member names, lower case, in torch's order."""
INT_TO_LONG = "int_to_long"
"""A reduction's rule with ``dtype=None``: bool and integers accumulate in int64, other dtypes in their own (ATen's
``get_dtype_from_self(..., promote_integers=true)``, ``torch._refs.sum``'s ``dtype = torch.int64``); a ``dtype``
argument given is the computation dtype. No elementwise kind says it, so torch.onnx's elementwise table has no rule."""
DECLARED_KINDS = (*KINDS, INT_TO_LONG)
"""The kinds a ``type_promotion:`` line may name."""
KEEP_OWN_DTYPE = ("default", "no_opmath")
"""The kinds under which one tensor promoted alone computes in its own dtype (its line would say nothing)."""

BOOL, INTEGER, FLOATING, COMPLEX = range(4)
"""The categories of dtypes, in promotion's order: a lower tier of values moves the result only to a higher one."""
NUMBER_CATEGORY = {"bool": BOOL, "int": INTEGER, "float": FLOATING, "complex": COMPLEX}
"""A Python number's category by the name of its type."""
DEFAULT_FLOAT = "float32"  # torch's default dtype, unless a program sets another
COMPLEX_OF = {"float16": "complex32", "bfloat16": "complex64", "float32": "complex64", "float64": "complex128"}
REAL_OF = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def category(dtype: str) -> int:
    """A dtype's category: ``torch.dtype``'s ``is_complex`` and ``is_floating_point`` by name (quantized and bits
    dtypes count as integers, as torch's promotion treats them)."""
    if dtype == "bool":
        return BOOL
    if dtype.startswith("complex"):
        return COMPLEX
    return FLOATING if dtype.startswith(("float", "bfloat")) else INTEGER


def with_numbers(dtype: str, numbers: Iterable[str] = (), default_float: str = DEFAULT_FLOAT) -> str | None:
    """What tensors of ``dtype`` and Python numbers of these kinds (``NUMBER_CATEGORY``'s names) promote to: a number of
    a higher category moves it to that category's default (``uint16`` with a float: float32; ``float16`` with a
    complex: complex32); None where torch refuses (a float8 with a complex)."""
    top = max((NUMBER_CATEGORY[kind] for kind in numbers), default=BOOL)
    own = category(dtype)
    if top <= own:
        return dtype
    if top == INTEGER:
        return "int64"
    if top == FLOATING:
        return default_float
    if own == FLOATING:
        return COMPLEX_OF.get(dtype)
    return COMPLEX_OF[default_float]


def computation_dtype(kind: str, dtype: str, numbers: Iterable[str] = (), default_float: str = DEFAULT_FLOAT) -> str | None:
    """The dtype a kernel of this kind is dispatched on when its promoted tensors promote to ``dtype`` and its promoted
    Scalars hold Python numbers of these kinds (None where torch refuses to promote them)."""
    found = with_numbers(dtype, numbers, default_float)
    if found is None:
        return None
    if kind == "int_to_float" and category(found) < FLOATING:
        return default_float
    if kind == "bool_to_long" and found == "bool":
        return "int64"
    if kind == INT_TO_LONG and category(found) < FLOATING:
        return "int64"
    return found


def result_dtype(kind: str, computation: str) -> str:
    """The dtype a functional call of this kind returns, given its computation dtype."""
    if kind == "always_bool":
        return "bool"
    if kind == "complex_to_float":
        return REAL_OF.get(computation, computation)
    return computation


def returns_possible(kind: str, dtype: str) -> bool:
    """Whether a call of this kind can return ``dtype`` (``int_to_float`` never returns an integer)."""
    if kind == "int_to_float":
        return category(dtype) >= FLOATING
    if kind == "bool_to_long":
        return dtype != "bool"
    if kind == "always_bool":
        return dtype == "bool"
    if kind == "complex_to_float":
        return dtype not in REAL_OF
    return True


@dataclass(frozen=True)
class Promotion:
    """One overload's promotion: its kind and its promoting arguments (schema order)."""

    kind: str
    args: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in DECLARED_KINDS:
            raise ValueError(f"unknown type promotion kind {self.kind!r} (known: {', '.join(DECLARED_KINDS)})")
        if not self.args:
            raise ValueError("a type promotion names at least one argument")

    def __str__(self) -> str:
        """The flow mapping written after ``type_promotion:``."""
        return f"{{kind: {self.kind}, args: [{', '.join(self.args)}]}}"

    @classmethod
    def from_mapping(cls, mapping: Any) -> Promotion:
        """From the loaded yaml value; a malformed one is a ValueError."""
        if not isinstance(mapping, dict) or set(mapping) != {"kind", "args"}:
            raise ValueError(f"'{PROMOTION_KEY}:' must be a mapping with 'kind' and 'args'")
        args = mapping["args"]
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"'{PROMOTION_KEY}:' args must be a list of argument names")
        return cls(str(mapping["kind"]), tuple(args))

    def line(self, indent: int) -> str:
        """The whole ``type_promotion:`` line (no line end)."""
        return " " * indent + f"{PROMOTION_KEY}: {self}"

    @classmethod
    def parse_line(cls, line: str) -> Promotion | None:
        """The promotion of a written ``type_promotion:`` line (any indent), None for another line."""
        body = line.strip()
        if not body.startswith(PROMOTION_KEY + ":"):
            return None
        return cls.from_mapping(yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))[PROMOTION_KEY])

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "args": list(self.args)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Promotion:
        return cls(obj["kind"], tuple(obj["args"]))


def counts_by_kind(native_functions: bytes) -> dict[str, int]:
    """The ``type_promotion:`` lines of a written file per kind, in ``DECLARED_KINDS`` order."""
    found = [p.kind for line in native_functions.decode("utf-8").splitlines() if (p := Promotion.parse_line(line)) is not None]
    return {kind: found.count(kind) for kind in DECLARED_KINDS if kind in found}


SCALAR = "Scalar"


def promotion_problem(promotion: Promotion, schema: TypedSchema) -> str | None:
    """Why ``promotion`` cannot stand on ``schema`` (its type words as written), or None when it can.

    Each arg is an argument of the schema, a tensor or a Scalar, named once, in schema order; the promoted
    tensors share one type variable (or are all plain ``Tensor``, on an entry without variables for them).
    """
    arguments = [s for s in schema.slots if not s.is_return]
    order = {s.name: index for index, s in enumerate(arguments)}
    for arg in promotion.args:
        if arg not in order:
            return f"'{PROMOTION_KEY}:' names {arg}, which is not an argument of the schema"
        slot = arguments[order[arg]]
        if not slot.is_tensor and slot.word != SCALAR:
            return f"'{PROMOTION_KEY}:' names {arg}, of type {slot.word}, not a tensor or Scalar"
    if len(set(promotion.args)) != len(promotion.args):
        return f"'{PROMOTION_KEY}:' names an argument twice"
    if list(promotion.args) != sorted(promotion.args, key=order.__getitem__):
        return f"'{PROMOTION_KEY}:' args must be in schema order ({', '.join(sorted(promotion.args, key=order.__getitem__))})"
    words = {arguments[order[arg]].word: arg for arg in promotion.args if arguments[order[arg]].is_tensor}
    if len(words) > 1:
        spelled = ", ".join(f"{arg} is {word}" for word, arg in words.items())
        return f"the promoted tensors must share one type variable, but {spelled}"
    return None
