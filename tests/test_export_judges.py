"""Which torchlib function a case is about, without exporting: the exporter's translated program says which
function ran for a call's overload (``decomposed`` when none did), a call proves or refutes only the functions
that ran, and the function-level judge settles the functions no export ran (``test_export_judges_slow`` has the
real exports: mT decomposed to transpose, tile kept)."""

from __future__ import annotations

from pathlib import Path

from migrate.audit.export import (
    CaseResult,
    CallResult,
    ExportCheck,
    missing,
    missing_text,
    table,
    unreached_functions,
)
from migrate.audit.export_worker import Case, Run, _record_lowering
from migrate.model.dtypes import DType, named
from migrate.model.export_status import DECOMPOSED, INVALID_MODEL, NO_KERNEL, OK
from migrate.model.plan import Variable
from migrate.runtime.torch_private import LoweredNode
from migrate.write.torchlib.narrowing import FUNCTION_JUDGE, ExportStatus, by_dtype, settle, tied_statuses

MT, TRANSPOSE, TILE = "aten.mT.default", "aten.transpose.int", "aten.tile.default"  # stand-ins for the OpOverloads
BOOL, F32 = DType("bool"), DType("float32")
U16 = DType("uint16")
MT_SLOTS = ("self", "return.0")  # aten_mT's one TypeVar, and mT's one variable
BOOL_SPEC = "onnx.checker: [ShapeInferenceError] (op_type:Einsum, node name: n0): Inputs typestr: T, has unsupported type: tensor(bool)"


# --- which function ran ---------------------------------------------------------------------------


def test_the_translated_program_says_which_function_ran_for_each_call():
    """mT's call (case_0) became a transpose: decomposed, the export used aten_transpose; tile's (case_1) ran aten_tile."""
    mt, tile = Run("mT", MT), Run("tile", TILE)
    program = [LoweredNode(TRANSPOSE, ("", "case_0"), "aten_transpose"), LoweredNode(TILE, ("", "case_1"), "aten_tile")]
    _record_lowering([mt, tile], [program])
    assert (mt.decomposed, mt.ran, mt.used) == (True, set(), {"aten_transpose"})
    assert (tile.decomposed, tile.ran, tile.used) == (False, {"aten_tile"}, {"aten_tile"})


def test_a_call_the_exporter_never_translated_is_not_decomposed():
    """An export that failed before translation (no program) leaves the call undecided: it ran nothing, decomposed nothing."""
    run = Run("mT", MT)
    _record_lowering([run], [])
    assert not run.decomposed and not run.ran


def test_a_node_dispatch_never_reached_keeps_the_call_reached_but_not_run():
    """The overload is in the program, but translation failed before its node: not decomposed, and no function ran."""
    run = Run("tile", TILE)
    _record_lowering([run], [[LoweredNode(TILE, ("", "case_0"))]])
    assert not run.decomposed and run.reached and not run.ran


def test_a_decomposed_case_keeps_what_the_users_export_did():
    case = Case("mT", ("self",), "bool", [Run("mT", MT, status=OK, lowered=True, used={"aten_transpose"})])
    report = case.report("aten_mT")
    assert report["status"] == DECOMPOSED
    assert report["export"] == {"status": OK, "message": ""}
    assert "aten_transpose" in report["message"] and report["message"].endswith("the export: ok")
    assert report["calls"][0]["decomposed"] is True and report["calls"][0]["ran"] == []


def test_a_case_result_round_trips_with_the_functions_that_ran():
    call = CallResult((("self", "torch.bool"),), OK, "", (), ("aten_transpose",), True)
    case = CaseResult("mT", ("self",), BOOL, "aten_mT", (("self", "torch.bool"),), DECOMPOSED, "decomposed", (call,), (OK, ""))
    assert CaseResult.from_json(case.to_json()) == case
    assert case.export_status().calls == ((("self",), OK, "", ()),)


# --- a call proves only the functions that ran ----------------------------------------------------


def _mt_verdicts() -> tuple[ExportStatus, ...]:
    """mT's export cases (decomposed: transpose ran) and the function-level judge's (aten_mT called directly)."""
    exported = tuple(ExportStatus(("self",), d, DECOMPOSED, "", ((("self",), OK, "", ()),)) for d in (BOOL, F32))
    judged = (
        ExportStatus(("self",), BOOL, INVALID_MODEL, BOOL_SPEC, ((("self",), INVALID_MODEL, BOOL_SPEC, ("aten_mT",)),), FUNCTION_JUDGE),
        ExportStatus(("self",), F32, OK, "", ((("self",), OK, "", ("aten_mT",)),), FUNCTION_JUDGE),
    )
    return exported + judged


def test_an_export_that_decomposed_the_overload_says_nothing_of_its_function():
    exported = _mt_verdicts()[:2]
    assert by_dtype(exported, ("self",), "aten_mT") == {}
    assert by_dtype(exported, ("self",), "aten_transpose") == {}  # nor of the one that ran: the call is mT's, not transpose's
    assert tied_statuses({"mT": exported}, MT_SLOTS, {"mT": [MT_SLOTS]}, "aten_mT") == {}


def test_the_function_level_judge_settles_a_function_no_export_ran():
    found = tied_statuses({"mT": _mt_verdicts()}, MT_SLOTS, {"mT": [MT_SLOTS]}, "aten_mT")
    assert found == {BOOL: (INVALID_MODEL, BOOL_SPEC, FUNCTION_JUDGE), F32: (OK, "", FUNCTION_JUDGE)}
    settled = settle({BOOL, F32}, {F32}, found, {})
    assert settled.dtypes == (F32,) and not settled.added  # the export's ok for bool was transpose's: bool does not join


def test_a_note_says_which_judge_settled_the_dtype():
    found = {BOOL: (OK, "", FUNCTION_JUDGE), F32: (INVALID_MODEL, "Sin has no float", "export")}
    settled = settle({BOOL, F32}, {F32, DType("float64")}, {**found, DType("float64"): (OK, "", "export")}, {})
    assert [c.why for c in settled.added] == ["function-level judge ok"]
    assert [c.why for c in settled.removed] == ["export invalid-model: Sin has no float"]



def _le_verdicts(ran: tuple[str, ...]) -> dict[str, tuple[ExportStatus, ...]]:
    """aten_le serves le.Tensor (self, other: one variable) and le.Scalar (self: ``other`` is a Scalar); only
    le.Scalar's case has uint16, casting its self alone."""
    scalar = ExportStatus(("self",), U16, OK, "", ((("self",), OK, "", ran),))
    tensor = ExportStatus(("self", "other"), F32, OK, "", ((("self", "other"), OK, "", ("aten_le",)),))
    return {"le.Scalar": (scalar,), "le.Tensor": (tensor,)}


LE_DECLARED = {"le.Tensor": [("self", "other"), ("return.0",)], "le.Scalar": [("self",), ("return.0",)]}
LE_NOTE = "dtype-added: ops/core.py:5750 aten_le (le.Tensor, le.Scalar) self, other: torch.uint16 (export ok)"


def test_an_annotation_is_judged_at_each_overloads_own_slots():
    """aten_le's ``self, other``: le.Scalar's case of self alone proves uint16 for the rewrite and for
    check_rewrite alike (both read ``tied_statuses``); a case of le.Scalar the exporter did not send to aten_le
    proves nothing of it."""
    from bench.check_rewrite import unreached_changes

    def declared(overloads):
        return {o: LE_DECLARED[o] for o in overloads}

    assert tied_statuses(_le_verdicts(("aten_le",)), ("self", "other"), LE_DECLARED, "aten_le")[U16] == (OK, "", "export")
    counts, unreached = unreached_changes([LE_NOTE], _le_verdicts(("aten_le",)), declared)
    assert counts == {("dtype-added", "export"): 1} and unreached == []
    assert U16 not in tied_statuses(_le_verdicts(("aten_lt",)), ("self", "other"), LE_DECLARED, "aten_le")
    assert unreached_changes([LE_NOTE], _le_verdicts(("aten_lt",)), declared)[1] == [LE_NOTE]
    # le.Tensor's cases still need both slots: a call of self alone at uint16 would not prove other
    half = {"le.Tensor": (ExportStatus(("self",), U16, OK, "", ((("self",), OK, "", ("aten_le",)),)),)}
    assert tied_statuses(half, ("self", "other"), LE_DECLARED, "aten_le") == {}

# --- the function-level judge's work, the table and the provisioning list ---------------------------------


def _decomposed_mt() -> tuple[CaseResult, ...]:
    call = CallResult((("self", "torch.bool"),), OK, "", (), ("aten_transpose",), True)
    return tuple(CaseResult("mT", ("self",), d, "aten_mT", (), DECOMPOSED, "decomposed", (call,), (OK, "")) for d in (BOOL, F32))


def test_functions_no_export_ran_go_to_the_function_level_judge():
    tile_call = CallResult((("self", "torch.bool"),), OK, "", ("aten_tile",), ("aten_tile",))
    tile = (CaseResult("tile", ("self",), BOOL, "aten_tile", (), OK, "", (tile_call,)),)
    unsampled = (CaseResult("abs", ("self",), BOOL, "aten_abs", (), "no-sample", "refused"),)
    wanted = unreached_functions({"mT": _decomposed_mt(), "tile": tile, "abs": unsampled})
    assert list(wanted) == [("mT", "aten_mT")]  # tile's ran; abs has no call to judge
    assert [c.dtype for c in wanted["mT", "aten_mT"]] == [BOOL, F32]
    # a function registered after the one the exporter dispatches to never runs: judged too
    shadowed = unreached_functions({"tile": tile}, {"tile": ("aten_tile", "aten_tile_other")})
    assert list(shadowed) == [("tile", "aten_tile_other")]


def test_a_partially_decomposed_overload_is_judged_directly_on_its_decomposed_cases_only():
    """eq.Scalar: the exporter keeps the overload for some dtypes (aten_eq ran) and decomposes it for others; each
    case is about aten_eq only when aten_eq ran for it, so the function-level judge takes the decomposed ones."""
    kept = CallResult((("self", "torch.float32"),), OK, "", ("aten_eq",), ("aten_eq",))
    gone = CallResult((("self", "torch.bool"),), OK, "", (), ("aten_eq_tensor",), True)
    cases = (
        CaseResult("eq.Scalar", ("self",), F32, "aten_eq", (), OK, "", (kept,)),
        CaseResult("eq.Scalar", ("self",), BOOL, "aten_eq", (), DECOMPOSED, "decomposed", (gone,)),
        CaseResult("eq.Scalar", ("self",), DType("complex64"), "aten_eq", (), DECOMPOSED, "decomposed", (gone,)),
    )
    wanted = unreached_functions({"eq.Scalar": cases})
    assert {key: [c.dtype for c in found] for key, found in wanted.items()} == {("eq.Scalar", "aten_eq"): [BOOL]}
    # the rewrite then reads the export for float32 and the function-level judge for bool
    judged = ExportStatus(("self",), BOOL, INVALID_MODEL, BOOL_SPEC, ((("self",), INVALID_MODEL, BOOL_SPEC, ("aten_eq",)),), FUNCTION_JUDGE)
    verdicts = tuple(c.export_status() for c in cases) + (judged,)
    assert tied_statuses({"eq.Scalar": verdicts}, ("self",), {"eq.Scalar": [("self",)]}, "aten_eq") == {
        F32: (OK, "", "export"),
        BOOL: (INVALID_MODEL, BOOL_SPEC, FUNCTION_JUDGE),
    }


def test_decomposed_cases_are_counted_in_the_table_and_the_provisioning_list():
    judged = tuple(
        CaseResult("mT", ("self",), d, "aten_mT", (), s, m, (CallResult((("self", str(d)),), s, m, ("aten_mT",)),), judge=FUNCTION_JUDGE)
        for d, s, m in ((BOOL, INVALID_MODEL, BOOL_SPEC), (F32, OK, ""))
    )
    check = ExportCheck(_decomposed_mt(), Path("torch_lib"), 1, 1, 0.0, judged)
    text = table(check)
    assert "dec" in text and "decomposed 2" in text
    assert "self (aten_mT called directly)" in text and "function-level judge (functions no export ran): 2 cases of 1 functions" in text
    declared = {"mT": (Variable("T", named("bool", "float32"), ("self", "return.0")),)}
    rows = missing(check, declared, {"mT": 7})
    kinds = {g.kind: g.dtypes for g in rows[0].gaps}
    assert kinds == {"spec": (BOOL,), DECOMPOSED: (BOOL, F32)}  # the spec gap is the function-level judge's
    assert "decomposed before dispatch (the function judged directly): 2" in missing_text(rows).splitlines()[0]
    assert check.summary()["by_status"][DECOMPOSED] == 2 and check.summary()["function_judge"]["by_status"][OK] == 1
    assert NO_KERNEL in check.summary()["function_judge"]["by_status"]


def test_a_coverage_gap_is_judged_by_the_function_not_by_a_decomposed_export():
    from migrate.audit.export import CONFIRMED, gap_status
    from migrate.model.plan import Conflict

    gap = Conflict("export-coverage-gap", ("self",), (BOOL,), "torchlib lacks bool")
    assert gap_status(gap, _decomposed_mt()) == ""  # mT's export of bool was ok, through aten_transpose: no status
    judged = CaseResult("mT", ("self",), BOOL, "aten_mT", (), INVALID_MODEL, BOOL_SPEC, judge=FUNCTION_JUDGE)
    assert gap_status(gap, _decomposed_mt() + (judged,)) == CONFIRMED
