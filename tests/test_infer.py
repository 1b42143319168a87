"""Merging evidence into one plan: precedence, conflicts, group siblings, naming."""

from __future__ import annotations

from migrate.evidence.gather import Sources
from migrate.infer import infer_plan
from migrate.infer.merge import merge_overload
from migrate.infer.naming import IN_SCHEMA_LIMIT, LINE_LIMIT, _set_names, name_variables
from migrate.infer.structure import group_siblings
from migrate.model.dtypes import named
from migrate.model.global_sets import constraints_line
from migrate.model.native import NativeFunctions
from migrate.model.plan import DECLARED, GROUPS, OPINFO, PROBE, TORCHLIB, Evidence, GlobalSet, OverloadPlan, Variable
from tests.conftest import FLOATS, REAL_NATIVE_FUNCTIONS

REAL = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)


def _var(name, dtypes, binds, source, *extra):
    return Variable(name, dtypes, binds, (Evidence(source, "test", dtypes, binds), *extra))


def test_observations_win_and_torchlib_fills_unobserved_slots():
    torchlib = OverloadPlan("where.self", (_var("TTensor", FLOATS, ("condition", "self", "other", "return.0"), TORCHLIB),))
    opinfo = OverloadPlan("where.self", (_var("T0", named("bool"), ("condition",), OPINFO),))
    merged = merge_overload("where.self", torchlib, opinfo)
    by_slot = {s: v for v in merged.variables for s in v.binds}
    assert by_slot["condition"].dtypes == named("bool") and by_slot["condition"].sources == (OPINFO,)
    assert by_slot["self"].binds == ("self", "other", "return.0") and by_slot["self"].sources == (TORCHLIB,)
    (gap,) = [c for c in merged.conflicts if c.kind == "export-coverage-gap"]
    assert gap.dtypes == named("bool") and gap.slots == ("condition",)


def test_declared_dtypes_of_other_devices_widen_an_observed_variable():
    declared = Evidence(DECLARED, "OpInfo x cuda", named("float16"), ("self",))
    opinfo = OverloadPlan("abs", (_var("T0", named("float32"), ("self", "return.0"), OPINFO, declared),))
    (variable,) = merge_overload("abs", None, opinfo).variables
    assert variable.dtypes == named("float16", "float32")


def test_torchlib_wider_than_observations_is_noted_not_declared():
    torchlib = OverloadPlan("abs", (_var("TReal", named("int64", "float32"), ("self", "return.0"), TORCHLIB),))
    opinfo = OverloadPlan("abs", (_var("T0", named("float32"), ("self", "return.0"), OPINFO),))
    merged = merge_overload("abs", torchlib, opinfo)
    assert [v.dtypes for v in merged.variables] == [named("float32")]
    assert [c.kind for c in merged.conflicts] == ["torchlib-wider"]


def test_torchlib_widens_a_call_built_from_the_schema_but_not_by_a_dtype_aten_refused_by_name():
    """bitwise_and.Scalar(float32 tensor, 1) is refused naming Float: torchlib's TTensor does not bring float32 back;
    a refusal that names no dtype (the call's data) or one beside another tensor leaves torchlib's dtype in."""
    from tests.conftest import probed

    call = {"made_by": "a call built from the schema (2 calls)", "built": True, "numbers": (("other", "int"),)}
    refused = probed(("self",), named("float32"), refused="NotImplementedError: \"bitwise_and_cpu\" not implemented for 'Float'", **call)
    accepted = probed(("self",), named("int64"), **call)
    torchlib = OverloadPlan("bitwise_and.Scalar", (_var("TTensor", named("int64", "float32", "float64"), ("self",), TORCHLIB),))
    built = OverloadPlan("bitwise_and.Scalar", (Variable("P0", named("int64"), ("self",), (accepted, refused)),))
    (variable,) = merge_overload("bitwise_and.Scalar", torchlib, None, schema_call=built).variables
    assert variable.dtypes == named("int64", "float64")
    data = probed(("self",), named("float32"), refused="RuntimeError: t() expects a tensor with <= 2 dimensions, but self is 4D", **call)
    built = OverloadPlan("x", (Variable("P0", named("int64"), ("self",), (accepted, data)),))
    assert merge_overload("x", torchlib, None, schema_call=built).variables[0].dtypes == named("int64", "float32", "float64")
    beside = probed(("self",), named("float32"), refused="\"mm\" not implemented for 'Float'", made_by=call["made_by"], built=True, beside=("mat2 int64",))
    built = OverloadPlan("x", (Variable("P0", named("int64"), ("self",), (accepted, beside)),))
    assert merge_overload("x", torchlib, None, schema_call=built).variables[0].dtypes == named("int64", "float32", "float64")


def test_torchlib_leaves_the_returns_a_built_call_gave_unwidened_where_no_number_sets_them():
    """embedding_bag's built call returned int32 and int64 index outputs with its inputs cast to every dtype; torchlib's
    TFloat there is what its own function gives. Where a Scalar may set the return (``bitwise_and.Scalar``'s bool with
    ``True``), what the calls returned is not all a return can be, and torchlib's dtypes still widen it."""
    returned = Evidence(PROBE, "", named("int32", "int64"), ("return.1",))
    torchlib = OverloadPlan("embedding_bag", (_var("TFloat", FLOATS, ("weight", "return.1"), TORCHLIB),))
    built = OverloadPlan("embedding_bag", (_var("T", FLOATS, ("weight",), PROBE), Variable("X", named("int32", "int64"), ("return.1",), (returned,))))
    merged = merge_overload("embedding_bag", torchlib, None, schema_call=built, returns_complete=True)
    assert [v.dtypes for v in merged.variables] == [FLOATS, named("int32", "int64")]
    merged = merge_overload("embedding_bag", torchlib, None, schema_call=built, returns_complete=False)
    assert merged.variables[1].dtypes == named("int32", "int64", *(d.name for d in FLOATS))


def test_in_place_and_out_siblings_take_the_functional_constraints():
    functional = OverloadPlan("add.Tensor", (_var("T", FLOATS, ("self", "other", "return.0"), TORCHLIB),))
    siblings = group_siblings(REAL, {"add.Tensor": functional})
    assert set(siblings) == {"add_.Tensor", "add.out"}
    (out,) = siblings["add.out"].variables
    assert out.binds == ("self", "other", "return.0", "out") and out.sources == (GROUPS,)
    (inplace,) = siblings["add_.Tensor"].variables
    assert inplace.binds == ("self", "other", "return.0")


def test_a_sibling_with_its_own_evidence_keeps_it():
    functional = OverloadPlan("add.Tensor", (_var("T", FLOATS, ("self", "other", "return.0"), TORCHLIB),))
    own = OverloadPlan("add.out", (_var("T", named("float32"), ("self", "out"), OPINFO),))
    mine, carried = group_siblings(REAL, {"add.Tensor": functional, "add.out": own})["add.out"].variables
    assert mine == own.variables[0]
    # only the slots its own calls left free take the functional's constraints, under a name of their own
    assert (carried.name, carried.binds, carried.dtypes, carried.sources) == ("T~group", ("other", "return.0"), FLOATS, (GROUPS,))
    whole = OverloadPlan("add.out", (_var("T", named("float32"), ("self", "other", "out", "return.0"), OPINFO),))
    assert "add.out" not in group_siblings(REAL, {"add.Tensor": functional, "add.out": whole})


def test_an_input_a_sibling_only_reads_is_judged_on_the_functional_overload_s_calls():
    functional = OverloadPlan(
        "index_put",
        (
            _var("T", FLOATS, ("self", "values", "return.0"), OPINFO),
            _var("I", named("bool", "int32", "int64"), ("indices",), OPINFO),
        ),
    )
    own = OverloadPlan(
        "index_put_",
        (_var("T", named("float32"), ("self", "values", "return.0"), OPINFO), _var("I", named("int32", "int64"), ("indices",), OPINFO)),
    )
    written, indices = group_siblings(REAL, {"index_put": functional, "index_put_": own})["index_put_"].variables
    assert written == own.variables[0]  # self is written: its own calls judge it, and the slots that share its variable
    assert indices.binds == ("indices",) and indices.dtypes == named("bool", "int32", "int64") and indices.sources == (GROUPS,)


def test_naming_uses_a_set_name_only_when_no_other_variable_has_its_dtypes():
    sets = {FLOATS: "TFloat", named("bool"): "TBool"}
    schema = REAL.by_name["where.self"].schema
    plan = OverloadPlan("where.self", (_var("a", FLOATS, ("self", "other", "return.0"), OPINFO), _var("b", named("bool"), ("condition",), OPINFO)))
    assert [v.name for v in name_variables(plan, schema, sets).variables] == ["TBool", "TFloat"]
    twins = OverloadPlan("where.self", (_var("a", FLOATS, ("self", "return.0"), OPINFO), _var("b", FLOATS, ("other",), OPINFO)))
    assert [(v.name, v.binds) for v in name_variables(twins, schema, sets).variables] == [("T", ("self", "return.0")), ("U", ("other",))]


def test_a_long_set_name_is_a_letter_and_one_constraint_not_a_name_in_every_slot():
    every = named("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
    sets = {every: "TAllAndComplexAndBoolHalfBFloat16", FLOATS: "TFloat"}
    schema = REAL.by_name["add.out"].schema
    long = OverloadPlan("add.out", (_var("a", every, ("self", "other", "out", "return.0"), OPINFO),))
    (variable,) = name_variables(long, schema, sets).variables
    assert len(sets[every]) > IN_SCHEMA_LIMIT and variable.name == "T"
    global_sets = {name: GlobalSet(name, dtypes) for dtypes, name in sets.items()}
    assert constraints_line(2, (variable,), global_sets) == "  type_constraints: {T: TAllAndComplexAndBoolHalfBFloat16}"
    short = OverloadPlan("add.out", (_var("a", FLOATS, ("self", "other", "out", "return.0"), OPINFO),))
    assert [v.name for v in name_variables(short, schema, sets).variables] == ["TFloat"]


def test_set_names_that_would_push_a_func_line_over_the_limit_are_letters():
    reals = named("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
    schema = REAL.by_name["rnn_relu.input"].schema
    plan = OverloadPlan("rnn_relu.input", (_var("a", reals, tuple(s.name for s in schema.tensor_slots), OPINFO),))
    assert len("- func: " + str(schema)) <= LINE_LIMIT < len("- func: " + str(schema).replace("Tensor", "TRealOrUInt8"))
    assert [v.name for v in name_variables(plan, schema, {reals: "TRealOrUInt8"}).variables] == ["T"]
    assert [v.name for v in name_variables(plan, schema, {reals: "TReal"}).variables] == ["TReal"]  # 5 characters fit


def test_inferred_plan_is_deterministic_and_limited_by_only():
    torchlib = {"add.Tensor": OverloadPlan("add.Tensor", (_var("X", FLOATS, ("self", "other", "return.0"), TORCHLIB),))}
    sources = Sources(torchlib, {}, (GlobalSet("TFloat", FLOATS),))
    full = infer_plan(REAL, sources)
    assert [o.name for o in full.overloads] == ["add.Tensor", "add_.Tensor", "add.out"]
    assert full == infer_plan(REAL, sources)
    assert [o.name for o in infer_plan(REAL, sources, only={"add.out"}).overloads] == ["add.out"]
    assert [o.name for o in infer_plan(REAL, Sources(torchlib, {}, (), groups=False)).overloads] == ["add.Tensor"]


def _opinfo_plans(sets_by_overload: dict[str, tuple]) -> dict[str, OverloadPlan]:
    """Observed plans binding each overload's 'self' (and return) to the given dtypes."""
    plans = {}
    for name, dtypes in sets_by_overload.items():
        binds = tuple(s.name for s in REAL.by_name[name].schema.tensor_slots)
        plans[name] = OverloadPlan(name, (_var("T0", dtypes, binds, OPINFO),))
    return plans


def test_a_set_three_entries_use_is_named_from_the_vocabulary_a_rarer_one_stays_inline():
    common, rare = named("int32", "int64"), named("int8", "float64")
    opinfo = _opinfo_plans({"abs": common, "neg": common, "sgn": common, "sin": rare, "cos": rare})
    plan = infer_plan(REAL, Sources({}, opinfo, (), groups=False))
    assert [(g.name, g.dtypes, g.desc) for g in plan.global_sets] == [("TInt32OrInt64", common, "(torch.int32, torch.int64)")]
    names = {o.name: o.variables[0].name for o in plan.overloads}
    assert names == {"abs": "TInt32OrInt64", "neg": "TInt32OrInt64", "sgn": "TInt32OrInt64", "sin": "T", "cos": "T"}
    only = infer_plan(REAL, Sources({}, opinfo, (), groups=False), only={"sin"})
    assert only.global_sets == () and [o.variables[0].name for o in only.overloads] == ["T"]  # named as a full run names


def test_existing_names_come_first_then_torchlibs_that_mean_their_set_then_the_grammars():
    common = named("int32", "int64")
    opinfo = _opinfo_plans({"abs": common, "neg": common, "sgn": common, "sin": FLOATS, "cos": named("int64")})
    torchlib_sets = (GlobalSet("TIndex", common), GlobalSet("TFloat", FLOATS), GlobalSet("TInt64", named("int64")))
    plan = infer_plan(REAL, Sources({}, opinfo, torchlib_sets, groups=False))
    # torchlib's TInt64 means its set: named for one entry; TIndex and TFloat do not say theirs: the grammar names
    # the set of three entries, and sin's set (one entry) is no global set
    assert [g.name for g in plan.global_sets] == ["TInt32OrInt64", "TInt64"]
    existing = (GlobalSet("TIntegers", common, "hand-written"),)
    plan = infer_plan(REAL, Sources({}, opinfo, torchlib_sets, groups=False, existing_sets=existing))
    assert [g.name for g in plan.global_sets] == ["TInt64", "TIntegers"]


def test_a_rare_set_is_named_when_its_inline_list_would_make_the_line_too_long():
    every = named(*(d for d in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")))
    schema = REAL.by_name["where.self"].schema
    variables = tuple(_var(f"v{i}", every[: 10 - i], (slot.name,), OPINFO) for i, slot in enumerate(schema.tensor_slots))
    plan = infer_plan(REAL, Sources({}, {"where.self": OverloadPlan("where.self", variables)}, (), groups=False))
    from migrate.infer.naming import LINE_LIMIT
    from migrate.model.global_sets import constraints_line

    sets = {g.name: g for g in plan.global_sets}
    (where,) = plan.overloads
    line = constraints_line(REAL.by_name["where.self"].key_indent, where.variables, sets)
    assert plan.global_sets and (line is None or len(line) <= LINE_LIMIT)


def test_a_torchlib_name_the_target_file_gives_another_set_names_nothing():
    """A second run: the file's TInt64 is not torchlib's; two sets of one name would make the file ambiguous."""
    existing = (GlobalSet("TInt64", named("float32")),)
    torchlib = (GlobalSet("TInt64", named("int64")), GlobalSet("TBool", named("bool")), GlobalSet("TFloat", FLOATS))
    assert _set_names(existing, torchlib) == {named("float32"): "TInt64", named("bool"): "TBool"}


