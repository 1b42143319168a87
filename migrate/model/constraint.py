"""A constraint list of an entry's ``type_constraints``: dtypes, and other variables of the entry it follows.

``U: [torch.bool, torch.float32, T]`` says U is bool, float32, or the dtype T has in the
same call: ``scaled_dot_product_attention`` takes a bool or float32 mask beside any query,
and a float16 mask only beside a float16 query. The written list is the canonical dtype
order, then the names, sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migrate.model.dtypes import PREFIX, DType, UnknownDType, canonical
from migrate.model.schema import is_variable_name


@dataclass(frozen=True)
class ConstraintList:
    """A variable's own dtypes, and the names of the variables whose dtype in the call it may also take."""

    dtypes: tuple[DType, ...]
    follows: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", canonical(self.dtypes))
        object.__setattr__(self, "follows", tuple(sorted(set(self.follows))))

    @classmethod
    def from_items(cls, items: Iterable[str]) -> ConstraintList:
        """The list as yaml loads it: ``torch.<name>`` items are dtypes, identifiers name variables."""
        dtypes, follows = [], []
        for item in items:
            if item.startswith(PREFIX):
                dtypes.append(DType.parse(item))
            elif is_variable_name(item):
                follows.append(item)
            else:
                raise UnknownDType(f"{item!r} is neither a dtype 'torch.<name>' nor a type variable")
        return cls(tuple(dtypes), tuple(follows))

    @classmethod
    def parse(cls, text: str) -> ConstraintList:
        """The flow-style list ``[torch.bool, T]`` as ``__str__`` writes it."""
        inner = text.strip()
        if not (inner.startswith("[") and inner.endswith("]")):
            raise UnknownDType(f"{text!r} is not a flow-style list")
        items = [item.strip() for item in inner[1:-1].split(",")]
        return cls.from_items(item for item in items if item)

    def __str__(self) -> str:
        return "[" + ", ".join([*(str(d) for d in self.dtypes), *self.follows]) + "]"


def follows_problem(follows: Mapping[str, tuple[str, ...]]) -> str | None:
    """Why the variables' ``follows`` (name -> names) cannot be resolved: an unknown name or a cycle; None when they can."""
    for name, names in follows.items():
        for other in names:
            if other not in follows:
                return f"unresolved type variable {other} in the list of {name}"
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def cycle(name: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if state.get(name) == 1:
            return path[path.index(name) :] + (name,)
        if state.get(name) == 2:
            return None
        state[name] = 1
        for other in follows[name]:
            found = cycle(other, path + (name,))
            if found:
                return found
        state[name] = 2
        return None

    for name in follows:
        found = cycle(name, ())
        if found:
            return f"type variables follow each other in a cycle: {' -> '.join(found)}"
    return None


def possible_dtypes(name: str, dtypes: Mapping[str, tuple[DType, ...]], follows: Mapping[str, tuple[str, ...]]) -> tuple[DType, ...]:
    """Every dtype a variable may take in some call: its own and those of the variables it follows (resolvable, see ``follows_problem``)."""
    found, pending, seen = set(dtypes[name]), list(follows.get(name, ())), {name}
    while pending:
        other = pending.pop()
        if other not in seen:
            seen.add(other)
            found.update(dtypes[other])
            pending.extend(follows.get(other, ()))
    return canonical(found)
