"""The runtime checker through ``type_promotion``: the computation dtype as ATen decides it, checked against the set."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import pytest
import torch

from migrate.check.checker import COMPUTED_OUTSIDE_SET, PROMOTION_REFUSED, RESULT_DTYPE, Declarations, DtypeViolation, checking
from migrate.check.promotion import PromotionRefused, computation_dtype, result_dtype, result_type
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.promotion import KINDS

ALL = [getattr(torch, d.name) for d in TENSOR_DTYPES]
NUMBERS = (True, 3, 2.5, 1j)


def _values(dtype: torch.dtype):
    """A dimensioned and a 0-dim tensor of the dtype."""
    yield torch.ones(2).to(dtype)
    yield torch.tensor(1).to(dtype)


def _torch_result_type(a, b):
    try:
        return torch.result_type(a, b)
    except RuntimeError:
        return "refused"


def _ours(a, b):
    try:
        return result_type([a, b])
    except PromotionRefused:
        return "refused"


def test_the_result_type_is_atens_for_every_pair_of_dtypes_dims_and_numbers():
    """Dimensioned over 0-dim over numbers by category, and torch's refusals (float8, uint16 beside others)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex32 is experimental
        pairs = [(x, y) for a, b in itertools.product(ALL, ALL) for x in _values(a) for y in _values(b)]
        pairs += [(x, n) for a in ALL for x in _values(a) for n in NUMBERS]
        differ = [(a, b) for a, b in pairs if _torch_result_type(a, b) != _ours(a, b)]
    assert len(pairs) > 1900 and not differ
    assert _ours(torch.ones(2, dtype=torch.float8_e4m3fn), torch.ones(2)) == "refused"


def test_the_models_categories_are_torchs_for_every_dtype_it_defines():
    """The rules on names (``migrate.model.promotion``) that the checker's tables are made from."""
    from migrate.model.promotion import BOOL, COMPLEX, FLOATING, INTEGER, category

    dtypes = {value for value in vars(torch).values() if isinstance(value, torch.dtype)}
    expected = {d: COMPLEX if d.is_complex else FLOATING if d.is_floating_point else BOOL if d == torch.bool else INTEGER for d in dtypes}
    assert {d: category(str(d).removeprefix("torch.")) for d in dtypes} == expected


def test_int_to_float_computes_in_the_default_dtype_the_program_set():
    integers = [torch.ones(2, dtype=torch.int64)]
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert computation_dtype("int_to_float", integers) == torch.float64
        assert computation_dtype("int_to_float", [*integers, 1.5]) == torch.float64
    finally:
        torch.set_default_dtype(previous)
    assert computation_dtype("int_to_float", integers) == torch.float32


REFS_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_gives_the_refs_result_dtype_and_never_the_opmath_type(kind):
    """``elementwise_dtypes``'s result dtype, on the dtypes whose promotion the refs and ATen agree on."""
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    refs_kind = ELEMENTWISE_TYPE_PROMOTION_KIND[kind.upper()]
    for a, b in itertools.product(REFS_DTYPES, REFS_DTYPES):
        for x, y in itertools.product(_values(a), [*_values(b), 2.5, 3]):
            computed = computation_dtype(kind, [x, y])
            assert result_dtype(kind, computed) == elementwise_dtypes(x, y, type_promotion_kind=refs_kind)[1], (kind, x.dtype, y)
    half = torch.ones(2, dtype=torch.float16)
    assert computation_dtype("default", [half, half]) == torch.float16  # the kernel's dtype, not the float32 it accumulates in
    assert computation_dtype("int_to_float", [torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64)]) == torch.float32
    assert computation_dtype("bool_to_long", [torch.ones(2, dtype=torch.bool)]) == torch.int64


NO_UNSIGNED = "[torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64]"
FLOATS = "[torch.float16, torch.bfloat16, torch.float32, torch.float64]"
YAML = f"""\
- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T
  type_constraints: {{T: {NO_UNSIGNED}}}
  type_promotion: {{kind: default, args: [self, other]}}
- func: add_.Tensor(T(a!) self, T other, *, Scalar alpha=1) -> T(a!)
  type_constraints: {{T: {NO_UNSIGNED}}}
  type_promotion: {{kind: default, args: [self, other]}}
- func: add.out(T self, T other, *, Scalar alpha=1, T(a!) out) -> T(a!)
  type_constraints: {{T: {NO_UNSIGNED}}}
  type_promotion: {{kind: default, args: [self, other]}}
- func: eq.Tensor(T self, T other) -> B
  type_constraints: {{T: {NO_UNSIGNED}, B: [torch.bool]}}
  type_promotion: {{kind: always_bool, args: [self, other]}}
- func: div.Tensor(T self, T other) -> T
  type_constraints: {{T: {FLOATS}}}
  type_promotion: {{kind: int_to_float, args: [self, other]}}
- func: abs(T self) -> T
  type_constraints: {{T: [torch.int64, torch.float32, torch.complex64]}}
  type_promotion: {{kind: complex_to_float, args: [self]}}
- func: cat(T[] tensors, int dim=0) -> T
  type_constraints: {{T: {FLOATS}}}
  type_promotion: {{kind: default, args: [tensors]}}
- func: where.self(C condition, T self, T other) -> T
  type_constraints: {{C: [torch.bool], T: {FLOATS}}}
  type_promotion: {{kind: default, args: [self, other]}}
- func: div_.Tensor(T(a!) self, T other) -> T(a!)
  type_constraints: {{T: {FLOATS}}}
  type_promotion: {{kind: int_to_float, args: [self, other]}}
"""


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> Declarations:
    path = tmp_path_factory.mktemp("promotion") / "native_functions.yaml"
    path.write_text(YAML)
    return Declarations.load(path)


def _raised(call, declarations) -> DtypeViolation:
    with pytest.raises(DtypeViolation) as raised, checking(declarations):
        call()
    return raised.value


def test_add_of_two_uint16_tensors_is_flagged_naming_the_set_and_both_lines(declared):
    u = torch.ones(3, dtype=torch.uint16)
    with pytest.raises(RuntimeError, match="not implemented for 'UInt16'"):
        torch.add(u, u)  # what ATen says without the checker
    raised = _raised(lambda: torch.add(u, u), declared)
    violation = raised.violations[0]
    assert violation.kind == COMPUTED_OUTSIDE_SET
    assert raised.aten == "\"add_stub\" not implemented for 'UInt16'"
    assert str(raised).endswith("; ATen refuses it too: \"add_stub\" not implemented for 'UInt16'")
    assert str(violation) == (
        "aten::add.Tensor: computes in torch.uint16 (self is torch.uint16, other is torch.uint16; "
        f"type_promotion default at native_functions.yaml:3), not in T = {NO_UNSIGNED}, declared at native_functions.yaml:2"
    )


def test_mixed_calls_whose_computation_dtype_is_declared_pass(declared):
    i, f = torch.arange(1, 4), torch.ones(3)
    with checking(declared, collect=True) as checker:
        torch.add(i, f)  # int64 with float32 computes in float32
        torch.add(torch.ones(3, dtype=torch.uint16), 2.5)  # a Python float lifts uint16 to the default float
        torch.add(f, torch.tensor(2.0, dtype=torch.float64))  # a 0-dim companion does not widen
        torch.eq(torch.ones(3, dtype=torch.int8), f)
        torch.div(i, i)  # int_to_float: computes and returns float32
        torch.abs(torch.ones(3, dtype=torch.complex64))  # complex_to_float: returns float32
        torch.cat([f, i])
        torch.where(f > 0, f, torch.ones(3, dtype=torch.float64))
        f.clone().add_(torch.ones(3, dtype=torch.float64))  # in place: computes in float64, written to float32
        torch.add(i, i, out=torch.empty(3, dtype=torch.float32))  # out=: torch casts the int64 result
    assert checker.violations == ()


def test_a_call_whose_promotion_torch_refuses_is_a_violation(declared):
    f8 = torch.ones(3, dtype=torch.float8_e4m3fn)
    violation = _raised(lambda: torch.add(f8, torch.ones(3)), declared).violations[0]
    assert violation.kind == PROMOTION_REFUSED
    assert "torch refuses to promote self is torch.float8_e4m3fn, other is torch.float32: Promotion for Float8 Types is not supported" in str(violation)


def test_computation_outside_the_set_is_flagged_for_each_kind(declared):
    i = torch.arange(1, 4)
    assert _raised(lambda: torch.cat([i, i]), declared).violations[0].kind == COMPUTED_OUTSIDE_SET
    assert _raised(lambda: torch.abs(torch.ones(3, dtype=torch.float64)), declared).violations[0].kind == COMPUTED_OUTSIDE_SET
    assert _raised(lambda: torch.div(i, torch.ones(3, dtype=torch.complex64)), declared).violations[0].kind == COMPUTED_OUTSIDE_SET


def test_a_functional_return_must_have_the_kinds_result_dtype(tmp_path):
    path = tmp_path / "native_functions.yaml"
    path.write_text("- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T\n  type_constraints: {T: [torch.float32, torch.int64]}\n  type_promotion: {kind: always_bool, args: [self, other]}\n")
    with checking(path, collect=True) as checker:
        torch.add(torch.ones(3), torch.ones(3))  # add returns float32, where always_bool says bool
    (violation,) = checker.violations
    assert violation.kind == RESULT_DTYPE and violation.slot == "return.0"
    assert "return.0 has dtype torch.float32: the call computes in torch.float32 and its kind gives torch.bool" in str(violation)


def test_a_written_promoting_argument_must_hold_the_result(declared):
    """``int64.div_(int64)`` computes in float32, which torch does not cast into the int64 ``self`` it writes;
    a float ``self`` holds it, whatever ``other`` is."""
    i = torch.arange(1, 4)
    raised = _raised(lambda: i.clone().div_(i), declared)
    assert raised.violations[0].kind == RESULT_DTYPE and raised.violations[0].slot == "self"
    assert raised.aten == ""  # an overload that writes into an argument is not run to ask ATen
    with checking(declared, collect=True) as checker:
        torch.ones(3).div_(i)
        torch.ones(3).div_(torch.ones(3, dtype=torch.float64))
    assert checker.violations == ()


def test_promotion_declarations_pickle_with_their_line(declared):
    import pickle

    again = pickle.loads(pickle.dumps(declared))
    assert again.by_name["add.Tensor"].promotion == declared.by_name["add.Tensor"].promotion
    assert again.by_name["add.Tensor"].promotion.line == 3 and again.by_name["add.Tensor"].promotion.kind == "default"


def test_a_promoting_argument_this_torch_lacks_is_an_error(tmp_path):
    from migrate.errors import InputError

    path = tmp_path / "native_functions.yaml"
    path.write_text("- func: add.Tensor(T self, T other, *, Scalar beta=1) -> T\n  type_constraints: {T: [torch.float32]}\n  type_promotion: {kind: default, args: [self, other, beta]}\n")
    with pytest.raises(InputError, match="type_promotion names beta, but this torch's aten::add.Tensor has no argument of that name"):
        Declarations.load(path)


def _annotated_copy(folder: Path, promoted: bool) -> Path:
    """The real yaml with add, div and atan2 declared over every dtype, with or without their type_promotion lines."""
    import shutil

    from migrate.model.dtypes import TENSOR_DTYPES
    from migrate.model.global_sets import GlobalSetsFile
    from migrate.model.native import NativeFunctions, sibling_constraints_path
    from migrate.model.plan import OverloadPlan, Plan, Variable
    from migrate.model.promotion import Promotion
    from migrate.write.native_functions import apply_plan
    from tests.conftest import REAL_NATIVE_FUNCTIONS

    path = folder / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, path)
    kinds = {"add.Tensor": "default", "div.Tensor": "int_to_float", "atan2": "int_to_float"}
    plan = Plan(
        (),
        tuple(
            OverloadPlan(name, (Variable("T", TENSOR_DTYPES, ("self", "other", "return.0")),), promotion=Promotion(kind, ("self", "other")) if promoted else None)
            for name, kind in kinds.items()
        ),
    )
    path.write_bytes(apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), plan).native_functions)
    return path


@pytest.mark.slow  # OpInfo samples under the checker, in workers
def test_verify_checks_opinfo_samples_through_promotion(tmp_path, capfd):
    """Without the line, atan2 of integers returning float32 breaks 'one dtype per call'; with it, the return is the
    computation dtype (atan2's OpInfo samples: a fraction of the OpInfos whose samples reach div.Tensor)."""
    from migrate.cli import main

    results = {}
    for promoted in (False, True):
        folder = tmp_path / str(promoted)
        folder.mkdir()
        path = _annotated_copy(folder, promoted)
        code = main(["verify", "--native-functions", str(path), "--op", "atan2", "-j", "2"])
        results[promoted] = (code, capfd.readouterr().out)
    code, out = results[False]
    assert code == 3 and "aten::atan2:" in out and "T must be one dtype per call, but self is torch.int64, return.0 is torch.float32" in out
    code, out = results[True]
    assert code == 0 and "verify: 0 violations in 0 overloads" in out  # samples that raise (svd_lowrank's backward) are failures, not violations
