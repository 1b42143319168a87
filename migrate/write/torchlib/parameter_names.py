"""What the rewrite reports about each parameter the yaml names otherwise (kept apart from the
renaming itself, ``parameters``, so that reading a cached rewrite loads no libcst)."""

from __future__ import annotations

from dataclasses import dataclass

RENAMED = "renamed"
"""A ``ParameterName``'s outcome when the run renamed it (``parameters.LEFT_ALONE`` lists why others are left alone)."""


@dataclass(frozen=True)
class ParameterName:
    """A parameter of a registered function that the yaml names otherwise (or not at all), and what the run did."""

    path: str
    function: str
    line: int
    overloads: tuple[str, ...]
    param: str
    new: str  # the yaml's name; "" when no schema argument pairs with it
    outcome: str  # RENAMED, or why it is left alone (``parameters.LEFT_ALONE``)
    why: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line} {self.function} ({', '.join(self.overloads)})"
        if self.outcome == RENAMED:
            return f"{where}: {self.param} -> {self.new}"
        return f"{where}: {self.param} left alone, {self.outcome}: {self.why}"
