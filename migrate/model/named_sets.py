"""Names for dtype sets, composed from the groups PyTorch's maintainers already speak.

A set is spelled two ways, from its contents alone:

- its **PyTorch spelling** (a global set's ``desc``): the largest group of
  ``torch.testing._internal.common_dtype`` it contains, ``_and`` the rest, as an OpInfo
  declares dtypes: ``all_types_and(torch.bool, torch.half, torch.bfloat16)``;
- an **identifier** for the yaml and torchlib, in the words of ATen's dispatch macros
  (``AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3(kBool, kHalf, kBFloat16)`` is
  ``TAllAndComplexAndBoolHalfBFloat16``): ``T`` + the largest macro group it contains + ``And`` +
  the words of the rest, or, when shorter, ``TAnyBut`` + the words (three at most) of what
  the set lacks (``TAnyButBarebonesUnsignedFloat8``); a set with no group is its words joined
  by ``Or`` (``TInt32OrInt64``), as torchlib spells ``TRealOrUInt8``. An identifier is at most
  ``NAME_LIMIT`` characters: a longer one keeps its leading words and ends with ``Etc``
  (``TFloatingAndComplexAndHalfBFloat16Etc``, the floats, complex and ComplexHalf); the ``desc``
  spells the whole set.

The identifier's words are a partition of the dtypes into ATen's macro groups (``AT_INTEGRAL_TYPES``,
``AT_BAREBONES_UNSIGNED_TYPES``, ``AT_FLOATING_TYPES``, ``AT_COMPLEX_TYPES``, ``AT_FLOAT8_TYPES``, all
five float8 kinds) and single dtypes, by their ``ScalarType`` (``kHalf``, ``kComplexHalf``) where it
has a short name, else by their torch name (``Int64``, ``Float8E4m3fn``). A dtype outside the table (a
newer torch's) is spelled by its own name, so every set has both spellings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from migrate.model.dtypes import DType, canonical, named


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
"""At most this many words after ``TAnyBut``: a longer list of what a set lacks no longer reads at a glance."""

NAME_LIMIT = 40
"""Characters of a name, a torchlib twin's digit (``TFloat2``) included: a longer one no longer reads at a glance."""

_COMPOSED_LIMIT = NAME_LIMIT - 1  # room for the twin's digit

ABRIDGED = "Etc"
"""Ends a name that keeps only its leading words (``TFloatingAndComplexAndHalfBFloat16Etc``); its desc has them all."""


def _dtype_word(dtype: DType) -> str:
    """A single dtype's word: ``Int16``, ``UInt8``, ``Float8E4m3fn``."""
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


def _words(dtypes: tuple[DType, ...]) -> list[str]:
    """The identifier's words of the set: a whole group's word, a group of three or more that lacks one dtype as
    ``Float8ButE8m0fnu`` (the group's word not repeated), else each dtype's word."""
    present, words = set(dtypes), []
    for group in WORDS:
        lacking = [d for d in group.dtypes if d not in present]
        if not lacking:
            words.append(group.word)
        elif len(lacking) == 1 and len(group.dtypes) >= 3:
            words.append(f"{group.word}But{_dtype_word(lacking[0]).removeprefix(group.word)}")
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


def composed_name(dtypes: Iterable[DType]) -> str:
    """The identifier of a set, the first of ``name_candidates``."""
    return next(name_candidates(dtypes))


def name_candidates(dtypes: Iterable[DType]) -> Iterator[str]:
    """The identifiers of a set, best first, each within ``NAME_LIMIT`` characters (a twin's digit left room): the
    shorter of the additive spelling and the subtractive one from TAny (three words at most) that fit; else the
    subtractive one of more words, when it fits; else the additive one abridged (``Etc``), most words kept first
    (an abridged name may be another set's too: a run takes the next one free)."""
    dtypes = canonical(dtypes)
    base = _base(BASES, dtypes)
    words = _words(tuple(d for d in dtypes if base is None or d not in base.dtypes))
    head, joiner = ("T", "Or") if base is None else (f"T{base.word}And" if words else f"T{base.word}", "")
    additive = head + joiner.join(words)
    missing = _words(tuple(d for d in ANY if d not in dtypes)) if set(dtypes) <= set(ANY) else None
    subtractive = None if missing is None else "TAny" + ("But" + "".join(missing) if missing else "")
    at_a_glance = [additive] + ([subtractive] if subtractive is not None and len(missing) <= SUBTRACTED_WORDS else [])
    fitting = [name for name in at_a_glance if len(name) <= _COMPOSED_LIMIT]
    if not fitting and subtractive is not None and len(subtractive) <= _COMPOSED_LIMIT:
        fitting = [subtractive]
    if fitting:
        yield min(fitting, key=len)  # the additive one on a tie
        return
    for kept in range(len(words) - 1, 0 if base is None else -1, -1):  # with a base, TFloatingAndComplexEtc at least
        abridged = (head + joiner.join(words[:kept]) if kept else f"T{base.word}") + ABRIDGED
        if len(abridged) <= _COMPOSED_LIMIT:
            yield abridged
