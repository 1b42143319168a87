"""The named vocabulary: ATen's dispatch groups and common_dtype's functions, the identifiers composed from them
(bounded in length), and their PyTorch spelling."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import torch
from torch.testing._internal import common_dtype

from migrate.model.dtypes import DType, canonical, named
from migrate.model.named_sets import ABRIDGED, ANY, BASES, NAME_LIMIT, SPELLING_BASES, SPELLINGS, WORDS, composed_name, name_candidates, pytorch_spelling

_SCALAR_TYPES = {  # c10's ScalarType names the dispatch macros list, as torch dtypes
    "Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64", "UInt16": "uint16", "UInt32": "uint32",
    "UInt64": "uint64", "Float": "float32", "Double": "float64", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
}  # fmt: skip


def _evaluated(spelling: str) -> tuple[DType, ...]:
    """What PyTorch makes of a spelling: common_dtype's functions called, torch's dtypes read."""
    value = eval(spelling, {"torch": torch, **vars(common_dtype)})  # noqa: S307 - our own spelling, over torch's names
    return canonical(DType(str(d).removeprefix("torch.")) for d in value)


def _macro(name: str) -> tuple[DType, ...]:
    """A dispatch macro's dtypes as the installed torch's Dispatch_v2.h defines it (AT_EXPAND of others followed)."""
    header = (Path(torch.__file__).parent / "include/torch/headeronly/core/Dispatch_v2.h").read_text()
    body = re.search(rf"#define {name}\b(.*?)(?<!\\)\n", header, re.S).group(1)
    dtypes = [d for n in re.findall(r"AT_EXPAND\((\w+)\)", body) for d in _macro(n)]
    for scalar in re.findall(r"ScalarType::(\w+)", body):
        dtypes.append(DType(_SCALAR_TYPES.get(scalar, scalar.lower())))
    return canonical(dtypes)


def test_the_words_are_atens_dispatch_groups_and_the_spellings_common_dtypes():
    macros = [g for g in (*WORDS, *BASES) if g.is_group and not g.pytorch.startswith("AT_DISPATCH")]
    assert {g.word for g in macros} >= {"Integral", "BarebonesUnsigned", "Floating", "Complex", "Float8", "All", "AllAndComplex"}
    for group in macros:
        assert _macro(group.pytorch) == group.dtypes, group.word
    for group in (*SPELLINGS, *SPELLING_BASES):
        if group.is_group:
            assert _evaluated(f"{group.pytorch}()") == group.dtypes, group.pytorch


def test_the_words_and_the_spellings_partition_the_vocabulary():
    for groups in (WORDS, SPELLINGS):
        seen = [d for group in groups for d in group.dtypes]
        assert len(seen) == len(set(seen)) == len(ANY)


@pytest.mark.parametrize(
    "dtypes, name, spelling",
    [
        (("float16", "bfloat16", "float32", "float64"), "TFloatingAndHalfBFloat16", "floating_types_and(torch.half, torch.bfloat16)"),
        (
            ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"),
            "TAllAndComplexAndBoolHalfBFloat16",  # AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3(kBool, kHalf, kBFloat16)
            "all_types_and_complex_and(torch.bool, torch.half, torch.bfloat16)",
        ),
        (("float32", "float64"), "TFloating", "floating_types()"),
        (("int32", "int64"), "TInt32OrInt64", "(torch.int32, torch.int64)"),
        (("int64",), "TInt64", "(torch.int64,)"),
        (("complex32", "complex64", "complex128"), "TComplexAndComplexHalf", "complex_types_and(torch.chalf)"),
        (tuple(d.name for d in ANY), "TAny", pytorch_spelling(ANY)),
        # add.Tensor's set: no uint16/32/64 (uint8 stays), none of AT_FLOAT8_TYPES' five kinds: no stutter
        (tuple(d.name for d in ANY if not d.name.startswith(("float8", "uint1", "uint3", "uint6"))), "TAnyButBarebonesUnsignedFloat8", None),
        (tuple(d.name for d in ANY if d.name != "float8_e8m0fnu"), "TAnyButFloat8E8m0fnu", None),
        (("float32", "float64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"), "TFloatingAndFloat8ButE8m0fnu", None),
        (("int8", "int16", "int32", "int64"), "TIntegralButUInt8", "(torch.int8, torch.int16, torch.int32, torch.int64)"),
    ],
)
def test_names_and_spellings_of_known_sets(dtypes, name, spelling):
    assert composed_name(named(*dtypes)) == name
    if spelling is not None:
        assert pytorch_spelling(named(*dtypes)) == spelling


def test_a_name_over_the_limit_keeps_its_leading_words_and_ends_with_etc():
    """scaled_mm's inputs: 63 characters joined by Or; the desc keeps the whole set."""
    dtypes = named("uint8", "int8", "float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2")
    assert composed_name(dtypes) == "TUInt8OrInt8OrHalfOrBFloat16Etc"
    sqrt = named("float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128")
    assert composed_name(sqrt) == "TFloatingAndComplexAndHalfBFloat16Etc"  # ...ComplexHalf would be 45
    assert _evaluated(pytorch_spelling(dtypes)) == dtypes


def test_every_combination_of_groups_has_a_name_within_the_limit_its_own_unless_abridged_and_a_spelling_pytorch_reads_back():
    names, abridged = {}, []
    for size in range(1, len(WORDS) + 1):
        for groups in itertools.combinations(WORDS, size):
            dtypes = canonical(d for g in groups for d in g.dtypes)
            for name in name_candidates(dtypes):
                assert name.isidentifier() and name.startswith("T") and len(name + "2") <= NAME_LIMIT, name  # a twin fits too
            name = composed_name(dtypes)
            if name.endswith(ABRIDGED):
                abridged.append(name)
            else:
                assert names.setdefault(name, dtypes) == dtypes, name
            assert _evaluated(pytorch_spelling(dtypes)) == dtypes, pytorch_spelling(dtypes)
    assert len(abridged) < len(names) / 5


def test_every_set_of_single_dtypes_is_named_within_the_limit():
    for size in (len(ANY) - 4, len(ANY) - 7, 9, 7):
        for start in range(len(ANY) - size + 1):
            dtypes = ANY[start : start + size] + ANY[: max(0, 2 - start)]
            assert len(composed_name(canonical(dtypes))) < NAME_LIMIT, dtypes


def test_single_dtypes_and_dtypes_beyond_the_table_are_spelled_too():
    assert composed_name(named("int8", "uint16")) == "TInt8OrUInt16"
    assert _evaluated(pytorch_spelling(named("int8", "uint16"))) == named("int8", "uint16")
    newer = (DType("float8_e4m3fn"), DType("int4"))
    assert composed_name(newer) == "TFloat8E4m3fnOrInt4"
    assert pytorch_spelling(newer) == "(torch.float8_e4m3fn, torch.int4)"
