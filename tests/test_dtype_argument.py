"""Returns a ``ScalarType`` argument sets: a constraint list that names the argument (``U: [torch.float32, dtype]``).

The form (parse, write, lower, lint, torchgen), the reader's errors, the plan, the runtime checker and
``accepts``, ``show``, the inference from the probe's facts, and the real written yaml's factories and
conversions at each of the 21 dtypes.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from migrate.check.checker import ARGUMENT_OUTSIDE_SET, OUTSIDE_SET, Declarations, DtypeViolation, call_check, checking, judge
from migrate.errors import InputError
from migrate.evidence.probe.dtype_arguments import DtypeArgument as ProbedArgument
from migrate.infer.dtype_arguments import with_dtype_arguments
from migrate.model.constraint import ConstraintError, ConstraintList, DtypeArgument
from migrate.model.declared import declared_variables
from migrate.model.dtypes import TENSOR_DTYPES, DType, named
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import OPINFO, TORCHLIB, Evidence, OverloadPlan, Plan, Variable
from migrate.write.native_functions import WRITTEN, apply_plan, lower
from tests.conftest import REAL_NATIVE_FUNCTIONS, annotated, changed_items, declaration_error, lint_round_trip

ZEROS = (
    "- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> T\n"
    "  type_constraints: {T: [torch.float32, dtype], dtype: [torch.float32, torch.int64]}\n"
)
TO_DTYPE = (
    "- func: to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> T(a)\n"
    "  type_constraints: {T: [dtype], dtype: [torch.float32, torch.int64, torch.bool]}\n"
)
REAL = ("to.device", "to.dtype", "_to_copy", "zeros", "full", "arange", "sum", "sum.dim_IntList")


# -- the form


@pytest.mark.parametrize(
    "text, dtypes, follows, argument",
    [
        ("[dtype]", (), (), "dtype"),
        ("[torch.float32, dtype]", ("float32",), (), "dtype"),
        ("[dtype, torch.int64, T]", ("int64",), ("T",), "dtype"),
        ("[torch.int64, T]", ("int64",), ("T",), ""),
    ],
)
def test_a_list_that_names_an_argument_parses_and_prints_back(text, dtypes, follows, argument):
    parsed = ConstraintList.parse(text, arguments={"dtype"})
    assert parsed == ConstraintList(named(*dtypes), follows, argument)
    assert ConstraintList.parse(str(parsed), arguments={"dtype"}) == parsed
    assert str(parsed).endswith(", ".join(sorted([*follows, *filter(None, [argument])])) + "]")


def test_a_list_names_one_argument_and_an_unknown_name_is_a_variable():
    with pytest.raises(ConstraintError, match="names the arguments dtype and out_dtype"):
        ConstraintList.parse("[dtype, out_dtype]", arguments={"dtype", "out_dtype"})
    assert ConstraintList.parse("[dtype]").follows == ("dtype",)  # without the schema's arguments: a variable


def test_the_reader_gives_the_variable_its_argument_and_the_argument_its_dtypes(tmp_path):
    native = annotated(tmp_path, ZEROS + TO_DTYPE)
    (zeros,) = declared_variables(native, native.entries[0], {})
    assert (zeros.dtypes, zeros.follows, zeros.argument) == (named("float32"), (), DtypeArgument("dtype", named("float32", "int64"), True))
    (to,) = declared_variables(native, native.entries[1], {})
    assert (to.dtypes, to.argument) == ((), DtypeArgument("dtype", named("bool", "float32", "int64"), False))
    assert str(to.constraint) == "[dtype]"


@pytest.mark.parametrize(
    "constraints, message",
    [
        ("{T: [torch.float32, dtyp], dtype: [torch.float32]}", "unresolved type variable dtyp in the list of T: neither a type variable, a ScalarType argument of the entry nor a global set"),
        ("{T: [torch.float32], dtype: [torch.float32]}", "states the dtypes of the argument dtype, which no list names"),
        ("{T: [torch.float32, dtype], dtype: [torch.float32, T]}", "the dtypes of the argument dtype must be a list of dtypes or a set name"),
        ("{T: [torch.float32, layout]}", "unresolved type variable layout in the list of T"),  # a Layout argument names no dtype
        ("{T: [torch.float32], layout: [torch.float32]}", "names layout, which no slot of the schema uses"),
    ],
)
def test_a_list_naming_what_the_entry_lacks_is_an_error_with_file_line_and_op(tmp_path, constraints, message):
    assert message in declaration_error(tmp_path, ZEROS, constraints)


def test_an_unstated_argument_names_any_dtype_and_a_bare_list_takes_its_dtypes_when_none(tmp_path):
    text = ZEROS.replace("{T: [torch.float32, dtype], dtype: [torch.float32, torch.int64]}", "{T: [dtype]}")
    native = annotated(tmp_path, text + TO_DTYPE.replace(", dtype: [torch.float32, torch.int64, torch.bool]", ""))
    (zeros,) = declared_variables(native, native.entries[0], {})
    assert zeros.argument == DtypeArgument("dtype", TENSOR_DTYPES, True) and zeros.dtypes == TENSOR_DTYPES  # optional: None takes them
    (to,) = declared_variables(native, native.entries[1], {})
    assert to.argument == DtypeArgument("dtype", TENSOR_DTYPES, False) and to.dtypes == ()  # required: no None case


def test_a_list_may_spell_its_dtypes_by_a_global_set_unless_a_variable_has_that_name(tmp_path):
    from migrate.model.plan import GlobalSet

    sets = {"TInts": GlobalSet("TInts", named("int32", "int64"))}
    native = annotated(tmp_path, ZEROS.replace("[torch.float32, dtype]", "[TInts, torch.float32, dtype]"))
    (zeros,) = declared_variables(native, native.entries[0], sets)
    assert (zeros.dtypes, zeros.follows) == (named("int32", "int64", "float32"), ())
    from migrate.model.global_sets import constraints_line

    planned = Variable("T", named("int32", "int64"), ("return.0",), argument=DtypeArgument("dtype", named("int64", "float32")))
    assert constraints_line(2, (planned,), sets) == "  type_constraints: {T: [TInts, dtype], dtype: [torch.int64, torch.float32]}"
    shadowed = (Variable("TInts", named("int64"), ("self",)), planned)
    assert "T: [torch.int32, torch.int64, dtype]" in constraints_line(2, shadowed, sets)


def test_the_plan_keeps_the_argument_in_json():
    variable = Variable("T", named("float32"), ("return.0",), argument=DtypeArgument("dtype", named("float32", "int64"), True))
    obj = variable.to_json()
    assert obj["argument"] == {"name": "dtype", "dtypes": ["torch.int64", "torch.float32"], "optional": True}
    assert Variable.from_json(obj) == variable
    plan = OverloadPlan("zeros", (variable,))
    assert plan.possible(variable) == named("float32", "int64")
    assert "argument" not in Variable("T", named("float32"), ("self",)).to_json()


# -- writing, lowering, torchgen


def _real_copy(tmp_path: Path) -> Path:
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS, path)
    shutil.copyfile(REAL_NATIVE_FUNCTIONS.with_name("tags.yaml"), tmp_path / "tags.yaml")
    return path


ANY_SET = TENSOR_DTYPES


def _plan() -> Plan:
    any_set = DtypeArgument("dtype", ANY_SET, False)
    return Plan(
        (),
        (
            OverloadPlan("to.dtype", (Variable("T", ANY_SET, ("self",)), Variable("U", (), ("return.0",), argument=any_set))),
            OverloadPlan("zeros", (Variable("T", named("float32"), ("return.0",), argument=DtypeArgument("dtype", ANY_SET, True)),)),
        ),
    )


def test_the_writer_writes_the_argument_after_the_variables_and_lower_gives_the_original_bytes(tmp_path):
    from migrate.compat import parse_native_yaml
    from migrate.model.named_sets import pytorch_spelling

    path = _real_copy(tmp_path)
    result = apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), _plan())
    assert {o.name: o.status for o in result.outcomes} == {"to.dtype": WRITTEN, "zeros": WRITTEN}
    written = result.native_functions.decode()
    spelled = pytorch_spelling(ANY_SET)  # more than four dtypes no global set names: PyTorch's spelling, where shorter
    assert f"  type_constraints: {{T: '{spelled}', U: [dtype]}}\n" in written  # an argument that may name any dtype has no key
    assert "  type_constraints: {T: [torch.float32, dtype]}\n" in written
    changed = changed_items(written, REAL_NATIVE_FUNCTIONS.read_text())
    assert lint_round_trip(changed) == changed
    path.write_bytes(result.native_functions)
    assert lower(NativeFunctions.load(path)).encode() == REAL_NATIVE_FUNCTIONS.read_bytes()
    again = apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), _plan())
    assert again.native_functions == result.native_functions
    parsed = parse_native_yaml(path, skip_native_fns_gen=True)  # torchgen reads the written file (lowered)
    assert {"to.dtype", "zeros"} <= {str(f.func.name) for f in parsed.native_functions}


def test_a_plan_naming_an_argument_the_schema_lacks_is_refused(tmp_path):
    path = _real_copy(tmp_path)
    plan = Plan((), (OverloadPlan("abs", (Variable("T", named("float32"), ("self", "return.0"), argument=DtypeArgument("dtype", ANY_SET)),)),))
    with pytest.raises(InputError, match="names dtype, which is not a ScalarType argument of the schema"):
        apply_plan(NativeFunctions.load(path), GlobalSetsFile.load(sibling_constraints_path(path)), plan)


# -- the runtime checker, accepts, show


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> Declarations:
    return Declarations.from_native(annotated(tmp_path_factory.mktemp("zeros"), ZEROS + TO_DTYPE))


def test_a_given_argument_sets_the_return_exactly_and_none_takes_the_other_members(declared):
    with checking(declared, collect=True) as checker:
        torch.ops.aten.zeros.default([2], dtype=torch.int64)
        torch.ops.aten.zeros.default([2])  # None: the default dtype, float32, the list's other member
        torch.ops.aten.to.dtype(torch.ones(2), torch.bool)
    assert checker.violations == ()
    check = call_check(declared, torch.ops.aten.zeros.default)
    (wrong,) = judge(check, ([2],), {"dtype": torch.int64}, torch.zeros(2, dtype=torch.float32))
    assert wrong.kind == OUTSIDE_SET
    assert str(wrong) == (
        "aten::zeros: return.0 has dtype torch.float32, but dtype=torch.int64 in this call sets T to torch.int64 alone "
        "(T = [torch.float32, dtype], declared at native_functions.yaml:2)"
    )
    assert judge(check, ([2],), {}, torch.zeros(2, dtype=torch.int64))  # None: int64 is no other member


def test_an_argument_outside_its_stated_dtypes_is_a_violation_before_the_kernel(declared):
    with pytest.raises(DtypeViolation) as raised, checking(declared):
        torch.ops.aten.zeros.default([2], dtype=torch.float64)
    (violation,) = raised.value.violations
    assert violation.kind == ARGUMENT_OUTSIDE_SET
    assert str(violation) == "aten::zeros: argument dtype is torch.float64, not in dtype = [torch.int64, torch.float32], declared at native_functions.yaml:2"


def test_the_checker_survives_pickling_with_arguments(declared):
    import pickle

    again = pickle.loads(pickle.dumps(declared))
    assert again.overloads == declared.overloads


def test_accepts_reads_a_dtype_argument(tmp_path):
    from migrate.api import load_declarations

    native = annotated(tmp_path, ZEROS + TO_DTYPE)
    loaded = load_declarations(native.path)
    assert loaded.accepts("zeros", dtype="int64", **{"return.0": "int64"})
    verdict = loaded.accepts("zeros", dtype="int64", **{"return.0": "float32"})
    assert not verdict and "dtype=torch.int64 in this call sets T to torch.int64 alone" in verdict.reason
    assert "T = [torch.float32, dtype]" in str(verdict)
    assert not loaded.accepts("to.dtype", self="float32", dtype="float64")


def test_show_prints_the_argument_and_its_dtypes(tmp_path, capsys):
    from migrate.cli import main

    native = annotated(tmp_path, ZEROS + TO_DTYPE)
    assert main(["show", "zeros", "--native-functions", str(native.path)]) == 0
    out = capsys.readouterr().out
    assert "return.0: T = [torch.float32, dtype] (1 of 21: float32) (exactly the dtype dtype names when given, else one of the list's other members)" in out
    assert "dtype = [torch.int64, torch.float32] (the dtypes the argument may name)" in out


# -- inference


def _fact(accepted: tuple[str, ...], refused: tuple[str, ...] = (), returned=None) -> ProbedArgument:
    rows = tuple((DType(d), (DType(returned or d),)) for d in accepted)
    return ProbedArgument("zeros", "dtype", ("return.0",), rows, tuple((DType(d), "refused") for d in refused))


ALL = tuple(d.name for d in TENSOR_DTYPES)


def test_a_return_that_is_the_argument_at_every_dtype_tried_follows_it():
    observed = OverloadPlan("zeros", (Variable("T", named("float32", "float64"), ("return.0",), (Evidence(OPINFO, "samples", named("float32", "float64"), ("return.0",)),)),))
    plan = with_dtype_arguments(observed, "zeros", _fact(ALL[:9], ALL[9:]), optional=True)
    (variable,) = plan.variables
    assert variable.argument == DtypeArgument("dtype", named(*ALL[:9]), True)
    assert variable.dtypes == named("float32", "float64")  # the None case: what other calls returned there
    annotated_too = replace(observed.variables[0], dtypes=named("float32", "float64", "int64"))
    annotated_too = replace(annotated_too, evidence=annotated_too.evidence + (Evidence(TORCHLIB, "ops/core.py:1 aten_zeros", named("int64"), ("return.0",)),))
    kept = with_dtype_arguments(replace(observed, variables=(annotated_too,)), "zeros", _fact(ALL[:9], ALL[9:]), optional=True)
    assert kept.variables[0].dtypes == named("float32", "float64")  # torchlib's annotation, which a run rewrites, is no call
    required = with_dtype_arguments(observed, "to.dtype", _fact(ALL), optional=False)
    assert required.variables[0].dtypes == () and required.variables[0].argument.dtypes == TENSOR_DTYPES


def test_a_refused_argument_rejects_only_a_return_that_is_its_value():
    """_rowwise_prune(weight, mask, compressed_indices_dtype) refuses float64 indices; its rows, which follow the
    weight, are not rejected at float64 for that."""
    rows = tuple((DType(d), (DType("float32"), DType(d))) for d in ("int32", "int64"))
    fact = ProbedArgument("_rowwise_prune", "compressed_indices_dtype", ("return.0", "return.1"), rows, ((DType("float64"), "refused"),))
    plan = with_dtype_arguments(None, "_rowwise_prune", fact, optional=False)
    rejected = {slot: [d.name for v in plan.variables if slot in v.binds for e in v.evidence if e.refused for d in e.dtypes] for slot in fact.returns}
    assert rejected == {"return.0": [], "return.1": ["float64"]}


def test_no_argument_where_a_dtype_was_not_tried_the_return_differs_or_the_schema_lacks_it():
    for fact, optional in ((_fact(ALL[:9]), True), (_fact(ALL, returned="float32"), True), (_fact(ALL), None)):
        plan = with_dtype_arguments(None, "zeros", fact, optional)
        assert plan.variables[0].argument is None
        assert plan.variables[0].dtypes  # the full set the argument produced, as before


def _unset(fact: ProbedArgument, cast: tuple[str, ...], returned: dict[str, str]) -> ProbedArgument:
    """``fact`` with calls that left the argument None, ``cast`` at each dtype of ``returned`` and returning its value."""
    return replace(fact, unset_cast=cast, unset=tuple((DType(d), (DType(r),)) for d, r in returned.items()))


def test_with_the_argument_none_a_return_of_the_inputs_dtype_follows_their_variable():
    self_variable = Variable("T", named(*ALL), ("self",))
    observed = OverloadPlan("_to_copy", (self_variable, Variable("R", named("float32"), ("return.0",))))
    fact = _unset(_fact(ALL), ("self",), {d: d for d in ALL})
    plan = with_dtype_arguments(observed, "_to_copy", fact, optional=True, numbers=False)
    returned = plan.variables[1]
    assert (returned.dtypes, returned.follows, returned.argument.name) == ((), ("T",), "dtype")
    assert plan.possible(returned) == named(*ALL)  # uint16 and float8 too, which no sample returned


def test_with_the_argument_none_a_return_that_moves_takes_what_those_calls_returned_unless_a_number_may_set_it():
    seen = named("int32", "int64", "float32")
    observed = OverloadPlan("sum", (Variable("T", named("int32", "float32"), ("self",)), Variable("R", seen, ("return.0",), (Evidence(OPINFO, "samples", seen, ("return.0",)),))))
    fact = _unset(_fact(ALL), ("self",), {"int32": "int64", "int64": "int64", "float32": "float32"})
    plan = with_dtype_arguments(observed, "sum", fact, optional=True, numbers=False)
    assert (plan.variables[1].dtypes, plan.variables[1].follows) == (named("int64", "float32"), ())  # never int32 without dtype=
    full = with_dtype_arguments(observed, "full", fact, optional=True, numbers=True)
    assert full.variables[1].dtypes == named("int32", "int64", "float32")  # full(size, True) is bool: the calls' one fill value says too little


def test_a_reduction_whose_calls_with_the_argument_none_sum_integers_in_int64_promotes_and_its_return_follows():
    from migrate.infer.dtype_arguments import returns_following_the_promotion
    from migrate.infer.promotion_findings import reduction_findings
    from migrate.infer.promotion_sets import with_promotion
    from migrate.model.promotion import Promotion

    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    seen = named("int8", "int64", "float32")
    observed = OverloadPlan("sum", (Variable("T", named(*ALL), ("self",)), Variable("R", seen, ("return.0",), (Evidence(OPINFO, "samples", seen, ("return.0",)),))))
    fact = replace(_unset(_fact(ALL), ("self",), {"int8": "int64", "int64": "int64", "float16": "float16", "float32": "float32"}), overload="sum")
    (finding,) = reduction_findings(native, {"sum": fact}).values()
    assert finding.promotion == Promotion("int_to_long", ("self",))
    plan = with_dtype_arguments(observed, "sum", fact, optional=True, numbers=False)
    plan = returns_following_the_promotion(with_promotion(plan, finding), fact)
    promoted, returned = plan.variable_of("self"), plan.variable_of("return.0")
    assert promoted.dtypes == named("int64", "float16", "float32")  # int8 is computed in int64, never in itself
    assert (returned.dtypes, returned.follows, returned.argument.name) == ((), (promoted.name,), "dtype")
    # a return of one dtype whatever the tensor's, or of the tensor's own alone, is no such promotion
    constant = _unset(_fact(ALL), ("self",), {"int8": "int64", "float32": "int64"})
    own = _unset(_fact(ALL), ("self",), {"int64": "int64", "float32": "float32"})
    assert reduction_findings(native, {"sum": replace(constant, overload="sum"), "prod": replace(own, overload="prod")}) == {}


# -- the real written yaml


@pytest.fixture(scope="module")
def real_written(tmp_path_factory) -> Path:
    from migrate.cli import main

    out = tmp_path_factory.mktemp("dtype-argument") / "out"
    ops = [item for name in ("to", "_to_copy", "zeros", "full", "arange", "sum") for item in ("--op", name)]
    assert main(["--out", str(out), "--yaml-only", *ops]) == 0
    return out / "native_functions.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("overload", REAL)
def test_the_real_written_yaml_admits_every_dtype_aten_ran_and_nothing_else(real_written, overload):
    from bench.dtype_argument_calls import checked

    row = checked(Declarations.load(real_written), overload)
    assert len(row.ran) + len(row.refused) == 21 and row.ran
    assert row.violations == ()
    assert row.flagged == row.ran  # each call, had it returned another dtype, is a violation
    if overload == "arange":
        with pytest.raises(DtypeViolation, match="argument dtype is torch.complex64, not in dtype = ") as raised:
            with checking(real_written):
                torch.ops.aten.arange.default(5, dtype=torch.complex64)
        assert "ATen refuses it too" in str(raised.value)
