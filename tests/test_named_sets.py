"""The named vocabulary: PyTorch's dtype groups, the identifiers composed from them, and their PyTorch spelling."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.testing._internal import common_dtype

from migrate.model.dtypes import DType, canonical, named
from migrate.model.named_sets import ANY, BASES, WORDS, composed_name, pytorch_spelling


def _evaluated(spelling: str) -> tuple[DType, ...]:
    """What PyTorch makes of a spelling: common_dtype's functions called, torch's dtypes read."""
    value = eval(spelling, {"torch": torch, **vars(common_dtype)})  # noqa: S307 - our own spelling, over torch's names
    return canonical(DType(str(d).removeprefix("torch.")) for d in value)


def test_the_groups_are_pytorchs_own():
    for group in (*WORDS, *BASES):
        if group.spelling.endswith("_types"):
            assert _evaluated(f"{group.spelling}()") == group.dtypes, group.word


def test_the_words_partition_the_vocabulary():
    seen = [d for group in WORDS for d in group.dtypes]
    assert len(seen) == len(set(seen)) == len(ANY)


@pytest.mark.parametrize(
    "dtypes, name, spelling",
    [
        (("float16", "bfloat16", "float32", "float64"), "TFloatingAndHalfBFloat16", "floating_types_and(torch.half, torch.bfloat16)"),
        (
            ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
            "TAllAndBoolHalfBFloat16",
            "all_types_and(torch.bool, torch.half, torch.bfloat16)",
        ),
        (("float32", "float64"), "TFloating", "floating_types()"),
        (("int32", "int64"), "TInt32OrInt64", "(torch.int32, torch.int64)"),
        (("int64",), "TInt64", "(torch.int64,)"),
        (tuple(d.name for d in ANY), "TAny", pytorch_spelling(ANY)),
        (tuple(d.name for d in ANY if not d.name.startswith("float8")), "TAnyButFloat8Float8E8M0", None),
    ],
)
def test_names_and_spellings_of_known_sets(dtypes, name, spelling):
    assert composed_name(named(*dtypes)) == name
    if spelling is not None:
        assert pytorch_spelling(named(*dtypes)) == spelling


def test_every_combination_of_groups_has_its_own_name_and_a_spelling_pytorch_reads_back():
    names = {}
    for size in range(1, len(WORDS) + 1):
        for groups in itertools.combinations(WORDS, size):
            dtypes = canonical(d for g in groups for d in g.dtypes)
            name = composed_name(dtypes)
            assert name.isidentifier() and name.startswith("T")
            assert names.setdefault(name, dtypes) == dtypes, name
            assert _evaluated(pytorch_spelling(dtypes)) == dtypes, pytorch_spelling(dtypes)


def test_single_dtypes_and_dtypes_beyond_the_table_are_spelled_too():
    assert composed_name(named("int8", "uint16")) == "TInt8OrUInt16"
    assert _evaluated(pytorch_spelling(named("int8", "uint16"))) == named("int8", "uint16")
    newer = (DType("float8_e4m3fn"), DType("int4"))
    assert composed_name(newer) == "TFloat8E4m3fnOrInt4"
    assert pytorch_spelling(newer) == "(torch.float8_e4m3fn, torch.int4)"
