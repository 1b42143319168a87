"""Variables from observations, on constructed observations: the rules, case by case."""

from __future__ import annotations

from migrate.evidence.opinfo.observations import plans_from_observations
from migrate.runtime.runs import CatalogueEntry, Observation, OpInfoId, overload_key
from migrate.model.dtypes import DType
from migrate.model.plan import DECLARED, OPINFO

F32, F64, F16, BOOL, I64 = (DType(n) for n in ("float32", "float64", "float16", "bool", "int64"))
ADD = OpInfoId("add")
CONV = OpInfoId("nn.functional.conv2d")


def add_call(self, other, out, opinfo=ADD, sample=None, direct=True, count=1):
    slots = (("self", self), ("other", other), ("return.0", out))
    return Observation("aten::add.Tensor", slots, opinfo, sample or self, direct, count)


def variables(plan):
    return {v.binds: tuple(d.name for d in v.dtypes) for v in plan.variables}


def test_overload_keys_follow_native_functions_names():
    assert overload_key("aten::add.Tensor") == "add.Tensor"
    assert overload_key("aten::add") == "add"
    assert overload_key("prims::add") is None


def test_slots_always_equal_form_one_variable_over_the_union_seen():
    plans = plans_from_observations([add_call(F32, F32, F32), add_call(F64, F64, F64, sample=F64)])
    assert variables(plans["add.Tensor"]) == {("self", "other", "return.0"): ("float32", "float64")}


def test_one_mixed_call_from_another_opinfo_splits_the_variable():
    same = [add_call(F32, F32, F32), add_call(F64, F64, F64, sample=F64)]
    mixed = add_call(F32, F64, F64, opinfo=CONV, sample=F32, direct=False)
    plans = plans_from_observations([*same, mixed])
    found = variables(plans["add.Tensor"])
    assert found[("self",)] == ("float32", "float64")
    assert found[("other", "return.0")] == ("float32", "float64")


def test_promotion_keeps_every_slot_apart():
    plans = plans_from_observations([add_call(F32, F64, F64), add_call(F16, F32, F32, sample=F16)])
    assert list(variables(plans["add.Tensor"])) == [("self",), ("other", "return.0")]
    plans = plans_from_observations([add_call(F32, F64, F32), add_call(F16, F32, F32, sample=F16)])
    assert list(variables(plans["add.Tensor"])) == [("self",), ("other",), ("return.0",)]


def test_merges_are_greedy_in_slot_order_and_never_break_an_observation():
    # a == b and b == c wherever they meet, yet a != c: c cannot join a and b.
    def call(a, b, c):
        return Observation("aten::f", (("a", a), ("b", b), ("c", c)), ADD, F32, True, 1)

    plans = plans_from_observations([call(F32, F32, None), call(None, F64, F64), call(F32, None, F64)])
    assert variables(plans["f"]) == {("a", "b"): ("float32", "float64"), ("c",): ("float64",)}


def test_slots_never_seen_together_are_not_merged():
    where = "aten::sdpa_like"
    a = Observation(where, (("query", F32), ("attn_mask", None), ("return.0", F32)), ADD, F32, True, 1)
    b = Observation(where, (("query", None), ("attn_mask", BOOL), ("return.0", None)), ADD, F32, True, 1)
    found = variables(plans_from_observations([a, b])["sdpa_like"])
    assert found == {("query", "return.0"): ("float32",), ("attn_mask",): ("bool",)}


def test_condition_is_its_own_variable():
    slots = lambda cond, x: (("condition", cond), ("self", x), ("other", x), ("return.0", x))  # noqa: E731
    observations = [
        Observation("aten::where.self", slots(BOOL, F32), OpInfoId("where"), F32, True, 1),
        Observation("aten::where.self", slots(BOOL, BOOL), OpInfoId("where"), BOOL, True, 1),
    ]
    found = variables(plans_from_observations(observations)["where.self"])
    assert found == {("condition",): ("bool",), ("self", "other", "return.0"): ("bool", "float32")}


def test_lists_take_element_dtypes_skip_holes_and_a_mixed_list_stays_tensor():
    cat = lambda tensors, out: (("tensors", tensors), ("return.0", out))  # noqa: E731
    uniform = Observation("aten::cat", cat((F32, F32), F32), OpInfoId("cat"), F32, True, 2)
    plans = plans_from_observations([uniform])
    assert variables(plans["cat"]) == {("tensors", "return.0"): ("float32",)}
    mixed = Observation("aten::cat", cat((F32, F64), F64), OpInfoId("cat"), F32, True, 1)
    assert variables(plans_from_observations([uniform, mixed])["cat"]) == {("return.0",): ("float32", "float64")}
    index_slots = (("self", F32), ("indices", (None, I64)), ("return.0", F32))
    index = Observation("aten::index.Tensor", index_slots, ADD, F32, True, 1)
    found = variables(plans_from_observations([index])["index.Tensor"])
    assert found == {("self", "return.0"): ("float32",), ("indices",): ("int64",)}


def test_evidence_says_where_each_dtype_was_seen():
    plans = plans_from_observations([add_call(F32, F32, F32, count=3), add_call(F32, F64, F64, opinfo=CONV, direct=False)])
    (self_variable,) = [v for v in plans["add.Tensor"].variables if v.binds == ("self",)]
    assert [(e.source, e.where, e.count) for e in self_variable.evidence] == [
        (OPINFO, "OpInfo add (float32)", 3),
        (OPINFO, "OpInfo nn.functional.conv2d (float32), inside other overloads", 1),
    ]


def entry(opinfo, operators, declared):
    return CatalogueEntry(opinfo, (F32, F64), declared, operators)


def test_declared_dtypes_attach_to_slots_that_follow_the_sample_dtype_without_widening():
    observations = [add_call(F32, F32, F32), add_call(F64, F64, F64, sample=F64)]
    catalogue = [entry(ADD, ("add",), (("cuda", (F16, F32, F64)), ("rocm", (F16, F32, F64)), ("mps", (F32,))))]
    (variable,) = plans_from_observations(observations, catalogue)["add.Tensor"].variables
    assert [d.name for d in variable.dtypes] == ["float32", "float64"]
    (declared_evidence,) = [e for e in variable.evidence if e.source == DECLARED]
    assert declared_evidence.where == "OpInfo add declares for cuda, rocm"
    claim = declared_evidence.verdict  # a claim, as fields: who claims it, for which devices, nothing run here
    assert (claim.outcome, claim.claimed_by, str(claim.site.backend)) == ("other-device", "OpInfo add", "cuda, rocm (claimed, not run here)")
    assert declared_evidence.slots == ("self", "other", "return.0")
    assert [d.name for d in declared_evidence.dtypes] == ["float16", "float32", "float64"]


def test_declared_dtypes_stay_with_the_opinfos_own_operator_and_the_slots_that_follow():
    declared = (("cuda", (F16, F32, F64)),)
    inside = [add_call(F32, F32, F32, opinfo=CONV, direct=True)]
    plan = plans_from_observations(inside, [entry(CONV, ("conv2d",), declared)])["add.Tensor"]
    assert not [e for v in plan.variables for e in v.evidence if e.source == DECLARED]
    # other is float64 whatever the sample dtype: only self and the return follow it.
    mixed = [add_call(F32, F64, F64), add_call(F64, F64, F64, sample=F64)]
    plan = plans_from_observations(mixed, [entry(ADD, ("add",), declared)])["add.Tensor"]
    bound = {slot for v in plan.variables for e in v.evidence if e.source == DECLARED for slot in e.slots}
    assert bound == {"self"}


def test_plans_are_deterministic_and_ignore_other_namespaces():
    observations = [add_call(F32, F64, F64), add_call(F32, F32, F32), Observation("prims::x", (), ADD, F32, True, 1)]
    first = plans_from_observations(observations)
    assert first == plans_from_observations(list(observations))
    assert list(first) == ["add.Tensor"]
    assert [v.name for v in first["add.Tensor"].variables] == ["T0", "T1"]
