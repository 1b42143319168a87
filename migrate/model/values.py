"""Dtypes an overload takes at some values of an argument and refuses at others (``div``'s ``rounding_mode``).

A set is the union over the values a valid call may take, so it cannot say that ``div(complex64, complex64,
rounding_mode='floor')`` is refused where ``rounding_mode=None`` runs. A ``ValueRefusal`` says it, beside the set:
the argument, the value, the slots cast, the dtypes refused with ATen's message, and the values that took them.
``--report`` lists them (``summary.values``), as do ``show`` and the reference page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.model.dtypes import DType, parse_set


@dataclass(frozen=True)
class ValueRefusal:
    """At ``argument=value``, ATen refused ``dtypes`` at ``slots`` (``message``), which ``taken_at`` values took."""

    overload: str
    argument: str
    value: str | None
    slots: tuple[str, ...]
    dtypes: tuple[DType, ...]
    message: str
    taken_at: tuple[str | None, ...]

    @property
    def spelled_value(self) -> str:
        """``rounding_mode='floor'``, as a Python call spells it."""
        return f"{self.argument}={self.value!r}"

    def __str__(self) -> str:
        others = ", ".join(repr(v) for v in self.taken_at)
        return f"{self.spelled_value} refuses {', '.join(str(d).removeprefix('torch.') for d in self.dtypes)} at {', '.join(self.slots)} (taken at {others}): {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "overload": self.overload,
            "argument": self.argument,
            "value": self.value,
            "slots": list(self.slots),
            "dtypes": [str(d) for d in self.dtypes],
            "message": self.message,
            "taken_at": list(self.taken_at),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ValueRefusal:
        return cls(obj["overload"], obj["argument"], obj["value"], tuple(obj["slots"]), parse_set(obj["dtypes"]), obj["message"], tuple(obj["taken_at"]))
