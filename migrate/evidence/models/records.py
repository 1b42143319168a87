"""What the ``models`` source records of each ATen call a tiny model makes: plain data, shared by the workers that
record (``migrate.evidence.models.jobs``) and the parent that caches and counts (``migrate.evidence.models.source``).

Beside an OpInfo observation's dtypes per slot, a model's call keeps what ATen's dtype rules also read: which tensors
were 0-dim (a 0-dim float32 scale beside bfloat16 activations does not promote them), which Scalar arguments held a
Python number and of what kind, and the backend it ran on; and where it ran: the model, its mode and its pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.runtime.runs import SlotDTypes, load

BACKEND = "CPU"  # the dispatch key every recorded call ran at (the models run on the CPU's reference paths)


@dataclass(frozen=True)
class ModelCall:
    """Calls of one overload with one dtype per tensor slot, 0-dim slots and Python numbers, in one pass of one model."""

    overload: str  # 'aten::native_layer_norm_backward'
    slots: tuple[tuple[str, SlotDTypes], ...]  # every tensor slot of the schema, in order (returns as 'return.N')
    zero_dim: tuple[str, ...]  # the slots that held a 0-dim tensor
    numbers: tuple[tuple[str, str], ...]  # Scalar arguments holding a Python number: (name, 'bool'|'int'|'float'|'complex')
    direct: bool  # called from Python (the model's code), not from inside another overload or by autograd's engine
    count: int
    nonempty: bool  # every tensor argument and return had an element
    model: str  # 'llama'
    mode: str  # 'autocast-bfloat16' (migrate.evidence.models.zoo.MODES)
    phase: str  # 'inference' or 'training'
    backend: str = BACKEND

    @classmethod
    def from_report(cls, report: list[Any], model: str, mode: str, phase: str) -> ModelCall:
        """A worker's report of the call (``[overload, [[slot, dtype names]], zero_dim, numbers, direct, count, nonempty]``)."""
        overload, slots, zero_dim, numbers, direct, count, nonempty = report
        named = tuple((name, load(d)) for name, d in slots)
        return cls(overload, named, tuple(zero_dim), tuple((n, k) for n, k in numbers), bool(direct), count, bool(nonempty), model, mode, phase)

    @property
    def signature(self) -> tuple[Any, ...]:
        """What tells one distinct call from another: the overload, its dtypes, 0-dim slots and numbers (not where it ran)."""
        return (self.overload, self.slots, self.zero_dim, self.numbers)
