"""The torchlib scan on the installed onnxscript and torch, cross-checked against importing onnxscript.

Only these tests import onnxscript (the tool never does): its registry and TypeVars
are the independent truth the static scan must agree with.
"""

from __future__ import annotations

import importlib
import pkgutil
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import libcst
import pytest

import migrate.torchlib_source.scan
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import OverloadIndex, installed_torchlib, scan_torchlib
from migrate.model.dtypes import DType, named
from migrate.model.native import NativeFunctions, installed_native_functions

pytestmark = pytest.mark.slow  # a cold scan of the installed torchlib, and importing it


@pytest.fixture(scope="module")
def native() -> NativeFunctions:
    return NativeFunctions.load(installed_native_functions())


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("torchlib-cache")


@pytest.fixture(scope="module")
def evidence(native, cache_dir):
    return scan_torchlib(installed_torchlib(), native, StageCache.at(cache_dir))


@pytest.fixture(scope="module")
def registry():
    """onnxscript's own registry, filled by importing every torchlib module."""
    from onnxscript.function_libs.torch_lib import registration

    _import_all_torchlib_modules()
    return registration.default_registry


def _import_all_torchlib_modules() -> list:
    import onnxscript.function_libs.torch_lib as package

    modules = [package]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        modules.append(importlib.import_module(info.name))
    return modules


def _python_function(onnx_function):
    """The Python function behind a compiled (OnnxFunction) or traced (TracedOnnxFunction) registration."""
    return getattr(onnx_function, "func", None) or onnx_function.function


def _bound_dtypes(bound) -> set[DType]:
    """A TypeVar bound of onnxscript tensor classes (possibly nested Unions) as torch dtypes."""
    members = typing.get_args(bound) or (bound,)
    if len(members) > 1 or members[0] is not bound:
        return {d for m in members for d in _bound_dtypes(m)}
    dtype = DType.from_onnx(bound.__name__)
    return set() if dtype is None else {dtype}


def test_registered_names_match_the_imported_registry(evidence, registry):
    assert set(evidence.registered) == set(registry)
    static_complex = {n for r in evidence.registrations if r.complex and not r.private for n in r.names}
    assert static_complex == {name for name, overloaded in registry.items() if overloaded.complex}


def test_registration_lines_and_functions_match_the_imported_functions(evidence, registry):
    """Each imported registration's function is a static registration at the line of its @torch_op."""
    root = installed_torchlib().resolve()
    static = {(r.path, r.function, r.line) for r in evidence.registrations}
    imported = set()
    for overloaded in registry.values():
        for onnx_function in overloaded.overloads + overloaded.complex:
            code = _python_function(onnx_function).__code__
            path = Path(code.co_filename).resolve().relative_to(root).as_posix()
            lines = (root / path).read_text().splitlines()
            line = code.co_firstlineno  # the first decorator's line; @torch_op may come later
            while not lines[line - 1].lstrip().startswith("@torch_op"):
                line += 1
            imported.add((path, code.co_name, line))
    assert imported and imported <= static


def test_typevars_match_the_imported_modules(evidence):
    imported = {}
    for module in _import_all_torchlib_modules():
        for name, value in vars(module).items():
            if isinstance(value, typing.TypeVar) and value.__module__ == module.__name__:
                imported[name] = _bound_dtypes(value.__bound__)
    assert {"TFloat", "TTensor", "TReal"} <= set(imported)
    assert {g.name: set(g.dtypes) for g in evidence.global_sets} == {n: d for n, d in imported.items() if d}
    assert all(g.desc for g in evidence.global_sets)


def test_aten_names_resolve_or_fall_into_categories(evidence, registry, native):
    aten = {n for n in registry if n.startswith("aten::")}
    expected = {n for n in aten if n[6:] in native.by_name or n[6:] in native.autogen_index}
    assert set(evidence.resolved) == expected
    assert all(evidence.resolved[n] == n[6:] for n in expected)
    unresolved = [n for names in evidence.unresolved.values() for n in names]
    assert len(unresolved) == len(set(unresolved)), "a name is in two categories"
    assert set(unresolved) == set(registry) - expected
    bases = {n.split(".")[0] for n in native.by_name}
    for name in evidence.unresolved.get("aten: no default overload", ()):
        assert "." not in name and name[6:] in bases
    for name in evidence.unresolved.get("aten: unknown operator", ()):
        assert name[6:].split(".")[0] not in bases
    namespaces = {n.split("::")[0] for n in registry} - {"aten"}
    assert {c for c in evidence.unresolved if c.startswith("other namespace")} == {f"other namespace: {n}" for n in namespaces}
    print(f"\nresolved {len(evidence.resolved)} of {len(aten)} registered aten:: names;", {c: len(n) for c, n in evidence.unresolved.items()})


def test_informative_share(evidence, native):
    """At least 85% of resolved overloads with a tensor input get a constraint that says something about an input:
    it ties the input to another slot, or it excludes a dtype torchlib can express."""
    index = OverloadIndex(native)
    universe = {d for g in evidence.global_sets for d in g.dtypes}
    with_inputs, informative = [], []
    for overload in sorted(set(evidence.resolved.values())):
        inputs = {s.name for s in index.schema(overload).tensor_slots if not s.is_return}
        if not inputs:
            continue
        with_inputs.append(overload)
        for variable in evidence.overloads[overload].variables:
            ties = len(variable.binds) > 1
            narrows = not universe <= set(variable.dtypes)
            if inputs & set(variable.binds) and (ties or narrows):
                informative.append(overload)
                break
    assert evidence.with_tensor_inputs == tuple(with_inputs)
    assert evidence.informative == tuple(informative)
    share = len(informative) / len(with_inputs)
    assert evidence.informative_share == share
    print(f"\ninformative: {len(informative)} of {len(with_inputs)} overloads with tensor inputs = {share:.1%}")
    assert share >= 0.85


def test_scaled_dot_product_attention(evidence):
    import onnxscript.function_libs.torch_lib.tensor_typing as tensor_typing

    plan = evidence.overloads["scaled_dot_product_attention"]
    shared = plan.variable_of("query")
    assert shared is not None and set(shared.binds) == {"query", "key", "value", "return.0"}
    assert shared.dtypes == named("float16", "bfloat16", "float32", "float64")
    assert set(shared.dtypes) == _bound_dtypes(tensor_typing.TFloat.__bound__)
    assert plan.variable_of("attn_mask") is None
    (registration,) = evidence.by_overload["scaled_dot_product_attention"]
    assert shared.evidence[0].where == registration.where and registration.path == "ops/nn.py"


def test_unchanged_tree_is_read_from_the_cache(evidence, native, cache_dir, monkeypatch):
    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed although the cache holds this content")

    monkeypatch.setattr(migrate.torchlib_source.scan.cst, "parse_module", no_parsing)
    warm = scan_torchlib(installed_torchlib(), native, StageCache.at(cache_dir))
    assert warm.cached_files == warm.files == evidence.files
    assert warm.overloads == evidence.overloads
    assert warm.registrations == evidence.registrations
    assert warm.global_sets == evidence.global_sets


def test_a_copy_elsewhere_reads_the_scan_of_the_same_files_and_names_its_own_files(native, tmp_path, monkeypatch):
    """The key is the files' contents, not where they lie: a checkout's copy reads what the installed tree's run
    derived, and its root and the errors' paths are the copy's."""
    first, second = tmp_path / "a" / "torch_lib", tmp_path / "b" / "torch_lib"
    for tree in (first, second):
        shutil.copytree(installed_torchlib(), tree, ignore=shutil.ignore_patterns("__pycache__"))
        other = 'from typing import TypeVar\n\nfrom onnxscript import BOOL\n\nTFloat = TypeVar("TFloat", bound=BOOL)\n'
        (tree / "other_typing.py").write_text(other)  # a second TFloat of another set: an error naming this file
    cache = StageCache.at(tmp_path / "cache")
    scanned = scan_torchlib(first, native, cache)
    monkeypatch.setattr(migrate.torchlib_source.scan.cst, "parse_module", lambda *a, **k: pytest.fail("parsed again"))
    copy = scan_torchlib(second, native, cache)
    assert copy.key == scanned.key and copy.cached_files == copy.files and copy.root == second
    assert [str(e) for e in scanned.errors] and [str(e).replace(str(second), str(first)) for e in copy.errors] == [str(e) for e in scanned.errors]
    assert [str(e).split(":", 1)[0] for e in copy.errors] == [str(second / "tensor_typing.py")]


def test_an_edited_module_alone_is_parsed_again(evidence, native, cache_dir, tmp_path, monkeypatch):
    tree = tmp_path / "torch_lib"
    shutil.copytree(installed_torchlib(), tree, ignore=shutil.ignore_patterns("__pycache__"))
    edited = tree / "ops" / "special.py"
    edited.write_text("# an edit\n" + edited.read_text())
    parsed, parse = [], libcst.parse_module

    def counting(text, *args, **kwargs):
        parsed.append(text)
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(migrate.torchlib_source.scan.cst, "parse_module", counting)
    copy = scan_torchlib(tree, native, StageCache.at(cache_dir))
    assert len(parsed) == 1 and parsed[0].startswith(b"# an edit\n")
    assert copy.cached_files == copy.files - 1
    moved = {r.where for r in copy.registrations if r.path == "ops/special.py"}
    before = {r.where for r in evidence.registrations if r.path == "ops/special.py"}
    assert moved and len(moved) == len(before) and moved != before  # one line lower each


def test_the_scan_imports_neither_onnxscript_nor_torch(evidence, cache_dir):
    """Reading torchlib statically is the point: importing it compiles every function."""
    code = (
        "import sys\n"
        "from migrate.model.native import NativeFunctions, installed_native_functions\n"
        "from migrate.cache import StageCache\nfrom migrate.torchlib_source.resolve import scan_torchlib\n"
        f"evidence = scan_torchlib(None, NativeFunctions.load(installed_native_functions()), StageCache.at({str(cache_dir)!r}))\n"
        f"assert len(evidence.overloads) == {len(evidence.overloads)}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnxscript', 'torch')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
