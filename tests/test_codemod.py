"""The torchlib codemod on fixtures: one module per rule, before and after, and the codemods' building blocks.

``fixtures/codemod/before`` is a small torchlib tree, ``plan.json`` a hand-built plan
over the entries of ``native_functions.yaml`` in the same folder (its probe evidence says
ATen rejects every ONNX dtype a variable does not declare, so that narrowing is allowed), and ``after`` the
tree the rewrite must produce. Each test below checks one rule's module byte for byte
and the report lines that rule owes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import libcst as cst
import pytest

from codemods.annotations import tensor_core
from codemods.imports import SplitModule, member_key
from codemods.typevars import TypeVarSpec
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import installed_torchlib, scan_torchlib
from migrate.model.native import NativeFunctions
from migrate.model.plan import OverloadPlan, Plan
from migrate.write.torchlib.decide import DROPPED_NON_ONNX, DTYPE_REMOVED, GLOBAL_SET, INLINE_SET, KEPT_COMPLEX, KEPT_NARROWER, UNION
from migrate.write.torchlib.rewrite import TorchlibRewrite, rewrite_torchlib, torchlib_outputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codemod"
BEFORE = FIXTURES / "before"
AFTER = FIXTURES / "after"


@pytest.fixture(scope="module")
def native() -> NativeFunctions:
    return NativeFunctions.load(FIXTURES / "native_functions.yaml")


@pytest.fixture(scope="module")
def plan() -> Plan:
    return Plan.read(FIXTURES / "plan.json")


def rewrite(root: Path, native: NativeFunctions, plan: Plan, cache: Path, only: set[str] | None = None) -> TorchlibRewrite:
    stages = StageCache.at(cache)
    return rewrite_torchlib(scan_torchlib(root, native, stages), plan, native, stages, only)


@pytest.fixture(scope="module")
def result(native, plan, tmp_path_factory) -> TorchlibRewrite:
    return rewrite(BEFORE, native, plan, tmp_path_factory.mktemp("cache"))


def after_of(result: TorchlibRewrite, path: str) -> bytes:
    """What the rewrite makes of one module: its new bytes, or the old ones when it does not change it."""
    return dict((p, after) for p, _, after in result.files).get(path, (BEFORE / path).read_bytes())


def modules(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))


def test_annotations_take_the_declared_typevar_inside_their_wrappers(result):
    """Optional/Sequence/Tuple wrappers and comments stay; slots one variable binds share one TypeVar;
    a SymInt annotated with a tensor type (split_size) is not a tensor slot and stays."""
    assert after_of(result, "ops/annotations.py") == (AFTER / "ops/annotations.py").read_bytes()


def test_named_sets_are_typevars_of_tensor_typing_with_numbered_twins(result):
    """A named set is imported from tensor_typing (added there when new), never bound in an ops module; a second
    independent variable of one set in one function takes the set's numbered twin; nothing is generated elsewhere."""
    assert after_of(result, "ops/typevars.py") == (AFTER / "ops/typevars.py").read_bytes()
    assert after_of(result, "tensor_typing.py") == (AFTER / "tensor_typing.py").read_bytes()
    assert result.notes_of(GLOBAL_SET) == (
        f"{GLOBAL_SET}: added TFloating [torch.float32, torch.float64] to tensor_typing.py",
        f"{GLOBAL_SET}: added TBoolOrInt64OrFloat32 [torch.bool, torch.int64, torch.float32] to tensor_typing.py",
        f"{GLOBAL_SET}: added TFloatNoBFloat16 [torch.float16, torch.float32, torch.float64] to tensor_typing.py",
        f"{GLOBAL_SET}: added TInt64OrFloat32 [torch.int64, torch.float32] to tensor_typing.py",
        f"{GLOBAL_SET}: added TFloating2 [torch.float32, torch.float64] to tensor_typing.py; "
        "a twin of TFloating for a second independent variable",
    )
    atan2 = next(f for f in result.functions if f.function == "aten_atan2")
    assert {(s.slot, s.typevar) for s in atan2.slots} == {("self", "TFloating"), ("return.0", "TFloating"), ("other", "TFloating2")}
    for path, _, after in result.files:
        if path != "tensor_typing.py":
            assert b"= TypeVar(" not in after, path


def test_a_single_dtype_is_its_onnx_type_and_an_unnamed_set_keeps_the_annotation(result):
    annotations = after_of(result, "ops/annotations.py").decode()
    assert "def aten_where(condition: BOOL, self: TFloating, other: TFloating) -> TFloating:" in annotations
    assert "-> Tuple[TReal, INT64]:" in annotations
    assert result.notes_of(INLINE_SET) == (
        f"{INLINE_SET}: ops/annotations.py:12 aten_index keeps its annotations: "
        "no global set names the declared indices [torch.bool, torch.int64]",
        f"{INLINE_SET}: ops/annotations.py:26 aten_split keeps its annotations: "
        "no global set names the declared self, return.0 [torch.float16, torch.float32]",
    )


def test_a_header_the_new_names_make_too_long_is_split_as_the_formatter_splits_it(result):
    safety = after_of(result, "ops/safety.py").decode()
    assert (
        "def aten_add(\n    self: TBoolOrInt64OrFloat32, other: TBoolOrInt64OrFloat32, alpha: float = 1.0\n"
        ") -> TBoolOrInt64OrFloat32:\n"
    ) in safety
    for path, _, after in result.files:
        for line in after.decode().splitlines():
            assert len(line) <= 95 or line.lstrip().startswith(('"""', "#")), (path, line)


def test_safety_keeps_what_is_narrower_and_reports_it(result):
    assert after_of(result, "ops/safety.py") == (AFTER / "ops/safety.py").read_bytes()
    assert result.notes_of(KEPT_NARROWER) == (
        f"{KEPT_NARROWER}: ops/safety.py:17 aten_add_bool (add.Tensor) keeps its annotations: BOOL at self, other, "
        "return.0 lacks [torch.int64, torch.float32] of the declared [torch.bool, torch.int64, torch.float32]",
        f"{KEPT_NARROWER}: ops/safety.py:43 aten_mul (mul.Tensor) keeps its annotations: "
        "TReal ties self, return.0, other, which the declaration does not",
        f"{KEPT_NARROWER}: ops/safety.py:48 aten_sin (sin) keeps its annotations: FLOAT at self, return.0 lacks "
        "[torch.float64] of the declared [torch.float32, torch.float64]",
    )
    assert result.notes_of(KEPT_COMPLEX) == (
        f"{KEPT_COMPLEX}: ops/safety.py:23 aten_add_complex (add.Tensor): complex=True, keeps its real-view annotations",
    )
    assert result.notes_of(UNION) == (
        f"{UNION}: ops/safety.py:28 aten_fmod: self, other, return.0 serve 2 overloads declared differently "
        "(fmod.Tensor T [torch.float32, torch.float64]; fmod.Scalar T [torch.float16, torch.float32]): "
        "annotated with their union [torch.float16, torch.float32, torch.float64]",
    )
    assert result.notes_of(DROPPED_NON_ONNX) == (f"{DROPPED_NON_ONNX}: neg: T drops [torch.complex32]: no ONNX type",)


def test_docstrings_whose_first_line_is_the_schema_get_the_typed_schema(result):
    assert after_of(result, "ops/docstrings.py") == (AFTER / "ops/docstrings.py").read_bytes()


def test_imports_are_added_and_the_unused_removed(result):
    assert after_of(result, "ops/imports.py") == (AFTER / "ops/imports.py").read_bytes()


def test_functions_outside_the_plan_keep_every_byte(result):
    assert "ops/untouched.py" not in {p for p, _, _ in result.files}
    assert (AFTER / "ops/untouched.py").read_bytes() == (BEFORE / "ops/untouched.py").read_bytes()


def test_the_whole_tree_is_the_after_tree_and_compiles(result):
    assert modules(BEFORE) == modules(AFTER)
    for path in modules(BEFORE):
        assert after_of(result, path) == (AFTER / path).read_bytes(), path
        compile(after_of(result, path), path, "exec")
    assert all(before != after for _, before, after in result.files)


def test_the_report_names_each_rewritten_function_with_its_typevars(result):
    fmod = next(f for f in result.functions if f.function == "aten_fmod")
    assert fmod.overloads == ("fmod.Tensor", "fmod.Scalar") and fmod.changed
    assert {(s.slot, s.typevar) for s in fmod.slots} == {(s, "TFloatNoBFloat16") for s in ("self", "other", "return.0")}
    assert [str(d) for d in fmod.slots[0].dtypes] == ["torch.float16", "torch.float32", "torch.float64"]
    assert {f.function for f in result.functions} >= {"aten_index", "aten_linear", "aten_cos", "aten_sum"}
    assert not {"aten_add_bool", "aten_add_complex", "aten_mul", "aten_sin"} & {f.function for f in result.functions}


def test_a_second_run_changes_nothing(native, plan, tmp_path):
    again = rewrite(AFTER, native, plan, tmp_path)
    assert again.files == ()


def test_an_empty_plan_changes_nothing(native, tmp_path):
    nothing = rewrite(BEFORE, native, Plan(), tmp_path)
    assert nothing.files == () and nothing.notes == () and nothing.functions == ()


def test_a_plan_with_nothing_new_changes_nothing(native, tmp_path):
    """Declarations equal to what the functions say already, named as the tree names them: no byte moves."""
    same = Plan.read(FIXTURES / "plan.json")
    same = Plan(same.global_sets, tuple(o for o in same.overloads if o.name in ("max.dim",)))
    tree = tmp_path / "tree"
    shutil.copytree(AFTER, tree)
    assert rewrite(tree, native, same, tmp_path / "cache").files == ()


def test_only_touches_the_functions_of_those_overloads(native, plan, tmp_path):
    result = rewrite(BEFORE, native, plan, tmp_path, only={"where.self"})
    assert [p for p, _, _ in result.files] == ["ops/annotations.py", "tensor_typing.py"]
    assert result.notes_of(GLOBAL_SET) == (f"{GLOBAL_SET}: added TFloating [torch.float32, torch.float64] to tensor_typing.py",)
    removed = "bool uint8 int8 int16 int32 int64 float16 bfloat16".split()  # the fixture's plan says ATen rejects each
    where = "ops/annotations.py:37 aten_where (where.self) self, other, return.0"
    assert result.notes_of(DTYPE_REMOVED) == tuple(
        f"{DTYPE_REMOVED}: {where}: torch.{d} (ATen rejects it: the fixture's ATen refuses this dtype)" for d in removed
    )
    assert len(result.notes) == 1 + len(removed) and result.narrowed == 1
    ((_, before, after), _) = result.files
    old, new = before.decode().splitlines(), after.decode().splitlines()
    assert [line for line in old if line not in new] == [
        "from onnxscript.function_libs.torch_lib.tensor_typing import TFloat, TReal, TTensor, TTensor2",
        "def aten_where(condition: BOOL, self: TTensor, other: TTensor2) -> TTensor:",
    ]
    assert [line for line in new if line not in old] == [
        "from onnxscript.function_libs.torch_lib.tensor_typing import TFloat, TFloating, TReal, TTensor",
        "def aten_where(condition: BOOL, self: TFloating, other: TFloating) -> TFloating:",
    ]


def test_outputs_show_the_files_under_torch_lib(result, tmp_path):
    outputs = torchlib_outputs(result, BEFORE, tmp_path / "out")
    assert [o.display for o in outputs] == [f"torch_lib/{p}" for p, _, _ in result.files]
    assert all(o.target == tmp_path / "out" / "torch_lib" / p for o, (p, _, _) in zip(outputs, result.files))
    assert all(o.source == o.target and o.before is None and o.changed for o in outputs)  # compared with the empty folder
    in_place = torchlib_outputs(result, BEFORE, None)
    assert all(o.target == o.source and o.before == (BEFORE / p).read_bytes() for o, (p, _, _) in zip(in_place, result.files))
    mirrored = torchlib_outputs(result, BEFORE, tmp_path / "out", mirror=True)
    assert [o.display for o in mirrored] == [f"torch_lib/{p}" for p in modules(BEFORE)]
    assert {o.display for o in mirrored if o.after != (BEFORE / o.display.removeprefix("torch_lib/")).read_bytes()} == {o.display for o in outputs}
    (tmp_path / "out" / "torch_lib").mkdir(parents=True)
    shutil.copytree(BEFORE, tmp_path / "out" / "torch_lib", dirs_exist_ok=True)
    again = torchlib_outputs(result, BEFORE, tmp_path / "out", mirror=True)
    assert {o.display for o in again if o.changed} == {o.display for o in outputs}  # compared with what the folder holds


# -- building blocks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "annotation, core",
    [
        ("TFloat", "TFloat"),
        ("Optional[TFloat]", "TFloat"),
        ("TFloat | None", "TFloat"),
        ("Union[TFloat, None]", "TFloat"),
        ("Sequence[Optional[TFloat]]", "TFloat"),
        ("Optional[Sequence[TFloat]]", "TFloat"),
        ("Tuple[TFloat, ...]", "TFloat"),
        ("Union[FLOAT, DOUBLE]", "Union[FLOAT, DOUBLE]"),
        ("tensor_typing.TTensor", "tensor_typing.TTensor"),
        ("Optional[float]", None),
        ("Union[FLOAT, DOUBLE, None]", None),
        ("'TFloat'", None),
    ],
)
def test_tensor_core_is_the_part_naming_the_tensor_type(annotation, core):
    found = tensor_core(cst.parse_expression(annotation))
    assert (None if found is None else cst.Module([]).code_for_node(found)) == core


def test_typevar_layout_wraps_as_a_formatter_would():
    code = cst.Module([]).code_for_node
    assert code(TypeVarSpec("T_x", ("INT64",)).statement()) == 'T_x = TypeVar("T_x", bound=INT64)\n'
    long = TypeVarSpec("T_" + "x" * 60, ("BOOL", "INT64")).statement()
    assert code(long) == f'T_{"x" * 60} = TypeVar(\n    "T_{"x" * 60}", bound=Union[BOOL, INT64]\n)\n'
    many = TypeVarSpec("T_y", ("BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "BFLOAT16", "FLOAT", "DOUBLE"))
    lines = code(many.statement()).splitlines()
    assert lines[:4] == ["T_y = TypeVar(", '    "T_y",', "    bound=Union[", "        BOOL,"]
    assert lines[-4:] == ["        FLOAT,", "        DOUBLE,", "    ],", ")"]
    for statement in (long, many.statement()):  # what is built is what parsing its text gives back
        assert code(cst.parse_statement(code(statement))) == code(statement)


def test_import_members_sort_as_isort_does():
    names = ["graph", "TFloat", "INT16", "INT8", "COMPLEX128", "COMPLEX64", "IntType", "BOOL"]
    assert sorted(names, key=member_key) == ["BOOL", "COMPLEX64", "COMPLEX128", "INT8", "INT16", "IntType", "TFloat", "graph"]


@pytest.mark.slow  # parses every installed torchlib module
def test_splitting_a_module_prints_it_byte_for_byte():
    """Head and rest are printed apart; together they are the module, for every installed torchlib module."""
    for path in sorted(installed_torchlib().rglob("*.py")):
        data = path.read_bytes()
        module = cst.parse_module(data)
        assert SplitModule.split(module).code == module.code, path


def test_an_overload_the_plan_lists_without_variables_touches_nothing(native, tmp_path):
    plain = Plan((), (OverloadPlan("linear", ()),))
    assert rewrite(BEFORE, native, plain, tmp_path).files == ()
