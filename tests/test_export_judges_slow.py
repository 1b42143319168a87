"""Which torchlib function ran, from real exports of the installed torch_lib: mT and mH are decomposed to
transpose, reshape and flatten.using_ints to view (their functions never run); tile and isclose are kept and
reach theirs. The function-level judge then calls aten_mT directly: Einsum takes no bool."""

from __future__ import annotations


import pytest

from migrate.audit.export import run_export_check
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import installed_torchlib
from migrate.model.dtypes import named
from migrate.model.export_status import DECOMPOSED, INVALID_MODEL, OK
from migrate.model.plan import Variable

pytestmark = pytest.mark.slow  # exports and onnxruntime

DECOMPOSED_TO = {"mT": "aten_transpose", "mH": "aten_transpose", "reshape": "aten_view", "flatten.using_ints": "aten_view"}
KEPT = {"tile": "aten_tile", "isclose": "aten_isclose"}
FUNCTIONS = {"mT": "aten_mT", "mH": "aten_mH", "reshape": "aten_reshape", "flatten.using_ints": "aten_flatten", **KEPT}


@pytest.fixture(scope="module")
def checked(export_cache):
    cast = {"isclose": ("self", "other")}
    declared = {o: (Variable("T", named("bool", "float32"), cast.get(o, ("self",))),) for o in FUNCTIONS}
    functions = {o: (f,) for o, f in FUNCTIONS.items()}
    return run_export_check(declared, set(FUNCTIONS), installed_torchlib(), StageCache.at(export_cache), jobs=2, functions=functions)


@pytest.mark.parametrize("overload", sorted(DECOMPOSED_TO))
def test_a_decomposed_overload_never_runs_its_function(checked, overload):
    for case in (c for c in checked.cases if c.overload == overload):
        assert case.status == DECOMPOSED, case
        assert case.export[0] == OK, case  # the user's export works, through another function
        assert all(call.decomposed and not call.ran and DECOMPOSED_TO[overload] in call.used for call in case.calls), case


@pytest.mark.parametrize("overload", sorted(KEPT))
def test_a_kept_composite_reaches_its_function(checked, overload):
    for case in (c for c in checked.cases if c.overload == overload):
        assert case.status != DECOMPOSED, case
        assert all(call.ran == (KEPT[overload],) and not call.decomposed for call in case.calls), case
    assert not [c for c in checked.judged if c.overload == overload]  # the export judged it


def test_the_function_level_judge_calls_the_functions_no_export_ran(checked):
    judged = {(c.overload, c.dtype.name): c for c in checked.judged}
    assert {o for o, _ in judged} == set(DECOMPOSED_TO)
    assert all(c.function == FUNCTIONS[c.overload] for c in judged.values())
    bool_mt = judged["mT", "bool"]
    assert bool_mt.status == INVALID_MODEL and "Einsum" in bool_mt.message and "unsupported type: tensor(bool)" in bool_mt.message
    assert judged["mT", "float32"].status == OK
    assert judged["reshape", "bool"].status == OK
    assert all(call.ran == (c.function,) for c in judged.values() for call in c.calls)
