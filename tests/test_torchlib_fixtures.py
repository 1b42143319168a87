"""The torchlib scan on small torchlib trees of our own: variants, complex, version-dependent and broken modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.errors import InputError
from migrate.cache import StageCache
from migrate.torchlib_source.resolve import scan_torchlib
from migrate.model.dtypes import COMPLEX, canonical, format_set, named
from migrate.model.native import NativeFunctions
from migrate.pipeline import Options, Session
from migrate.show import show
from tests.conftest import seeded_cache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VARIANTS = FIXTURES / "torchlib_variants"
MALFORMED = FIXTURES / "torchlib_malformed"
NATIVE = FIXTURES / "torchlib_native_functions.yaml"

FLOAT = named("float16", "bfloat16", "float32", "float64")
REAL = named("int8", "int16", "int32", "int64") + FLOAT
ANY = named("bool", "uint8") + REAL


@pytest.fixture(scope="module")
def native() -> NativeFunctions:
    return NativeFunctions.load(NATIVE)


@pytest.fixture(scope="module")
def variants(native, tmp_path_factory):
    return scan_torchlib(VARIANTS, native, StageCache.at(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def malformed(native, tmp_path_factory):
    return scan_torchlib(MALFORMED, native, StageCache.at(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def show_cache(tmp_path_factory) -> Path:
    """One cache for the show tests: the release's facts, and the evidence the first show derives from them."""
    return seeded_cache(tmp_path_factory)


def _line_of(path: Path, text: str) -> int:
    """The 1-based line of the only line of ``path`` that contains ``text``."""
    (number,) = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return number


def _subsets(variable) -> dict[str, tuple]:
    return {e.where.split(" ")[1]: e.dtypes for e in variable.evidence}


def test_bool_and_float_mask_variants_unite_and_keep_their_subsets(variants):
    plan = variants.overloads["scaled_dot_product_attention"]
    mask = plan.variable_of("attn_mask")
    assert mask.binds == ("attn_mask",)
    assert mask.dtypes == canonical(named("bool") + FLOAT)
    assert _subsets(mask) == {
        "aten_scaled_dot_product_attention": FLOAT,
        "aten_scaled_dot_product_attention_bool_mask": named("bool"),
    }
    # query, key, value and the result are tied in both variants: one variable.
    shared = plan.variable_of("query")
    assert shared.binds == ("query", "key", "value", "return.0") and shared.dtypes == FLOAT
    assert len(shared.evidence) == 2 and shared is not mask
    path = VARIANTS / "ops" / "attention.py"
    bool_line = _line_of(path, "def aten_scaled_dot_product_attention_bool_mask") - 1
    assert f"ops/attention.py:{bool_line} aten_scaled_dot_product_attention_bool_mask" in {e.where for e in mask.evidence}


def test_complex_variant_adds_complex_dtypes_to_the_real_variables(variants):
    for overload, binds in (("add.Tensor", ("self", "other", "return.0")), ("add.Scalar", ("self", "return.0"))):
        (variable,) = variants.overloads[overload].variables
        assert variable.binds == binds  # add.Scalar's `other` is a Scalar: no dtype evidence
        assert variable.dtypes == canonical(REAL + COMPLEX)
        assert _subsets(variable) == {"aten_add": REAL, "aten_add_complex": COMPLEX}
    assert [r.function for r in variants.by_overload["add.Scalar"]] == ["aten_add", "aten_add_complex"]


def test_version_dependent_definitions_are_both_variants(variants):
    (variable,) = variants.overloads["chunk"].variables
    assert variable.binds == ("self", "return.0")  # Sequence[T] annotates the Tensor[] return
    assert variable.dtypes == ANY
    first, second = variants.by_overload["chunk"]
    assert first.condition == 'version_utils.torch_older_than("2.7.0")'
    assert second.condition == 'not (version_utils.torch_older_than("2.7.0"))'
    assert [e.dtypes for e in variable.evidence] == [ANY, REAL]  # TTensor via `tensor_typing.TTensor`, then TReal


def test_names_resolve_through_tuples_and_autogen_or_fall_into_categories(variants):
    assert set(variants.resolved) == {
        "aten::add.Scalar",
        "aten::add.Tensor",
        "aten::chunk",
        "aten::embedding_renorm",  # only an autogen: of embedding_renorm_
        "aten::neg",
        "aten::relu",
        "aten::scaled_dot_product_attention",
        "aten::topk",
        "aten::where.self",
    }
    assert variants.unresolved == {
        "aten: no default overload": ("aten::eq",),
        "aten: unknown operator": ("aten::getitem",),
        "other namespace: prims": ("prims::eq",),
    }
    # private=True is scanned but not registered, as onnxscript's registry does.
    (private,) = [r for r in variants.registrations if r.private]
    assert private.names == ("aten::view_as_real",) and "aten::view_as_real" not in variants.registered
    assert "view_as_real" not in variants.overloads


def test_slot_mapping_details(variants):
    renorm = variants.overloads["embedding_renorm"]
    assert renorm.variable_of("indices").dtypes == named("int64")  # a local TypeVar bound to INT64
    assert renorm.variable_of("self").binds == ("self", "return.0")
    topk = variants.overloads["topk"]  # tuple[TFloat, INT64] annotates the two returns
    assert topk.variable_of("return.0").binds == ("self", "return.0")
    assert topk.variable_of("return.1").dtypes == named("int64")
    assert variants.overloads["relu"].variables == ()  # TensorType: no constraint
    assert variants.overloads["neg"].variables == () and variants.unknown_annotations == ("SymbolicTensor",)
    where = variants.overloads["where.self"]
    assert where.variable_of("condition").dtypes == named("bool")
    assert where.variable_of("self").dtypes == ANY  # STRING has no torch dtype and drops out


def test_line_numbers_survive_an_unusual_layout(variants):
    """'def \\<newline> name' defeats the text search; the scan falls back to libcst positions."""
    path = VARIANTS / "ops" / "odd_layout.py"
    (registration,) = variants.by_overload["where.self"]
    assert registration.line == _line_of(path, '@torch_op("aten::where.self")')


def test_global_sets_from_every_typevar(variants):
    sets = {g.name: g for g in variants.global_sets}
    assert set(sets) == {"TFloat", "TIndex", "TReal", "TTensor", "TTensorOrString"}
    assert sets["TTensorOrString"].dtypes == sets["TTensor"].dtypes == ANY
    assert sets["TTensor"].desc == "Any tensor."
    assert sets["TIndex"].desc == "Indices of embedding rows (a local TypeVar, as ops/nn.py has one)."
    assert "tensor_typing.py:" in sets["TFloat"].desc


def test_malformed_modules_give_errors_naming_file_and_line_and_the_scan_goes_on(malformed):
    decorators = MALFORMED / "ops_decorator.py"
    syntax = MALFORMED / "ops_syntax.py"
    conflict, typing_module = MALFORMED / "ops_conflict.py", MALFORMED / "tensor_typing.py"
    errors = sorted(malformed.errors, key=lambda e: (str(e.path), e.line))
    assert [(Path(e.path), e.line, e.op) for e in errors] == [
        (decorators, _line_of(decorators, "@torch_op(RELU)"), "aten_relu"),
        (decorators, _line_of(decorators, "trace_only=bool(RELU)"), "aten_where"),
        (syntax, _line_of(syntax, "def aten_abs"), None),
        (typing_module, _line_of(typing_module, "TFloat ="), "TFloat"),
    ]
    assert "not a string literal or a tuple of string literals: RELU" in str(errors[0])
    assert "trace_only= is not a literal True or False" in str(errors[1])
    assert "syntax error" in str(errors[2])
    assert f"other dtypes than at ops_conflict.py:{_line_of(conflict, 'TFloat =')}" in str(errors[3])
    assert all("\n" not in str(e) for e in errors)
    # The good modules and the good function after the bad decorators are still scanned.
    assert set(malformed.resolved) == {"aten::abs", "aten::neg", "aten::relu"}
    assert malformed.overloads["neg"].variable_of("self").dtypes == named("float32", "float64")
    # Each module's annotations use its own TypeVar; the global set keeps the first module's.
    assert malformed.overloads["relu"].variable_of("self").dtypes == named("float16")
    assert [(g.name, g.dtypes) for g in malformed.global_sets] == [("TFloat", named("float16"))]


@pytest.mark.slow  # show derives the run's evidence in its cache
def test_show_prints_each_variant_subset(capsys, show_cache):
    args = (Session(Options(native_functions=NATIVE, torchlib=VARIANTS, cache_dir=show_cache)), "aten::scaled_dot_product_attention", True)
    assert show(*args) == 0
    out = capsys.readouterr().out
    path = VARIANTS / "ops" / "attention.py"
    line = _line_of(path, "def aten_scaled_dot_product_attention_bool_mask") - 1
    assert out.startswith(f"read {NATIVE}\nscaled_dot_product_attention(Tensor query")  # show says which yaml it read
    assert f"ops/attention.py:{line} aten_scaled_dot_product_attention_bool_mask (trace_only)" in out
    assert f"BOOL_or_TFloat {format_set(named('bool') + FLOAT)}: attn_mask" in out
    assert f"aten_scaled_dot_product_attention_bool_mask: {format_set(named('bool'))}" in out
    assert "scaled_dot_product_attention.out(" in out  # the autogen overload, which torchlib does not register


@pytest.mark.slow  # show derives the run's evidence in its cache
def test_show_all_overloads_of_a_name(capsys, show_cache):
    args = (Session(Options(native_functions=NATIVE, torchlib=VARIANTS, cache_dir=show_cache)), "add", False)
    show(*args)
    out = capsys.readouterr().out
    assert "add.Tensor(" in out and "add.Scalar(" in out
    assert "aten_add_complex (complex)" in out


def test_show_unknown_name_lists_close_matches(tmp_path):
    args = (Session(Options(native_functions=NATIVE, torchlib=VARIANTS, cache_dir=tmp_path)), "aten::scaled_dot_product_atention", False)
    with pytest.raises(InputError, match="close matches: scaled_dot_product_attention"):
        show(*args)


@pytest.mark.slow  # show derives the run's evidence in its cache
def test_show_names_sets_without_v(capsys, show_cache):
    args = (Session(Options(native_functions=NATIVE, torchlib=VARIANTS, cache_dir=show_cache)), "aten::scaled_dot_product_attention", False)
    assert show(*args) == 0
    out = capsys.readouterr().out
    assert "BOOL_or_TFloat TFloatingAndBoolHalfBFloat16: attn_mask" in out and "[torch." not in out


@pytest.mark.slow  # show reads the run's evidence (the default cache: cold, it fills it)
def test_show_names_a_set_as_the_run_writes_it_when_the_file_gives_torchlibs_name_another_set(capsys, tmp_path):
    """The target's type_constraints.yaml names TFloat another set: torchlib's TFloat no longer names its own set,
    in show as in the written yaml (the run composes the set's name, with Set added while it is taken)."""
    native = tmp_path / "native_functions.yaml"
    native.write_bytes(NATIVE.read_bytes())
    (tmp_path / "type_constraints.yaml").write_text("- name: TFloat\n  dtypes: [torch.int8]\n  desc: Another set of that name.\n")
    session = Session(Options(native_functions=native, torchlib=VARIANTS, evidence=("torchlib", "groups")))
    assert show(session, "aten::scaled_dot_product_attention", False) == 0
    out = capsys.readouterr().out
    floats = session.torchlib.overloads["scaled_dot_product_attention"].variable_of("query").dtypes
    assert session.set_name(floats) != "TFloat" and session.set_name(canonical(named("int8"))) == "TFloat"
    assert f"TFloat {session.set_name(floats)}: query, key, value" in out
    assert "TFloat: query" not in out  # what show printed before: the file's TFloat is int8
