"""Names for dtype sets, composed from the groups PyTorch's maintainers already speak, that decode to exactly
their dtypes.

A set is spelled two ways, from its contents alone:

- its **PyTorch spelling** (a global set's ``desc``, or an entry's own set): the largest group of
  ``torch.testing._internal.common_dtype`` it contains, ``_and`` the rest, as an OpInfo declares dtypes:
  ``all_types_and(torch.bool, torch.half, torch.bfloat16)``;
- its **name**, an identifier for the yaml and torchlib in the words of ATen's dispatch macros
  (``AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3(kBool, kHalf, kBFloat16)`` is ``TAllAndComplexAndBoolHalfBFloat16``).

The name's grammar (``parse_name`` reads it, ``set_name`` writes it; each is the other's inverse):

- ``T`` + a base + ``And`` + words: the base is the largest of ATen's groups the set contains (``AllAndComplex``,
  ``All``, ``FloatingAndComplex``, ``Integral``, ``Floating``, ``Complex``, ``Float8``), the words the rest;
- ``T`` + words joined by ``Or`` when the set contains no group (``TInt32OrInt64``, ``TBool``);
- ``TAny`` (every dtype the words cover) or ``TAnyBut`` + the words of what the set lacks
  (``TAnyButBarebonesUnsigned``), when that is shorter.

A word is a macro group (``Integral``, ``BarebonesUnsigned``, ``Floating``, ``Complex``, ``Float8``: each of
``AT_INTEGRAL_TYPES``, ``AT_BAREBONES_UNSIGNED_TYPES``, ``AT_FLOATING_TYPES``, ``AT_COMPLEX_TYPES``,
``AT_FLOAT8_TYPES`` whole), a group of three or more less one dtype (``IntegralButUInt8``, ``Float8But_e8m0fnu``),
or one dtype by its ``ScalarType`` (``Bool``, ``Half``, ``BFloat16``, ``ComplexHalf``; else its torch name:
``Int64``, ``UInt8``, ``Float8_e4m3fn``, a float8 kind keeping its underscore so that ``Float8`` alone is always the
group). A name is at most ``NAME_LIMIT`` characters; a set with no name that short has none (the yaml writes a
letter and the set's PyTorch spelling or list). A dtype outside the table (a newer torch's) is spelled by its own
name, so every set has a spelling.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Iterator

from migrate.model.dtypes import PREFIX, DType, canonical, known_dtypes, named


@dataclass(frozen=True)
class Spelling:
    """A group of dtypes as a desc spells it: a common_dtype function's name, or torch's spelling of its dtypes."""

    pytorch: str
    dtypes: tuple[DType, ...]

    @property
    def is_group(self) -> bool:
        return self.pytorch.endswith("_types")


@dataclass(frozen=True)
class Group:
    """A group of dtypes as an identifier spells it: its word, and the dispatch macro or ScalarType PyTorch calls it."""

    word: str
    pytorch: str
    dtypes: tuple[DType, ...]

    @property
    def is_group(self) -> bool:
        return self.pytorch.startswith("AT_")


WORDS: tuple[Group, ...] = (
    Group("Bool", "kBool", named("bool")),
    Group("Integral", "AT_INTEGRAL_TYPES", named("uint8", "int8", "int16", "int32", "int64")),
    Group("BarebonesUnsigned", "AT_BAREBONES_UNSIGNED_TYPES", named("uint16", "uint32", "uint64")),
    Group("Half", "kHalf", named("float16")),
    Group("BFloat16", "kBFloat16", named("bfloat16")),
    Group("Floating", "AT_FLOATING_TYPES", named("float32", "float64")),
    Group("ComplexHalf", "kComplexHalf", named("complex32")),
    Group("Complex", "AT_COMPLEX_TYPES", named("complex64", "complex128")),
    Group("Float8", "AT_FLOAT8_TYPES", named("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")),
)
"""The identifier's words: each dtype of the vocabulary in exactly one group, in canonical order."""

ANY: tuple[DType, ...] = canonical(d for group in WORDS for d in group.dtypes)
"""Every dtype the words cover: ``TAny``."""

BASES: tuple[Group, ...] = (
    Group("AllAndComplex", "AT_ALL_TYPES_AND_COMPLEX", named("uint8", "int8", "int16", "int32", "int64", "float32", "float64", "complex64", "complex128")),
    Group("All", "AT_ALL_TYPES", named("uint8", "int8", "int16", "int32", "int64", "float32", "float64")),
    Group("FloatingAndComplex", "AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES", named("float32", "float64", "complex64", "complex128")),
    *(g for g in WORDS if g.is_group and g.word != "BarebonesUnsigned"),
)
"""ATen's dispatch groups, largest first (float8 last, unsigned never: words beside the others); the base of an
identifier is the first one the set contains."""

SPELLINGS: tuple[Spelling, ...] = (
    Spelling("torch.bool", named("bool")),
    Spelling("integral_types", named("uint8", "int8", "int16", "int32", "int64")),
    Spelling("torch.uint16, torch.uint32, torch.uint64", named("uint16", "uint32", "uint64")),
    Spelling("torch.half", named("float16")),
    Spelling("torch.bfloat16", named("bfloat16")),
    Spelling("floating_types", named("float32", "float64")),
    Spelling("torch.chalf", named("complex32")),
    Spelling("complex_types", named("complex64", "complex128")),
    Spelling("float8_types", named("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")),
    Spelling("torch.float8_e8m0fnu", named("float8_e8m0fnu")),
)
"""The desc's groups: common_dtype's functions and torch's short dtype names, a partition of ``ANY``."""

SPELLING_BASES: tuple[Spelling, ...] = (
    Spelling("all_types_and_complex", named("uint8", "int8", "int16", "int32", "int64", "float32", "float64", "complex64", "complex128")),
    Spelling("all_types", named("uint8", "int8", "int16", "int32", "int64", "float32", "float64")),
    Spelling("floating_and_complex_types", named("float32", "float64", "complex64", "complex128")),
    *(g for g in SPELLINGS if g.is_group),
)
"""common_dtype's functions, largest first: the base of a desc is the first one the set contains."""

SUBTRACTED_WORDS = 3
"""At most this many words after ``TAnyBut`` unless no other name fits: a longer list of what a set lacks no longer
reads at a glance."""

NAME_LIMIT = 40
"""Characters of a name, a torchlib twin's digit (``TFloat2``) included: a longer one no longer reads at a glance."""

_COMPOSED_LIMIT = NAME_LIMIT - 1  # room for the twin's digit
_BUT = "But"


def _dtype_word(dtype: DType) -> str:
    """A single dtype's word: ``Int16``, ``UInt8``; a kind with an underscore keeps it (``Float8_e4m3fn``)."""
    if "_" in dtype.name:
        return dtype.name[:1].upper() + dtype.name[1:]
    name = dtype.name.replace("uint", "u_int", 1) if dtype.name.startswith("uint") else dtype.name
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _spellings(dtypes: tuple[DType, ...]) -> list[str]:
    """The desc's spelling of each whole group in the set, else of each of its dtypes, in canonical order."""
    present = set(dtypes)
    spellings = []
    for group in SPELLINGS:
        if set(group.dtypes) <= present:
            spellings.append(f"*{group.pytorch}()" if group.is_group else group.pytorch)
        else:
            spellings += [str(d) for d in group.dtypes if d in present]
    return spellings + [str(d) for d in dtypes if d not in ANY]


def _lacking_word(group: Group, lacking: DType) -> str:
    """``IntegralButUInt8``; a dtype whose word starts with the group's is named by the rest: ``Float8But_e8m0fnu``."""
    word = _dtype_word(lacking)
    return f"{group.word}{_BUT}{word.removeprefix(group.word) if word.startswith(group.word + '_') else word}"


def _words(dtypes: tuple[DType, ...]) -> list[str]:
    """The name's words of the set: a whole group's word, a group of three or more that lacks one dtype as
    ``Float8But_e8m0fnu``, else each dtype's word."""
    present, words = set(dtypes), []
    for group in WORDS:
        lacking = [d for d in group.dtypes if d not in present]
        if not lacking:
            words.append(group.word)
        elif len(lacking) == 1 and len(group.dtypes) >= 3:
            words.append(_lacking_word(group, lacking[0]))
        else:
            words += [_dtype_word(d) for d in group.dtypes if d in present]
    return words + [_dtype_word(d) for d in dtypes if d not in ANY]


def _base(bases: tuple[Group | Spelling, ...], dtypes: tuple[DType, ...]) -> Group | Spelling | None:
    return next((b for b in bases if set(b.dtypes) <= set(dtypes)), None)


def pytorch_spelling(dtypes: Iterable[DType]) -> str:
    """How an OpInfo would declare the set: ``floating_types_and(torch.half, torch.bfloat16)``."""
    dtypes = canonical(dtypes)
    base = _base(SPELLING_BASES, dtypes)
    rest = _spellings(tuple(d for d in dtypes if base is None or d not in base.dtypes))
    if base is None:
        return f"({rest[0]},)" if len(rest) == 1 else f"({', '.join(rest)})"
    return f"{base.pytorch}_and({', '.join(rest)})" if rest else f"{base.pytorch}()"


def full_name(dtypes: Iterable[DType]) -> str:
    """The set's name in the grammar whatever its length: the shorter of the additive form and the subtractive one
    of at most ``SUBTRACTED_WORDS`` words, else the shorter of the two (the additive one on a tie)."""
    dtypes = canonical(dtypes)
    base = _base(BASES, dtypes)
    words = _words(tuple(d for d in dtypes if base is None or d not in base.dtypes))
    additive = ("T" + "Or".join(words)) if base is None else f"T{base.word}" + (f"And{''.join(words)}" if words else "")
    if not set(dtypes) <= set(ANY):
        return additive
    missing = _words(tuple(d for d in ANY if d not in dtypes))
    subtractive = "TAny" + (_BUT + "".join(missing) if missing else "")
    glance = [additive] + ([subtractive] if len(missing) <= SUBTRACTED_WORDS else [])
    fitting = [name for name in glance if len(name) <= _COMPOSED_LIMIT]
    return min(fitting or [additive, subtractive], key=len)


def set_name(dtypes: Iterable[DType]) -> str | None:
    """The set's name (``full_name``) when it has one of at most ``NAME_LIMIT`` characters (a twin's digit left room)."""
    name = full_name(dtypes)
    return name if len(name) <= _COMPOSED_LIMIT else None


@functools.cache
def _vocabulary() -> dict[str, tuple[DType, ...]]:
    """Every word a name may hold, with its dtypes: the groups, a group less one dtype, each dtype the table knows."""
    words = {group.word: group.dtypes for group in WORDS}
    for group in (g for g in WORDS if len(g.dtypes) >= 3):
        for lacking in group.dtypes:
            words[_lacking_word(group, lacking)] = tuple(d for d in group.dtypes if d != lacking)
    for dtype in known_dtypes():
        words.setdefault(_dtype_word(dtype), (dtype,))
    return words


def _segmentations(text: str, vocabulary: dict[str, tuple[DType, ...]]) -> Iterator[tuple[DType, ...]]:
    """The dtypes of each way ``text`` is a run of words (at most a few: the words are nearly prefix-free)."""
    if not text:
        yield ()
        return
    for end in range(len(text), 0, -1):
        word = vocabulary.get(text[:end])
        if word is not None:
            for rest in _segmentations(text[end:], vocabulary):
                yield word + rest


def parse_name(name: str) -> tuple[DType, ...] | None:
    """The dtypes a name in the grammar means, or None when it is not one (a hand-written or torchlib name):
    ``parse_name(full_name(d)) == d`` and ``full_name(parse_name(n)) == n``."""
    if not name.startswith("T"):
        return None
    body, vocabulary, found = name[1:], _vocabulary(), []
    if body.startswith("Any"):
        rest = body.removeprefix("Any").removeprefix(_BUT)
        found += [tuple(d for d in ANY if d not in lacking) for lacking in _segmentations(rest, vocabulary)] if rest else [ANY]
    for base in BASES:
        if body == base.word:
            found.append(base.dtypes)
        elif body.startswith(base.word + "And"):
            found += [base.dtypes + words for words in _segmentations(body[len(base.word) + 3 :], vocabulary)]
    parts = [vocabulary.get(part) for part in body.split("Or")]
    if None not in parts:
        found.append(tuple(d for part in parts for d in part))
    return next((canonical(d) for d in found if full_name(d) == name), None)


_SHORT = {"torch.half": DType("float16"), "torch.chalf": DType("complex32")}  # torch's short names the spelling uses
_SPELLED_GROUPS = {g.pytorch: g.dtypes for g in (*SPELLINGS, *SPELLING_BASES) if g.is_group or g in SPELLING_BASES}


def parse_spelling(text: str) -> tuple[DType, ...] | None:
    """The dtypes of a PyTorch spelling as ``pytorch_spelling`` writes it (``floating_types_and(torch.half)``,
    ``(torch.int32, torch.int64)``), or None when it is not one."""
    head, _, arguments = text.partition("(")
    if not arguments.endswith(")"):
        return None
    base = _SPELLED_GROUPS.get(head.removesuffix("_and")) if head else ()
    if base is None:
        return None
    found = list(base)
    for item in (i for i in arguments[:-1].split(", ") if i):
        item = item.rstrip(",")
        if item.startswith("*") and item.endswith("()") and item[1:-2] in _SPELLED_GROUPS:
            found += _SPELLED_GROUPS[item[1:-2]]
        elif item in _SHORT:
            found.append(_SHORT[item])
        elif item.startswith(PREFIX) and DType(item.removeprefix(PREFIX)) in known_dtypes():
            found.append(DType(item.removeprefix(PREFIX)))
        else:
            return None
    dtypes = canonical(found)
    return dtypes if pytorch_spelling(dtypes) == text else None


def decoded(value: str) -> tuple[DType, ...] | None:
    """A set's dtypes from its own text, no file read: a name in the grammar or a PyTorch spelling."""
    return parse_name(value) or parse_spelling(value)
