"""Parameter names as the yaml's: the transformer before and after, the rewrite's decisions on a small tree,
and the installed torch_lib (copied to a temp dir)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from codemods.parameters import SCOPE_STATEMENT, SHADOWS, ParameterRenamer, renamed_schema_line
from codemods.toplevel import DefKey
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import OverloadIndex, installed_torchlib, scan_torchlib
from migrate.model.native import NativeFunctions, installed_native_functions
from migrate.model.plan import Plan
from migrate.write.torchlib.parameters import LEFT_ALONE, NAMED_ELSEWHERE, OVERLOADS_DISAGREE, SCHEMA_LACKS_IT, UNDECLARED_OVERLOAD
from migrate.write.torchlib.parameter_names import RENAMED
from migrate.write.torchlib.rewrite import rewrite_torchlib

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codemod"


def renamed(source: str, renames: dict[str, dict[str, str]], schema_lines: dict[str, str] | None = None) -> tuple[str, ParameterRenamer]:
    renamer = ParameterRenamer({DefKey(k): v for k, v in renames.items()}, {DefKey(k): v for k, v in (schema_lines or {}).items()})
    return cst.parse_module(textwrap.dedent(source)).visit(renamer).code, renamer


# -- the transformer --------------------------------------------------------------------------------


def test_a_parameter_is_renamed_with_its_bindings_and_every_access_to_them():
    """Reassignments, nested functions and comprehensions that read it, f-strings: all follow; a nested
    scope binding the old name for itself (a lambda's parameter, a nested def's local) keeps it;
    the header's defaults and annotations are evaluated outside the function and keep their names."""
    before = '''
        def aten_clamp_min(self: TReal, min_: TReal = min_default) -> TReal:
            """clamp_min.Tensor(Tensor self, Tensor min_) -> Tensor"""
            min_rank = len(min_.shape)
            min_ = op.CastLike(min_, self)

            def inner(y):
                return op.Add(min_, y)

            def own(min_):
                return min_

            def local():
                min_ = 1
                return min_

            scaled = [op.Mul(min_, k) for k in range(2)]
            keep = lambda min_: min_
            return op.Max(self, inner(min_), f"{min_!r}")


        def untouched(min_):
            return min_
    '''
    after = '''
        def aten_clamp_min(self: TReal, min: TReal = min_default) -> TReal:
            """clamp_min.Tensor(Tensor self, Tensor min) -> Tensor"""
            min_rank = len(min.shape)
            min = op.CastLike(min, self)

            def inner(y):
                return op.Add(min, y)

            def own(min_):
                return min_

            def local():
                min_ = 1
                return min_

            scaled = [op.Mul(min, k) for k in range(2)]
            keep = lambda min_: min_
            return op.Max(self, inner(min), f"{min!r}")


        def untouched(min_):
            return min_
    '''
    code, renamer = renamed(before, {"aten_clamp_min": {"min_": "min"}}, {"aten_clamp_min": "clamp_min.Tensor(Tensor self, Tensor min_) -> Tensor"})
    assert code == textwrap.dedent(after)
    assert renamer.renamed == {DefKey("aten_clamp_min"): {"min_": "min"}} and renamer.refused == {}


def test_a_default_naming_the_new_name_outside_the_function_does_not_stop_the_rename():
    code, renamer = renamed("def f(x, n=max(1, 2)):\n    return x\n", {"f": {"x": "max"}})
    assert code == "def f(max, n=max(1, 2)):\n    return max\n" and not renamer.refused


@pytest.mark.parametrize(
    "body, why",
    [
        ("return max(max_, 0)", "the function reads 'max' (a builtin or module-level name), which the parameter would shadow"),
        ("limit = max_\n    max = 3\n    return limit", "the function binds 'max' already"),
        ("return max_ + GLOBAL + max", "the function reads 'max' (a builtin or module-level name), which the parameter would shadow"),
        ("def inner():\n        return max([max_])\n    return inner()", "the nested inner reads 'max' (a builtin or module-level name), which the parameter would shadow"),
        ("def inner(max):\n        return max_ + max\n    return inner(1)", "the nested inner binds 'max' already"),
        ("return [max for max in max_]", "the nested comprehension binds 'max' already"),
        ("return lambda: max", "the nested lambda reads 'max' (a builtin or module-level name), which the parameter would shadow"),
    ],
)
def test_a_rename_that_would_shadow_what_the_body_uses_is_refused(body, why):
    """The new name may be a builtin the body calls, a module-level name, or bound in the function or in
    any closure, comprehension or lambda nested in it: each would change meaning, so nothing moves."""
    source = f"max = 2\n\n\ndef aten_clamp_max(self, max_):\n    {body}\n"
    code, renamer = renamed(source, {"aten_clamp_max": {"max_": "max"}})
    assert code == source
    (refusal,) = renamer.refused[DefKey("aten_clamp_max")]
    assert (refusal.old, refusal.new, refusal.kind, refusal.why) == ("max_", "max", SHADOWS, why)
    assert not renamer.renamed and not renamer.changed


def test_another_parameter_of_the_new_name_refuses_and_the_other_renames_go_on():
    source = "def f(x, self, y):\n    return op.Add(x, y)\n"
    code, renamer = renamed(source, {"f": {"x": "self", "y": "other"}})
    assert code == "def f(x, self, other):\n    return op.Add(x, other)\n"
    assert [r.kind for r in renamer.refused[DefKey("f")]] == [SHADOWS]
    assert renamer.renamed == {DefKey("f"): {"y": "other"}}


def test_global_and_nonlocal_statements_are_left_to_a_human():
    source = "def f(x):\n    def inner():\n        nonlocal x\n        x = 1\n    inner()\n    return x\n"
    code, renamer = renamed(source, {"f": {"x": "self"}})
    assert code == source and renamer.refused[DefKey("f")][0].kind == SCOPE_STATEMENT


def test_the_docstring_changes_only_when_its_first_line_is_the_line_given():
    source = 'def f(x):\n    """abs(Tensor x) -> Tensor\n\n    x is the input."""\n    return x\n'
    with_line, _ = renamed(source, {"f": {"x": "self"}}, {"f": "abs(Tensor x) -> Tensor"})
    assert with_line == 'def f(self):\n    """abs(Tensor self) -> Tensor\n\n    x is the input."""\n    return self\n'
    other_line, _ = renamed(source, {"f": {"x": "self"}}, {"f": "abs(Tensor y) -> Tensor"})
    assert other_line == 'def f(self):\n    """abs(Tensor x) -> Tensor\n\n    x is the input."""\n    return self\n'


def test_only_the_definition_asked_for_changes_when_a_name_is_defined_twice():
    source = "if A:\n    def f(x):\n        return x\nelse:\n    def f(x):\n        return x\n"
    renamer = ParameterRenamer({DefKey("f", 1): {"x": "self"}})
    code = cst.parse_module(source).visit(renamer).code
    assert code == "if A:\n    def f(x):\n        return x\nelse:\n    def f(self):\n        return self\n"


@pytest.mark.parametrize(
    "line, renames, expected",
    [
        ("embedding_renorm(Tensor weight, Tensor indices) -> Tensor", {"weight": "self"}, "embedding_renorm(Tensor self, Tensor indices) -> Tensor"),
        ("f(Tensor(a!) x, int[1] dim=[0, 1], *, float? x2=None) -> Tensor", {"x": "self", "x2": "y"}, "f(Tensor(a!) self, int[1] dim=[0, 1], *, float? y=None) -> Tensor"),
        ("f(Tensor x) -> Tensor x", {"x": "self"}, "f(Tensor self) -> Tensor x"),
        ("no schema here", {"here": "x"}, "no schema here"),
    ],
)
def test_schema_lines_rename_argument_names_only(line, renames, expected):
    assert renamed_schema_line(line, renames) == expected


# -- the rewrite's decisions ------------------------------------------------------------------------

TREE = '''\
"""Functions whose parameters the fixture's yaml names otherwise."""
from onnxscript.function_libs.torch_lib.registration import torch_op


@torch_op("aten::clamp")
def aten_clamp(self, min_=None, max_=None):
    """clamp(Tensor self, Scalar? min_=None, Scalar? max_=None) -> Tensor"""
    limit = max(0, 1)
    return op.Clip(self, min_, max_, limit)


@torch_op("aten::sin")
def aten_sin(x, approximate: bool = False):
    """sin(Tensor x) -> Tensor"""
    return op.Sin(x)


@torch_op(("aten::abs", "aten::linear"))
def aten_abs_or_linear(x):
    return op.Abs(x)


@torch_op(("aten::neg", "prims::neg"))
def aten_neg(x):
    return op.Neg(x)


@torch_op("aten::tanh")
def aten_tanh(x):
    return op.Tanh(x)


@torch_op("aten::relu")
def aten_relu(self):
    return aten_tanh(x=self)
'''


@pytest.fixture(scope="module")
def native() -> NativeFunctions:
    return NativeFunctions.load(FIXTURES / "native_functions.yaml")


def rewrite(root: Path, native: NativeFunctions, cache: Path, only: set[str] | None = None):
    stages = StageCache.at(cache)
    return rewrite_torchlib(scan_torchlib(root, native, stages), Plan(), native, stages, only)


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "torch_lib"
    (root / "ops").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "ops" / "__init__.py").write_text("")
    (root / "ops" / "names.py").write_text(TREE)
    return root


def test_each_mismatching_parameter_is_renamed_or_left_alone_with_why(tree, native, tmp_path):
    result = rewrite(tree, native, tmp_path / "cache")
    assert [(p.function, p.param, p.new, p.outcome) for p in result.parameters] == [
        ("aten_clamp", "min_", "min", RENAMED),
        ("aten_clamp", "max_", "max", SHADOWS),
        ("aten_sin", "x", "self", RENAMED),
        ("aten_sin", "approximate", "", SCHEMA_LACKS_IT),
        ("aten_abs_or_linear", "x", "", OVERLOADS_DISAGREE),
        ("aten_neg", "x", "self", UNDECLARED_OVERLOAD),
        ("aten_tanh", "x", "self", NAMED_ELSEWHERE),
    ]
    assert all(p.outcome in LEFT_ALONE for p in result.parameters if p.outcome != RENAMED)
    lines = [str(p) for p in result.parameters]
    assert lines[0] == "ops/names.py:5 aten_clamp (clamp): min_ -> min"
    assert lines[4] == (
        "ops/names.py:18 aten_abs_or_linear (abs, linear): x left alone, overloads-disagree: "
        "the overloads it serves name it differently (abs self; linear input)"
    )
    assert lines[5].endswith("undeclared-overload: it also serves prims::neg, which the yaml does not declare")
    ((path, _, after),) = result.files
    assert path == "ops/names.py"
    expected = (
        TREE.replace("min_=None, max_", "min=None, max_")
        .replace("Scalar? min_=None", "Scalar? min=None")
        .replace("Clip(self, min_,", "Clip(self, min,")
        .replace("def aten_sin(x,", "def aten_sin(self,")
        .replace("sin(Tensor x)", "sin(Tensor self)")
        .replace("op.Sin(x)", "op.Sin(self)")
    )
    assert after.decode() == expected  # the docstring's schema line names the arguments as the parameters are named
    compile(after, path, "exec")
    summary = result.summary().parameters
    assert summary["renamed"] == 2 and summary["functions_renamed"] == 2
    assert summary["left_alone"] == {NAMED_ELSEWHERE: 1, OVERLOADS_DISAGREE: 1, SCHEMA_LACKS_IT: 1, SHADOWS: 1, UNDECLARED_OVERLOAD: 1}


def test_a_second_run_renames_nothing_and_reports_the_same_left_alone(tree, native, tmp_path):
    first = rewrite(tree, native, tmp_path / "cache")
    for path, _, after in first.files:
        (tree / path).write_bytes(after)
    again = rewrite(tree, native, tmp_path / "cache")
    assert again.files == ()
    assert [p for p in again.parameters] == [p for p in first.parameters if p.outcome != RENAMED]


def test_a_function_another_module_calls_through_its_module_is_named_elsewhere(tree, native, tmp_path):
    (tree / "ops" / "caller.py").write_text("from . import names\n\n\ndef helper(t):\n    return names.aten_sin(x=t)\n")
    result = rewrite(tree, native, tmp_path / "cache", only={"sin"})
    assert [(p.function, p.param, p.outcome) for p in result.parameters] == [("aten_sin", "x", NAMED_ELSEWHERE), ("aten_sin", "approximate", SCHEMA_LACKS_IT)]
    assert result.files == ()


def test_only_renames_the_functions_of_those_overloads(tree, native, tmp_path):
    result = rewrite(tree, native, tmp_path / "cache", only={"sin"})
    assert [(p.function, p.param, p.outcome) for p in result.parameters] == [("aten_sin", "x", RENAMED), ("aten_sin", "approximate", SCHEMA_LACKS_IT)]


# -- the installed torch_lib ------------------------------------------------------------------------


@pytest.mark.slow  # parses torchlib's largest modules
def test_the_installed_torchlib_takes_the_yamls_names(tmp_path):
    """On a copy: every parameter of a registered function is the yaml's name afterwards, or listed as left
    alone; the issue's cases come out as its rules say; the modules compile and a second run renames nothing."""
    native = NativeFunctions.load(installed_native_functions())
    root = tmp_path / "torch_lib"
    shutil.copytree(installed_torchlib(), root, ignore=shutil.ignore_patterns("__pycache__"))
    first = rewrite(root, native, tmp_path / "cache")
    for path, _, after in first.files:
        compile(after, path, "exec")
        (root / path).write_bytes(after)
    outcomes = {(p.function, p.param): (p.new, p.outcome) for p in first.parameters}
    for function, old, new in [
        ("aten_unique_consecutive", "x", "self"),
        ("aten_upsample_bicubic2d_vec", "self", "input"),
        ("aten_atleast_1d_sequence", "self", "tensors"),
        ("aten_clamp_min", "min_", "min"),
        ("aten_clamp_max_tensor", "max_", "max"),
    ]:
        assert outcomes[(function, old)] == (new, RENAMED), function
    assert outcomes[("aten_linalg_det", "A")][1] == OVERLOADS_DISAGREE
    for function, extra in [("aten_sort", "stable"), ("aten_embedding_bag", "padding_idx"), ("aten_sym_storage_offset", "dim")]:
        assert outcomes[(function, extra)] == ("", SCHEMA_LACKS_IT), function

    again = rewrite(root, native, tmp_path / "cache")
    assert again.files == ()
    left = {(p.function, p.param) for p in again.parameters}
    assert left == {(p.function, p.param) for p in first.parameters if p.outcome != RENAMED}
    index = OverloadIndex(native)
    evidence = scan_torchlib(root, native, StageCache.at(tmp_path / "cache"))
    for registration in evidence.registrations:
        served = [evidence.resolved[n] for n in registration.names if n in evidence.resolved]
        for overload in [] if registration.private else served:
            arguments = {s.name for s in index.schema(overload).slots if not s.is_return}
            for param in registration.params:
                assert param.name in arguments or (registration.function, param.name) in left, (registration.function, param.name)
