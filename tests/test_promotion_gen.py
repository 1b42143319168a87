"""``promotion-gen``: the yaml's type_promotion lines as torch.onnx's rule set, and the comparison with torch's table.

Until an inferred run writes the lines, the yaml is the real file annotated from a synthetic plan: every
overload whose schema fits a rule of the installed torch.onnx table gets that rule's line.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from migrate.audit.promotion_rules import DIFFERENT, EQUAL, ONLY_ONNX, ONLY_YAML, compare, installed_rules, report
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.names import OverloadName
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import OverloadPlan, Plan, Variable
from migrate.model.promotion import Promotion, promotion_problem
from migrate.write.native_functions import apply_plan
from migrate.write.promotion_gen import Rule, generate, name_rules
from tests.conftest import REAL_NATIVE_FUNCTIONS, run_cli

TORCH_TABLE = "_GENERATED_ATEN_TYPE_PROMOTION_RULE_SET = {"


def _write(path: Path, plans: list[OverloadPlan], overwrite: bool = False) -> None:
    native = NativeFunctions.load(path)
    path.write_bytes(apply_plan(native, GlobalSetsFile.load(sibling_constraints_path(path)), Plan((), tuple(plans)), overwrite=overwrite).native_functions)


def _from_torch_onnx(native: NativeFunctions) -> list[OverloadPlan]:
    """A promotion line for every overload whose schema has the arguments a rule of torch.onnx's table names."""
    rules, plans = installed_rules(), []
    for entry in native.entries:
        rule = rules.get(OverloadName.parse(entry.name).operator)
        arguments = [s for s in entry.schema.slots if not s.is_return]
        if rule is None or any(i >= len(arguments) for i in rule.positions):
            continue
        promotion = Promotion(rule.kind, tuple(arguments[i].name for i in rule.positions) + rule.kwargs)
        if promotion_problem(promotion, entry.schema) is None:
            plans.append(OverloadPlan(entry.name, (), promotion=promotion))
    return plans


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("promotion-gen") / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, path)
    _write(path, _from_torch_onnx(NativeFunctions.load(path)))
    return path


def _items(text: str) -> dict[str, str]:
    """Each rule's text in a table, by op name."""
    table = text[text.index(TORCH_TABLE) :]
    table = table[: table.index("\n}\n")]
    found = re.findall(r"    ElementwiseTypePromotionRule\(.*?\),\n(?=    E|    #|$)", table + "\n", re.S)
    return {re.search(r'"aten",\s*"(\w+)"', item).group(1): item for item in found}


def test_generated_rules_are_torch_onnxs_own_text_and_objects(synthetic):
    import torch.onnx._internal.fx.passes.type_promotion as onnx_promotion

    text, disagreeing = generate(NativeFunctions.load(synthetic))
    ours, theirs = _items(text), _items(Path(onnx_promotion.__file__).read_text())
    assert len(ours) >= 200 and set(ours) <= set(theirs)
    assert {name: ours[name] for name in ours} == {name: theirs[name] for name in ours}  # byte for byte, black's line breaks included
    scope: dict = {}
    exec(compile(text, "rules.py", "exec"), scope)  # the output is Python that imports what it names
    generated = {rule.op_name: rule for rule in scope["_GENERATED_ATEN_TYPE_PROMOTION_RULE_SET"]}
    installed = {rule.op_name: rule for rule in onnx_promotion._GENERATED_ATEN_TYPE_PROMOTION_RULE_SET}
    assert all(generated[name] == installed[name] for name in generated)
    assert disagreeing == []


def test_the_comparison_finds_every_rule_of_the_table_or_says_why_not(synthetic):
    comparisons = compare(NativeFunctions.load(synthetic))
    by_status = {status: [c.name for c in comparisons if c.status == status] for status in (EQUAL, DIFFERENT, ONLY_YAML, ONLY_ONNX)}
    assert len(by_status[EQUAL]) >= 200 and by_status[DIFFERENT] == by_status[ONLY_YAML] == []
    for comparison in comparisons:
        if comparison.status == ONLY_ONNX:  # refs of random sampling ops the yaml has only in place (cauchy_)
            assert comparison.explanation == f"the yaml has no operator {comparison.name} (a ref of no ATen op of that name)"
    assert report(comparisons).startswith(f"promotion rules against torch ")


@pytest.fixture(scope="module")
def edited(synthetic, tmp_path_factory) -> Path:
    """The synthetic yaml with lines that disagree with torch.onnx: add's and addcdiv's kinds, mm and __lshift__ promoted,
lerp, add_ and dot not, mul.Scalar alone."""
    path = tmp_path_factory.mktemp("edited") / "native_functions.yaml"
    shutil.copyfile(synthetic, path)
    int_to_float = Promotion("int_to_float", ("self", "other"))
    plans = [OverloadPlan(name, (), promotion=int_to_float) for name in ("add.Tensor", "add.Scalar", "add.out")]
    plans += [OverloadPlan("mm", (), promotion=Promotion("default", ("self", "mat2"))), OverloadPlan("mul.Scalar", (), promotion=Promotion("default", ("self",)))]
    unpromoted = ("lerp.Scalar", "lerp.Tensor", "lerp.Scalar_out", "lerp.Tensor_out", "add_.Tensor", "add_.Scalar", "dot", "dot.out")
    plans += [OverloadPlan(name, (Variable("T", TENSOR_DTYPES, ("self",)),)) for name in unpromoted]
    plans += [OverloadPlan(name, (), promotion=Promotion("default", ("self", "tensor1", "tensor2"))) for name in ("addcdiv", "addcdiv.out")]
    plans += [OverloadPlan("__lshift__.Scalar", (), promotion=Promotion("default", ("self", "other")))]
    _write(path, plans, overwrite=True)
    return path


def test_each_difference_is_explained_by_the_call_that_shows_atens_side(edited):
    found = {c.name: c for c in compare(NativeFunctions.load(edited))}
    add = found["add"]
    assert add.status == DIFFERENT and add.ours.kind == "int_to_float" and add.theirs.kind == "default"
    assert add.explanation == "add.Tensor(self=int64, other=int64) returns int64: ATen agrees with torch.onnx"
    mm = found["mm"]
    assert mm.status == ONLY_YAML and mm.explanation.startswith("no ref declares it; mm(self=float64, mat2=float32) raises (RuntimeError: expected m1 and m2 to have the same dtype")
    assert mm.explanation.endswith("ATen does not promote mat2")
    lerp = found["lerp"]
    assert lerp.status == ONLY_ONNX and "the yaml has no type_promotion line for lerp" in lerp.explanation
    # lerp.Tensor, whose weight is a tensor too, explains every position: ATen refuses each tensor promoted
    assert "lerp.Tensor(self=float32, end=float64, weight=float32) raises (RuntimeError: expected dtype float for `end` but got dtype double): ATen does not promote end" in lerp.explanation
    assert "ATen does not promote weight" in lerp.explanation and "no observation" not in lerp.explanation
    assert found["add_"].explanation.endswith("an in-place name: its result is written into self whatever the promotion; the yaml's rule for add is [0, 1] int_to_float")
    assert found["addcdiv"].explanation.startswith("addcdiv(self=int64, tensor1=int64, tensor2=int64) raises (RuntimeError: Integer division with addcdiv is no longer supported")
    assert found["addcdiv"].explanation.endswith(": ATen refuses the inputs the two kinds differ on, so the kind changes no call it runs")
    assert "dot(self=float32, tensor=float64) raises (RuntimeError: dot : expected both vectors to have same dtype, but found Float and Double): ATen does not promote tensor" in found["dot"].explanation  # 1-D calls
    # no float kernel: int64 beside int32 tensors shows it
    assert found["__lshift__"].explanation.endswith("__lshift__.Tensor(self=int32, other=int64) returns int64: ATen promotes other")
    mul = found["mul"]
    assert mul.status == EQUAL and mul.explanation == "its overloads disagree: mul.Tensor [0, 1] default; mul.out [0, 1] default; mul.Scalar [0] default"


def test_calls_are_built_as_the_op_wants_its_arguments(edited):
    """Class indices for a loss's target, a channel-sized weight, a bool flag, one of clamp's optional bounds."""
    theirs = {  # rules that differ from the yaml's, so that the calls separating them are made
        **installed_rules(),
        "nll_loss": Rule("nll_loss", (0,), (), "int_to_float"),
        "prelu": Rule("prelu", (0,), (), "default"),
        "poisson_nll_loss": Rule("poisson_nll_loss", (0,), (), "default"),
    }
    found = {c.name: c for c in compare(NativeFunctions.load(edited), theirs)}
    assert found["nll_loss"].explanation.startswith("""nll_loss(self=int64, target=int64) raises (NotImplementedError: "nll_loss_out_frame" not implemented for 'Long')""")
    assert "prelu(self=float32, weight=float64) raises (RuntimeError: prelu: Type promoting not supported. Got Float and Double): ATen does not promote weight" in found[
        "prelu"
    ].explanation
    assert "poisson_nll_loss(input=float32, target=float64, log_input=False, full=False, eps=2, reduction=1) returns float64: ATen promotes target" in found[
        "poisson_nll_loss"
    ].explanation
    assert not [c.name for c in found.values() if "no observation" in c.explanation]


def test_promotes_when_the_wider_argument_reaches_the_result(edited, tmp_path):
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(edited, path)
    _write(path, [OverloadPlan(name, (), promotion=Promotion("default", ("self",))) for name in ("atan2", "atan2.out")], overwrite=True)
    atan2 = next(c for c in compare(NativeFunctions.load(path)) if c.name == "atan2")
    assert atan2.status == DIFFERENT
    assert atan2.explanation == (
        "atan2(self=float32, other=float64) returns float64: ATen promotes other; "
        "atan2(self=int64, other=int64) returns float32: ATen agrees with torch.onnx"  # int_to_float, where the yaml says default
    )


def test_the_command_writes_the_rules_says_where_overloads_disagree_and_compares(edited, tmp_path, capfd):
    out = tmp_path / "rules.py"
    code, stdout, stderr = run_cli(capfd, "promotion-gen", edited, "-o", out)
    assert code == 0 and stdout == ""
    assert "dtype-migrate: mul: its overloads disagree (mul.Tensor [0, 1] default; mul.out [0, 1] default; mul.Scalar [0] default); wrote [0, 1] default" in stderr
    text = out.read_text()
    assert "    # mul: its overloads disagree (" in text and '"aten", "mm", [0, 1], [], ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT' in text
    code, stdout, _ = run_cli(capfd, "promotion-gen", edited, "--compare")
    assert code == 0 and re.match(r"promotion rules against torch \S+'s torch.onnx table: \d+ equal, 2 different, 2 only in the yaml, 7 only in torch.onnx\n", stdout)
    assert "\n  add: yaml [0, 1] int_to_float vs torch.onnx [0, 1] default: add.Tensor(self=int64, other=int64) returns int64: ATen agrees with torch.onnx\n" in stdout
    assert len(name_rules(NativeFunctions.load(edited))) == len(_items(text))
