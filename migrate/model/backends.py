"""Dtype sets per backend, as the yaml declares them: ``dispatch_dtypes: {CPU: {T: TReal}, CUDA: {T: TFloating}}``.

ATen's kernels are per dispatch key and take different dtypes (CUDA takes complex32 ``cos``, CPU integer
``addmm``). ``type_constraints:`` keeps the union over backends (what torchlib reads: a model on any device
reaches the exporter); where one backend's set differs from it, this line states that backend's set, spelled as
``type_constraints:`` spells sets. A variable a key does not name, and a key the line lacks, read as the union.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from migrate.model.dtypes import DType, UnknownDType, canonical, format_set, parse_set

BACKENDS_KEY = "dispatch_dtypes"
BACKEND_KEYS = ("CPU", "CUDA")
"""The dispatch keys a set may be stated for, as ``dispatch:`` names them, in the order the line lists them."""
DEVICES = {"cpu": "CPU", "cuda": "CUDA"}
"""A tensor's device type -> the dispatch key whose set judges it."""

OBSERVED = "observed"  # the CPU set: the dtypes CPU calls ran with (the union less the dtypes only CUDA claims)
CLAIMED = "OpInfo claims"  # the CUDA set: what the overload's own OpInfo claims for CUDA, a lower bound
NO_KERNEL = "no kernel"  # the empty set of a backend the entry's dispatch: gives no kernel (histogram's CUDA)
UNION = "the union"  # a backend no set is stated for: it reads as the entry's type_constraints

SetValue = Union[str, tuple[DType, ...]]
"""A global set's name, or the dtypes listed."""


@dataclass(frozen=True)
class BackendSet:
    """One variable's dtypes on one backend, and what they rest on (``OBSERVED``, ``CLAIMED``)."""

    key: str
    dtypes: tuple[DType, ...]
    basis: str

    def __post_init__(self) -> None:
        if self.key not in BACKEND_KEYS:
            raise ValueError(f"unknown backend {self.key!r} (known: {', '.join(BACKEND_KEYS)})")
        object.__setattr__(self, "dtypes", canonical(self.dtypes))


@dataclass(frozen=True)
class DispatchDtypes:
    """An entry's ``dispatch_dtypes:`` line: per dispatch key, the variables whose set there is not the union."""

    by_key: tuple[tuple[str, tuple[tuple[str, SetValue], ...]], ...]

    def __post_init__(self) -> None:
        keys = dict(self.by_key)
        for key, variables in keys.items():
            if key not in BACKEND_KEYS:
                raise ValueError(f"unknown dispatch key {key!r} in '{BACKENDS_KEY}:' (known: {', '.join(BACKEND_KEYS)})")
            if not variables:
                raise ValueError(f"'{BACKENDS_KEY}:' states no set for {key}")
        object.__setattr__(self, "by_key", tuple((key, keys[key]) for key in BACKEND_KEYS if key in keys))

    def __str__(self) -> str:
        """The flow mapping written after ``dispatch_dtypes:``."""

        def spelled(value: SetValue) -> str:  # a name, a PyTorch spelling (quoted: its commas are yaml's), a list
            return (value if value.isidentifier() else f"'{value}'") if isinstance(value, str) else format_set(value)

        keys = (f"{key}: {{" + ", ".join(f"{name}: {spelled(value)}" for name, value in variables) + "}" for key, variables in self.by_key)
        return "{" + ", ".join(keys) + "}"

    def line(self, indent: int) -> str:
        """The whole ``dispatch_dtypes:`` line (no line end)."""
        return " " * indent + f"{BACKENDS_KEY}: {self}"

    @classmethod
    def from_mapping(cls, mapping: Any) -> DispatchDtypes:
        """From the loaded yaml value; a malformed one is a ValueError (an unknown dtype's message names it)."""
        if not isinstance(mapping, dict) or not mapping:
            raise ValueError(f"'{BACKENDS_KEY}:' must map dispatch keys to {{variable: set}} mappings")
        by_key = []
        for key, variables in mapping.items():
            if not isinstance(variables, dict) or not all(isinstance(name, str) for name in variables):
                raise ValueError(f"'{BACKENDS_KEY}:' {key} must map type variables to a set name or a list of dtypes")
            values: list[tuple[str, SetValue]] = []
            for name, value in variables.items():
                if isinstance(value, list) and all(isinstance(d, str) for d in value):
                    try:
                        values.append((name, parse_set(value)))
                    except UnknownDType as exc:
                        raise ValueError(f"'{BACKENDS_KEY}:' {key} {name}: {exc}") from exc
                elif isinstance(value, str):
                    values.append((name, value))
                else:
                    raise ValueError(f"'{BACKENDS_KEY}:' {key} {name} must be a set name or a list of dtypes")
            by_key.append((str(key), tuple(values)))
        return cls(tuple(by_key))


def backend_of(device: str) -> str:
    """The dispatch key whose set judges a tensor on ``device`` ('cpu', 'cuda:0', 'meta'); '' reads the union."""
    return DEVICES.get(device.split(":", 1)[0], "")
