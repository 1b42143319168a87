"""Alias overloads take their target's constraints; pairs come from the OpInfo alias lists torch declares and
from the kernels that are one call of another overload; the untyped rest has its reasons."""

from __future__ import annotations

import pytest

from migrate.evidence.opinfo.aliases import AliasOf, alias_overloads
from migrate.evidence.opinfo.forwards import STAGE as FORWARDS, Forward, kernel_plans
from migrate.cache import StageCache
from migrate.evidence.gather import Sources
from migrate.infer import infer_plan
from migrate.infer.aliases import alias_plans
from migrate.pipeline.summary import NO_CPU_KERNEL, NO_SAMPLE, NO_STRUCTURE, OBSERVED_UNTYPED, untyped_reasons
from migrate.model.native import NativeFunctions
from migrate.infer.own_calls import fixed_returns
from migrate.evidence.probe.merge import RETURNS_LABEL
from migrate.evidence.sites import seen_on
from migrate.infer.verdicts import NEVER_RETURNED
from migrate.model.dtypes import TENSOR_DTYPES, DType, named
from migrate.model.plan import ALIASES, KERNEL, OPINFO, PROBE, Evidence, OverloadPlan, Variable
from migrate.model.promotion import Promotion
from migrate.model.verdict import RETURNED, SCHEMA_CALL, Verdict
from tests.conftest import FLOATS, REAL_NATIVE_FUNCTIONS, probed

REAL = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)


def test_overloads_pair_by_overload_name_and_tensor_slots():
    targets = alias_overloads(REAL, [("clip", "clamp"), ("special_expit", "sigmoid"), ("no_such_op", "abs")])
    assert targets["clip"].target == "clamp" and targets["clip.Tensor"].target == "clamp.Tensor" and targets["clip.out"].target == "clamp.out"
    assert targets["clip.Tensor"].slots == (("self", "self"), ("min", "min"), ("max", "max"), ("return.0", "return.0"))
    assert targets["special_expit"].target == "sigmoid"
    assert not any(name.startswith("no_such_op") for name in targets)


def test_an_alias_with_no_evidence_takes_its_target_plan_and_one_with_evidence_keeps_its_own():
    clamp = OverloadPlan("clamp", (Variable("T", FLOATS, ("self", "return.0"), (Evidence(OPINFO, "test", FLOATS, ("self",)),)),))
    own = OverloadPlan("clip.Tensor", (Variable("T", FLOATS, ("self",), (Evidence(OPINFO, "test", FLOATS, ("self",)),)),))
    same = (("self", "self"), ("return.0", "return.0"))
    taken = alias_plans(
        {"clip": AliasOf("clamp", same, "alias of clamp"), "clip.Tensor": AliasOf("clamp.Tensor", same, "alias of clamp.Tensor")},
        {"clamp": clamp, "clip.Tensor": own},
    )
    assert set(taken) == {"clip"}
    (variable,) = taken["clip"].variables
    assert variable.binds == ("self", "return.0") and variable.sources == (ALIASES,)
    plan = infer_plan(REAL, Sources({}, {"clamp": clamp}, (), aliases={"clip": AliasOf("clamp", same, "alias of clamp")}), {"clip", "clip_"})
    assert [o.name for o in plan.overloads] == ["clip", "clip_"]  # the alias's in-place sibling follows it


def _returned(dtypes: tuple[DType, ...]) -> Variable:
    """A return-only variable as built calls' probes give it: what they returned while casting the inputs."""
    site = seen_on(SCHEMA_CALL, f"{RETURNS_LABEL}, a call built from the schema (2 calls)")
    return Variable("P1", dtypes, ("return.0",), (Evidence(PROBE, "", dtypes, ("return.0",), verdict=Verdict(RETURNED, site)),))


def _cast_alone(slot: str, dtypes: tuple[DType, ...]) -> Variable:
    return Variable("P0", dtypes, (slot,), (probed((slot,), dtypes, made_by="a call built from the schema (2 calls)", built=True),))


def test_a_return_its_own_calls_fixed_at_one_dtype_keeps_it_over_its_alias_target():
    """``_cast_Byte`` forwards to ``_to_copy``, whose return its ``dtype`` argument sets; its own calls, ``self`` cast to
    every dtype, returned uint8 each time: the return is uint8 (no other dtype was ever returned), ``self`` the target's."""
    to_copy = OverloadPlan("_to_copy", (Variable("T", TENSOR_DTYPES, ("self", "return.0"), (Evidence(OPINFO, "test", TENSOR_DTYPES, ("self",)),)),))
    same = (("self", "self"), ("return.0", "return.0"))

    def planned(returned: Variable) -> dict[str, Variable]:
        own = OverloadPlan("_cast_Byte", (_cast_alone("self", TENSOR_DTYPES), returned))
        sources = Sources({}, {"_to_copy": to_copy}, (), aliases={"_cast_Byte": AliasOf("_to_copy", same, "forwards to _to_copy")}, schema_calls={"_cast_Byte": own})
        (plan,) = infer_plan(REAL, sources, {"_cast_Byte"}).overloads
        return {slot: variable for variable in plan.variables for slot in variable.binds}

    fixed = planned(_returned(named("uint8")))
    assert fixed["return.0"].dtypes == named("uint8") and fixed["return.0"].binds == ("return.0",)
    assert dict(fixed["return.0"].verdicts.rejected)[DType("float64")] == NEVER_RETURNED
    assert fixed["self"].dtypes == TENSOR_DTYPES and fixed["self"].sources == (ALIASES,)
    varied = planned(_returned(named("uint8", "float32")))  # two dtypes returned: the return is not fixed, the target's stands
    assert varied["return.0"] is varied["self"] and varied["return.0"].dtypes == TENSOR_DTYPES


def test_a_return_is_fixed_only_where_its_inputs_varied_and_no_scalar_argument_may_set_it():
    condition = _cast_alone("condition", named("bool", "uint8"))
    assert fixed_returns(OverloadPlan("_cast_Byte", (_cast_alone("self", TENSOR_DTYPES), _returned(named("uint8")))), REAL.by_name["_cast_Byte"].schema)
    assert not fixed_returns(OverloadPlan("_cast_Byte", (_cast_alone("self", named("float32")), _returned(named("uint8")))), REAL.by_name["_cast_Byte"].schema)
    # where.Scalar(condition, 1, 2) returns int64, where.Scalar(condition, 1.5, 2) float32: the calls' numbers set it
    assert not fixed_returns(OverloadPlan("where.Scalar", (condition, _returned(named("int64")))), REAL.by_name["where.Scalar"].schema)
    # to.device's dtype argument sets its return, whatever self is
    self_any = _cast_alone("self", TENSOR_DTYPES)
    assert not fixed_returns(OverloadPlan("to.device", (self_any, _returned(named("float64")))), REAL.by_name["to.device"].schema)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The forwards and metadata-kernel tables, found cold in their own cache folder (a few seconds)."""
    folder = tmp_path_factory.mktemp("forwards")
    return folder, FORWARDS.loaded(StageCache.at(folder))


@pytest.mark.slow  # finds the tables in a worker, into an empty cache
def test_kernels_that_are_one_call_of_another_overload_forward_to_it_slot_by_slot(tables):
    folder, (found, _) = tables
    forwards = {f.overload: f for f in found}
    assert forwards["__and__.Tensor"] == Forward("__and__.Tensor", "bitwise_and.Tensor", (("self", "self"), ("other", "other"), ("return.0", "return.0")))
    assert forwards["special_xlogy.self_scalar"].slots == (("other", "other"), ("return.0", "return.0"))
    assert forwards["_cast_Float"].target == "_to_copy"  # a float32 tensor is returned as is: another dtype shows the call
    assert "add.Tensor" not in forwards  # a kernel of its own
    assert FORWARDS.loaded(StageCache.at(folder))[0] == found  # read from the cache
    aliases = alias_overloads(REAL, [], forwards.values())
    assert aliases["__and__.Tensor"].why == "forwards to bitwise_and.Tensor"
    bitwise = OverloadPlan("bitwise_and.Tensor", (Variable("T", FLOATS, ("self", "other", "return.0"), (Evidence(OPINFO, "test", FLOATS, ("self",)),)),))
    (variable,) = alias_plans(aliases, {"bitwise_and.Tensor": bitwise})["__and__.Tensor"].variables
    assert variable.binds == ("self", "other", "return.0") and variable.evidence[0].where == "forwards to bitwise_and.Tensor"


def test_an_alias_slot_carried_into_two_target_variables_is_left_alone():
    target = OverloadPlan("mul.Tensor", (Variable("T", FLOATS, ("self",)), Variable("U", FLOATS, ("other", "return.0"))))
    aliases = {"square_like": AliasOf("mul.Tensor", (("self", "self"), ("self", "other")), "forwards to mul.Tensor")}
    assert alias_plans(aliases, {"mul.Tensor": target}) == {}


def test_a_forward_takes_its_targets_promotion_only_where_each_promoting_argument_is_its_own():
    bits = named("bool", "uint8", "int64")
    target = OverloadPlan("bitwise_and.Scalar", (Variable("T", bits, ("self", "return.0")),), promotion=Promotion("default", ("self", "other")))
    tensors = (("self", "self"), ("return.0", "return.0"))
    aliases = {
        "__and__.Scalar": AliasOf("bitwise_and.Scalar", tensors, "forwards to bitwise_and.Scalar", numbers=(("other", "other"),)),
        # the Scalar is not passed on under its name: whether it promotes there is not this overload's to say
        "band_like": AliasOf("bitwise_and.Scalar", tensors, "forwards to bitwise_and.Scalar"),
    }
    taken = alias_plans(aliases, {"bitwise_and.Scalar": target})
    assert taken["__and__.Scalar"].promotion == Promotion("default", ("self", "other"))
    assert taken["band_like"].promotion is None and taken["band_like"].variables[0].dtypes == bits


def test_each_untyped_entry_has_its_reason():
    reasons = untyped_reasons(REAL, {"add.Tensor"}, frozenset({"sub.Tensor"}))
    where = {name: reason for reason, names in reasons.items() for name in names}
    assert where["cudnn_convolution"] == NO_CPU_KERNEL  # only a CUDA kernel
    assert where["linear_backward"] == NO_CPU_KERNEL  # only nested-tensor kernels
    assert where["sub.Tensor"] == OBSERVED_UNTYPED
    assert where["add.Scalar"] == NO_STRUCTURE  # add.Tensor is typed; nothing ties add.Scalar to it
    assert where["_add_relu.Tensor"] == NO_SAMPLE
    assert "add.Tensor" not in where and "_add_relu.Tensor" in reasons[NO_SAMPLE]


@pytest.mark.slow  # finds the tables in a worker, into an empty cache
def test_a_kernel_that_reads_only_metadata_accepts_what_it_did_not_refuse(tables):
    _, (_, kernels) = tables
    found = {k.overload: k for k in kernels}
    assert found["is_floating_point"].slot == "self" and {"bool", "float32", "complex128", "uint8"} <= set(found["is_floating_point"].dtypes)
    assert "add.Tensor" not in found and "__and__.Tensor" not in found  # kernels that call others
    plan = kernel_plans(REAL, kernels)["numel"]
    (variable,) = plan.variables
    assert variable.binds == ("self",) and variable.sources == (KERNEL,)
    assert infer_plan(REAL, Sources({}, {}, (), kernel={"numel": plan}), {"numel"}).overloads[0].variables[0].binds == ("self",)
