"""Ask an annotated native_functions.yaml whether it declares a call's dtypes: ``load_declarations(path)``.

```python
decl = load_declarations("out/native_functions.yaml")
decl.accepts("aten::add.Tensor", self=torch.uint16, other=torch.uint16)  # a Verdict: falsy, with its sets and reason
decl.dtypes("scaled_dot_product_attention", "attn_mask", query=torch.float16)  # (bool, float16, float32)
```

The answer is the runtime checker's (``migrate.check.checker.judge``), not a copy of it: the call
is made of meta tensors of the dtypes asked about (no data, no kernel runs) and judged as the
checker judges a real call, so dependent constraints and promotion apply exactly as they do
under ``migrate.checking``. A value is a dtype (``torch.uint16``, ``"uint16"``), a 0-dim tensor
(``"float64:0d"``), a Python scalar (``2.5``), a list of those for a ``Tensor[]`` slot, None,
or a real tensor. See docs/api.md.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from migrate.runtime import torch_private
from migrate.check.checker import NOT_RUN, Declarations, DeclaredVariable, Violation, call_check, dtype_of, judge
from migrate.errors import InputError
from migrate.model.backends import DEVICES
from migrate.model.constraint import ConstraintList
from migrate.model.dtypes import TENSOR_DTYPES, DType
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.names import OverloadName
from migrate.model.native import close_matches, sibling_constraints_path

ZERO_DIM = ":0d"  # 'float64:0d': a 0-dim tensor of that dtype


@dataclass(frozen=True)
class BoundVariable:
    """A variable the call binds: its declared set (by name when a global set spells it) and the slots given for it."""

    name: str
    set_name: str | None
    dtypes: tuple[DType, ...]
    follows: tuple[str, ...]
    slots: tuple[str, ...]
    argument: str = ""  # the ScalarType argument whose value it is when the call gives one
    opmath: tuple[str, ...] = ()  # the variables whose computation dtype it may take

    def __str__(self) -> str:
        listed = ConstraintList(self.dtypes, self.follows, self.argument, self.opmath)
        spelled = f"{self.set_name} = {listed}" if self.set_name and not (self.follows or self.argument or self.opmath) else str(listed)
        return f"{', '.join(self.slots)}: {self.name} = {spelled}" if self.name != self.set_name else f"{', '.join(self.slots)}: {spelled}"


@dataclass(frozen=True)
class Verdict:
    """Whether the yaml declares a call's dtypes (``bool(verdict)``), the sets of the variables it binds, and why."""

    overload: str  # 'aten::add.Tensor'
    call: tuple[tuple[str, str], ...]  # (slot, the value as asked), in schema order
    declared: bool
    reason: str
    variables: tuple[BoundVariable, ...]
    violations: tuple[Violation, ...] = ()
    where: str | None = None  # 'native_functions.yaml:544', the line that declares the overload's variables
    took: tuple[tuple[str, DType], ...] = ()  # each variable's dtype in the call (a promoted one: the computation dtype)

    def __bool__(self) -> bool:
        return self.declared

    def __str__(self) -> str:
        call = ", ".join(f"{slot}={value}" for slot, value in self.call)
        head = f"{self.overload}({call}): {'declared' if self.declared else 'not declared'}"
        sets = [f"  {variable}" for variable in self.variables]
        return "\n".join([head, f"  {self.reason}", *sets]) + "\n"


@dataclass(frozen=True)
class _Value:
    """One argument as asked about: what the call passes, and how to print it."""

    passed: Any
    text: str


def _tensor(dtype: torch.dtype, zero_dim: bool) -> torch.Tensor:
    with warnings.catch_warnings():  # complex32's "support is experimental": the question is about its dtype alone
        warnings.simplefilter("ignore")
        return torch.empty(() if zero_dim else (1,), dtype=dtype, device="meta")


def _torch_dtype(name: str, slot: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise InputError(f"{slot}={name}: not a dtype, a dtype{ZERO_DIM}, a number, None or a [list] of them")
    return dtype


def _dtype_value_of(slot: str, value: Any) -> _Value:
    """A ``ScalarType`` argument's value as ``accepts`` takes it: a dtype (``int64``, ``torch.int64``) or None."""
    if value is None or (isinstance(value, str) and value.strip() == "None"):
        return _Value(None, "None")
    if isinstance(value, DType):
        value = value.name
    dtype = value if isinstance(value, torch.dtype) else _torch_dtype(str(value).strip(), slot)
    return _Value(dtype, str(dtype))


def _value_of(slot: str, value: Any) -> _Value:
    """A value as ``accepts`` takes it (also the command line's text: ``uint16``, ``float64:0d``, ``2.5``, ``[float32,int64]``)."""
    if isinstance(value, torch.Tensor):
        return _Value(value, f"{value.dtype}" + (ZERO_DIM if value.dim() == 0 else ""))
    if isinstance(value, torch.dtype):
        return _Value(_tensor(value, False), str(value))
    if isinstance(value, DType):
        return _value_of(slot, value.name)
    if value is None or isinstance(value, (bool, int, float, complex)):
        return _Value(value, repr(value))
    if isinstance(value, (list, tuple)):
        items = [_value_of(slot, item) for item in value]
        return _Value([item.passed for item in items], "[" + ", ".join(item.text for item in items) + "]")
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]") or "," in text:
            return _value_of(slot, [part for part in text.strip("[]").split(",") if part.strip()])
        if text == "None":
            return _Value(None, "None")
        if text in ("True", "False"):
            return _Value(text == "True", text)
        for number in (int, float, complex):
            try:
                return _value_of(slot, number(text))
            except ValueError:
                pass
        zero_dim = text.endswith(ZERO_DIM)
        dtype = _torch_dtype(text.removesuffix(ZERO_DIM), slot)
        return _Value(_tensor(dtype, zero_dim), str(dtype) + (ZERO_DIM if zero_dim else ""))
    raise InputError(f"{slot}={value!r}: not a dtype, a tensor, a number, None or a list of them")


class LoadedDeclarations:
    """What an annotated yaml declares, asked call by call (``load_declarations``)."""

    def __init__(self, declarations: Declarations, set_names: Mapping[tuple[DType, ...], str]):
        self.declarations = declarations
        self.path = declarations.path
        self._set_names = dict(set_names)

    def _resolve(self, overload: str) -> tuple[Any, OverloadName]:
        """The overload's OpOverload and name; one this torch lacks is an error naming the yaml's closest names."""
        try:
            return _resolve(overload)
        except InputError as exc:
            asked = overload.removeprefix("aten::")
            raise InputError(f"{exc.message}{close_matches(asked, self.declarations.by_name)}") from None

    def accepts(self, overload: str, /, **values: Any) -> Verdict:
        """Whether the yaml declares a call of ``overload`` with these values by argument name (``return.0`` too)."""
        func, name = self._resolve(overload)
        self._refuse_a_packet(name)
        slots = torch_private.overload_slots(func)
        schema_arguments = list(torch_private.argument_positions(func))
        returns = [slot for _, slot, _ in slots.returns]
        unknown = [slot for slot in values if slot not in schema_arguments and slot not in returns]
        if unknown:
            raise InputError(f"{name.qualified} has no argument {unknown[0]!r} (it has {', '.join(schema_arguments + returns)})")
        dtype_arguments = {a.name for a in func._schema.arguments if "ScalarType" in str(getattr(a, "real_type", a.type))}
        parsed = {slot: (_dtype_value_of if slot in dtype_arguments else _value_of)(slot, value) for slot, value in values.items()}
        call = tuple((slot, parsed[slot].text) for slot in schema_arguments + returns if slot in parsed)
        check = call_check(self.declarations, func)
        if check is None:
            return Verdict(name.qualified, call, False, f"{self.path.name} declares no type variable for {name.qualified}", ())
        kwargs = {slot: value.passed for slot, value in parsed.items() if slot in schema_arguments}
        out = self._returns(slots, parsed, returns)
        seen: list[Any] = [None] * len(check.declared.variables)
        violations = judge(check, (), kwargs, out, seen=seen)
        variables = tuple(self._bound(variable, parsed) for variable in check.declared.variables if any(s in parsed for s in variable.binds))
        took = tuple((v.name, dtype_of(d)) for v, d in zip(check.declared.variables, seen) if d is not None)
        where = check.where
        if violations:
            reason = "; ".join(v.describe() for v in violations)
        elif took:
            # under a type_promotion line the promoted variable took the call's computation dtype
            reason = f"each variable's dtype is in its set ({', '.join(f'{name} is {dtype}' for name, dtype in took)}), declared at {where}"
        else:
            reason = f"no tensor given binds a variable declared at {where}"
        return Verdict(name.qualified, call, not violations, reason, variables, violations, where, took)

    def _refuse_a_packet(self, name: OverloadName) -> None:
        """A bare operator name whose default overload the yaml does not declare (``add``: torch's default is a
        TorchScript ``add(Scalar a, Scalar b)``) stands for its packet: the user is asked to name an overload."""
        if name.overload or str(name) in self.declarations.by_name:
            return
        packet = sorted(n for n in self.declarations.by_name if OverloadName.parse(n).operator == name.operator)
        if packet:
            raise InputError(f"{name.operator} is a packet of overloads, and {self.path.name} declares none of that name alone: name one of {', '.join(packet)}")

    def dtypes(self, overload: str, argument: str, /, **others: Any) -> tuple[DType, ...]:
        """The dtypes of the 21 a tensor may have in ``argument`` beside ``others``, as ``accepts`` judges each.

        A ``Tensor[]`` slot is asked with a one-element list. An overload the yaml declares nothing for gives ().
        """
        func, _ = self._resolve(overload)
        holds_list = {slot: is_list for _, slot, _, is_list in torch_private.overload_slots(func).arguments}
        found = []
        for dtype in TENSOR_DTYPES:
            tensor = getattr(torch, dtype.name, None)
            if tensor is None:  # a dtype this torch does not define: no call can have it
                continue
            value = [tensor] if holds_list.get(argument) else tensor
            if self.accepts(overload, **{**others, argument: value}):
                found.append(dtype)
        return tuple(found)

    @staticmethod
    def _returns(slots: Any, parsed: dict[str, _Value], returns: list[str]) -> Any:
        if not any(slot in parsed for slot in returns):
            return NOT_RUN
        outs = [parsed[slot].passed if slot in parsed else None for slot in returns]
        return tuple(outs) if slots.returns_tuple else outs[0]

    def _bound(self, variable: DeclaredVariable, parsed: dict[str, _Value]) -> BoundVariable:
        slots = tuple(slot for slot in variable.binds if slot in parsed)
        return BoundVariable(variable.name, self._set_names.get(variable.dtypes), variable.dtypes, variable.follows, slots, variable.argument, variable.opmath)


@functools.lru_cache(maxsize=None)
def _resolve(overload: str) -> tuple[Any, OverloadName]:
    name = OverloadName.parse(overload)
    try:
        return torch_private.aten_overload(name.qualified), name
    except AttributeError:
        raise InputError(f"this torch has no overload {name.qualified}") from None


def load_declarations(path: Path | str, device: str = "cpu") -> LoadedDeclarations:
    """Read an annotated native_functions.yaml (and its sibling type_constraints.yaml) once, every variable resolved,
    bound to the backend of ``device`` (``cpu``, ``cuda``): each variable's set there where ``dispatch_dtypes:`` states one."""
    if device not in DEVICES:
        raise InputError(f"unknown device {device!r} (known: {', '.join(DEVICES)})")
    declarations = Declarations.load(path).on(DEVICES[device])
    sets = GlobalSetsFile.load(sibling_constraints_path(Path(path))).sets
    return LoadedDeclarations(declarations, {s.dtypes: s.name for s in sets})


__all__ = ["BoundVariable", "LoadedDeclarations", "Verdict", "load_declarations"]
