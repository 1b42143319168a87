"""Which overload each alias overload stands for, slot by slot (``migrate.infer.aliases`` gives it its target's
constraints, provenance ``aliases``).

An alias such as ``clip`` or ``__and__.Tensor`` is CompositeImplicitAutograd: it forwards to
``clamp`` or ``bitwise_and.Tensor`` before the kernels the recorders see, so samples never
show it. Two tables derived from torch, never hand-listed, tie it to its target, slot by slot:
the OpInfo alias lists (read by the catalogue; overloads pair by overload name and equal tensor
slots), and the kernels that are one call of another overload (``migrate.evidence.opinfo.forwards``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from migrate.evidence.opinfo.forwards import Forward
from migrate.model.native import NativeFunctions


@dataclass(frozen=True)
class AliasOf:
    """The overload an alias stands for, and which of its slots carries each of the alias's."""

    target: str
    slots: tuple[tuple[str, str], ...]  # (alias slot, target slot)
    why: str  # 'alias of clamp (OpInfo alias list)', 'forwards to clamp.Tensor'
    same_operator: bool = False  # an OpInfo alias: another name of the target's operator, not a kernel that calls it
    numbers: tuple[tuple[str, str], ...] = ()  # (alias, target) Scalar arguments of one name in both schemas: a forward passes them on


def _tensor_slots(native: NativeFunctions, name: str) -> tuple[str, ...]:
    return tuple(s.name for s in native.by_name[name].schema.slots if s.is_tensor)


def _scalars(native: NativeFunctions, name: str) -> tuple[str, ...]:
    return tuple(s.name for s in native.by_name[name].schema.slots if s.word == "Scalar")


def alias_overloads(native: NativeFunctions, pairs: Iterable[tuple[str, str]], forwards: Iterable[Forward] = ()) -> dict[str, AliasOf]:
    """Alias overload -> what it stands for: OpInfo alias pairs ('clip' -> 'clamp', every overload of
    equal tensor slots, and the in-place operators: 'clip_' -> 'clamp_'), then overloads forwarding to another; both
    overloads in the yaml."""
    aliases: dict[str, AliasOf] = {}
    by_operator: dict[str, list[str]] = {}
    for name in native.by_name:
        by_operator.setdefault(name.partition(".")[0], []).append(name)
    operators = {(alias, target) for alias, target in pairs} | {(f"{alias}_", f"{target}_") for alias, target in pairs}  # in-place too
    for alias, target in sorted(operators):
        for name in by_operator.get(alias, ()):
            overload = name.partition(".")[2]
            wanted = f"{target}.{overload}" if overload else target
            if wanted in native.by_name and (slots := _tensor_slots(native, name)) == _tensor_slots(native, wanted):
                aliases.setdefault(name, AliasOf(wanted, tuple(zip(slots, slots)), f"alias of {wanted} (OpInfo alias list)", same_operator=True))
    for forward in sorted(forwards, key=lambda f: f.overload):
        if forward.overload in native.by_name and forward.target in native.by_name:
            known = set(_tensor_slots(native, forward.overload)), set(_tensor_slots(native, forward.target))
            if all(a in known[0] and t in known[1] for a, t in forward.slots):
                theirs = _scalars(native, forward.target)
                numbers = tuple((n, n) for n in _scalars(native, forward.overload) if n in theirs)
                aliases.setdefault(forward.overload, AliasOf(forward.target, forward.slots, f"forwards to {forward.target}", numbers=numbers))
    return aliases
