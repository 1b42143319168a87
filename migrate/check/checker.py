"""Runtime dtype checking: every ATen call validated against the type variables its overload declares.

``checking(path)`` puts the two dispatch modes the recorders use (``migrate.runtime.dispatch``)
at their keys: one on the PreDispatch key sees each call made from Python
at its own name, CompositeImplicitAutograd overloads included, before it decomposes;
one on the Python key sees every call that reaches a kernel, the parts of those
decompositions included. A call both see is checked once. For each call of an
overload the yaml declares variables for, each tensor bound to a variable must have
a dtype of the variable's set, and all tensors bound to one variable must have one
dtype (``T[]`` means every element). A variable that follows others (``U: [torch.bool, T]``)
also admits the dtype they took in the same call: their slots are checked first. A variable set by a
``ScalarType`` argument (``U: [torch.float32, dtype]``, ``dtype: TAny``) admits exactly the dtype the
argument names when the call gives one (else its list's other members), and a dtype the argument
names outside its own stated dtypes is a violation of the argument (``argument-outside-set``). ``None`` (an absent optional, a hole of a
``T?[]``) binds nothing; Python scalars reach the modes as numbers, not tensors, so
they bind nothing either.

An overload with a ``type_promotion:`` line is checked through it (``migrate.check.promotion``): its
promoting tensors' own dtypes are free, their variable binds the call's computation dtype as ATen
computes it (dimensioned tensors over 0-dim ones over Python numbers, by category, then the kind),
which must be in the set; a call whose promotion torch refuses (float8 beside float32) is a
violation; the variable's other slots hold the result (the kind's: bool for ``always_bool``), or any
dtype of the set in an overload that writes into an argument (torch casts into it).

By default a violation raises ``DtypeViolation``: for arguments before the kernel
runs (of an overload that writes into no argument, the kernel is then asked too, and
its own refusal, ``"add_stub" not implemented for 'UInt16'``, ends the message), for
returns after. With ``collect=True`` calls run as usual and the checker
gathers each distinct violation with a count; a call whose kernel raised is not
checked then (as the recorders record only calls that returned, so verify judges
declarations on the evidence they were inferred from). In both modes a call with an
empty tensor (an argument or a return with no element) is not judged: ATen returns
before its dtype dispatch there (``mm`` of (0, 2) and (2, 3) bool tensors runs), so
such a call says nothing of the dtypes it accepts, and the evidence never counts it.

An overload whose ``dispatch_dtypes:`` line states sets per backend is judged by the set of its call's
backend, read from its first tensor's device (cpu: the CPU set, cuda: the CUDA set, another device: the
union); ``Declarations.on(key)`` binds one backend for every call (``migrate.api``'s ``device``).

Under an active autocast, a call made from Python of an overload whose ``autocast:`` line names a policy for
that autocast key is judged as the policy hands it to the kernel (``migrate.check.autocast``), and a return
at another dtype than the policy hands its variable's castable arguments is an ``autocast-policy`` violation
naming the line (docs/autocast.md).

``judge`` is the decision itself, for the checker and for ``migrate.api`` alike.
Per overload, the check is compiled on its first call (tensor slot positions mapped
to variable indices, each set a frozenset of torch dtypes) and then costs a pass
over the tensor arguments; an overload with no declaration costs one dict lookup.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from migrate.check.autocast import AutocastPolicy, Handed, active_key, eligible_arguments, handed
from migrate.check.promotion import (  # noqa: F401  (the promotion kinds of Violation are the checker's too)
    COMPUTED_OUTSIDE_SET,
    PROMOTION_REFUSED,
    RESULT_DTYPE,
    CompiledPromotion,
    compile_promotion,
    describe_promotion,
    promoted_arguments_fit,
    promoted_returns_fit,
    promotion_violations,
)
from migrate.runtime import torch_private
from migrate.runtime.dispatch import TwoKeyObserver, has_elements
from migrate.errors import InputError
from migrate.model.backends import BACKENDS_KEY, backend_of
from migrate.model.constraint import OPMATH, ConstraintList
from migrate.model.dtypes import DType, opmath
from migrate.model.exceptions import CONDITIONS, MASKED_FILL
from migrate.model.names import OverloadName
from migrate.model.promotion import PROMOTION_KEY

if TYPE_CHECKING:
    from migrate.model.native import NativeFunctions


# Violation kinds.
OUTSIDE_SET = "outside-set"  # a tensor's dtype is not in its variable's set
UNEQUAL = "unequal"  # the tensors bound to one variable have more than one dtype in one call
ARGUMENT_OUTSIDE_SET = "argument-outside-set"  # a ScalarType argument names a dtype outside the dtypes the entry states for it
AUTOCAST_POLICY = "autocast-policy"  # under autocast, a return the kernel made is not at the dtype the declared policy hands its variable's arguments


@dataclass(frozen=True)
class DeclaredVariable:
    """A type variable of one overload: its dtypes (resolved) and the slots it binds."""

    name: str
    dtypes: tuple[DType, ...]  # in the canonical order
    binds: tuple[str, ...]  # argument names and 'return.N'
    follows: tuple[str, ...] = ()  # variables of the overload whose dtype in a call this one may also take
    argument: str = ""  # the ScalarType argument whose value it is when the call gives one
    argument_dtypes: tuple[DType, ...] = ()  # the dtypes that argument may name
    backends: tuple[tuple[str, tuple[DType, ...]], ...] = ()  # (dispatch key, its set there) where ``dispatch_dtypes:`` states one
    opmath: tuple[str, ...] = ()  # variables of the overload whose computation dtype in a call this one may also take
    exceptions: tuple[tuple[str, tuple[DType, ...]], ...] = ()  # (condition, its set on that path) from ``type_exceptions:``

    def on(self, key: str) -> DeclaredVariable:
        """The variable as the backend of that dispatch key takes it: its set there ('' or unstated: the union)."""
        dtypes = dict(self.backends).get(key)
        return self if dtypes is None else replace(self, dtypes=dtypes, backends=())


@dataclass(frozen=True)
class DeclaredPromotion:
    """An overload's ``type_promotion:`` line: its kind, its promoting arguments, and where it stands."""

    kind: str
    args: tuple[str, ...]
    line: int  # 1-based


@dataclass(frozen=True)
class DeclaredOverload:
    """One overload's type variables as the yaml declares them, and the line that declares them."""

    name: str  # 'add.Tensor'; 'add' for a default overload
    variables: tuple[DeclaredVariable, ...]
    line: int  # 1-based: the entry's type_constraints line, else its func line
    promotion: DeclaredPromotion | None = None
    backends_line: int = 0  # 1-based: its dispatch_dtypes line (0: none)
    backend: str = ""  # the dispatch key whose sets its variables hold, where that line states one for it
    autocast: tuple[tuple[str, str], ...] = ()  # (autocast key, policy) from its ``autocast:`` line, in the yaml's order
    autocast_line: int = 0  # 1-based: its autocast line (0: none)

    def on(self, key: str) -> DeclaredOverload:
        """The overload as the backend of that dispatch key takes it; where it states a set there, declared at that line."""
        if not any(k == key for v in self.variables for k, _ in v.backends):
            return self
        return replace(self, variables=tuple(v.on(key) for v in self.variables), line=self.backends_line, backends_line=0, backend=key)


@dataclass(frozen=True)
class Declarations:
    """What an annotated native_functions.yaml declares, per overload with a type variable or an autocast policy.

    Read once (the yaml and its sibling type_constraints.yaml, every variable resolved)
    and pickled compactly, so that a worker process gets it in a millisecond instead of
    reading the yaml again.
    """

    path: Path
    overloads: tuple[DeclaredOverload, ...]
    backend: str = ""  # the dispatch key whose sets it holds ('CPU', 'CUDA'); '': the union, each set per backend kept

    @classmethod
    def load(cls, path: Path | str) -> Declarations:
        """Read once per content of the yaml and its sibling: a process that checks many calls or blocks against one
        file (each model of a suite, each case of a table) reads it once, and a file written again is read again."""
        from migrate.model.global_sets import GlobalSetsFile  # here: verify's workers unpickle Declarations without these modules (30 ms each)
        from migrate.model.native import file_bytes, sibling_constraints_path  # as above

        path = Path(path)
        return _declarations_of(path, file_bytes(path), GlobalSetsFile.load(sibling_constraints_path(path)).data)

    @classmethod
    def from_native(cls, native: NativeFunctions) -> Declarations:
        """Every entry's variables, checked against this torch's schemas.

        An unresolved name, an unknown dtype, an overload this torch lacks or a variable
        binding a slot its schema lacks is an InputError naming file, line and op.
        """
        from migrate.model.autocast import AUTOCAST_KEY, declared_autocast  # here: verify's workers unpickle Declarations without these modules (30 ms each)
        from migrate.model.declared import declared_with_backends  # as above
        from migrate.model.global_sets import GlobalSetsFile  # as above
        from migrate.model.native import CONSTRAINTS_KEY, sibling_constraints_path  # as above

        sets = GlobalSetsFile.load(sibling_constraints_path(native.path)).by_name
        overloads = []
        for entry in native.entries:
            variables = declared_with_backends(native, entry, sets)
            promotion = _declared_promotion(native, entry)
            policies = declared_autocast(native, entry)
            if variables or policies:
                span = native.key_span(entry, CONSTRAINTS_KEY)
                line = (span.start if span else entry.func_line) + 1
                declared = tuple(_declared_variable(v) for v in variables)
                backends = native.key_span(entry, BACKENDS_KEY)
                autocast_line = native.key_span(entry, AUTOCAST_KEY).start + 1 if policies else 0
                overloads.append(DeclaredOverload(entry.name, declared, line, promotion, backends.start + 1 if backends else 0, "", policies, autocast_line))
        declarations = cls(native.path, tuple(overloads))
        for overload in declarations.overloads:
            _compile(declarations, _overload(declarations, overload))
        return declarations

    @functools.cached_property
    def by_name(self) -> dict[str, DeclaredOverload]:
        return {overload.name: overload for overload in self.overloads}

    def __reduce__(self) -> tuple:
        return _unpickle_declarations, self._compact

    @functools.cached_property
    def _compact(self) -> tuple:
        """Each distinct variable once, overloads as indices: a plain pickle of the objects loads 10x slower.

        Computed once: verify pickles the same declarations for every OpInfo's worker.
        """
        variables: dict[DeclaredVariable, int] = {}
        rows = tuple(
            (o.name, o.line, tuple(variables.setdefault(v, len(variables)) for v in o.variables), o.promotion, o.backends_line, o.backend, o.autocast, o.autocast_line)
            for o in self.overloads
        )
        sets: dict[tuple[DType, ...], int] = {}
        table = tuple(
            (
                v.name,
                sets.setdefault(v.dtypes, len(sets)),
                v.binds,
                v.follows,
                v.argument,
                tuple(d.name for d in v.argument_dtypes),
                tuple((key, sets.setdefault(dtypes, len(sets))) for key, dtypes in v.backends),
                v.opmath,
                tuple((condition, sets.setdefault(dtypes, len(sets))) for condition, dtypes in v.exceptions),
            )
            for v in variables
        )
        return str(self.path), tuple(tuple(d.name for d in s) for s in sets), table, rows, self.backend

    def only(self, names: Iterable[str]) -> Declarations:
        """The declarations of the named overloads alone (``verify --op`` checks only those)."""
        wanted = set(names)
        return Declarations(self.path, tuple(o for o in self.overloads if o.name in wanted), self.backend)

    def on(self, key: str) -> Declarations:
        """The declarations the backend of that dispatch key takes (``CPU``, ``CUDA``; '': the union): each variable's
        set there, where ``dispatch_dtypes:`` states one."""
        return Declarations(self.path, tuple(o.on(key) for o in self.overloads), key)


def _declared_variable(variable: Any) -> DeclaredVariable:
    argument = variable.argument
    named = (argument.name, argument.dtypes) if argument else ("", ())
    backends = tuple((b.key, b.dtypes) for b in variable.backends)
    exceptions = tuple((e.condition, e.dtypes) for e in variable.exceptions)
    return DeclaredVariable(variable.name, variable.dtypes, variable.binds, variable.follows, *named, backends, variable.opmath, exceptions)


def _declared_promotion(native: NativeFunctions, entry: Any) -> DeclaredPromotion | None:
    """The entry's checked ``type_promotion:`` line, as the checker keeps it."""
    from migrate.model.declared import declared_promotion  # here: verify's workers unpickle Declarations without these modules (30 ms each)

    promotion = declared_promotion(native, entry)
    if promotion is None:
        return None
    return DeclaredPromotion(promotion.kind, promotion.args, native.key_span(entry, PROMOTION_KEY).start + 1)


def _unpickle_declarations(path: str, sets: tuple, variables: tuple, rows: tuple, backend: str) -> Declarations:
    dtypes = [tuple(map(DType, names)) for names in sets]
    table = [
        DeclaredVariable(
            name, dtypes[index], binds, follows, argument, tuple(map(DType, named)), tuple((key, dtypes[i]) for key, i in backends), computed,
            tuple((condition, dtypes[i]) for condition, i in excepted),
        )
        for name, index, binds, follows, argument, named, backends, computed, excepted in variables
    ]
    overloads = tuple(
        DeclaredOverload(name, tuple(table[i] for i in indices), line, promotion, backends_line, backend, autocast, autocast_line)
        for name, line, indices, promotion, backends_line, backend, autocast, autocast_line in rows
    )
    return Declarations(Path(path), overloads, backend)


@dataclass(frozen=True)
class Violation:
    """One way a call broke its overload's declaration.

    ``slot`` and ``dtype`` are the tensor at fault: for OUTSIDE_SET the one whose dtype
    is not in the set, for UNEQUAL the first one whose dtype differs from the first
    dtype the variable took. ``seen`` lists, for UNEQUAL, the first slot of each
    distinct dtype the variable took in the call. A list element is named
    ``tensors[2]``; a return ``return.0``.
    """

    kind: str
    overload: str  # 'aten::add.Tensor'
    variable: str
    declared: tuple[DType, ...]
    where: str  # 'native_functions.yaml:1234', the line that declares the variable
    slot: str
    dtype: DType
    seen: tuple[tuple[str, DType], ...] = ()
    follows: tuple[tuple[str, DType | None], ...] = ()  # each variable it follows, and its dtype in the call (None: unbound)
    promotion: str = ""  # for the promotion kinds: how the promoting arguments took part, and torch's refusal
    argument: tuple[str, DType | None] | None = None  # the argument that sets the variable, and the dtype it named (None: not given)
    autocast: AutocastPolicy | None = None  # under autocast, the policy that handed the slot to the kernel

    def describe(self) -> str:
        """The violation without the overload's name (verify prints it under the overload)."""
        listed = ConstraintList(self.declared, tuple(name for name, _ in self.follows), self.argument[0] if self.argument else "")
        declared = f"{self.variable} = {listed}, declared at {self.where}"
        if self.kind == AUTOCAST_POLICY:
            policy = self.autocast
            given = ", ".join(f"{slot} {'as' if policy.policy else 'is'} {dtype}" for slot, dtype in self.seen)
            said = f"{policy}, hands the kernel {given}" if policy.policy else (
                f"Autocast{policy.key} casts this overload's arguments, but the entry at {policy.where} declares no autocast policy for {policy.key}: {given} as given"
            )
            return f"{said}, but the kernel returned {self.slot} as {self.dtype} ({declared})"
        return self._describe(declared) + (f" (at the kernel, under {self.autocast})" if self.autocast else "")

    def _describe(self, declared: str) -> str:
        if self.kind in (COMPUTED_OUTSIDE_SET, PROMOTION_REFUSED, RESULT_DTYPE):
            return describe_promotion(self.kind, self.slot, self.dtype, self.promotion, declared)
        if self.kind == ARGUMENT_OUTSIDE_SET:
            return f"argument {self.slot} is {self.dtype}, not in {self.variable} = {ConstraintList(self.declared)}, declared at {self.where}"
        if self.kind == OUTSIDE_SET:
            if self.argument and self.argument[1] is not None:  # the call names the dtype: the list's own dtypes do not apply
                name, value = self.argument
                return f"{_slot_text(self.slot)} has dtype {self.dtype}, but {name}={value} in this call sets {self.variable} to {value} alone ({declared})"
            took = [f"{name} is {dtype if dtype is not None else 'unbound'}" for name, dtype in self.follows]
            if self.argument:
                took.append(f"{self.argument[0]} is {self.argument[1] if self.argument[1] is not None else 'None'}")
            took = "; ".join(took)
            return f"{_slot_text(self.slot)} has dtype {self.dtype}, not in {declared}" + (f" ({took} in this call)" if took else "")
        dtypes = ", ".join(f"{slot} is {dtype}" for slot, dtype in self.seen)
        return f"{self.variable} must be one dtype per call, but {dtypes} ({declared})"

    def __str__(self) -> str:
        return f"{self.overload}: {self.describe()}"


def _slot_text(slot: str) -> str:
    return slot if slot.startswith("return.") else f"argument {slot}"


class DtypeViolation(Exception):
    """A call broke its overload's declared dtypes; the message is the first violation, on one line, then
    ATen's own refusal of the same call when its kernel refuses it too (``aten``; '' when it was not asked)."""

    def __init__(self, violations: tuple[Violation, ...], aten: str = ""):
        self.violations = violations
        self.aten = aten
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        refused = f"; ATen refuses it too: {aten}" if aten else ""
        super().__init__(f"{violations[0]}{more}{refused}")


@dataclass(frozen=True)
class _Compiled:
    """An overload's check: where its bound tensors are, and each variable's dtypes as torch dtypes."""

    declared: DeclaredOverload
    overload: str  # 'aten::add.Tensor'
    where: str
    allowed: tuple[frozenset[torch.dtype], ...]  # per variable
    follows: tuple[tuple[int, ...], ...]  # per variable, the indices of the variables it follows
    arguments: tuple[tuple[int, int, str, bool, bool], ...]  # (variable index, position, name, keyword-only, holds a list)
    returns: tuple[tuple[int, int, str, bool], ...]  # (variable index, position, 'return.N', holds a list)
    returns_tuple: bool
    promotion: CompiledPromotion | None = None  # its promoted variable's slots are checked there, not above
    set_by: tuple[tuple[int, int, str, bool, frozenset[torch.dtype]], ...] = ()  # (variable index, position, argument, keyword-only, its dtypes)
    per_backend: bool = False  # some variable's set differs per backend: a call is judged by its tensors' device
    computed: tuple[tuple[int, ...], ...] = ()  # per variable, the indices of the variables whose computation dtype it may take
    excepted: tuple[tuple[int, str, tuple[tuple[int, str, bool], ...], frozenset[torch.dtype]], ...] = ()  # (variable, condition, its arguments, set)

    def allowed_now(
        self, index: int, seen: list[Any], given: dict[int, torch.dtype] | None = None, excepted: dict[int, frozenset[torch.dtype]] | None = None
    ) -> frozenset[torch.dtype]:
        """A variable's dtypes in this call: its set on the path a condition names when the call takes it (``excepted``);
        the dtype its argument names when the call gives one (``given``); else its own, and the dtypes the variables it
        follows took so far."""
        if excepted and index in excepted:
            return excepted[index]
        if given and index in given:
            return frozenset((given[index],))
        taken = [seen[other] for other in self.follows[index] if seen[other] is not None]
        if self.computed:
            taken += [_opmath(seen[other]) for other in self.computed[index] if seen[other] is not None]
        return self.allowed[index] | frozenset(taken) if taken else self.allowed[index]

    def excepted_now(self, args: tuple, kwargs: dict) -> dict[int, frozenset[torch.dtype]]:
        """Per variable whose call takes the path a condition names, its set there."""
        return {index: allowed for index, condition, positions, allowed in self.excepted if takes_path(condition, args, kwargs, positions)}

    def given(self, args: tuple, kwargs: dict) -> dict[int, torch.dtype]:
        """Per variable set by an argument the call gives (not None), the dtype that argument names."""
        found = {}
        for index, position, name, keyword_only, _ in self.set_by:
            value = _argument(args, kwargs, position, name, keyword_only)
            if isinstance(value, torch.dtype):
                found[index] = value
        return found


def _torch_dtypes(dtypes: Iterable[DType]) -> frozenset[torch.dtype]:
    """The torch dtypes of a set; a name this torch does not define cannot occur in a call, so it is left out."""
    found = (getattr(torch, d.name, None) for d in dtypes)
    return frozenset(d for d in found if isinstance(d, torch.dtype))


@functools.cache
def _opmath(dtype: torch.dtype) -> torch.dtype:
    """The torch dtype ATen computes a tensor of ``dtype`` in (``migrate.model.dtypes.opmath``)."""
    return getattr(torch, opmath(dtype_of(dtype)).name)


@functools.cache
def dtype_of(dtype: torch.dtype) -> DType:
    """The DType of a torch dtype (``torch.float32`` -> ``DType("float32")``)."""
    return DType(str(dtype).removeprefix("torch."))


def _overload(declarations: Declarations, declared: DeclaredOverload) -> Any:
    """The OpOverload a declaration is about; an InputError when this torch has none of that name."""
    name = OverloadName.parse(declared.name)
    try:
        return getattr(getattr(torch.ops.aten, name.operator), name.overload or "default")
    except AttributeError:
        raise InputError(f"this torch has no overload {name.qualified}", declarations.path, declared.line, declared.name) from None


def _compile(declarations: Declarations, func: Any) -> _Compiled | None:
    """The check of ``func``, or None when the yaml declares no variable for it (or it is not an ATen overload)."""
    slots = torch_private.overload_slots(func)
    name = OverloadName.qualified_or_none(slots.name)
    if name is None:
        return None
    declared = declarations.by_name.get(str(name))
    if declared is None or not declared.variables:
        return None
    arguments = {name: (position, keyword_only, holds_list) for position, name, keyword_only, holds_list in slots.arguments}
    returns = {name: (position, holds_list) for position, name, holds_list in slots.returns}
    bound_arguments, bound_returns = [], []
    for index, variable in enumerate(declared.variables):
        for slot in variable.binds:
            if slot in arguments:
                position, keyword_only, holds_list = arguments[slot]
                bound_arguments.append((index, position, slot, keyword_only, holds_list))
            elif slot in returns:
                position, holds_list = returns[slot]
                bound_returns.append((index, position, slot, holds_list))
            else:
                raise InputError(
                    f"{variable.name} binds {slot}, but this torch's {slots.name} has no tensor slot of that name",
                    declarations.path,
                    declared.line,
                    declared.name,
                )
    index_of = {v.name: i for i, v in enumerate(declared.variables)}
    follows = tuple(tuple(index_of[name] for name in v.follows) for v in declared.variables)
    computed = tuple(tuple(index_of[name] for name in v.opmath) for v in declared.variables)
    depth = _depths(tuple(a + b for a, b in zip(follows, computed)))  # a followed variable's slots are checked before its followers'
    positions = {a.name: (position, a.kwarg_only) for position, a in enumerate(func._schema.arguments)}
    set_by = []
    for index, variable in enumerate(declared.variables):
        if variable.argument:
            if variable.argument not in positions:
                message = f"{variable.name} names the argument {variable.argument}, but this torch's {slots.name} has no argument of that name"
                raise InputError(message, declarations.path, declared.line, declared.name)
            position, keyword_only = positions[variable.argument]
            set_by.append((index, position, variable.argument, keyword_only, _torch_dtypes(variable.argument_dtypes)))
    promotion = None
    if declared.promotion is not None:
        promotion, bound_arguments, bound_returns = compile_promotion(declarations.path, declared, func, slots, bound_arguments, bound_returns)
    return _Compiled(
        declared,
        slots.name,
        f"{declarations.path.name}:{declared.line}" + (f" for {declared.backend}" if declared.backend else ""),
        tuple(_torch_dtypes(v.dtypes) for v in declared.variables),
        follows,
        tuple(sorted(bound_arguments, key=lambda a: (depth[a[0]], a[1]))),
        tuple(sorted(bound_returns, key=lambda r: (depth[r[0]], r[1]))),
        slots.returns_tuple,
        promotion,
        tuple(set_by),
        any(v.backends for v in declared.variables),
        computed if any(computed) else (),
        _excepted(declarations, declared, slots.name, positions),
    )


def _excepted(declarations: Declarations, declared: DeclaredOverload, overload: str, positions: dict[str, tuple[int, bool]]) -> tuple:
    """Each variable's set under a ``type_exceptions:`` condition, with the (position, name, keyword-only) of the
    arguments it reads (``positions``: this torch's schema's)."""
    found = []
    for index, variable in enumerate(declared.variables):
        for condition, dtypes in variable.exceptions:
            missing = CONDITIONS[condition].missing(positions)
            if missing is not None:
                message = f"{variable.name} has a set under {condition}, but this torch's {overload} has no argument {missing}"
                raise InputError(message, declarations.path, declared.line, declared.name)
            read = tuple((positions[name][0], name, positions[name][1]) for name in CONDITIONS[condition].arguments)
            found.append((index, condition, read, _torch_dtypes(dtypes)))
    return tuple(found)


def call_check(declarations: Declarations, func: Any) -> _Compiled | None:
    """The check ``judge`` takes for an OpOverload (None: the yaml declares nothing for it), compiled as the checker compiles it."""
    return _compile(declarations, func)


def _depths(follows: tuple[tuple[int, ...], ...]) -> list[int]:
    """Per variable, how long its longest chain of followed variables is (the yaml reader refused cycles)."""
    depth: list[int | None] = [None] * len(follows)

    def of(index: int) -> int:
        if depth[index] is None:
            depth[index] = 1 + max((of(other) for other in follows[index]), default=-1)
        return depth[index]

    return [of(index) for index in range(len(follows))]


def _admits(value: Any, holds_list: bool, allowed: frozenset[torch.dtype], seen: list[Any], index: int) -> bool:
    """Whether a slot's value fits its variable, given the dtype the variable took so far (updated)."""
    if isinstance(value, torch.Tensor):
        dtype = value.dtype
        first = seen[index]
        if first is None:
            seen[index] = first = dtype
        return dtype == first and dtype in allowed
    if holds_list and value:
        fits = True
        for element in value:
            if isinstance(element, torch.Tensor):
                fits = _admits(element, False, allowed, seen, index) and fits
        return fits
    return True


def _argument(args: tuple, kwargs: dict, position: int, name: str, keyword_only: bool) -> Any:
    return kwargs.get(name) if keyword_only or position >= len(args) else args[position]


def takes_path(condition: str, args: tuple, kwargs: dict, arguments: tuple[tuple[int, str, bool], ...]) -> bool:
    """Whether a call takes the kernel's path the condition names (``migrate.model.exceptions.CONDITIONS``).

    ``masked_fill``: accumulate False, one tensor among the indices and it a bool mask, values of one element on the
    CPU (or meta, an abstract call's device): ``canDispatchToMaskedFill``.
    """
    if condition != MASKED_FILL.name:
        return False
    (indices, values, accumulate) = (_argument(args, kwargs, *argument) for argument in arguments)
    if accumulate:
        return False
    masks = [index for index in indices or () if index is not None]
    one_value = isinstance(values, torch.Tensor) and values.numel() == 1 and values.device.type in ("cpu", "meta")
    return one_value and len(masks) == 1 and isinstance(masks[0], torch.Tensor) and masks[0].dtype == torch.bool


def _arguments_fit(check: _Compiled, args: tuple, kwargs: dict, seen: list[Any], given: dict[int, torch.dtype], excepted: dict | None = None) -> bool:
    fits = check.promotion is None or promoted_arguments_fit(check.promotion, check.allowed, args, kwargs, seen)
    fits = fits and all(given[index] in allowed for index, *_, allowed in check.set_by if index in given)
    for index, position, name, keyword_only, holds_list in check.arguments:
        value = _argument(args, kwargs, position, name, keyword_only)
        fits = _admits(value, holds_list, check.allowed_now(index, seen, given, excepted), seen, index) and fits
    return fits


def _returns_fit(check: _Compiled, out: Any, seen: list[Any], given: dict[int, torch.dtype], excepted: dict | None = None) -> bool:
    outs = out if check.returns_tuple else (out,)
    fits = check.promotion is None or promoted_returns_fit(check.promotion, check.allowed, outs, seen)
    for index, position, _, holds_list in check.returns:
        fits = _admits(outs[position], holds_list, check.allowed_now(index, seen, given, excepted), seen, index) and fits
    return fits


def _tensors(slot: str, value: Any, holds_list: bool) -> Iterator[tuple[str, torch.dtype]]:
    """(slot label, dtype) of each tensor a slot holds: ``tensors[2]`` for list elements."""
    if isinstance(value, torch.Tensor):
        yield slot, value.dtype
    elif holds_list and value:
        for position, element in enumerate(value):
            if isinstance(element, torch.Tensor):
                yield f"{slot}[{position}]", element.dtype


def _violations(check: _Compiled, args: tuple, kwargs: dict, out: Any, with_returns: bool) -> tuple[Violation, ...]:
    """Every violation of one call, described in full (the slow path, taken only when the fast one failed)."""
    bound: list[tuple[int, str, str, torch.dtype]] = []  # (variable index, slot, label, dtype) in schema order
    for index, position, name, keyword_only, holds_list in check.arguments:
        value = _argument(args, kwargs, position, name, keyword_only)
        bound.extend((index, name, label, dtype) for label, dtype in _tensors(name, value, holds_list))
    if with_returns:
        outs = out if check.returns_tuple else (out,)
        for index, position, name, holds_list in check.returns:
            bound.extend((index, name, label, dtype) for label, dtype in _tensors(name, outs[position], holds_list))
    found: list[Violation] = []
    given, excepted = check.given(args, kwargs), check.excepted_now(args, kwargs)
    for index, _, name, _, allowed in check.set_by:
        if index in given and given[index] not in allowed and name not in {v.slot for v in found}:
            variable = check.declared.variables[index]
            found.append(Violation(ARGUMENT_OUTSIDE_SET, check.overload, name, variable.argument_dtypes, check.where, name, dtype_of(given[index])))
    outside: set[tuple[str, torch.dtype]] = set()  # a list's elements of one wrong dtype: reported once
    seen: list[Any] = [None] * len(check.allowed)  # each variable's first dtype, followed variables first
    if check.promotion is not None:
        outs = (out if check.returns_tuple else (out,)) if with_returns else None
        for kind, slot, dtype, how in promotion_violations(check.promotion, check.allowed, args, kwargs, outs, seen):
            found.append(_violation(check, kind, check.promotion.variable, slot, dtype_of(dtype), promotion=how))
    for index, slot, label, dtype in bound:
        if seen[index] is None:
            seen[index] = dtype
        if dtype not in check.allowed_now(index, seen, given, excepted) and (slot, dtype) not in outside:
            outside.add((slot, dtype))
            followed = tuple((check.declared.variables[o].name, None if seen[o] is None else dtype_of(seen[o])) for o in check.follows[index])
            if check.computed:
                followed += tuple(
                    (f"{OPMATH}({check.declared.variables[o].name})", None if seen[o] is None else dtype_of(_opmath(seen[o]))) for o in check.computed[index]
                )
            argument = check.declared.variables[index].argument
            named = (argument, dtype_of(given[index]) if index in given else None) if argument else None
            found.append(_violation(check, OUTSIDE_SET, index, label, dtype_of(dtype), follows=followed, argument=named))
    for index, variable in enumerate(check.declared.variables):
        firsts: dict[torch.dtype, str] = {}
        for bound_index, _, label, dtype in bound:
            if bound_index == index:
                firsts.setdefault(dtype, label)
        if len(firsts) > 1:
            seen = tuple((label, dtype_of(dtype)) for dtype, label in firsts.items())
            label, dtype = seen[1]
            found.append(_violation(check, UNEQUAL, index, label, dtype, seen))
    return tuple(found)


NOT_RUN = object()
"""``judge``'s ``out`` for a call judged before its kernel ran: its arguments alone."""


def judge(check: _Compiled, args: tuple, kwargs: dict, out: Any = NOT_RUN, *, seen: list[Any] | None = None, arguments_fit: bool = False) -> tuple[Violation, ...]:
    """The decision: how a call breaks its overload's declaration (``()``: the call is declared).

    The checker judges every call through it, and so does ``migrate.api`` (on meta tensors of the
    dtypes asked about): one implementation. The fast path walks the bound tensors once; only a call
    that does not fit, and has no empty tensor (such a call is never judged), is described in full.
    ``seen`` is each variable's dtype so far, filled in; with ``arguments_fit`` (what judging the same
    call's arguments found) only the returns are judged.
    """
    seen = [None] * len(check.allowed) if seen is None else seen
    with_returns = out is not NOT_RUN
    given = check.given(args, kwargs) if check.set_by else {}
    excepted = check.excepted_now(args, kwargs) if check.excepted else {}
    fits = (arguments_fit or _arguments_fit(check, args, kwargs, seen, given, excepted)) and (not with_returns or _returns_fit(check, out, seen, given, excepted))
    if fits or not _has_elements(args, kwargs, *((out,) if with_returns else ())):
        return ()
    return _violations(check, args, kwargs, out if with_returns else None, with_returns)


def _violation(
    check: _Compiled, kind: str, index: int, slot: str, dtype: DType, seen: tuple = (), follows: tuple = (), promotion: str = "", argument: tuple | None = None
) -> Violation:
    variable = check.declared.variables[index]
    return Violation(kind, check.overload, variable.name, variable.dtypes, check.where, slot, dtype, seen, follows, promotion, argument)


class Checker(TwoKeyObserver):
    """Checks every call made while ``checking()`` is active; in collect mode, counts each distinct violation."""

    def __init__(self, declarations: Declarations, collect: bool) -> None:
        self.declarations = declarations
        self.collect = collect
        self.counts: Counter[Violation] = Counter()  # in order of first occurrence
        self.judged: Counter[str] = Counter()  # in collect mode, the calls judged per overload ('aten::mm')
        self._own_calls = False  # while the checker makes its stand-in tensors: no user's calls
        self._autocast_registered: dict[str, frozenset[str]] = {}  # per autocast key, the operators it registers a kernel for
        self._decomposes: dict[tuple[str, str], bool] = {}  # (overload, autocast key): see _decomposes_under_autocast
        # Keyed by id(overload): an OpOverload's hash is computed in Python, and this is the hot path.
        self._compiled: dict[Any, _Compiled | None] = {}
        self._bound: dict[str, Declarations] = {}  # the declarations each backend takes, made when a call needs them
        super().__init__()

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Each distinct violation collected, in order of first occurrence."""
        return tuple(self.counts)

    @contextlib.contextmanager
    def active(self) -> Iterator[Checker]:
        try:
            with self._modes_active():
                yield self
        finally:
            self._forget_handlers()

    def _check_of(self, func: Any, args: tuple, kwargs: dict) -> _Compiled | None:
        """The call's check: an overload whose sets differ per backend is judged by the set of its tensors' device."""
        key = id(func)  # overloads live as long as torch.ops: their ids are stable
        try:
            check = self._compiled[key]
        except KeyError:
            check = self._compiled[key] = _compile(self.declarations, func)
        if check is None or not check.per_backend or self.declarations.backend:
            return check
        backend = _device_backend(args, kwargs)
        if not backend:
            return check
        try:
            return self._compiled[key, backend]
        except KeyError:
            if backend not in self._bound:
                self._bound[backend] = self.declarations.on(backend)
            bound = self._compiled[key, backend] = _compile(self._bound[backend], func)
            return bound

    def _call(self, check: _Compiled, func: Any, args: tuple, kwargs: dict, run: Any, kernel: Handed | None = None) -> Any:
        """Run ``run(func, args, kwargs)`` with the call's arguments checked before (raise mode) and all after.

        Under autocast (``kernel``), the arguments judged are those the policy hands the kernel.
        """
        judged_args, judged_kwargs = (kernel.args, kernel.kwargs) if kernel else (args, kwargs)
        with_returns = kernel is None or kernel.returns_judged
        if self.collect:
            out = run(func, args, kwargs)
            self.judged[check.overload] += 1
            found = judge(check, judged_args, judged_kwargs, out if with_returns else NOT_RUN)
            self.counts.update(self._blamed(check, func, found, kernel, args, kwargs, out) if found and kernel else found)
            return out
        seen: list[Any] = [None] * len(check.allowed)
        found = judge(check, judged_args, judged_kwargs, seen=seen)
        if found:
            raise DtypeViolation(self._blamed(check, func, found, kernel, args, kwargs, NOT_RUN) if kernel else found, _aten_refusal(func, args, kwargs, run))
        out = run(func, args, kwargs)
        found = judge(check, judged_args, judged_kwargs, out, seen=seen, arguments_fit=True) if with_returns else ()
        if found:
            raise DtypeViolation(self._blamed(check, func, found, kernel, args, kwargs, out) if kernel else found)
        return out

    def _blamed(self, check: _Compiled, func: Any, found: tuple[Violation, ...], kernel: Handed, args: tuple, kwargs: dict, out: Any) -> tuple[Violation, ...]:
        """Violations of a call under autocast, each blamed on the policy where it is the policy's doing.

        A one-dtype violation of a variable whose return differs from an argument autocast may cast (as the
        policy hands it) says the kernel got that argument at another dtype than the declared policy hands it;
        no policy declared where autocast registers one is blamed alike: an ``AUTOCAST_POLICY`` violation.
        A slot the policy cast is described as such.
        """
        policy = kernel.policy
        castable = eligible_arguments(func, policy.key, args, kwargs)
        if not policy.policy and check.overload not in self._registered(policy.key):
            castable = frozenset()
        blamed = []
        for violation in found:
            wrong = _policy_disagreement(check, violation.variable, castable, kernel, out) if violation.kind == UNEQUAL and castable else None
            if wrong:
                (slot, dtype), handed_args = wrong
                blamed.append(replace(violation, kind=AUTOCAST_POLICY, slot=slot, dtype=dtype, seen=handed_args, autocast=policy))
            elif violation.slot.split("[")[0] in kernel.cast:
                blamed.append(replace(violation, autocast=policy))
            else:
                blamed.append(violation)
        return tuple(blamed)

    def _registered(self, key: str) -> frozenset[str]:
        if key not in self._autocast_registered:
            self._autocast_registered[key] = frozenset(torch_private.dispatch_key_registrations(f"Autocast{key}"))
        return self._autocast_registered[key]

    def _decomposes_under_autocast(self, overload: str, key: str) -> bool:
        """Whether an overload autocast does not wrap decomposes (CompositeImplicitAutograd): the parts it calls go
        through autocast on their own, so its returns show their policies (``nll_loss_nd`` of bfloat16 returns
        ``nll_loss``'s float32), not its own kernel's; the parts are judged where they reach kernels."""
        if (overload, key) not in self._decomposes:
            self._decomposes[overload, key] = overload not in self._registered(key) and torch_private.has_kernel(overload, "CompositeImplicitAutograd")
        return self._decomposes[overload, key]

    def _stand_in(self, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        """A meta tensor for a cast argument; the checker's own call, neither judged nor counted."""
        self._own_calls = True
        try:
            return torch.empty(shape, dtype=dtype, device="meta")
        finally:
            self._own_calls = False

    def direct_call(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A call made from Python: checked here, run as a plain run would (its kernel's call is the same one).

        Under autocast it is judged as the declared policy hands it to the kernel (docs/autocast.md).
        """
        check = None if self._own_calls else self._check_of(func, args, kwargs)
        if check is None:
            return torch_private.plain_dispatch(func, args, kwargs)
        key = active_key(args, kwargs)
        if not key:
            return self._call(check, func, args, kwargs, self.run_direct)
        declared = dict(check.declared.autocast).get(key, "")
        where = f"{self.declarations.path.name}:{check.declared.autocast_line}" if declared else check.where
        kernel = handed(func, AutocastPolicy(key, declared, where), args, kwargs, self._stand_in)
        if not declared and self._decomposes_under_autocast(check.overload, key):
            kernel = replace(kernel, returns_judged=False)
        return self._call(check, func, args, kwargs, self.run_direct, kernel)

    def kernel_call(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A call that reached a kernel; the first one under a direct call is that call, already checked."""
        if self._own_calls:
            return func(*args, **kwargs)
        seen_above = self.is_the_direct_call(func)
        check = None if seen_above else self._check_of(func, args, kwargs)
        if check is None:
            return func(*args, **kwargs)
        return self._call(check, func, args, kwargs, _run_kernel)


def _policy_disagreement(
    check: _Compiled, variable: str, castable: frozenset[str], kernel: Handed, out: Any
) -> tuple[tuple[str, DType], tuple[tuple[str, DType], ...]] | None:
    """The first return of ``variable`` whose dtype differs from a castable argument's as ``kernel`` hands it, and those
    arguments (the first of each dtype); None when the returns agree with them or the call has not returned."""
    if out is NOT_RUN:
        return None
    index = next(i for i, v in enumerate(check.declared.variables) if v.name == variable)
    handed: dict[torch.dtype, str] = {}
    for bound, position, name, keyword_only, holds_list in check.arguments:
        if bound == index and name in castable:
            for label, dtype in _tensors(name, _argument(kernel.args, kernel.kwargs, position, name, keyword_only), holds_list):
                handed.setdefault(dtype, label)
    outs = out if check.returns_tuple else (out,)
    for bound, position, name, holds_list in check.returns:
        for label, dtype in _tensors(name, outs[position], holds_list) if bound == index else ():
            differing = tuple((slot, dtype_of(d)) for d, slot in handed.items() if d != dtype)
            if differing:
                return (label, dtype_of(dtype)), differing
    return None


def _aten_refusal(func: Any, args: tuple, kwargs: dict, run: Any) -> str:
    """ATen's own message for a call whose arguments the declaration refuses, when its kernel refuses the call too.

    Asked only of an overload that writes into no argument (running it changes nothing the caller holds);
    '' when the kernel runs the call (the declaration is then narrower than ATen), or a call inside it
    breaks a declaration first.
    """
    if torch_private.overload_slots(func).mutates:
        return ""
    try:
        run(func, args, kwargs)
    except DtypeViolation:
        return ""
    except Exception as exc:  # ATen's refusal, whatever its type (RuntimeError, NotImplementedError, TypeError)
        lines = str(exc).strip().splitlines()
        return lines[0] if lines else type(exc).__name__
    return ""


def _device_backend(args: tuple, kwargs: dict) -> str:
    """The dispatch key of the call's first tensor's device ('CPU', 'CUDA'; '' for another device, or none)."""
    for value in (*args, *kwargs.values()):
        for tensor in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(tensor, torch.Tensor):
                return backend_of(tensor.device.type)
    return ""


def _has_elements(args: tuple, kwargs: dict, *out: Any) -> bool:
    """Whether every tensor of a call (its arguments, and its returns when given) has an element: only such a call is judged."""
    return all(has_elements(value) for value in (*args, *kwargs.values(), *out))


def _run_kernel(func: Any, args: tuple, kwargs: dict) -> Any:
    return func(*args, **kwargs)


@functools.lru_cache(maxsize=4)
def _declarations_of(path: Path, data: bytes, sibling: bytes | None) -> Declarations:
    """The yaml of these bytes at ``path``, its sibling holding ``sibling`` (None: there is none); the key: either file
    changed is a new entry."""
    from migrate.model.native import NativeFunctions  # as in Declarations.load

    return Declarations.from_native(NativeFunctions.parse(data, path))


@contextlib.contextmanager
def checking(declared: Path | str | Declarations, *, collect: bool = False) -> Iterator[Checker]:
    """Check every ATen call in the block against the dtypes ``declared`` (an annotated yaml, or its Declarations).

    Raises DtypeViolation at the first violating call; with ``collect=True`` gathers
    violations in the yielded Checker instead (``checker.violations``, ``checker.counts``).
    """
    declarations = declared if isinstance(declared, Declarations) else Declarations.load(declared)
    with Checker(declarations, collect).active() as checker:
        yield checker
