"""A constraint list of an entry's ``type_constraints``: dtypes, other variables of the entry it follows,
and the ``ScalarType`` argument whose value it is.

``U: [torch.bool, torch.float32, query.dtype]`` says U is bool, float32, or the dtype the tensor
argument ``query`` (and so its variable) has in the same call: ``scaled_dot_product_attention``
takes a bool or float32 mask beside any query, and a float16 mask only beside a float16 query.
The writer names the followed variable by its first argument (``TENSOR_DTYPE``); the readers
take that and, as older files spell it, the variable's own name. ``U: [torch.float32, dtype]`` says U is exactly
the dtype the argument ``dtype`` names when the call gives one, and float32 when it is None
(``zeros``); the entry states the dtypes the argument may name under the argument's own key
(``dtype: TAny``, a ``DtypeArgument``). ``U: [input.dtype, opmath(input.dtype)]`` says U is the dtype of
``input`` in the call or the dtype ATen computes that one in (``migrate.model.dtypes.opmath``): a norm's weight
is a float16 input's dtype or float32, a float64 input's alone. The written list is the canonical dtype order,
then the names, sorted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from migrate.model.dtypes import PREFIX, DType, UnknownDType, canonical, opmath
from migrate.model.named_sets import parse_spelling
from migrate.model.schema import is_variable_name


TENSOR_DTYPE = ".dtype"
"""``query.dtype`` in a list: the dtype of that tensor argument in the call."""
OPMATH = "opmath"
"""``opmath(input.dtype)`` in a list: the dtype ATen computes that tensor argument's dtype in."""


def dtype_of(argument: str) -> str:
    """How a list names the dtype a tensor argument has in the call: ``query.dtype``."""
    return argument + TENSOR_DTYPE


class ConstraintError(ValueError):
    """A constraint list that cannot be read: an item neither a dtype nor a name, or two arguments named."""


@dataclass(frozen=True)
class ConstraintList:
    """A variable's own dtypes, the names of the variables whose dtype in the call it may also take, the
    ``ScalarType`` argument whose value it is when the call gives one ('' for none), and the variables whose
    computation dtype (``opmath``) in the call it may also take."""

    dtypes: tuple[DType, ...]
    follows: tuple[str, ...] = ()
    argument: str = ""
    opmath: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", canonical(self.dtypes))
        object.__setattr__(self, "follows", tuple(sorted(set(self.follows))))
        object.__setattr__(self, "opmath", tuple(sorted(set(self.opmath))))

    @classmethod
    def from_items(cls, items: Iterable[str], arguments: Collection[str] = (), tensors: Mapping[str, str] | None = None) -> ConstraintList:
        """The list as yaml loads it: ``torch.<name>`` items are dtypes, a PyTorch spelling
        (``all_types_and(torch.bool)``) is its dtypes, ``query.dtype`` follows the variable of the tensor argument
        ``query`` (``tensors``: argument -> variable), ``opmath(query.dtype)`` its computation dtype, a name in
        ``arguments`` (the entry's ``ScalarType`` arguments) is the argument, other identifiers name variables."""
        dtypes, follows, named, computed = [], [], [], []
        for item in items:
            if item.startswith(f"{OPMATH}(") and item.endswith(")"):
                inner = cls.from_items([item[len(OPMATH) + 1 : -1]], (), tensors)
                if inner.dtypes or len(inner.follows) != 1:
                    raise ConstraintError(f"{item}: {OPMATH}() takes one tensor argument's dtype or one type variable")
                computed += inner.follows
            elif item.startswith(PREFIX):
                dtypes.append(DType.parse(item))
            elif (spelled := parse_spelling(item)) is not None:
                dtypes += spelled
            elif item.endswith(TENSOR_DTYPE):
                tensor = item.removesuffix(TENSOR_DTYPE)
                if tensor not in (tensors or {}):
                    raise ConstraintError(f"{item}: {tensor} is no tensor argument of the entry with a type variable")
                follows.append(tensors[tensor])
            elif item in arguments:
                named.append(item)
            elif is_variable_name(item):
                follows.append(item)
            else:
                raise UnknownDType(f"{item!r} is neither a dtype 'torch.<name>' nor a type variable")
        if len(set(named)) > 1:
            raise ConstraintError(f"the list names the arguments {' and '.join(sorted(set(named)))}; a list takes the value of one argument")
        return cls(tuple(dtypes), tuple(follows), named[0] if named else "", tuple(computed))

    @classmethod
    def parse(cls, text: str, arguments: Collection[str] = (), tensors: Mapping[str, str] | None = None) -> ConstraintList:
        """The flow-style list ``[torch.bool, query.dtype]`` as ``spelled`` writes it; ``arguments`` and ``tensors`` as
        ``from_items`` takes them."""
        inner = text.strip()
        if not (inner.startswith("[") and inner.endswith("]")):
            raise UnknownDType(f"{text!r} is not a flow-style list")
        items = [item.strip() for item in inner[1:-1].split(",")]
        return cls.from_items((item for item in items if item), arguments, tensors)

    @property
    def names(self) -> tuple[str, ...]:
        """The variables and the argument the list names, sorted, as it is written after its dtypes."""
        return self.spelled_names({})

    def spelled_names(self, followed: Mapping[str, str]) -> tuple[str, ...]:
        """``names`` as a list writes them, sorted: a followed variable as ``followed`` spells it (its argument's
        ``query.dtype``), else by its own name; its computation dtype as ``opmath(query.dtype)``."""
        computed = (f"{OPMATH}({followed.get(v, v)})" for v in self.opmath)
        return tuple(sorted((*(followed.get(v, v) for v in self.follows), *computed, *filter(None, [self.argument]))))

    def spelled(self, followed: Mapping[str, str]) -> str:
        """The flow-style list: the dtypes, then ``spelled_names``."""
        return "[" + ", ".join([*(str(d) for d in self.dtypes), *self.spelled_names(followed)]) + "]"

    def __str__(self) -> str:
        return "[" + ", ".join([*(str(d) for d in self.dtypes), *self.names]) + "]"


@dataclass(frozen=True)
class DtypeArgument:
    """A ``ScalarType`` argument a variable's list names, with the dtypes the argument may name (its own key:
    ``dtype: TAny``); ``optional`` when the schema lets it be None (``ScalarType? dtype=None``)."""

    name: str
    dtypes: tuple[DType, ...]
    optional: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", canonical(self.dtypes))


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


def possible_dtypes(
    name: str,
    dtypes: Mapping[str, tuple[DType, ...]],
    follows: Mapping[str, tuple[str, ...]],
    arguments: Mapping[str, tuple[DType, ...]] | None = None,
    computed: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[DType, ...]:
    """Every dtype a variable may take in some call: its own, those of the variables it follows (resolvable, see
    ``follows_problem``), those the argument each of them names may name (``arguments``: variable -> dtypes), and
    the computation dtypes of those whose ``opmath`` it takes (``computed``: variable -> names)."""
    arguments, computed = arguments or {}, computed or {}

    def held(variable: str, path: frozenset[str]) -> set[DType]:
        found = set(dtypes[variable]) | set(arguments.get(variable, ()))
        for other in set(follows.get(variable, ())) - path:
            found |= held(other, path | {other})
        for other in set(computed.get(variable, ())) - path:
            found |= {opmath(d) for d in held(other, path | {other})}
        return found

    return canonical(held(name, frozenset((name,))))
