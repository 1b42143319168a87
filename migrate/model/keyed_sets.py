"""Sets per key of one entry's line, as ``type_constraints:`` spells sets: ``{CPU: {T: TReal}, CUDA: {T: TFloating}}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Union

from migrate.model.dtypes import DType, UnknownDType, format_set, parse_set

SetValue = Union[str, tuple[DType, ...]]
"""A global set's name, or the dtypes listed."""


@dataclass(frozen=True)
class KeyedSets:
    """An entry's line ``KEY: {key: {variable: set}}``: per key of ``KEYS`` (written in that order), variables' sets."""

    KEY: ClassVar[str]
    KEYS: ClassVar[tuple[str, ...]]
    WHAT: ClassVar[str]  # what a key is, for messages: 'dispatch key'

    by_key: tuple[tuple[str, tuple[tuple[str, SetValue], ...]], ...]

    def __post_init__(self) -> None:
        keys = dict(self.by_key)
        for key, variables in keys.items():
            if key not in self.KEYS:
                raise ValueError(f"unknown {self.WHAT} {key!r} in '{self.KEY}:' (known: {', '.join(self.KEYS)})")
            if not variables:
                raise ValueError(f"'{self.KEY}:' states no set for {key}")
        object.__setattr__(self, "by_key", tuple((key, keys[key]) for key in self.KEYS if key in keys))

    def __str__(self) -> str:
        """The flow mapping written after the key."""

        def spelled(value: SetValue) -> str:  # a name, a PyTorch spelling (quoted: its commas are yaml's), a list
            return (value if value.isidentifier() else f"'{value}'") if isinstance(value, str) else format_set(value)

        keys = (f"{key}: {{" + ", ".join(f"{name}: {spelled(value)}" for name, value in variables) + "}" for key, variables in self.by_key)
        return "{" + ", ".join(keys) + "}"

    def line(self, indent: int) -> str:
        """The whole line (no line end)."""
        return " " * indent + f"{self.KEY}: {self}"

    @classmethod
    def from_mapping(cls, mapping: Any) -> KeyedSets:
        """From the loaded yaml value; a malformed one is a ValueError (an unknown dtype's message names it)."""
        if not isinstance(mapping, dict) or not mapping:
            raise ValueError(f"'{cls.KEY}:' must map {cls.WHAT}s to {{variable: set}} mappings")
        by_key = []
        for key, variables in mapping.items():
            if not isinstance(variables, dict) or not all(isinstance(name, str) for name in variables):
                raise ValueError(f"'{cls.KEY}:' {key} must map type variables to a set name or a list of dtypes")
            values: list[tuple[str, SetValue]] = []
            for name, value in variables.items():
                if isinstance(value, list) and all(isinstance(d, str) for d in value):
                    try:
                        values.append((name, parse_set(value)))
                    except UnknownDType as exc:
                        raise ValueError(f"'{cls.KEY}:' {key} {name}: {exc}") from exc
                elif isinstance(value, str):
                    values.append((name, value))
                else:
                    raise ValueError(f"'{cls.KEY}:' {key} {name} must be a set name or a list of dtypes")
            by_key.append((str(key), tuple(values)))
        return cls(tuple(by_key))
