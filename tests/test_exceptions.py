"""``type_exceptions:``: a variable's set on a path of the kernel a named condition singles out (issue 52, index_put).

The form (parse, write, lower, lint), the reader's errors, the runtime checker on real calls, the inference from
probe evidence, and the real full run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from migrate.check.checker import Declarations, DtypeViolation, checking
from migrate.cli import main
from migrate.errors import InputError
from migrate.infer.exceptions import with_masked_fill
from migrate.model.declared import declared_with_backends
from migrate.model.dtypes import TENSOR_DTYPES, named
from migrate.model.exceptions import MASKED_FILL, TypeException, TypeExceptions
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import PROBE, Evidence, GlobalSet, OverloadPlan, Plan, Variable
from migrate.model.schema import TypedSchema
from migrate.model.verdict import ACCEPTED, PROBE_CALL, Verdict
from migrate.evidence.sites import seen_on
from migrate.write.native_functions import apply_plan, lower
from tests.conftest import annotated, lint_round_trip

SCHEMA = "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor"
PLAIN = f"- func: {SCHEMA}\n  variants: function, method\n"
DECLARED = (
    "- func: index_put(T self, U?[] indices, V values, bool accumulate=False) -> T\n"
    "  type_constraints: {T: TAny, U: [torch.bool, torch.int64], V: [self.dtype]}\n"
    "  type_exceptions: {masked_fill: {V: TAny}}\n"
    "  variants: function, method\n"
)
ANY = GlobalSet("TAny", TENSOR_DTYPES)


def _plan() -> OverloadPlan:
    values = Variable("V", (), ("values",), follows=("T",), exceptions=(TypeException(MASKED_FILL.name, TENSOR_DTYPES),))
    return OverloadPlan("index_put", (Variable("T", TENSOR_DTYPES, ("self", "return.0")), Variable("U", named("bool", "int64"), ("indices",)), values))


# -- the form


def test_the_line_round_trips_and_refuses_an_unknown_condition():
    stated = TypeExceptions.from_mapping({"masked_fill": {"V": "TAny"}})
    assert stated.line(2) == "  type_exceptions: {masked_fill: {V: TAny}}"
    with pytest.raises(ValueError, match="unknown condition 'nonzero_fill' in 'type_exceptions:' \\(known: masked_fill\\)"):
        TypeExceptions.from_mapping({"nonzero_fill": {"V": "TAny"}})


def test_the_writer_writes_the_line_after_type_constraints_and_lower_gives_the_original_bytes(tmp_path):
    path = tmp_path / "native_functions.yaml"
    path.write_text(PLAIN)
    result = apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), Plan((ANY,), (_plan(),)))
    text = result.native_functions.decode()
    assert text == DECLARED
    assert lint_round_trip(text) == text
    path.write_text(text)
    assert lower(NativeFunctions.load(path)) == PLAIN
    again = apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), Plan((ANY,), (_plan(),)))
    assert again.native_functions.decode() == text


def test_the_reader_reads_the_set_under_the_condition(tmp_path):
    native = annotated(tmp_path, DECLARED)
    values = declared_with_backends(native, native.entries[0], {"TAny": ANY})[2]
    assert (values.follows, values.exceptions) == (("T",), (TypeException("masked_fill", TENSOR_DTYPES),))


@pytest.mark.parametrize(
    "line, message",
    [
        ("{masked_fill: {W: TAny}}", "'type_exceptions:' masked_fill names W, no type variable of the entry"),
        ("{masked_fill: {V: TNothing}}", "'type_exceptions:' masked_fill V: unresolved set TNothing"),
        ("{fill: {V: TAny}}", "unknown condition 'fill' in 'type_exceptions:' (known: masked_fill)"),
    ],
)
def test_a_bad_line_is_an_error_with_file_line_and_op(tmp_path, line, message):
    native = annotated(tmp_path, DECLARED.replace("{masked_fill: {V: TAny}}", line))
    with pytest.raises(InputError) as raised:
        declared_with_backends(native, native.entries[0], {"TAny": ANY})
    assert str(raised.value) == f"{native.path}:3: index_put: {message}"


def test_a_condition_reading_arguments_the_schema_lacks_is_an_error(tmp_path):
    entry = "- func: index_put(T self, U?[] indices, V values) -> T\n  type_constraints: {T: TAny, U: [torch.bool], V: [self.dtype]}\n  type_exceptions: {masked_fill: {V: TAny}}\n"
    native = annotated(tmp_path, entry)
    with pytest.raises(InputError, match=r":3: index_put: 'type_exceptions:' masked_fill reads the argument accumulate, which the schema lacks$"):
        declared_with_backends(native, native.entries[0], {"TAny": ANY})


# -- the checker, on real calls


@pytest.fixture(scope="module")
def index_put_declared(tmp_path_factory) -> Declarations:
    listed = DECLARED.replace("T: TAny", "T: [torch.float32]").replace("{V: TAny}", "{V: [torch.int64, torch.float32, torch.float64]}")
    return Declarations.from_native(annotated(tmp_path_factory.mktemp("index_put"), listed))


MASK = torch.tensor([True, False, True])


@pytest.mark.parametrize(
    "indices, values, accumulate",
    [([MASK], torch.tensor(2.0, dtype=torch.float64), False), ([MASK], torch.tensor([7]), False), ([torch.tensor([0, 2])], torch.ones(4), False)],
)
def test_a_one_element_value_through_one_bool_mask_is_declared_at_any_dtype(index_put_declared, indices, values, accumulate):
    with checking(index_put_declared, collect=True) as checker:
        torch.ops.aten.index_put(torch.zeros(3, 4), indices, values, accumulate)
    assert checker.violations == ()


@pytest.mark.parametrize(
    "indices, values, accumulate",
    [
        ([torch.tensor([0, 2])], torch.tensor(2.0, dtype=torch.float64), False),  # an integer index takes no masked_fill
        ([MASK], torch.ones(4, dtype=torch.float64), False),  # a row of values is no one element
        ([MASK], torch.tensor(2.0, dtype=torch.float64), True),  # accumulate takes no masked_fill
    ],
)
def test_values_of_another_dtype_off_that_path_are_a_violation_aten_refuses_too(index_put_declared, indices, values, accumulate):
    with pytest.raises(DtypeViolation, match="argument values has dtype torch.float64, not in V = \\[T\\].*Index put requires the source and destination dtypes match"):
        with checking(index_put_declared):
            torch.ops.aten.index_put(torch.zeros(3, 4), indices, values, accumulate)


# -- the inference


def _values_probe(beside: tuple[str, ...], dtypes: tuple[str, ...], gate: str = "") -> Evidence:
    site = seen_on(PROBE_CALL, "values cast alone", cast=("values",), beside=beside, gate=gate)
    return Evidence(PROBE, "", named(*dtypes), ("values",), 1, Verdict(ACCEPTED, site))


ONE_ELEMENT = _values_probe(("self float32", "indices bool"), ("bool", "int64", "float64"), gate="values 0-dim")
OWN = (_values_probe(("self float32", "indices int64"), ("float32",)), _values_probe(("self float16", "indices bool"), ("float16",)))


def _merged(*evidence: Evidence) -> OverloadPlan:
    self = Variable("T", named("float16", "float32"), ("self", "return.0"))
    return OverloadPlan("index_put", (self, Variable("U", named("bool", "int64"), ("indices",)), Variable("V", TENSOR_DTYPES, ("values",), evidence)))


def test_values_that_took_self_s_dtype_alone_but_any_as_one_element_through_a_mask_follow_self_but_there():
    values = with_masked_fill(_merged(*OWN, ONE_ELEMENT), TypedSchema.parse(SCHEMA)).variables[2]
    assert (values.dtypes, values.follows, values.exceptions) == ((), ("T",), (TypeException("masked_fill", TENSOR_DTYPES),))


@pytest.mark.parametrize(
    "evidence",
    [
        (*OWN,),  # nothing shows the other path
        (ONE_ELEMENT,),  # nothing shows the rule off it
        (*OWN, ONE_ELEMENT, _values_probe(("self float32", "indices int64"), ("float32", "float64"))),  # another dtype off the path
        (*OWN, ONE_ELEMENT, _values_probe(("self float32", "indices int64"), ("float64", "bool"), gate="values 0-dim")),
    ],
)
def test_no_exception_where_the_evidence_says_otherwise(evidence):
    plan = _merged(*evidence)
    assert with_masked_fill(plan, TypedSchema.parse(SCHEMA)) == plan
    assert with_masked_fill(_merged(*OWN, ONE_ELEMENT), TypedSchema.parse(SCHEMA.replace(", bool accumulate=False", ""))) == _merged(*OWN, ONE_ELEMENT)


# -- the real full run


@pytest.mark.slow
@pytest.mark.parametrize(
    "func, values",
    [
        ("index_put(T self, U?[] indices, V values, bool accumulate=False) -> T", "V"),
        ("index_put_(T(a!) self, U?[] indices, V values, bool accumulate=False) -> T(a!)", "V"),  # the sibling's values follow its own self
        ("_unsafe_index_put(T self, U?[] indices, V values, bool accumulate=False) -> T", "V"),  # the catalogue's calls through a mask
        ("_index_put_impl_(T(a!) self, Tensor?[] indices, U values, bool accumulate=False, bool unsafe=False) -> T(a!)", "U"),
    ],
)
def test_the_index_put_kernel_s_values_are_self_s_dtype_but_through_a_mask(full_run: Path, func, values):
    lines = (full_run / "native_functions.yaml").read_text().splitlines()
    at = lines.index(f"- func: {func}")
    assert lines[at + 1].endswith(f"{values}: [self.dtype]}}") and lines[at + 2] == f"  type_exceptions: {{masked_fill: {{{values}: TAny}}}}"


@pytest.mark.slow
def test_show_prints_the_set_on_the_path(full_run: Path, capfd):
    assert main(["show", "index_put", "--native-functions", str(full_run / "native_functions.yaml")]) == 0
    shown = capfd.readouterr().out
    assert "    values: V = [self.dtype] (or the dtype T has in the call)\n" in shown
    assert "      where the call takes masked_fill (one bool mask, values of one element, accumulate False): TAny (all 21)\n" in shown
