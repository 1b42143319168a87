"""Typed function schemas: where the tensor slots of a ``func:`` string are, and their type words.

torchgen's ``FunctionSchema`` cannot read a schema whose tensors are spelled with type
variables (``T(a!) self``), and its ``__str__`` need not reproduce the source text
byte for byte. So this module tokenises the schema text itself, keeping the exact
character span of every slot's type word: writing a variable is replacing that span,
lowering is writing ``Tensor`` back. torchgen still validates the lowered text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import Enum

TENSOR = "Tensor"
SCALAR_TYPE = "ScalarType"
SCALAR = "Scalar"  # a number argument: its value may set a return's dtype

# Type words of schemas that torchgen's BaseTy may not list in every release.
_HISTORICAL_TYPE_WORDS = frozenset({"Dimname", "DimVector", "ConstQuantizerPtr", "Any", "Tensor"})


@functools.cache
def type_words() -> frozenset[str]:
    """Every word that names a schema type (so cannot be a type variable)."""
    from torchgen.model import BaseTy  # here: torchgen.model (40 ms) loads only when a schema is parsed, never on a warm --op run

    return frozenset(b.name for b in BaseTy) | _HISTORICAL_TYPE_WORDS


def is_variable_name(name: str) -> bool:
    return name.isidentifier() and name not in type_words()


class SchemaError(ValueError):
    """A schema text this tool (or torchgen) cannot parse."""


class Container(Enum):
    """How a tensor slot holds its tensors: this decides the modifiers a variable keeps."""

    PLAIN = "Tensor"
    OPTIONAL = "Tensor?"
    LIST = "Tensor[]"
    OPTIONAL_LIST = "Tensor?[]"  # a list of optional tensors
    LIST_OPTIONAL = "Tensor[]?"  # an optional list


RETURN_PREFIX = "return."

# word, alias annotation, modifiers ('?', '[]', '[3]'), in that order; an alias may also follow '[]'.
_TYPE = re.compile(
    r"(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P<alias>\([^()]*\))?(?P<mods>(?:\?|\[\d*\])*)(?P<alias2>\([^()]*\))?"
)


@dataclass(frozen=True)
class Slot:
    """One argument or return of a schema, with where its type word stands in the text."""

    name: str  # the argument's name, or 'return.N'
    word: str  # 'Tensor', a type variable, or another type word ('int', 'Scalar', ...)
    start: int  # span of `word` in the schema text
    end: int
    mods: str  # '?', '[]', '?[]', '[2]', ... (alias annotations excluded)
    alias: str  # e.g. '(a!)', or ''

    @property
    def is_return(self) -> bool:
        return self.name.startswith(RETURN_PREFIX)

    @functools.cached_property
    def is_tensor(self) -> bool:
        """A tensor slot: its word is Tensor or a type variable."""
        return self.word == TENSOR or self.word not in type_words()

    @property
    def container(self) -> Container:
        mods = self.mods
        if mods in ("", "?"):
            return Container.PLAIN if mods == "" else Container.OPTIONAL
        if mods.startswith("?["):
            return Container.OPTIONAL_LIST
        return Container.LIST_OPTIONAL if mods.endswith("?") else Container.LIST


def _outside_strings(text: str, start: int = 0):
    """Yield (index, char, depth) for each character outside string literals, depth counting ( and [."""
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        yield i, ch, depth


def _split_top_level(text: str, base: int) -> list[tuple[str, int]]:
    """Split at commas outside brackets and string literals; each piece with its offset."""
    pieces, start = [], 0
    for i, ch, depth in _outside_strings(text):
        if ch == "," and depth == 0:
            pieces.append((text[start:i], base + start))
            start = i + 1
    if text[start:].strip() or pieces:
        pieces.append((text[start:], base + start))
    return pieces


def _matching_paren(text: str, open_at: int) -> int:
    for i, ch, depth in _outside_strings(text, open_at):
        if ch == ")" and depth == 0:
            return i
    raise SchemaError("unbalanced parentheses")


def _parse_slot(piece: str, offset: int, return_index: int | None) -> Slot | None:
    stripped = piece.lstrip()
    lead = len(piece) - len(stripped)
    if stripped.strip() == "*":
        return None
    m = _TYPE.match(stripped)
    if not m:
        raise SchemaError(f"cannot read the type of {piece.strip()!r}")
    rest = stripped[m.end() :]
    if return_index is None:
        arg = re.match(r"\s+([A-Za-z_][A-Za-z0-9_]*)(\s*=.*)?\s*$", rest, re.S)
        if not arg:
            raise SchemaError(f"cannot read the argument {piece.strip()!r}")
        name = arg.group(1)
    else:
        if rest.strip() and not re.fullmatch(r"\s+[A-Za-z_][A-Za-z0-9_]*\s*", rest):
            raise SchemaError(f"cannot read the return {piece.strip()!r}")
        name = f"{RETURN_PREFIX}{return_index}"
    start = offset + lead + m.start("word")
    alias = m.group("alias") or m.group("alias2") or ""
    return Slot(name, m.group("word"), start, start + len(m.group("word")), m.group("mods"), alias)


@dataclass(frozen=True)
class TypedSchema:
    """A ``func:`` string, plain or typed, with the spans of all its slots."""

    text: str
    name: str  # 'add.Tensor', 'add' (default overload)
    slots: tuple[Slot, ...]

    @classmethod
    def parse(cls, text: str) -> TypedSchema:
        """The schema of a ``func:`` string; parsed once per process (a run and a test read the same file's schemas
        again and again), which the value being immutable allows."""
        return _parsed(text)

    @classmethod
    def _parse(cls, text: str) -> TypedSchema:
        open_at = text.find("(")
        if open_at <= 0:
            raise SchemaError("no argument list")
        name = text[:open_at].strip()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)?", name):
            raise SchemaError(f"bad operator name {name!r}")
        close_at = _matching_paren(text, open_at)
        arrow = re.match(r"\s*->\s*", text[close_at + 1 :])
        if not arrow:
            raise SchemaError("no '->' after the argument list")
        slots: list[Slot] = []
        for piece, offset in _split_top_level(text[open_at + 1 : close_at], open_at + 1):
            slot = _parse_slot(piece, offset, None)
            if slot is not None:
                slots.append(slot)
        ret_at = close_at + 1 + arrow.end()
        returns = text[ret_at:].rstrip()
        if returns.startswith("(") and _matching_paren(text, ret_at) == ret_at + len(returns) - 1:
            pieces = _split_top_level(returns[1:-1], ret_at + 1)
        else:
            pieces = [(returns, ret_at)]
        for index, (piece, offset) in enumerate(pieces):
            slot = _parse_slot(piece, offset, index)
            if slot is not None:
                slots.append(slot)
        names = [s.name for s in slots]
        if len(set(names)) != len(names):
            raise SchemaError("duplicate argument names")
        return cls(text, name, tuple(slots))

    def __str__(self) -> str:
        return self.text

    @functools.cached_property
    def tensor_slots(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.is_tensor)

    def slot(self, name: str) -> Slot | None:
        return next((s for s in self.slots if s.name == name), None)

    def variables(self) -> dict[str, tuple[str, ...]]:
        """Each type variable of the text with the slots it binds, in order of appearance."""
        found: dict[str, list[str]] = {}
        for s in self.tensor_slots:
            if s.word != TENSOR:
                found.setdefault(s.word, []).append(s.name)
        return {k: tuple(v) for k, v in found.items()}

    @functools.cached_property
    def dtype_arguments(self) -> dict[str, bool]:
        """Each ``ScalarType`` argument's name, with whether it may be None (``ScalarType? dtype=None``)."""
        return {s.name: s.mods == "?" for s in self.slots if not s.is_return and s.word == SCALAR_TYPE and s.mods in ("", "?")}

    def default_of(self, argument: str) -> str | None:
        """The argument's default as the schema spells it (``long`` for ``ScalarType? dtype=long``), None without one."""
        found = re.search(rf"\b{re.escape(argument)}\s*=\s*([^,)]+)", self.text) if self.slot(argument) is not None else None
        return found.group(1).strip() if found else None

    @functools.cached_property
    def numbers_may_set_returns(self) -> bool:
        """Whether an argument other than a tensor may set a return's dtype: a ``Scalar`` (``where.Scalar(cond, True,
        False)`` is bool, ``where.Scalar(cond, 1, 2)`` int64) or a ``ScalarType`` (``to.dtype``)."""
        return self.scalars_may_set_returns or bool(self.dtype_arguments)

    @functools.cached_property
    def scalars_may_set_returns(self) -> bool:
        """Whether a ``Scalar`` argument may set a return's dtype (``full(size, True)`` is bool)."""
        return any(not s.is_return and s.word == SCALAR for s in self.slots)

    def with_words(self, words: dict[str, str]) -> str:
        """The text with the type word of each named slot replaced (every other byte kept)."""
        out, pos = [], 0
        for s in self.slots:
            if s.name in words:
                out.append(self.text[pos : s.start])
                out.append(words[s.name])
                pos = s.end
        out.append(self.text[pos:])
        return "".join(out)

    def lowered(self) -> str:
        """The plain schema: every type variable written back as ``Tensor``."""
        return self._lowered

    @functools.cached_property
    def _lowered(self) -> str:
        return self.with_words({s.name: TENSOR for s in self.tensor_slots if s.word != TENSOR})

    def torchgen(self):
        """torchgen's FunctionSchema of the lowered text; raises SchemaError when torchgen refuses it."""
        return _torchgen_parse(self.lowered())


@functools.lru_cache(maxsize=1 << 15)
def _parsed(text: str) -> TypedSchema:
    return TypedSchema._parse(text)


@functools.lru_cache(maxsize=None)
def _torchgen_parse(lowered: str):
    from torchgen.model import FunctionSchema  # here: torchgen.model (40 ms) loads only when a schema is parsed, never on a warm --op run

    try:
        return FunctionSchema.parse(lowered)
    except Exception as exc:  # torchgen raises AssertionError and friends
        raise SchemaError(f"torchgen cannot parse the schema: {exc}".rstrip(": ")) from exc
