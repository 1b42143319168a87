"""Names for dtype sets, composed from the groups PyTorch's maintainers already speak.

A set is spelled two ways, from its contents alone:

- its **PyTorch spelling** (a global set's ``desc``): the largest group of
  ``torch.testing._internal.common_dtype`` it contains, ``_and`` the rest, as an OpInfo
  declares dtypes: ``all_types_and(torch.bool, torch.half, torch.bfloat16)``;
- an **identifier** for the yaml and torchlib: ``T`` + that group's word + ``And`` +
  the words of the rest (``TAllAndBoolHalfBFloat16``), or, when shorter, ``TAnyBut`` +
  the words (three at most) of what the set lacks from the whole vocabulary
  (``TAnyButFloat8Float8E8M0``); a set
  with no group is its words joined by ``Or`` (``TInt32OrInt64``), as torchlib spells
  ``TRealOrUInt8``.

The words are a partition of the dtypes into PyTorch's groups (``integral_types()``,
``floating_types()``, ``complex_types()``, ``float8_types()``, ATen's
``AT_BAREBONES_UNSIGNED_TYPES``) and single dtypes under their short torch names
(``torch.half`` is ``Half``, ``torch.chalf`` is ``CHalf``). A dtype outside the table
(a newer torch's) is spelled by its own name, so every set has both spellings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from migrate.model.dtypes import DType, canonical, named


@dataclass(frozen=True)
class Group:
    """A named group of dtypes: its word in identifiers and its PyTorch spelling."""

    word: str
    spelling: str  # a common_dtype function's name, or the torch spelling of its dtypes
    dtypes: tuple[DType, ...]


WORDS: tuple[Group, ...] = (
    Group("Bool", "torch.bool", named("bool")),
    Group("Integral", "integral_types", named("uint8", "int8", "int16", "int32", "int64")),
    Group("Unsigned", "torch.uint16, torch.uint32, torch.uint64", named("uint16", "uint32", "uint64")),
    Group("Half", "torch.half", named("float16")),
    Group("BFloat16", "torch.bfloat16", named("bfloat16")),
    Group("Floating", "floating_types", named("float32", "float64")),
    Group("CHalf", "torch.chalf", named("complex32")),
    Group("Complex", "complex_types", named("complex64", "complex128")),
    Group("Float8", "float8_types", named("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")),
    Group("Float8E8M0", "torch.float8_e8m0fnu", named("float8_e8m0fnu")),
)
"""Each dtype of the vocabulary in exactly one group, in canonical order."""

ANY: tuple[DType, ...] = canonical(d for group in WORDS for d in group.dtypes)
"""Every dtype the words cover: ``TAny``."""

BASES: tuple[Group, ...] = (
    Group("AllComplex", "all_types_and_complex", named("uint8", "int8", "int16", "int32", "int64", "float32", "float64", "complex64", "complex128")),
    Group("All", "all_types", named("uint8", "int8", "int16", "int32", "int64", "float32", "float64")),
    Group("FloatingComplex", "floating_and_complex_types", named("float32", "float64", "complex64", "complex128")),
    *(g for g in WORDS if g.spelling.endswith("_types")),
)
"""common_dtype's functions, largest first: the base of a set's spelling is the first one it contains."""


SUBTRACTED_WORDS = 3
"""At most this many words after ``TAnyBut``: a longer list of what a set lacks no longer reads at a glance."""


def _dtype_word(dtype: DType) -> str:
    """A single dtype's word: ``Int16``, ``UInt8``, ``Float8E4m3fn``."""
    name = dtype.name.replace("uint", "u_int", 1) if dtype.name.startswith("uint") else dtype.name
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _dtype_spelling(dtype: DType) -> str:
    whole = next((g for g in WORDS if g.dtypes == (dtype,)), None)
    return whole.spelling if whole is not None else str(dtype)


def _pieces(dtypes: tuple[DType, ...]) -> list[tuple[str, str]]:
    """(word, PyTorch spelling) of each whole group in the set, else of each of its dtypes, in canonical order."""
    present = set(dtypes)
    pieces = []
    for group in WORDS:
        if set(group.dtypes) <= present:
            spelling = f"*{group.spelling}()" if group.spelling.endswith("_types") else group.spelling
            pieces.append((group.word, spelling))
        else:
            pieces += [(_dtype_word(d), _dtype_spelling(d)) for d in group.dtypes if d in present]
    pieces += [(_dtype_word(d), str(d)) for d in dtypes if d not in ANY]
    return pieces


def _base(dtypes: tuple[DType, ...]) -> Group | None:
    return next((b for b in BASES if set(b.dtypes) <= set(dtypes)), None)


def pytorch_spelling(dtypes: Iterable[DType]) -> str:
    """How an OpInfo would declare the set: ``floating_types_and(torch.half, torch.bfloat16)``."""
    dtypes = canonical(dtypes)
    base = _base(dtypes)
    rest = [s for _, s in _pieces(tuple(d for d in dtypes if base is None or d not in base.dtypes))]
    if base is None:
        return f"({rest[0]},)" if len(rest) == 1 else f"({', '.join(rest)})"
    return f"{base.spelling}_and({', '.join(rest)})" if rest else f"{base.spelling}()"


def composed_name(dtypes: Iterable[DType]) -> str:
    """The identifier of a set: the additive spelling, or the subtractive one from TAny when that is shorter."""
    dtypes = canonical(dtypes)
    base = _base(dtypes)
    rest = [w for w, _ in _pieces(tuple(d for d in dtypes if base is None or d not in base.dtypes))]
    if base is None:
        additive = "T" + "Or".join(rest)
    else:
        additive = "T" + base.word + ("And" + "".join(rest) if rest else "")
    if not set(dtypes) <= set(ANY):
        return additive
    missing = [w for w, _ in _pieces(tuple(d for d in ANY if d not in dtypes))]
    if len(missing) > SUBTRACTED_WORDS:
        return additive
    subtractive = "TAny" + ("But" + "".join(missing) if missing else "")
    return subtractive if len(subtractive) < len(additive) else additive
