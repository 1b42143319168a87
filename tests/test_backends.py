"""Sets per backend (issue 45): the ``dispatch_dtypes:`` line, its inference from CPU verdicts and OpInfo's CUDA
claims, the writer and ``lower``, and the readers that bind a backend (the checker, the API, ``accepts --device``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from migrate.api import load_declarations
from migrate.check.checker import Declarations, DtypeViolation, checking
from migrate.errors import InputError
from migrate.infer.backends import with_backends
from migrate.model.backends import CLAIMED, OBSERVED, BackendSet, DispatchDtypes
from migrate.model.dtypes import named
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import GlobalSet, OverloadPlan, Plan, Variable, Verdicts
from migrate.write.native_functions import apply_plan, lower
from tests.conftest import lint_round_trip, run_cli

INTS = named("uint8", "int8", "int16", "int32", "int64")
FLOATS = named("float16", "bfloat16", "float32", "float64")
COMPLEX = named("complex64", "complex128")

PLAIN = """\
- func: addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
  dispatch:
    CPU: addmm_cpu
    CUDA: addmm_cuda

- func: cos(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: cos
"""


def _addmm_plan(claims) -> OverloadPlan:
    union = INTS + FLOATS + COMPLEX
    variable = Variable("T", union, ("self", "mat1", "mat2", "return.0"), verdicts=Verdicts(accepted=union))
    return with_backends(OverloadPlan("addmm", (variable,), autocast=(("CPU", "lower_precision_fp"),)), claims)


def _cos_plan() -> OverloadPlan:
    union = FLOATS + COMPLEX + named("complex32")
    verdicts = Verdicts(accepted=FLOATS + COMPLEX, other_device=named("complex32"))
    return with_backends(OverloadPlan("cos", (Variable("T", union, ("self", "return.0"), verdicts=verdicts),)), ())


ADDMM_CLAIMS = (("self", INTS + FLOATS + COMPLEX, FLOATS + COMPLEX), ("mat1", INTS + FLOATS + COMPLEX, FLOATS + COMPLEX))


def test_cuda_lacks_what_the_claims_give_cpu_alone_and_cpu_lacks_what_only_cuda_claims():
    (addmm,) = _addmm_plan(ADDMM_CLAIMS).variables
    assert addmm.backends == (BackendSet("CPU", addmm.dtypes, OBSERVED), BackendSet("CUDA", FLOATS + COMPLEX, CLAIMED))
    assert addmm.on("CUDA") == FLOATS + COMPLEX and addmm.on("CPU") == addmm.dtypes
    (cos,) = _cos_plan().variables
    assert cos.on("CPU") == FLOATS + COMPLEX and cos.on("CUDA") == cos.dtypes  # no claim: CUDA reads as the union
    claimed_alike = (("self", INTS + FLOATS, INTS + FLOATS),)  # a dtype neither claim names (complex) takes CPU's verdict
    assert _addmm_plan(claimed_alike).variables[0].backends == ()


def test_the_line_round_trips_and_refuses_an_unknown_key():
    line = DispatchDtypes((("CUDA", (("T", "TFloat"),)), ("CPU", (("T", named("int64", "float32")),))))
    assert str(line) == "{CPU: {T: [torch.int64, torch.float32]}, CUDA: {T: TFloat}}"  # keys in dispatch order
    import yaml

    assert DispatchDtypes.from_mapping(yaml.safe_load(str(line))) == line
    with pytest.raises(ValueError, match="unknown dispatch key 'XLA'"):
        DispatchDtypes.from_mapping({"XLA": {"T": "TFloat"}})


def test_a_plan_whose_backend_set_leaves_the_union_is_refused(tmp_path):
    from dataclasses import replace

    path = tmp_path / "native_functions.yaml"
    path.write_text(PLAIN)
    (addmm,) = _addmm_plan(ADDMM_CLAIMS).variables
    wide = replace(addmm, backends=(BackendSet("CUDA", named("bool"), CLAIMED),))
    with pytest.raises(InputError, match=r"CUDA's set of T holds \[torch.bool\], outside its union"):
        apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), Plan((), (OverloadPlan("addmm", (wide,)),)))


def test_a_version_1_plan_is_refused_saying_why(tmp_path):
    plan = Plan((), (_addmm_plan(ADDMM_CLAIMS),))
    assert Plan.from_json(json.loads(plan.dumps())) == plan
    old = tmp_path / "plan.json"
    old.write_text(json.dumps({**plan.to_json(), "version": 1}))
    with pytest.raises(InputError, match="version 1 spells its verdicts as text and has no sets per backend"):
        Plan.read(old)


@pytest.fixture
def written(tmp_path) -> Path:
    path = tmp_path / "native_functions.yaml"
    path.write_text(PLAIN)
    plan = Plan((GlobalSet("TFloat", FLOATS),), (_addmm_plan(ADDMM_CLAIMS), _cos_plan()))
    result = apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), plan)
    path.write_bytes(result.native_functions)
    sibling_constraints_path(path).write_bytes(result.type_constraints)
    return path


def test_the_writer_states_only_what_differs_after_the_other_annotations_and_lower_removes_it(written):
    text = written.read_text()
    # a set of more than four dtypes no global set names: PyTorch's spelling, decoded where it is read
    assert "  autocast: {CPU: lower_precision_fp}\n  dispatch_dtypes: {CUDA: {T: 'floating_and_complex_types_and(torch.half, torch.bfloat16)'}}\n" in text
    assert "  type_constraints: {T: 'floating_and_complex_types_and(torch.half, torch.bfloat16, torch.chalf)'}\n" in text
    assert "  dispatch_dtypes: {CPU: {T: 'floating_and_complex_types_and(torch.half, torch.bfloat16)'}}\n" in text
    assert lower(NativeFunctions.load(written)) == PLAIN
    assert lint_round_trip(text) == text
    plan = Plan((GlobalSet("TFloat", FLOATS),), (_addmm_plan(ADDMM_CLAIMS), _cos_plan()))
    again = apply_plan(NativeFunctions.load(written), GlobalSetsFile.load(sibling_constraints_path(written)), plan)
    assert again.native_functions.decode() == text  # applying twice is applying once


def test_int64_addmm_is_declared_on_cpu_and_not_on_cuda(written, capfd):
    assert load_declarations(written).accepts("addmm", self="int64", mat1="int64", mat2="int64")
    on_cuda = load_declarations(written, device="cuda").accepts("addmm", self="int64", mat1="int64", mat2="int64")
    assert not on_cuda and "for CUDA" in on_cuda.reason
    assert load_declarations(written, device="cuda").accepts("cos", self="complex32")
    assert not load_declarations(written, device="cpu").accepts("cos", self="complex32")
    values = ("addmm", "self=int64", "mat1=int64", "mat2=int64", "--native-functions", written)
    assert run_cli(capfd, "accepts", *values, "--device", "cuda")[0] == 1
    assert run_cli(capfd, "accepts", *values)[0] == 0  # default cpu
    with pytest.raises(InputError, match="unknown device 'xla'"):
        load_declarations(written, device="xla")


def test_the_checker_judges_a_call_by_its_backend(written):
    ints = [torch.ones(2, 2, dtype=torch.int64) for _ in range(3)]
    with checking(written):
        torch.addmm(*ints)  # a CPU call: the CPU set
    with pytest.raises(DtypeViolation, match="for CUDA"):
        with checking(Declarations.load(written).on("CUDA")):
            torch.addmm(*ints)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{XLA: {T: TFloat}}", "unknown dispatch key 'XLA'"),
        ("{CUDA: {U: TFloat}}", "CUDA names U, no type variable of the entry"),
        ("{CUDA: {T: TNothing}}", "CUDA T: unresolved set TNothing"),
        ("{CUDA: {T: [torch.float33]}}", "float33"),
        ("{CUDA: {T: [torch.bool]}}", r"holds \[torch.bool\], outside T's union"),
    ],
)
def test_a_malformed_line_is_one_error_naming_file_line_and_op(written, capfd, line, message):
    text = written.read_text()
    start = text.index("  dispatch_dtypes: {CUDA")
    end = text.index("\n", start)
    written.write_text(text[:start] + f"  dispatch_dtypes: {line}" + text[end:])
    number = text[:start].count("\n") + 1
    with pytest.raises(InputError, match=message) as raised:
        load_declarations(written)
    assert f"native_functions.yaml:{number}" in str(raised.value) and "addmm" in str(raised.value)
    code, out, err = run_cli(capfd, "accepts", "addmm", "self=float32", "--native-functions", written)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_claims_are_read_per_slot_from_the_overload_s_own_opinfo_both_devices():
    from migrate.evidence.opinfo.observations import cuda_claims
    from migrate.runtime.runs import CatalogueEntry, Observation, OpInfoId

    f32, i64 = named("float32")[0], named("int64")[0]
    add, conv = OpInfoId("add"), OpInfoId("nn.functional.conv2d")

    def call(self, other, opinfo=add, sample=None):
        return Observation("aten::add.Tensor", (("self", self), ("other", other), ("return.0", self)), opinfo, sample or self, True, 1)

    catalogue = [CatalogueEntry(add, (f32, i64), (("cuda", (f32,)),), ("add",)), CatalogueEntry(conv, (f32,), (("cuda", ()),), ("conv2d",))]
    # other is float32 whatever the sample dtype: it does not follow it, so no claim speaks of it.
    claims = cuda_claims([call(f32, f32), call(i64, f32), call(f32, f32, opinfo=conv)], catalogue)
    assert claims == {"add.Tensor": (("self", (i64, f32), (f32,)), ("return.0", (i64, f32), (f32,)))}


def test_the_summary_counts_verdicts_per_backend_and_cpu_s_by_where_they_were_observed():
    from migrate.model.plan import OPINFO, PROBE, Evidence
    from migrate.model.verdict import ACCEPTED, PROBE_CALL, Backend, Site, Verdict
    from migrate.pipeline.summary import backends_summary

    site = Site(PROBE_CALL, "self cast alone, OpInfo addmm", Backend("cpu", "default, reference paths"), "2.13.0+cpu")
    observed = Evidence(OPINFO, "OpInfo addmm", FLOATS, ("self",))
    probed = Evidence(PROBE, "", INTS, ("self",), verdict=Verdict(ACCEPTED, site))
    addmm = _addmm_plan(ADDMM_CLAIMS)
    (variable,) = addmm.variables
    from dataclasses import replace

    addmm = replace(addmm, variables=(replace(variable, evidence=(observed, probed)),))
    summary = backends_summary(Plan((), (addmm, _cos_plan())), b"")
    assert summary.verdicts["CPU"]["accepted"] == 11 + 6 and summary.verdicts["CPU"]["other-device"] == 1
    # addmm's CUDA set holds the claimed floats and complex, not the integers; cos states no CUDA set: the union
    assert summary.verdicts["CUDA"] == {"recorded": 0, "claimed": 6, "as the union": 7, "outside its set": 2 * 21 - 13}
    assert summary.observed_at["accepted"]["OpInfo sample"] == 4 and summary.observed_at["accepted"]["probe"] == 5
    assert summary.observed_at["accepted"]["derived"] == 2 + 6  # addmm's complex and cos's: no evidence at their slots
    assert "verdicts on CUDA: recorded 0, claimed 6, as the union 7, outside its set 29 (per variable and dtype)" in summary.lines()
    assert not any(line.startswith("CPU rejected") for line in summary.lines())  # nothing was rejected


def test_an_empty_backend_set_is_never_a_named_set_however_many_entries_state_it(tmp_path):
    from migrate.infer.naming import backend_sets

    path = tmp_path / "native_functions.yaml"
    path.write_text("".join(f"- func: histogram{i}(Tensor self) -> Tensor\n  dispatch:\n    CPU: histogram_cpu\n\n" for i in range(4)))
    no_cuda_kernel = (BackendSet("CPU", FLOATS, OBSERVED), BackendSet("CUDA", (), CLAIMED))
    plans = [OverloadPlan(f"histogram{i}", (Variable("T", FLOATS, ("self", "return.0"), backends=no_cuda_kernel),)) for i in range(4)]
    sets = backend_sets(NativeFunctions.load(path), plans, (GlobalSet("TFloat", FLOATS),), (), ())
    assert [g.name for g in sets] == ["TFloat"]  # the line spells it [], as short as any name


def test_the_shipped_catalogue_holds_opinfo_s_cuda_claims_as_on_a_current_gpu():
    """``SM53OrLater`` is False on a host without a GPU: the database would claim no bfloat16 ``bilinear`` on CUDA.
    Read as on capability 9.0 (``torch_private.opinfo_claims_on_a_current_gpu``), it does, and the shipped facts say so;
    ``test_opinfo_sweep`` reads a cold catalogue so."""
    import gzip

    from migrate.evidence.recording import SHIPPED

    (recording,) = sorted(SHIPPED.glob("cpu-*.json.gz"))
    catalogue = {(e["name"], e["variant"]): e for e in json.loads(gzip.decompress(recording.read_bytes()))["catalogue"]}
    for opinfo in ("nn.functional.bilinear", "matmul", "bmm", "torch.ops.aten._flash_attention_forward"):
        assert "bfloat16" in catalogue[opinfo, ""]["declared"]["cuda"]
