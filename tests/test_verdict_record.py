"""Verdicts as records (issue 41): what ATen did, with where it was seen, as fields that every reader reads."""

from __future__ import annotations

import json

import pytest

from migrate.evidence.probe.merge import probe_plans, probe_site
from migrate.evidence.sites import WORKERS, claimed_for, torch_release
from migrate.infer.merge import refused_without_companions
from migrate.infer.promotion_findings import diagonal_site
from migrate.infer.verdicts import with_verdicts
from migrate.model.dtypes import DType
from migrate.model.plan import PROBE, Evidence, OverloadPlan, Plan, Variable
from migrate.model.verdict import ACCEPTED, OTHER_DEVICE, PROMOTED, PROMOTION_CALL, REJECTED, SCHEMA_CALL, Backend, Site, Verdict
from migrate.runtime.runs import SCHEMA_CALL as SCHEMA_OPINFO
from migrate.runtime.runs import OpInfoId, Probe, ProbedCall

F32, I8, I64 = DType("float32"), DType("int8"), DType("int64")
CHAR = "NotImplementedError: \"gelu\" not implemented for 'Char'"
LONG = "NotImplementedError: \"gelu\" not implemented for 'Long'"


def test_the_workers_backend_and_release_are_fields_and_a_backend_round_trips_its_text():
    site = probe_site(("self",), "OpInfo x (1 call)")
    assert str(site.backend) == "cpu (default, reference paths)" and site.backend == WORKERS
    assert site.torch == torch_release() and site.torch[0].isdigit()
    assert Backend.parse(str(Backend("cuda", "NVIDIA H100"))) == Backend("cuda", "NVIDIA H100")
    with pytest.raises(ValueError):
        Backend.parse("cpu")


@pytest.mark.parametrize(
    "verdict",
    [
        Verdict(ACCEPTED, probe_site(("self", "other"), "OpInfo add (2 calls)", beside=("alpha float32",), numbers=(("alpha", "int"),), gate="dtype=torch.float32")),
        Verdict(REJECTED, probe_site(("self",), "a call built from the schema (1 call)", built=True), ((I64, LONG), (I8, CHAR))),
        Verdict(PROMOTED, diagonal_site(("self",)), computed_in=F32, kind="int_to_float"),
        Verdict(OTHER_DEVICE, claimed_for(["cuda", "rocm"], "OpInfo gelu declares for cuda, rocm"), claimed_by="OpInfo gelu"),
    ],
)
def test_a_verdict_round_trips_through_the_plans_json(verdict):
    evidence = Evidence(PROBE, "", tuple(d for d, _ in verdict.messages) or (I64,), verdict.site.cast or ("self",), 2, verdict)
    plan = Plan(overloads=(OverloadPlan("gelu", (Variable("T", (F32,), ("self",), (evidence,)),)),))
    again = Plan.from_json(json.loads(plan.dumps()))
    assert again == plan and again.overloads[0].variables[0].evidence[0].verdict == verdict
    assert "where" not in plan.to_json()["overloads"][0]["variables"][0]["evidence"][0]  # the record, not its line


def test_a_record_refuses_what_its_outcome_cannot_carry():
    site = diagonal_site(("self",))
    with pytest.raises(ValueError):
        Verdict(REJECTED, site)  # a refusal without ATen's message
    with pytest.raises(ValueError):
        Verdict(ACCEPTED, site, computed_in=F32)
    with pytest.raises(ValueError):
        Verdict(OTHER_DEVICE, site)  # a claim without its claimant
    with pytest.raises(ValueError):
        Verdict("maybe", site)
    with pytest.raises(ValueError):
        Site.from_json({**site.to_json(), "kind": "guess"})


def test_a_probes_refusals_keep_each_dtypes_message_and_the_line_shares_them():
    """gelu refused int8 and int64 with messages that differ only in the dtype: one line, each message word for word."""
    call = ProbedCall("aten::gelu", (("self", F32), ("return.0", F32)), OpInfoId("gelu"), F32, True, (Probe(("self",), ((F32, (F32,)),), ((I8, CHAR), (I64, LONG))),))
    (variable,) = probe_plans([call])["gelu"].variables
    (refused,) = [e for e in variable.evidence if e.outcome == REJECTED]
    assert refused.verdict.site.cast == ("self",) and refused.verdict.site.kind == "probe"
    assert refused.messages == {I8: CHAR, I64: LONG}
    assert refused.where == "self cast alone, OpInfo gelu (1 call): rejected: NotImplementedError: \"gelu\" not implemented for '{Char|Long}'"
    assert dict(with_verdicts(OverloadPlan("gelu", (variable,))).variables[0].verdicts.rejected) == {I8: CHAR, I64: LONG}


def test_a_refusal_beside_another_tensor_is_no_refusal_of_the_dtype_itself():
    """Read from the site's fields: the slots cast and what stood beside them, not from the line."""
    alone = Evidence(PROBE, "", (F32,), ("self",), 1, Verdict(REJECTED, probe_site(("self",), "a call built from the schema (1 call)", True), ((F32, CHAR),)))
    beside = Evidence(PROBE, "", (F32,), ("self",), 1, Verdict(REJECTED, probe_site(("self",), "OpInfo mm (1 call)", beside=("mat2 int64",)), ((F32, CHAR),)))
    assert refused_without_companions(Variable("P0", (I64,), ("self",), (alone,))) == {F32}
    assert refused_without_companions(Variable("P0", (I64,), ("self",), (beside,))) == set()


def test_calls_built_from_the_schema_say_so_in_their_kind():
    call = ProbedCall("aten::gelu", (("self", F32), ("return.0", F32)), SCHEMA_OPINFO, F32, True, (Probe(("self",), ((F32, (F32,)), (I64, (I64,))), ()),))
    (variable,) = probe_plans([call])["gelu"].variables
    assert {e.verdict.site.kind for e in variable.evidence} == {SCHEMA_CALL}
    assert diagonal_site(("self",)).kind == PROMOTION_CALL


def test_a_refusals_message_reaches_show_v_and_the_report_from_the_record():
    """show prints the record's line (its message only with -v); the report keeps each dtype's message in the record
    and in the variable's verdicts."""
    from types import SimpleNamespace

    from migrate.model.native import NativeFunctions
    from migrate.show import ShowContext, _variable_lines
    from tests.conftest import REAL_NATIVE_FUNCTIONS

    call = ProbedCall("aten::gelu", (("self", F32), ("return.0", F32)), OpInfoId("gelu"), F32, True, (Probe(("self",), ((F32, (F32,)),), ((I8, CHAR),)),))
    plan = with_verdicts(probe_plans([call])["gelu"])
    session = SimpleNamespace(native=NativeFunctions.load(REAL_NATIVE_FUNCTIONS), set_name=lambda dtypes: "TSome")
    verbose = _variable_lines(ShowContext(session, verbose=True), plan, PROBE)
    assert f"    self cast alone, OpInfo gelu (1 call): rejected: {CHAR}: [torch.int8]" in verbose
    assert not any("rejected" in line for line in _variable_lines(ShowContext(session), plan, PROBE))
    (variable,) = json.loads(Plan(overloads=(plan,)).dumps())["overloads"][0]["variables"]
    (refused,) = [e["verdict"] for e in variable["evidence"] if e["verdict"]["outcome"] == REJECTED]
    assert refused["messages"] == {"torch.int8": CHAR} and variable["verdicts"]["messages"] == {"torch.int8": CHAR}
