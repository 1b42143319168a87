"""What an export-check result is keyed on: the code the workers reach (a change elsewhere in the tool keeps
results cached), and the torch_lib functions an overload's calls depend on (a rewritten torch_lib re-runs only
the overloads whose functions changed). Real code and the installed torch_lib, copied to temp folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from migrate.audit.export import EXPORT_CODE, CaseResult, CallResult, ResultStore
from migrate.audit.export_key import Definitions, code_reached, package_files, torchlib_keys
from migrate.cache import StageCache
from migrate.model.dtypes import DType
from migrate.model.export_status import DECOMPOSED, OK
from migrate.torchlib_source.resolve import installed_torchlib

TOOL = Path(__file__).resolve().parents[1] / "migrate"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def tool(tmp_path) -> Path:
    copy = tmp_path / "migrate"
    shutil.copytree(TOOL, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _code(folder: Path) -> str:
    return code_reached(Definitions(package_files("migrate", folder)), EXPORT_CODE)


def test_a_change_outside_the_workers_code_keeps_the_key(tool):
    before = _code(tool)
    # the checker's helper in torch_private (06529f4 invalidated every export result), a new module elsewhere
    _edit(tool / "runtime" / "torch_private.py", "def written_arguments(func: Any) -> frozenset[str]:\n",
          "def written_arguments(func: Any) -> frozenset[str]:\n    assert func is not None\n")
    (tool / "check" / "unrelated.py").write_text("def helper():\n    return 1\n")
    _edit(tool / "audit" / "export_worker.py", "def _prepare(", "# a comment changes no definition\ndef _prepare(")
    assert _code(tool) == before


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("audit/export_worker.py", "CALLS_PER_CASE = 3", "CALLS_PER_CASE = 4"),  # a constant a worker function reads
        ("runtime/torch_private.py", 'return _private("torch.onnx._internal.exporter._core.torch_dtype_to_onnx_dtype")(dtype)',
         'return _private("torch.onnx._internal.exporter._core.torch_dtype_to_onnx_dtype")(dtype) or None'),  # a private helper it calls
        ("model/export_status.py", "def combined(", "def _unused():\n    pass\n\n\ndef combined("),  # the statuses' rules: all of them
    ],
)
def test_a_change_the_workers_reach_changes_the_key(tool, path, old, new):
    before = _code(tool)
    _edit(tool / path, old, new)
    assert _code(tool) != before


@pytest.fixture
def torchlibs(tmp_path) -> tuple[Path, Path]:
    """The installed torch_lib and a copy whose aten_mT was rewritten (its annotation widened)."""
    original, rewritten = tmp_path / "original", tmp_path / "rewritten"
    for folder in (original, rewritten):
        shutil.copytree(installed_torchlib(), folder, ignore=shutil.ignore_patterns("__pycache__"))
    core = rewritten / "ops" / "core.py"
    text = core.read_text()
    start = text.index("def aten_mT(")
    _edit(core, text[start : text.index(")", start) + 1], text[start : text.index(")", start) + 1].replace("self: ", "self: BOOL | ", 1))
    _edit(core, '"""sin(Tensor self) -> Tensor"""', '"""sin(TFloat self) -> TFloat"""')  # the schema the rewrite writes: no export changes
    return original, rewritten


def _case(overload: str, function: str, used: tuple[str, ...], status: str = OK) -> CaseResult:
    call = CallResult((("self", "torch.float32"),), OK, "", () if status == DECOMPOSED else (function,), used, status == DECOMPOSED)
    return CaseResult(overload, ("self",), DType("float32"), function, (("self", "torch.float32"),), status, "", (call,))


def test_a_rewritten_torch_lib_reuses_the_results_of_functions_it_did_not_change(torchlibs, tmp_path):
    original, rewritten = torchlibs
    cache = StageCache.at(tmp_path / "cache")
    request = [[["self"], "float32"]]
    sin = (_case("sin", "aten_sin", ("aten_sin",)),)
    mt = (_case("mT", "aten_mT", ("aten_transpose",), DECOMPOSED),)  # its export ran aten_transpose
    transposed = (_case("transpose.int", "aten_transpose", ("aten_transpose",)),)
    stored = ResultStore.of(original, cache)
    for overload, results in (("sin", sin), ("mT", mt), ("transpose.int", transposed)):
        stored.put(overload, request, results)
    assert torchlib_keys(rewritten, cache).functions["aten_sin"] == torchlib_keys(original, cache).functions["aten_sin"]
    again = ResultStore.of(rewritten, cache)
    assert again.folder == stored.folder
    assert again.get("sin", request) == sin and again.get("transpose.int", request) == transposed
    assert again.get("mT", request) is None  # aten_mT changed: its overload runs again
    assert again.get("sin", [[["self"], "float16"]]) is None  # other cases asked
    assert ResultStore.of(original, cache).get("mT", request) == mt  # the original's stay


def test_a_used_function_that_changed_reruns_the_overload_that_used_it(torchlibs, tmp_path):
    original, rewritten = torchlibs
    cache = StageCache.at(tmp_path / "cache")
    request = [[["self"], "float32"]]
    ResultStore.of(original, cache).put("mT", request, (_case("mT", "aten_mT", ("aten_transpose",), DECOMPOSED),))
    core = original / "ops" / "core.py"
    text = core.read_text()
    start = text.index("def aten_transpose(")
    _edit(core, text[start : text.index(")", start) + 1], text[start : text.index(")", start) + 1].replace("self: ", "self: BOOL | ", 1))
    assert ResultStore.of(original, cache).get("mT", request) is None


def test_the_recorded_exports_are_the_judges_of_this_code():
    """The export tests read recorded results only while the judges' code and the exporter's releases are those the
    recording was made with; otherwise every case exports live and the suite takes many minutes: regenerate it."""
    from tests.recorded_exports import REGENERATE, recorded_files, store_folders

    folders = {relative.rsplit("/", 1)[0] for relative in recorded_files()}
    assert folders == set(store_folders()), f"tests/recorded/exports.json.gz is stale: regenerate it with {REGENERATE}"
