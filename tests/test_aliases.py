"""Alias overloads take their target's constraints; pairs come from the OpInfo alias lists torch declares."""

from __future__ import annotations

import json

from migrate.evidence.opinfo.aliases import alias_overloads, alias_plans
from migrate.evidence.opinfo.sweep import load_catalogue
from migrate.infer import Sources, infer_plan
from migrate.model.native import NativeFunctions
from migrate.model.plan import ALIASES, OPINFO, Evidence, OverloadPlan, Variable
from tests.conftest import FLOATS, REAL_NATIVE_FUNCTIONS

REAL = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)


def test_overloads_pair_by_overload_name_and_tensor_slots():
    targets = alias_overloads(REAL, [("clip", "clamp"), ("special_expit", "sigmoid"), ("no_such_op", "abs")])
    assert targets["clip"] == "clamp" and targets["clip.Tensor"] == "clamp.Tensor" and targets["clip.out"] == "clamp.out"
    assert targets["special_expit"] == "sigmoid"
    assert not any(name.startswith("no_such_op") for name in targets)


def test_an_alias_with_no_evidence_takes_its_target_plan_and_one_with_evidence_keeps_its_own():
    clamp = OverloadPlan("clamp", (Variable("T", FLOATS, ("self", "return.0"), (Evidence(OPINFO, "test", FLOATS, ("self",)),)),))
    own = OverloadPlan("clip.Tensor", (Variable("T", FLOATS, ("self",), (Evidence(OPINFO, "test", FLOATS, ("self",)),)),))
    taken = alias_plans({"clip": "clamp", "clip.Tensor": "clamp.Tensor"}, {"clamp": clamp, "clip.Tensor": own})
    assert set(taken) == {"clip"}
    (variable,) = taken["clip"].variables
    assert variable.binds == ("self", "return.0") and variable.sources == (ALIASES,)
    plan = infer_plan(REAL, Sources({}, {"clamp": clamp}, (), aliases={"clip": "clamp"}), {"clip", "clip_"})
    assert [o.name for o in plan.overloads] == ["clip", "clip_"]  # the alias's in-place sibling follows it


def test_the_catalogue_reads_alias_pairs_from_torch(tmp_path):
    catalogue = load_catalogue(tmp_path)
    pairs = {pair for entry in catalogue for pair in entry.aliases}
    assert ("clip", "clamp") in pairs and ("special_expit", "sigmoid") in pairs
    stored = json.loads(next(tmp_path.rglob("catalogue.json")).read_text())
    assert any(["clip", "clamp"] in o["aliases"] for o in stored["opinfos"])
