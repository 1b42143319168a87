"""migrate.api and ``dtype-migrate accepts``: the checker's decision asked about dtypes, compared with direct ATen calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from migrate.api import load_declarations
from migrate.check.checker import DtypeViolation, checking
from migrate.errors import InputError
from migrate.model.dtypes import named
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent

# Hand-written declarations of what ATen's CPU kernels take (docs/format.md's sdpa example among them).
DECLARED = """\
- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T
  type_constraints: {T: [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]}
  type_promotion: {kind: default, args: [self, other]}

- func: mm(T self, T mat2) -> T
  type_constraints: {T: [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]}

- func: sqrt(T self) -> U
  type_constraints: {T: [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128], U: [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]}

- func: scaled_dot_product_attention(TFloat query, TFloat key, TFloat value, T? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> TFloat
  type_constraints: {T: [torch.bool, torch.float32, query.dtype]}

- func: cat(T[] tensors, int dim=0) -> T
  type_constraints: {T: [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]}

- func: add.out(T self, T other, *, Scalar alpha=1, T(a!) out) -> T(a!)
  type_constraints: {T: [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]}
  type_promotion: {kind: default, args: [self, other]}

- func: _cast_Byte(T self, bool non_blocking=False) -> U
  type_constraints: {T: [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128], U: [torch.uint8]}
"""

SETS = """\
- name: TFloat
  dtypes: [torch.float16, torch.bfloat16, torch.float32, torch.float64]
  desc: floating_types_and(torch.half, torch.bfloat16)
"""


def _q(dtype: torch.dtype) -> torch.Tensor:
    return torch.ones(1, 2, 4, 8, dtype=dtype)


# (overload, values as `accepts` takes them, the same call made on real tensors)
CALLS = [
    ("mm", {"self": "int64", "mat2": "int64"}, lambda: torch.mm(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.int64))),
    ("mm", {"self": "float32", "mat2": "float64"}, lambda: torch.mm(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.float64))),
    ("sqrt", {"self": "float8_e4m3fn"}, lambda: torch.sqrt(torch.ones(2).to(torch.float8_e4m3fn))),
    (
        "scaled_dot_product_attention",
        {"query": "float32", "key": "float32", "value": "float32", "attn_mask": "float16"},
        lambda: F.scaled_dot_product_attention(_q(torch.float32), _q(torch.float32), _q(torch.float32), attn_mask=torch.ones(4, 4, dtype=torch.float16)),
    ),
    (
        "scaled_dot_product_attention",
        {"query": "float16", "key": "float16", "value": "float16", "attn_mask": "float16"},
        lambda: F.scaled_dot_product_attention(_q(torch.float16), _q(torch.float16), _q(torch.float16), attn_mask=torch.ones(4, 4, dtype=torch.float16)),
    ),
]


# add.Tensor promotes: its variable binds the computation dtype (docs/format.md), judged by the checker's promotion.
PROMOTED = [
    ("add.Tensor", {"self": "uint16", "other": "uint16"}, lambda: torch.add(torch.ones(2, dtype=torch.uint16), torch.ones(2, dtype=torch.uint16))),
    ("add.Tensor", {"self": "int64", "other": "float32"}, lambda: torch.add(torch.ones(2, dtype=torch.int64), torch.ones(2))),
    ("add.Tensor", {"self": "uint16", "other": "float32:0d"}, lambda: torch.add(torch.ones(2, dtype=torch.uint16), torch.tensor(2.5))),
    ("add.Tensor", {"self": "int64", "other": "2.5"}, lambda: torch.add(torch.ones(2, dtype=torch.int64), 2.5)),
    ("add.Tensor", {"self": "float8_e4m3fn", "other": "float32"}, lambda: torch.add(torch.ones(2).to(torch.float8_e4m3fn), torch.ones(2))),
    # out= of a promoting overload: the computation dtype must cast to out (torch.can_cast), whatever out's set holds
    ("add.out", {"self": "float32", "other": "float32", "out": "int64"}, lambda: torch.add(torch.ones(2), torch.ones(2), out=torch.empty(2, dtype=torch.int64))),
    ("add.out", {"self": "int64", "other": "int64", "out": "float32"}, lambda: torch.add(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64), out=torch.empty(2))),
    ("add.out", {"self": "int64", "other": "float32", "out": "float16"}, lambda: torch.add(torch.ones(2, dtype=torch.int64), torch.ones(2), out=torch.empty(2, dtype=torch.float16))),
    ("add.out", {"self": "float32", "other": "float32", "out": "bool"}, lambda: torch.add(torch.ones(2), torch.ones(2), out=torch.empty(2, dtype=torch.bool))),
]


def aten_takes(call) -> bool:
    try:
        call()
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


@pytest.fixture(scope="module")
def declared_path(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("api")
    (folder / "native_functions.yaml").write_text(DECLARED)
    (folder / "type_constraints.yaml").write_text(SETS)
    return folder / "native_functions.yaml"


@pytest.mark.parametrize("overload, values, call", CALLS + PROMOTED, ids=[f"{c[0]}-{'-'.join(c[1].values())}" for c in CALLS + PROMOTED])
def test_api_and_accepts_answer_as_aten_does(declared_path, capfd, overload, values, call):
    verdict = load_declarations(declared_path).accepts(overload, **values)
    assert bool(verdict) == aten_takes(call)
    code, out, _ = run_cli(capfd, "accepts", overload, *(f"{k}={v}" for k, v in values.items()), "--native-functions", declared_path)
    assert code == (0 if verdict else 1)
    assert out == str(verdict)


@pytest.mark.parametrize("overload, values, call", CALLS + PROMOTED, ids=[f"{c[0]}-{'-'.join(c[1].values())}" for c in CALLS + PROMOTED])
def test_the_checker_decides_a_real_call_as_the_api_decides_its_dtypes(declared_path, overload, values, call):
    verdict = load_declarations(declared_path).accepts(overload, **values)
    with checking(declared_path, collect=True) as checker:
        try:
            call()
        except (RuntimeError, NotImplementedError):
            pass  # collect mode judges only calls that returned: judged in raise mode below
    refused = bool(checker.violations)
    if not refused:
        try:
            with checking(declared_path):
                call()
        except DtypeViolation:
            refused = True
        except (RuntimeError, NotImplementedError):
            pass
    assert refused == (not verdict)


def test_an_out_the_computation_dtype_cannot_cast_to_is_refused_in_aten_s_words(declared_path, capfd):
    """``add(float32, float32, out=int64)``: int64 is in the set, but torch does not cast the float32 result into it."""
    with pytest.raises(RuntimeError) as aten:
        torch.add(torch.ones(2), torch.ones(2), out=torch.empty(2, dtype=torch.int64))
    assert str(aten.value) == "result type Float can't be cast to the desired output type Long"
    verdict = load_declarations(declared_path).accepts("add.out", self="float32", other="float32", out="int64")
    assert not verdict and [(v.slot, v.dtype.name) for v in verdict.violations] == [("out", "int64")]
    assert verdict.reason.startswith(f"argument out has dtype torch.int64: {aten.value} (the call computes in torch.float32; type_promotion default at native_functions.yaml:")
    code, out, _ = run_cli(capfd, "accepts", "add.out", "self=float32", "other=float32", "out=int64", "--native-functions", declared_path)
    assert code == 1 and str(aten.value) in out


def test_a_return_of_one_dtype_declares_no_other(declared_path, capfd):
    """``_cast_Byte`` returns uint8 whatever ``self`` is; its declaration says so."""
    assert torch.ops.aten._cast_Byte(torch.ones(2)).dtype == torch.uint8
    decl = load_declarations(declared_path)
    assert decl.accepts("_cast_Byte", self="float32", **{"return.0": "uint8"})
    assert not decl.accepts("_cast_Byte", self="float32", **{"return.0": "float64"})
    code, out, _ = run_cli(capfd, "accepts", "_cast_Byte", "self=float32", "return.0=float64", "--native-functions", declared_path)
    assert code == 1 and "not declared" in out.splitlines()[0]


def test_the_verdict_names_the_set_and_the_reason(declared_path):
    decl = load_declarations(declared_path)
    verdict = decl.accepts("aten::scaled_dot_product_attention", query=torch.float32, attn_mask=torch.float16)
    assert not verdict
    assert verdict.reason == (
        "argument attn_mask has dtype torch.float16, not in T = [torch.bool, torch.float32, TFloat], "
        "declared at native_functions.yaml:12 (TFloat is torch.float32 in this call)"
    )
    assert [str(v) for v in verdict.variables] == [
        "query: TFloat = [torch.float16, torch.bfloat16, torch.float32, torch.float64]",
        "attn_mask: T = [torch.bool, torch.float32, TFloat]",
    ]
    promoted = decl.accepts("add.Tensor", self="int64", other=2.5)  # a float number lifts int64 to the default float
    assert promoted and promoted.took == (("T", named("float32")[0]),)
    assert promoted.reason == "each variable's dtype is in its set (T is torch.float32), declared at native_functions.yaml:2"
    refused = decl.accepts("add.Tensor", self="uint16", other="uint16")
    assert refused.reason.startswith("computes in torch.uint16 (self is torch.uint16, other is torch.uint16; type_promotion default at native_functions.yaml:3)")
    mm = decl.accepts("mm", self="float32", mat2="float64")
    assert "must be one dtype per call, but self is torch.float32, mat2 is torch.float64" in mm.reason


def test_dtypes_follow_the_other_arguments(declared_path):
    decl = load_declarations(declared_path)
    # beside a float32 tensor each dtype computes in float32, float64 or a complex type: all declared; float8 torch refuses to promote
    assert decl.dtypes("add.Tensor", "other", self=torch.float32) == named(
        "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
        "complex32", "complex64", "complex128",
    )  # fmt: skip
    # beside uint8, uint16 computes in uint16, which the set lacks
    assert "uint16" not in [d.name for d in decl.dtypes("add.Tensor", "other", self=torch.uint8)]
    assert decl.dtypes("scaled_dot_product_attention", "attn_mask", query=torch.float16) == named("bool", "float16", "float32")
    assert decl.dtypes("scaled_dot_product_attention", "attn_mask") == named("bool", "float32")
    assert decl.dtypes("mm", "mat2", self=torch.int32) == named("int32")
    assert decl.dtypes("cat", "tensors") == named(
        "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"
    )


def test_values_scalars_zero_dim_lists_and_returns(declared_path):
    decl = load_declarations(declared_path)
    assert decl.accepts("cat", tensors=["float32", "float32:0d"])
    assert not decl.accepts("cat", tensors="[float32, int64]")
    assert decl.accepts("sqrt", self=2.5).call == (("self", "2.5"),)  # a scalar binds nothing
    assert not decl.accepts("sqrt", self="int64", **{"return.0": "int64"})
    assert decl.accepts("sqrt", self="int64", **{"return.0": "float32"})
    undeclared = decl.accepts("add.Scalar", self="uint16", other=2)
    assert not undeclared and undeclared.reason == "native_functions.yaml declares no type variable for aten::add.Scalar"


def test_bad_questions_are_input_errors(declared_path, capfd):
    decl = load_declarations(declared_path)
    with pytest.raises(InputError, match="has no argument 'input'"):
        decl.accepts("mm", input="float32")
    with pytest.raises(InputError, match="not a dtype"):
        decl.accepts("mm", self="float33")
    with pytest.raises(InputError, match="no overload aten::mm.nothing"):
        decl.accepts("mm.nothing", self="float32")
    with pytest.raises(InputError, match=r"no overload aten::add.Tensr \(close matches: add.Tensor"):
        decl.accepts("add.Tensr", self="float32", other="float32")
    code, _, err = run_cli(capfd, "accepts", "mm", "self", "--native-functions", declared_path)
    assert code == 2 and "expected ARG=VALUE" in err


def test_a_packet_name_lists_the_overloads_the_yaml_declares(declared_path, capfd):
    """``add`` is torch's TorchScript add(Scalar a, Scalar b); the yaml declares add.Tensor and add.out."""
    code, out, err = run_cli(capfd, "accepts", "add", "self=float32", "other=float32", "--native-functions", declared_path)
    assert (code, out) == (2, "")
    assert err == "dtype-migrate: error: add is a packet of overloads, and native_functions.yaml declares none of that name alone: name one of add.Tensor, add.out\n"
    assert load_declarations(declared_path).accepts("sqrt", self="float32")  # a default overload the yaml declares answers


def test_the_checker_example_of_api_md_prints_what_the_page_shows(tmp_path):
    """docs/api.md's runtime-checker block, run as a script in an empty folder; its output is the page's next block."""
    page = (ROOT / "docs" / "api.md").read_text().split("## The runtime checker", 1)[1]
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    shown = page.split("prints (the test suite runs this block and compares):\n\n```\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.py").write_text(code)
    result = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown
