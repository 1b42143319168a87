"""Dependent constraints: a constraint list that names another variable of the entry (``U: [torch.bool, query.dtype]``).

The format (parse, write, lower, lint), the reader's errors, the runtime checker, torchlib's union,
the inference from probes, and the real run's ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from migrate.check.checker import OUTSIDE_SET, Declarations, DtypeViolation, checking
from migrate.errors import InputError
from migrate.evidence.probe.follows import follows_facts
from migrate.runtime.runs import OpInfoId, Probe, ProbedCall
from migrate.infer.merge import with_follows
from migrate.infer.naming import name_variables
from migrate.model.constraint import ConstraintError, ConstraintList, follows_problem, possible_dtypes
from migrate.model.declared import declared_variables
from migrate.model.dtypes import DType, UnknownDType, named
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import PROBE, Evidence, OverloadPlan, Plan, Variable
from migrate.model.schema import TypedSchema
from migrate.write.native_functions import UNCHANGED, apply_plan, lower
from tests.conftest import FIXTURES, FLOATS, annotated, declaration_error, lint_round_trip

SDPA = (
    "- func: scaled_dot_product_attention(TFloat query, TFloat key, TFloat value, U? attn_mask=None, float dropout_p=0.0, "
    "bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> TFloat\n"
    "  type_constraints: {TFloat: [torch.float16, torch.bfloat16, torch.float32, torch.float64], U: [torch.bool, torch.float32, TFloat]}\n"
)


# -- the form


@pytest.mark.parametrize(
    "text, dtypes, follows",
    [
        ("[torch.bool, torch.float32, T]", ("bool", "float32"), ("T",)),
        ("[T]", (), ("T",)),
        ("[torch.float32, torch.bool]", ("bool", "float32"), ()),
        ("[V, torch.int64, U]", ("int64",), ("U", "V")),
    ],
)
def test_a_constraint_list_parses_and_prints_back_in_canonical_order(text, dtypes, follows):
    parsed = ConstraintList.parse(text)
    assert parsed == ConstraintList(named(*dtypes), follows)
    assert ConstraintList.parse(str(parsed)) == parsed
    assert str(parsed) == "[" + ", ".join([*(f"torch.{d.name}" for d in named(*dtypes)), *sorted(follows)]) + "]"


@pytest.mark.parametrize("text", ["[torch.nothing, T]", "[Tensor]", "[1]", "torch.bool, T"])
def test_a_list_item_that_is_neither_dtype_nor_variable_is_refused(text):
    with pytest.raises(UnknownDType):
        ConstraintList.parse(text)


def test_unresolved_and_cyclic_references_are_found():
    assert follows_problem({"T": (), "U": ("T",)}) is None
    assert follows_problem({"U": ("X",)}) == "unresolved type variable X in the list of U"
    assert follows_problem({"T": ("U",), "U": ("V",), "V": ("T",)}) == "type variables follow each other in a cycle: T -> U -> V -> T"
    assert "cycle: T -> T" in follows_problem({"T": ("T",)})


def test_a_variable_may_take_its_own_dtypes_and_those_it_follows_transitively():
    dtypes = {"T": named("float16"), "U": named("bool"), "V": named("int64")}
    assert possible_dtypes("V", dtypes, {"V": ("U",), "U": ("T",)}) == named("bool", "int64", "float16")
    assert possible_dtypes("T", dtypes, {"V": ("U",), "U": ("T",)}) == named("float16")


def test_the_plan_keeps_follows_in_json_and_a_plain_variable_writes_no_follows_key():
    follower = Variable("U", named("bool", "float32"), ("attn_mask",), (), ("TFloat",))
    plan = OverloadPlan("scaled_dot_product_attention", (Variable("TFloat", FLOATS, ("query",)), follower))
    back = OverloadPlan.from_json(json.loads(json.dumps(plan.to_json())))
    assert back == plan and back.variables[1].follows == ("TFloat",)
    assert "follows" not in plan.to_json()["variables"][0]
    assert plan.possible(follower) == named("bool", "float16", "bfloat16", "float32", "float64")


# -- reading an annotated file


@pytest.mark.parametrize("followed", ["TFloat", "query.dtype", "value.dtype"])
def test_the_reader_resolves_a_list_that_names_another_variable_by_name_or_by_a_tensor_arguments_dtype(tmp_path, followed):
    native = annotated(tmp_path, SDPA.replace("torch.float32, TFloat]", f"torch.float32, {followed}]"))
    mask = declared_variables(native, native.entries[0], {})[1]
    assert (mask.name, mask.dtypes, mask.follows, mask.binds) == ("U", named("bool", "float32"), ("TFloat",), ("attn_mask",))


def test_a_list_spells_a_followed_variable_by_its_first_arguments_dtype_and_reads_it_back():
    listed = ConstraintList(named("float32", "bool"), ("V", "TFloat"))
    spelled = listed.spelled({"TFloat": "query.dtype", "V": "value.dtype"})
    assert spelled == "[torch.bool, torch.float32, query.dtype, value.dtype]"
    assert ConstraintList.parse(spelled, tensors={"query": "TFloat", "value": "V"}) == listed


@pytest.mark.parametrize(
    "constraints, message",
    [
        ("{TFloat: [torch.float32], U: [torch.bool, TNowhere]}", "unresolved type variable TNowhere in the list of U"),
        ("{TFloat: [torch.float32], U: [torch.bool, dropout_p.dtype]}", "dropout_p.dtype: dropout_p is no tensor argument of the entry with a type variable"),
        ("{TFloat: [torch.float32], U: [torch.bool, return.0.dtype]}", "return.0.dtype: return.0 is no tensor argument"),
        ("{TFloat: [torch.float32], U: [torch.bool, attn_mask.dtype]}", "type variables follow each other in a cycle: U -> U"),
        ("{TFloat: [torch.float32, U], U: [torch.bool, TFloat]}", "type variables follow each other in a cycle: TFloat -> U -> TFloat"),
        ("{TFloat: [torch.float32], U: [torch.bool, 3]}", "3 must be"),
    ],
)
def test_an_unresolved_or_cyclic_reference_is_an_error_with_file_line_and_op(tmp_path, constraints, message):
    error = declaration_error(tmp_path, SDPA, constraints)
    assert message in error or (message == "3 must be" and "must be a list of dtypes" in error)


# -- writing and lowering


def _applied(tmp_path: Path):
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "dependent.yaml", path)
    native = NativeFunctions.load(path)
    return path, apply_plan(native, GlobalSetsFile.load(sibling_constraints_path(path)), Plan.read(FIXTURES / "dependent.plan.json"))


def test_the_writer_writes_dependent_lists_inline_and_lower_gives_the_original_bytes(tmp_path):
    path, result = _applied(tmp_path)
    assert result.native_functions == (FIXTURES / "dependent.expected.yaml").read_bytes()
    assert result.type_constraints == (FIXTURES / "dependent.expected_type_constraints.yaml").read_bytes()
    written = result.native_functions.decode()
    assert "  type_constraints: {T: [torch.bool, torch.float32, query.dtype]}\n" in written
    assert all(len(line) <= 200 for line in written.splitlines() if line.lstrip().startswith("type_constraints:"))
    path.write_bytes(result.native_functions)
    sibling_constraints_path(path).write_bytes(result.type_constraints)
    assert lower(NativeFunctions.load(path)).encode() == (FIXTURES / "dependent.yaml").read_bytes()
    assert lint_round_trip(written) == written


def test_applying_the_plan_again_changes_nothing(tmp_path):
    path, result = _applied(tmp_path)
    path.write_bytes(result.native_functions)
    sibling_constraints_path(path).write_bytes(result.type_constraints)
    again = apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), Plan.read(FIXTURES / "dependent.plan.json"))
    assert again.native_functions == result.native_functions
    assert {o.status for o in again.outcomes} == {UNCHANGED}


def test_a_plan_whose_variables_follow_in_a_cycle_is_refused(tmp_path):
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(FIXTURES / "dependent.yaml", path)
    cyclic = Plan(
        (),
        (OverloadPlan("lerp.Tensor", (Variable("T", FLOATS, ("self", "end"), (), ("U",)), Variable("U", (), ("weight",), (), ("T",)))),),
    )
    with pytest.raises(InputError, match="cycle: T -> U -> T"):
        apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), cyclic)


def test_compat_loads_a_file_with_dependent_lists_into_torchgen(tmp_path):
    from migrate.compat import parse_native_yaml

    path, result = _applied(tmp_path)
    path.write_bytes(result.native_functions)
    sibling_constraints_path(path).write_bytes(result.type_constraints)
    shutil.copyfile(Path(torch.__file__).parent.parent / "torchgen" / "packaged" / "ATen" / "native" / "tags.yaml", tmp_path / "tags.yaml")
    parsed = parse_native_yaml(path, skip_native_fns_gen=True)
    assert "scaled_dot_product_attention" in {str(f.func.name) for f in parsed.native_functions}


# -- the runtime checker


@pytest.fixture(scope="module")
def sdpa_declared(tmp_path_factory) -> Declarations:
    return Declarations.from_native(annotated(tmp_path_factory.mktemp("sdpa"), SDPA))


def _sdpa(query_dtype, mask_dtype) -> None:
    q = torch.randn(1, 2, 3, 4).to(query_dtype)
    F.scaled_dot_product_attention(q, q, q, attn_mask=torch.zeros(1, 2, 3, 3).to(mask_dtype))


def test_a_float16_mask_beside_a_float32_query_is_a_violation(sdpa_declared):
    with checking(sdpa_declared, collect=True) as checker:
        _sdpa(torch.float32, torch.float32)
        with pytest.raises(RuntimeError, match="attn_mask dtype"):  # ATen refuses it too
            _sdpa(torch.float32, torch.float16)
    assert checker.violations == ()  # collect mode does not judge a call whose kernel raised
    with pytest.raises(Exception) as raised, checking(sdpa_declared):
        _sdpa(torch.float32, torch.float16)
    assert str(raised.value) == (
        "aten::scaled_dot_product_attention: argument attn_mask has dtype torch.float16, not in U = [torch.bool, torch.float32, TFloat], "
        "declared at native_functions.yaml:2 (TFloat is torch.float32 in this call); ATen refuses it too: Expected attn_mask dtype "
        "to be bool or float or to match query dtype, but got attn_mask.dtype: c10::Half and  query.dtype: float instead."
    )
    assert raised.value.violations[0].kind == OUTSIDE_SET


def test_a_mask_of_the_query_dtype_or_of_the_own_dtypes_is_no_violation(sdpa_declared):
    with checking(sdpa_declared, collect=True) as checker:
        _sdpa(torch.float16, torch.float16)
        _sdpa(torch.bfloat16, torch.bfloat16)
        _sdpa(torch.float64, torch.float32)
        _sdpa(torch.float16, torch.bool)
        q = torch.randn(1, 2, 3, 4)
        F.scaled_dot_product_attention(q, q, q)
    assert checker.violations == ()


def test_a_follower_checked_before_its_followed_variable_in_schema_order(tmp_path):
    text = "- func: masked_fill.Tensor(T self, B mask, V value) -> T\n  type_constraints: {T: [torch.int64, V], B: [torch.bool], V: [torch.float32, torch.float64]}\n"
    declared = Declarations.from_native(annotated(tmp_path, text))
    x = torch.zeros(3)
    with checking(declared, collect=True) as checker:
        torch.masked_fill(x.double(), x > 0, torch.tensor(1.0, dtype=torch.float64))  # self follows value
        torch.masked_fill(x.long(), x > 0, torch.tensor(1.0))  # self int64 beside any value
    assert checker.violations == ()
    with pytest.raises(Exception, match="argument self has dtype torch.float32, not in T = \\[torch.int64, V\\]"), checking(declared):
        torch.masked_fill(x, x > 0, torch.tensor(1.0, dtype=torch.float64))


def test_the_checker_survives_pickling_with_follows(sdpa_declared):
    import pickle

    assert pickle.loads(pickle.dumps(sdpa_declared)) == sdpa_declared


# -- inference


def _call(query: str, mask: str, accepted: tuple[str, ...], opinfo: OpInfoId = OpInfoId("sdpa", "")) -> ProbedCall:
    slots = (("query", DType(query)), ("key", DType(query)), ("value", DType(query)), ("attn_mask", DType(mask)), ("return.0", DType(query)))
    returns = ((DType(query),),)
    probe = Probe(("attn_mask",), tuple((DType(d), returns) for d in accepted if d != mask), ())
    return ProbedCall("aten::scaled_dot_product_attention", slots, opinfo, DType("float32"), True, (probe,))


ATEN_SDPA = [
    _call("float32", "float32", ("bool", "float32")),
    _call("float16", "float32", ("bool", "float16", "float32")),
    _call("bfloat16", "float32", ("bool", "bfloat16", "float32")),
    _call("float64", "float32", ("bool", "float32", "float64")),
]


def test_a_slot_whose_accepted_dtypes_move_with_the_query_follows_it():
    (fact,) = follows_facts(ATEN_SDPA)["scaled_dot_product_attention"]
    assert (fact.slots, fact.on, fact.dtypes) == (("attn_mask",), ("query", "key", "value"), named("bool", "float32"))
    assert fact.evidence.source == PROBE and "at float16: [torch.bool, torch.float16, torch.float32]" in fact.evidence.where


def test_no_fact_from_one_query_dtype_nor_where_the_rule_does_not_hold_exactly():
    assert follows_facts(ATEN_SDPA[:1]) == {}
    same = [_call(q, "float32", ("bool", "float16", "bfloat16", "float32", "float64")) for q in ("float32", "float16")]
    assert follows_facts(same) == {}  # it took every dtype whatever the query had
    irregular = ATEN_SDPA[:3] + [_call("float64", "float32", ("bool", "float32", "float64", "int64"))]
    assert follows_facts(irregular) == {}  # int64 only beside float64: not "own dtypes or the query's"


def test_an_observation_outside_the_rule_vetoes_it():
    from migrate.runtime.runs import Observation

    odd = Observation(
        "aten::scaled_dot_product_attention",
        (("query", DType("float32")), ("key", DType("float32")), ("value", DType("float32")), ("attn_mask", DType("float16")), ("return.0", DType("float32"))),
        OpInfoId("sdpa", ""),
        DType("float32"),
        True,
        1,
    )
    assert follows_facts(ATEN_SDPA, [odd]) == {}


def test_inference_makes_the_mask_follow_the_query_variable_and_names_it():
    (fact,) = follows_facts(ATEN_SDPA)["scaled_dot_product_attention"]
    evidence = Evidence(PROBE, "seen", FLOATS)
    merged = OverloadPlan(
        "scaled_dot_product_attention",
        (Variable("P0", FLOATS, ("query", "key", "value", "return.0"), (evidence,)), Variable("P1", named("bool", *FLOATS_NAMES), ("attn_mask",))),
    )
    followed = with_follows(merged, [fact])
    mask = followed.variables[1]
    assert (mask.dtypes, mask.follows) == (named("bool", "float32"), ("P0",))
    assert followed.possible(mask) == merged.variables[1].dtypes  # nothing narrowed
    schema = TypedSchema.parse("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None) -> Tensor")
    named_plan = name_variables(followed, schema, {FLOATS: "TFloat", named("bool", "float32"): "TBoolOrFloat32"})
    assert [(v.name, v.follows) for v in named_plan.variables] == [("TFloat", ()), ("T", ("TFloat",))]


FLOATS_NAMES = tuple(d.name for d in FLOATS)


def test_a_mask_with_dtypes_neither_rule_part_gives_keeps_them():
    (fact,) = follows_facts(ATEN_SDPA)["scaled_dot_product_attention"]
    merged = OverloadPlan(
        "scaled_dot_product_attention",
        (Variable("P0", FLOATS, ("query", "key", "value")), Variable("P1", named("bool", "uint8", *FLOATS_NAMES), ("attn_mask",))),
    )
    assert with_follows(merged, [fact]).variables[1].dtypes == named("bool", "uint8", "float32")


def test_a_follower_may_take_the_union_and_keeps_it_when_its_followed_slots_are_gone():
    plan = OverloadPlan("x", (Variable("T", FLOATS, ("query",)), Variable("U", named("bool"), ("attn_mask",), (), ("T",))))
    assert plan.possible(plan.variables[1]) == named("bool", *FLOATS_NAMES)
    kept = plan.kept({"attn_mask"})  # the followed variable gone: the follower keeps every dtype it could take
    assert (kept.variables[0].dtypes, kept.variables[0].follows) == (named("bool", *FLOATS_NAMES), ())


def _layer_norm(input: str, accepted: tuple[str, ...]) -> ProbedCall:
    """A native_layer_norm call with weight and bias at float32, cast together to each dtype beside ``input``."""
    slots = (("input", DType(input)), ("weight", DType("float32")), ("bias", DType("float32")), ("return.0", DType(input)), ("return.1", DType("float32")))
    probe = Probe(("weight", "bias"), tuple((DType(d), ((DType(input),), (DType(d),))) for d in accepted if d != "float32"), ())
    return ProbedCall("aten::native_layer_norm", slots, OpInfoId("native_layer_norm", ""), DType("float32"), True, (probe,))


ATEN_LAYER_NORM = [_layer_norm("float32", ("float32",)), _layer_norm("float16", ("float16", "float32")), _layer_norm("bfloat16", ("bfloat16", "float32"))]


def test_slots_cast_together_follow_a_group_as_one_slot_does():
    (fact,) = follows_facts(ATEN_LAYER_NORM)["native_layer_norm"]
    assert (fact.slots, fact.on, fact.dtypes) == (("weight", "bias"), ("input",), named("float32"))
    assert fact.evidence.where.startswith("weight, bias cast together with input at each dtype (at float16: [torch.float16, torch.float32];")


def test_slots_cast_together_that_took_two_dtypes_in_one_call_follow_nothing():
    from migrate.runtime.runs import Observation

    slots = (("input", DType("float16")), ("weight", DType("float16")), ("bias", DType("float32")), ("return.0", DType("float16")), ("return.1", DType("float32")))
    split = Observation("aten::native_layer_norm", slots, OpInfoId("native_layer_norm", ""), DType("float32"), True, 1)
    assert follows_facts(ATEN_LAYER_NORM, [split]) == {}


def test_a_variable_of_the_facts_slots_and_returns_follows_and_one_with_another_input_does_not():
    (fact,) = follows_facts(ATEN_LAYER_NORM)["native_layer_norm"]
    halves = named("float16", "bfloat16", "float32")
    merged = OverloadPlan("native_layer_norm", (Variable("P0", halves, ("input", "return.0")), Variable("P1", halves, ("weight", "bias", "return.1"))))
    followed = with_follows(merged, [fact])
    assert (followed.variables[1].dtypes, followed.variables[1].follows) == (named("float32"), ("P0",))
    assert followed.possible(followed.variables[1]) == halves  # nothing narrowed: float16 and bfloat16 beside an input of theirs
    wider = OverloadPlan("native_layer_norm", (merged.variables[0], Variable("P1", halves, ("weight", "bias", "running_mean"))))
    assert with_follows(wider, [fact]).variables[1].follows == ()


def _input_refused(constant: str, refused: str, message: str) -> ProbedCall:
    """A native_layer_norm call with weight and bias at ``constant``, its input cast alone and refused ``refused``."""
    slots = (("input", DType(constant)), ("weight", DType(constant)), ("bias", DType(constant)), ("return.0", DType(constant)), ("return.1", DType(constant)))
    probe = Probe(("input",), (), ((DType(refused), message),))
    return ProbedCall("aten::native_layer_norm", slots, OpInfoId("native_layer_norm", ""), DType("float32"), True, (probe,))


def _float64_run() -> "Observation":
    from migrate.runtime.runs import Observation

    slots = tuple((name, DType("float64")) for name in ("input", "weight", "bias", "return.0", "return.1"))
    return Observation("aten::native_layer_norm", slots, OpInfoId("native_layer_norm", ""), DType("float64"), True, 1)


MIXED = "RuntimeError: mixed dtype (CPU): all inputs must share same datatype."


def test_slots_that_take_the_groups_computation_dtype_follow_it_where_a_call_refutes_the_constant():
    """float32 beside float16, bfloat16 and float32 inputs reads as a constant until the input cast to float64 beside a
    float32 weight is refused: then the weight is the dtype the input computes in (opmath), and no constant."""
    assert not follows_facts(ATEN_LAYER_NORM, [_float64_run()])["native_layer_norm"][0].opmath  # no call refutes float32
    (fact,) = follows_facts([*ATEN_LAYER_NORM, _input_refused("float32", "float64", MIXED)], [_float64_run()])["native_layer_norm"]
    assert (fact.slots, fact.on, fact.dtypes, fact.opmath) == (("weight", "bias"), ("input",), (), True)
    assert fact.evidence.where.endswith(f"their dtype and the dtype it computes in; input cast to float64 beside weight, bias at float32 refused ({MIXED})")
    # a refusal of a dtype the input never ran at says nothing of the weight
    assert not follows_facts([*ATEN_LAYER_NORM, _input_refused("float32", "float64", MIXED)])["native_layer_norm"][0].opmath


def test_a_weight_following_the_inputs_computation_dtype_is_its_dtype_or_opmath_and_torchlib_gets_the_union():
    (fact,) = follows_facts([*ATEN_LAYER_NORM, _input_refused("float32", "float64", MIXED)], [_float64_run()])["native_layer_norm"]
    merged = OverloadPlan("native_layer_norm", (Variable("T", FLOATS, ("input", "return.0")), Variable("U", FLOATS, ("weight", "bias", "return.1"))))
    weight = with_follows(merged, [fact]).variables[1]
    assert (weight.dtypes, weight.follows, weight.opmath) == ((), ("T",), ("T",))
    plan = replace(merged, variables=(merged.variables[0], weight))
    assert plan.possible(weight) == FLOATS and OverloadPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    assert weight.constraint.spelled({"T": "input.dtype"}) == "[input.dtype, opmath(input.dtype)]"
    assert possible_dtypes("U", {"T": named("float16", "complex32"), "U": ()}, {}, None, {"U": ("T",)}) == named("float32", "complex64")


def test_opmath_parses_by_a_tensor_arguments_dtype_or_a_variables_name_and_nothing_else():
    tensors = {"input": "T"}
    assert ConstraintList.parse("[input.dtype, opmath(input.dtype)]", (), tensors) == ConstraintList((), ("T",), "", ("T",))
    assert ConstraintList.parse("[opmath(T), torch.float64]") == ConstraintList(named("float64"), (), "", ("T",))
    with pytest.raises(ConstraintError, match="takes one tensor argument's dtype or one type variable"):
        ConstraintList.parse("[opmath(torch.float16)]", (), tensors)
    with pytest.raises(ConstraintError, match="weight is no tensor argument"):
        ConstraintList.parse("[opmath(weight.dtype)]", (), tensors)


@pytest.fixture(scope="module")
def norm_declared(tmp_path_factory) -> Declarations:
    entry = (
        "- func: native_layer_norm(T input, SymInt[] normalized_shape, U? weight, U? bias, float eps) -> (T, U, U)\n"
        "  type_constraints: {T: [torch.float16, torch.bfloat16, torch.float32, torch.float64], U: [input.dtype, opmath(input.dtype)]}\n"
    )
    return Declarations.from_native(annotated(tmp_path_factory.mktemp("norm"), entry))


@pytest.mark.parametrize(
    "input, weight, declared",
    [("float16", "float32", True), ("float16", "float16", True), ("float64", "float64", True), ("float64", "float32", False), ("float16", "bfloat16", False)],
)
def test_the_checker_takes_the_inputs_dtype_or_the_one_it_computes_in(norm_declared, input, weight, declared):
    x, w = torch.ones(2, 4, dtype=getattr(torch, input)), torch.ones(4, dtype=getattr(torch, weight))
    if declared:
        with checking(norm_declared, collect=True) as checker:
            torch.ops.aten.native_layer_norm(x, [4], w, w, 1e-5)
        assert checker.violations == ()
    else:  # ATen refuses these too ("mixed dtype (CPU)"), which the message adds
        with pytest.raises(DtypeViolation, match=rf"U = \[T, opmath\(T\)\].*T is torch.{input}; opmath\(T\) is torch.\w+ in this call.*mixed dtype"), checking(norm_declared):
            torch.ops.aten.native_layer_norm(x, [4], w, w, 1e-5)


def test_a_list_naming_opmath_of_no_variable_of_the_entry_is_an_error_with_file_line_and_op(tmp_path):
    error = declaration_error(tmp_path, "- func: f(T self, U other) -> T\n  type_constraints: {T: TFloat, U: [TFloat]}\n", "{T: [torch.float32], U: [opmath(X)]}")
    assert error.endswith("unresolved type variable X in opmath() in the list of U")


# -- the real run


@pytest.mark.slow
def test_the_real_run_writes_the_sdpa_mask_as_following_the_query(tmp_path):
    from migrate.cli import main

    out = tmp_path / "out"
    assert main(["--out", str(out), "--op", "scaled_dot_product_attention"]) == 0
    text = (out / "native_functions.yaml").read_text()
    at = text.index("- func: scaled_dot_product_attention(")
    func, constraints = text[at:].splitlines()[:2]
    assert func.startswith("- func: scaled_dot_product_attention(T query, T key, T value, U? attn_mask=None, ")
    assert func.endswith("-> T")
    assert constraints == "  type_constraints: {T: TFloatingAndHalfBFloat16, U: [torch.bool, torch.float32, query.dtype]}"


def test_torchlib_is_judged_against_the_union_of_a_follower_and_the_set_it_follows(tmp_path):
    from migrate.cache import StageCache
    from migrate.torchlib_source.resolve import scan_torchlib
    from migrate.write.torchlib.rewrite import rewrite_torchlib

    folder = FIXTURES / "codemod"
    native = NativeFunctions.load(folder / "native_functions.yaml")
    fixture = Plan.read(folder / "plan.json")
    # TFloat has no dtypes in the plan: it stands for the global set, which the union must resolve.
    mul = OverloadPlan("mul.Tensor", (Variable("TFloat", (), ("self", "return.0")), Variable("U", named("bool"), ("other",), (), ("TFloat",))))
    plan = Plan(fixture.global_sets, tuple(mul if o.name == "mul.Tensor" else o for o in fixture.overloads))
    cache = StageCache.at(tmp_path)
    result = rewrite_torchlib(scan_torchlib(folder / "before", native, cache), plan, native, cache, {"mul.Tensor"})
    (note,) = [n for n in result.notes if "aten_mul" in n]
    assert "other lacks [torch.bool] of the declared [torch.bool, torch.float16, torch.bfloat16, torch.float32, torch.float64]" in note


def test_the_worker_probes_the_mask_again_beside_each_query_dtype_only_where_probes_hint_at_it():
    from types import SimpleNamespace

    from migrate.evidence.probe.contexts import context_reports

    universe = ("bool", "int64", "float16", "float32", "float64")
    floats = ("float16", "float32", "float64")
    names = ("query", "key", "value", "attn_mask")

    def aten(cast: dict[int, str]):
        """scaled_dot_product_attention's rule, on dtype names: query, key and value agree; the mask is bool, float32 or the query's."""
        q, k, v, mask = (cast.get(i, "float32") for i in range(4))
        if q == k == v and q in floats and mask in ("bool", "float32", q):
            return (q,), ""
        return None, "RuntimeError: refused"

    call = SimpleNamespace(slots=SimpleNamespace(arguments=tuple((i, n, False, False) for i, n in enumerate(names))))
    slots = [[n, "float32"] for n in names] + [["return.0", "float32"]]

    def probed(indices: tuple[int, ...]) -> list:
        results = [(d, aten(dict.fromkeys(indices, d))) for d in universe if d != "float32"]
        return [[names[i] for i in indices], [[d, r] for d, (r, _) in results if r], [[d, m] for d, (r, m) in results if not r], []]

    report = {
        "overload": "aten::scaled_dot_product_attention",
        "sample": "float32",
        "direct": True,
        "slots": slots,
        "again": "",
        "nonempty": True,
        "numbers": [],
        "probes": [],
    }
    report["probes"] = [probed((i,)) for i in range(4)] + [probed((0, 1, 2, 3)), probed((0, 1, 2))]
    made = list(context_reports(call, report, aten, universe, str))
    assert [[dict(r["slots"])["query"], r["probes"][0][0], [d for d, _ in r["probes"][0][1]]] for r in made] == [
        ["float16", ["attn_mask"], ["bool", "float16"]],
        ["float64", ["attn_mask"], ["bool", "float64"]],
    ]
    assert all(dict(r["slots"])["return.0"] == dict(r["slots"])["query"] for r in made)
    calls = [ProbedCall.from_report(OpInfoId("sdpa", ""), r) for r in [report, *made]]
    (fact,) = follows_facts(calls)["scaled_dot_product_attention"]
    assert fact.dtypes == named("bool", "float32")

    report["probes"][3] = probed((3,))[:1] + [[[d, ("float32",)] for d in universe if d != "float32"], [], []]  # a mask that takes anything
    assert list(context_reports(call, report, aten, universe, str)) == []
