"""``type_exceptions:``: a variable's set where a call takes a path of the kernel that a named condition singles out.

A dtype rule of ATen may hold on every call but those that take another path of the kernel: ``index_put``
requires ``values`` of ``self``'s dtype ("Index put requires the source and destination dtypes match"),
except where one bool mask and a one-element value send it to ``masked_fill_(mask, values.item())``,
which takes a value of any dtype. The list states the rule; the line names the path and the set there::

    - func: index_put(T self, U?[] indices, V values, bool accumulate=False) -> T
      type_constraints: {T: ..., U: ..., V: [self.dtype]}
      type_exceptions: {masked_fill: {V: TAny}}

A condition is one of ``CONDITIONS``, each reading arguments of fixed names that the schema must have.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from migrate.model.dtypes import DType, canonical
from migrate.model.keyed_sets import KeyedSets

EXCEPTIONS_KEY = "type_exceptions"


@dataclass(frozen=True)
class Condition:
    """A path of a kernel a call takes by its arguments' values, and the arguments it reads (by name)."""

    name: str
    arguments: tuple[str, ...]
    says: str
    short: str  # ``says`` in a few words, for a line of ``show``

    def missing(self, arguments: Collection[str]) -> str | None:
        """The first argument it reads that ``arguments`` (a schema's names) lack; None when it has them all."""
        return next((name for name in self.arguments if name not in arguments), None)


MASKED_FILL = Condition(
    "masked_fill",
    ("indices", "values", "accumulate"),
    "accumulate is False, indices holds exactly one tensor, a bool mask, and values holds one element on the CPU: "
    "ATen fills the mask with values.item() (canDispatchToMaskedFill in TensorAdvancedIndexing.cpp)",
    "one bool mask, values of one element, accumulate False",
)
CONDITIONS = {condition.name: condition for condition in (MASKED_FILL,)}


@dataclass(frozen=True)
class TypeException:
    """A variable's dtypes in a call that takes the path ``condition`` names."""

    condition: str
    dtypes: tuple[DType, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", canonical(self.dtypes))


@dataclass(frozen=True)
class TypeExceptions(KeyedSets):
    """An entry's ``type_exceptions:`` line: per condition, the variables whose set differs on that path."""

    KEY = EXCEPTIONS_KEY
    KEYS = tuple(CONDITIONS)
    WHAT = "condition"
