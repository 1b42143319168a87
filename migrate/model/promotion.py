"""Type promotion as the yaml declares it: ``type_promotion: {kind: default, args: [self, other]}``.

``kind`` is PyTorch's ``ELEMENTWISE_TYPE_PROMOTION_KIND`` in lower case; ``args`` are the promoting
arguments (tensors and Scalars) in schema order. The promoted tensors share one type variable, which
binds the call's computation dtype (torch's ``elementwise_dtypes``), not each argument's own dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROMOTION_KEY = "type_promotion"
KINDS = ("default", "int_to_float", "always_bool", "complex_to_float", "bool_to_long", "no_opmath")
"""``torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND`` member names, lower case, in torch's order."""


@dataclass(frozen=True)
class Promotion:
    """One overload's promotion: its kind and its promoting arguments (schema order)."""

    kind: str
    args: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown type promotion kind {self.kind!r} (known: {', '.join(KINDS)})")
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

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "args": list(self.args)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Promotion:
        return cls(obj["kind"], tuple(obj["args"]))
