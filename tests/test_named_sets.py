"""The named vocabulary: ATen's dispatch groups and common_dtype's functions, the names composed from them (bounded in
length, each decoding to exactly its dtypes), and their PyTorch spelling."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import torch
from torch.testing._internal import common_dtype

from migrate.model.dtypes import DType, canonical, named
from migrate.model.named_sets import ANY, BASES, NAME_LIMIT, SPELLING_BASES, SPELLINGS, WORDS, decoded, full_name, parse_name, parse_spelling, pytorch_spelling, set_name

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
        # add.Tensor's set: no uint16/32/64 (uint8 stays), none of AT_FLOAT8_TYPES' five kinds
        (tuple(d.name for d in ANY if not d.name.startswith(("float8", "uint1", "uint3", "uint6"))), "TAnyButBarebonesUnsignedFloat8", None),
        # one float8 kind: its ScalarType name, the underscore kept, so that Float8 alone is always the group
        (tuple(d.name for d in ANY if d.name != "float8_e8m0fnu"), "TAnyButFloat8_e8m0fnu", None),
        (("float32", "float64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"), "TFloatingAndFloat8But_e8m0fnu", None),
        (("int8", "int16", "int32", "int64"), "TIntegralButUInt8", "(torch.int8, torch.int16, torch.int32, torch.int64)"),
    ],
)
def test_names_and_spellings_of_known_sets(dtypes, name, spelling):
    assert set_name(named(*dtypes)) == name and parse_name(name) == named(*dtypes)
    if spelling is not None:
        assert pytorch_spelling(named(*dtypes)) == spelling and parse_spelling(spelling) == named(*dtypes)


def test_a_set_with_no_name_within_the_limit_has_none_and_its_spelling_decodes():
    """cos's set (the floats, complex and ComplexHalf): 45 characters, so no name; no name hides a dtype (no Etc)."""
    cos = named("float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128")
    assert set_name(cos) is None and full_name(cos) == "TAnyButBoolIntegralBarebonesUnsignedFloat8"  # 42; additively 45
    assert parse_name(full_name(cos)) == cos == decoded("floating_and_complex_types_and(torch.half, torch.bfloat16, torch.chalf)")
    scaled_mm = named("uint8", "int8", "float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2")
    assert set_name(scaled_mm) is None and _evaluated(pytorch_spelling(scaled_mm)) == scaled_mm


@pytest.mark.parametrize("text", ["TFloat", "TTensor", "TReal", "TRealOrUInt8", "TFloatingOrHalf", "THalfBFloat16", "TFloat8E8m0fnu", "Tensor", "(torch.int64)", "floating_types_and()"])
def test_a_text_outside_the_grammar_decodes_to_nothing(text):
    """torchlib's names mean other sets than their words would to a PyTorch reader: none is a name of the grammar."""
    assert decoded(text) is None


def test_every_combination_of_groups_round_trips_and_no_two_sets_share_a_name():
    names = {}
    for size in range(1, len(WORDS) + 1):
        for groups in itertools.combinations(WORDS, size):
            dtypes = canonical(d for g in groups for d in g.dtypes)
            name = full_name(dtypes)
            assert name.isidentifier() and name.startswith("T") and parse_name(name) == dtypes, name
            assert names.setdefault(name, dtypes) == dtypes, name
            assert set_name(dtypes) in (name, None) and (set_name(dtypes) is None) == (len(name + "2") > NAME_LIMIT)  # a twin fits too
            assert _evaluated(pytorch_spelling(dtypes)) == dtypes == parse_spelling(pytorch_spelling(dtypes)), pytorch_spelling(dtypes)


def test_every_set_of_single_dtypes_round_trips():
    for size in range(1, len(ANY) + 1):
        for start in range(len(ANY) - size + 1):
            dtypes = canonical(ANY[start : start + size] + ANY[: max(0, 2 - start)])
            assert parse_name(full_name(dtypes)) == dtypes and parse_spelling(pytorch_spelling(dtypes)) == dtypes, dtypes


def test_single_dtypes_and_dtypes_beyond_the_table_are_spelled_too():
    assert set_name(named("int8", "uint16")) == "TInt8OrUInt16"
    assert _evaluated(pytorch_spelling(named("int8", "uint16"))) == named("int8", "uint16")
    newer = (DType("float8_e4m3fn"), DType("int4"))
    assert set_name(newer) == "TFloat8_e4m3fnOrInt4" and parse_name("TFloat8_e4m3fnOrInt4") == newer
    assert pytorch_spelling(newer) == "(torch.float8_e4m3fn, torch.int4)"
