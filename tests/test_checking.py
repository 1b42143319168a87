"""The runtime checker on direct calls: raise and collect modes, the keys it sees calls at, the message."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from migrate.check.checker import OUTSIDE_SET, UNEQUAL, Declarations, DtypeViolation, checking
from migrate.errors import InputError
from migrate.model.dtypes import DType
from tests.conftest import FIXTURES

FIXTURE = FIXTURES / "verify" / "native_functions.yaml"
ANY = (
    "[torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, "
    "torch.float32, torch.float64, torch.complex32, torch.complex64, torch.complex128]"
)


@pytest.fixture(scope="module")
def declared() -> Declarations:
    return Declarations.load(FIXTURE)


def declare(folder: Path, text: str) -> Path:
    """A one-off annotated yaml (no global sets) in ``folder``."""
    path = folder / "native_functions.yaml"
    path.write_text(text)
    return path


def violation_of(call, declarations) -> str:
    with pytest.raises(DtypeViolation) as raised, checking(declarations):
        call()
    return str(raised.value)


def test_calls_within_their_declarations_pass(declared):
    x = torch.randn(2, 3)
    q = torch.randn(1, 2, 4, 8)
    with checking(declared, collect=True) as checker:
        torch.add(x, x.double())  # other is plain Tensor
        x.add_(x)
        torch.add(x, x, out=torch.empty(2, 3))
        torch.cat([x, x, x])
        x[:, torch.tensor([0, 2])]
        x[torch.tensor([True, False])]
        F.scaled_dot_product_attention(q, q, q)  # attn_mask None: binds nothing
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(4, 4, dtype=torch.bool))
        torch.where(x > 0, x, x)
    assert checker.violations == ()


def test_the_message_names_overload_argument_dtype_and_declared_set(declared):
    x = torch.ones(2, dtype=torch.float64)
    assert violation_of(lambda: torch.add(x, x), declared) == (
        "aten::add.Tensor: argument self has dtype torch.float64, not in F = [torch.float32], declared at native_functions.yaml:6"
    )


def test_an_in_place_call_is_refused_before_its_kernel_runs(declared):
    x = torch.zeros(3)
    message = violation_of(lambda: x.add_(torch.ones(3, dtype=torch.float64)), declared)
    assert message == (
        f"aten::add_.Tensor: TAny must be one dtype per call, but self is torch.float32, other is torch.float64 "
        f"(TAny = {ANY}, declared at native_functions.yaml:12)"
    )
    assert torch.equal(x, torch.zeros(3))


def test_an_out_argument_is_tied_to_its_variable(declared):
    x = torch.ones(3)
    with checking(declared, collect=True) as checker:
        torch.add(x, x, out=torch.empty(3, dtype=torch.float64))
    (violation,) = checker.violations
    assert (violation.overload, violation.kind, violation.variable) == ("aten::add.out", UNEQUAL, "TAny")
    assert violation.seen == (("self", DType("float32")), ("out", DType("float64")))
    assert (violation.slot, violation.dtype) == ("out", DType("float64"))


def test_a_composite_implicit_overload_is_checked_at_its_own_name(declared):
    q = torch.randn(1, 2, 4, 8)
    mask = torch.zeros(4, 4, dtype=torch.int64)
    assert violation_of(lambda: F.scaled_dot_product_attention(q, q, q, attn_mask=mask), declared) == (
        "aten::scaled_dot_product_attention: argument attn_mask has dtype torch.int64, not in "
        "M = [torch.bool, torch.float16, torch.bfloat16, torch.float32, torch.float64], declared at native_functions.yaml:34; "
        "ATen refuses it too: Expected attn_mask dtype to be bool or float or to match query dtype, "
        "but got attn_mask.dtype: long int and  query.dtype: float instead."
    )


def test_collect_mode_counts_each_call_once_with_its_arguments_and_return(tmp_path):
    path = declare(
        tmp_path,
        "- func: scaled_dot_product_attention(T query, T key, T value, Tensor? attn_mask=None, float dropout_p=0.0, "
        "bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> T\n"
        "  type_constraints: {T: [torch.float32]}\n",
    )
    q = torch.randn(1, 2, 4, 8, dtype=torch.float64)
    with checking(path, collect=True) as checker:
        for _ in range(3):  # the first call goes through torch's handler, the others through the memoised one
            F.scaled_dot_product_attention(q, q, q)
    assert [(v.kind, v.slot, str(v.dtype)) for v in checker.violations] == [
        (OUTSIDE_SET, slot, "torch.float64") for slot in ("query", "key", "value", "return.0")
    ]
    assert set(checker.counts.values()) == {3}


def test_every_element_of_a_list_is_checked(declared):
    x = torch.ones(2)
    with checking(declared, collect=True) as checker:
        torch.cat([x, x.double(), x.double(), x.int()])
    (violation,) = checker.violations
    assert violation.seen == (("tensors[0]", DType("float32")), ("tensors[1]", DType("float64")), ("tensors[3]", DType("int32")))
    assert str(violation).startswith("aten::cat: TAny must be one dtype per call, but tensors[0] is torch.float32, tensors[1] is")


def test_holes_of_an_optional_list_bind_nothing(declared):
    x = torch.ones(2, 3)
    assert violation_of(lambda: x[:, torch.tensor([0], dtype=torch.int32)], declared) == (
        "aten::index.Tensor: argument indices[1] has dtype torch.int32, not in I = [torch.bool, torch.int64], "
        "declared at native_functions.yaml:28"
    )


def test_one_variable_ties_its_slots(declared):
    x = torch.ones(3)
    with checking(declared, collect=True) as checker:
        torch.where(x > 0, x, x.double())
    (violation,) = checker.violations
    assert str(violation) == (
        f"aten::where.self: TAny must be one dtype per call, but self is torch.float32, other is torch.float64 "
        f"(TAny = {ANY}, declared at native_functions.yaml:41)"
    )


def test_a_return_is_checked_after_the_kernel_ran(tmp_path):
    path = declare(
        tmp_path,
        "- func: _to_copy(T self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, "
        "bool non_blocking=False, MemoryFormat? memory_format=None) -> T\n",
    )
    (tmp_path / "type_constraints.yaml").write_text("- name: T\n  dtypes: [torch.float32, torch.float64]\n  desc: Floats.\n")
    x = torch.ones(2)
    # x.double() calls to.dtype, a CompositeImplicitAutograd overload: _to_copy is reached inside it, at the kernel key.
    assert violation_of(x.double, path) == (
        "aten::_to_copy: T must be one dtype per call, but self is torch.float32, return.0 is torch.float64 "
        "(T = [torch.float32, torch.float64], declared at native_functions.yaml:1)"
    )


def test_python_scalars_bind_nothing(tmp_path):
    path = declare(tmp_path, "- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T\n  type_constraints: {T: [torch.float32]}\n")
    with checking(path):
        torch.ones(2) + 2.0  # reaches add.Tensor with other=2.0, a number
        torch.ones(2).add(1)


def test_the_modes_leave_with_the_block_even_after_a_violation(declared):
    x = torch.ones(2, dtype=torch.float64)
    with pytest.raises(DtypeViolation), checking(declared):
        torch.add(x, x)
    assert torch.add(x, x).dtype == torch.float64  # unchecked again
    with checking(declared, collect=True) as checker:  # and a new block checks afresh
        torch.add(x, x)
    assert [v.slot for v in checker.violations] == ["self"]


def test_declarations_survive_pickling_for_workers():
    declarations = Declarations.load(FIXTURE)
    assert pickle.loads(pickle.dumps(declarations)) == declarations
    assert declarations.only(["cat"]).by_name.keys() == {"cat"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("- func: add.Nowhere(T self) -> T\n  type_constraints: {T: [torch.float32]}\n", "this torch has no overload aten::add.Nowhere"),
        (
            "- func: add.Tensor(Tensor self, T bogus, *, Scalar alpha=1) -> Tensor\n  type_constraints: {T: [torch.float32]}\n",
            "T binds bogus, but this torch's aten::add.Tensor has no tensor slot of that name",
        ),
        ("- func: abs(TNowhere self) -> Tensor\n", "unresolved type variable TNowhere"),
    ],
)
def test_a_declaration_this_torch_cannot_check_is_bad_input(tmp_path, text, message):
    path = declare(tmp_path, text)
    with pytest.raises(InputError) as raised:
        Declarations.load(path)
    assert str(raised.value).startswith(f"{path}:") and str(raised.value).endswith(message)
    assert raised.value.line in (1, 2) and raised.value.op



def test_the_package_level_entry_point_is_the_checker():
    import migrate

    with pytest.raises(DtypeViolation, match="argument self has dtype torch.float64"):
        with migrate.checking(FIXTURES / "verify" / "native_functions.yaml"):
            torch.add(torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))


def test_a_call_with_an_empty_tensor_is_not_judged(declared):
    """ATen returns before its dtype dispatch on an empty tensor: such a call says nothing of the dtypes it accepts."""
    empty = torch.ones(0, 3, dtype=torch.float64)
    with checking(declared):
        torch.add(empty, empty)
    with checking(declared, collect=True) as checker:
        torch.add(empty, empty)
        torch.add(torch.ones(1, dtype=torch.float64), torch.ones(1, dtype=torch.float64))
    assert [(v.slot, checker.counts[v]) for v in checker.violations] == [("self", 1)]  # the empty call counts no violation
