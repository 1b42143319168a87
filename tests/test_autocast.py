"""Autocast policy: observed on the installed torch, written as one line per entry, lowered away, generated back to C++."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from migrate.cache import StageCache
from migrate.audit.autocast import contradictions, settled
from migrate.evidence.autocast.policies import autocast_policies, classify
from migrate.autocast_source import SHARED_LISTS, installed_header, read_registrations, shared_lists
from migrate.infer.run import with_autocast
from migrate.model.autocast import declared_autocast
from migrate.model.dtypes import named
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.plan import OverloadPlan, Plan, Variable
from migrate.write.autocast_gen import generate
from migrate.write.native_functions import NOT_PLANNED, UNCHANGED, WRITTEN, apply_plan, lower
from tests.conftest import REAL_NATIVE_FUNCTIONS, changed_items, lint_round_trip, run_cli


@pytest.fixture(scope="module")
def evidence():
    return autocast_policies(NativeFunctions.load(REAL_NATIVE_FUNCTIONS).by_name, StageCache.at())


def _triples(evidence) -> set[tuple[str, str, str]]:
    return {(p.key, name, p.policy) for name, found in evidence.policies.items() for p in found}


def _annotated(path: Path, evidence, extra: tuple[OverloadPlan, ...] = ()):
    native = NativeFunctions.load(path)
    plan = with_autocast(Plan((), extra), {name: evidence.of(name) for name in evidence.policies})
    return apply_plan(native, GlobalSetsFile.load(sibling_constraints_path(path)), plan)


def test_every_cpu_registration_has_a_policy_an_observed_run_shows(evidence):
    cpu = {name for name, found in evidence.policies.items() for p in found if p.key == "CPU"}
    assert cpu == set(evidence.registrations["CPU"])
    assert all(p.observed and p.source == "observed" for found in evidence.policies.values() for p in found if p.key == "CPU")
    assert {p.key: p.policy for p in evidence.policies["mm"]}["CPU"] == "lower_precision_fp"
    assert {p.key: p.policy for p in evidence.policies["prod"]}["CPU"] == "fp32"
    assert {p.key: p.policy for p in evidence.policies["cat"]}["CPU"] == "promote"
    assert "mm(self: float32 -> bfloat16, mat2: float32 -> bfloat16)" in evidence.policies["mm"][0].observed


def test_cuda_policies_match_the_headers_shared_lists_and_bce_is_banned(evidence):
    cuda = {name: p.policy for name, found in evidence.policies.items() for p in found if p.key == "CUDA"}
    assert set(cuda) == set(evidence.registrations["CUDA"])
    assert cuda["binary_cross_entropy"] == "banned"
    for macro, items in shared_lists(installed_header().read_text()).items():
        for item in items:
            assert cuda[item.overload] == (item.policy or SHARED_LISTS[macro]), item
    assert cuda["norm.Scalar"] == "fp32_append_dtype" and cuda["sum"] == "fp32_set_opt_dtype" and cuda["index_put"] == "promote"


def test_a_key_no_run_settles_is_reported_and_not_written(evidence):
    settled_keys = {p.key for found in evidence.policies.values() for p in found}
    for unresolved in evidence.unresolved:
        assert unresolved.key not in settled_keys or unresolved.overload not in evidence.policies
        assert all(p.key != unresolved.key for p in evidence.policies.get(unresolved.overload, ()))


def test_classify_reads_each_policy_from_the_runs():
    lowered = {"reached": "mm", "dtypes": {"self": "torch.bfloat16"}, "dtype_argument": None}
    assert classify("mm", {"float32": lowered}, "torch.bfloat16")[0] == "lower_precision_fp"
    raised = {"reached": "prod", "dtypes": {"self": "torch.float32"}, "dtype_argument": None}
    assert classify("prod", {"float32": raised, "lower": raised}, "torch.bfloat16")[0] == "fp32"
    unchanged = {"reached": "cat", "dtypes": {"tensors": ["torch.bfloat16", "torch.bfloat16"]}, "dtype_argument": None}
    promoted = {"reached": "cat", "dtypes": {"tensors": ["torch.float32", "torch.float32"]}, "dtype_argument": None}
    assert classify("cat", {"float32": promoted, "lower": unchanged}, "torch.bfloat16")[0] is None  # promote needs mixed inputs
    assert classify("cat", {"float32": promoted, "lower": unchanged, "mixed": promoted}, "torch.bfloat16")[0] == "promote"
    opt = {"reached": "sum", "dtypes": {"self": "torch.float16"}, "dtype_argument": "torch.float32"}
    assert classify("sum", {"lower": opt}, "torch.float16")[0] == "fp32_set_opt_dtype"
    appended = {"reached": "norm.ScalarOpt_dtype", "dtypes": {"self": "torch.float16"}, "dtype_argument": "torch.float32"}
    assert classify("norm.Scalar", {"lower": appended}, "torch.float16")[0] == "fp32_append_dtype"
    banned = {"error": "RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast."}
    assert classify("binary_cross_entropy", {"float32": banned}, "torch.float16")[0] == "banned"


def test_annotated_entries_per_key_equal_the_dispatchers_registrations_and_lower_gives_the_bytes_back(real_copy, evidence):
    original = real_copy.read_bytes()
    result = _annotated(real_copy, evidence)
    real_copy.write_bytes(result.native_functions)
    written = NativeFunctions.load(real_copy)
    declared = {(key, e.name, policy) for e in written.entries for key, policy in declared_autocast(written, e)}
    assert declared == _triples(evidence)
    for key, names in evidence.registrations.items():
        if any(p.key == key for found in evidence.policies.values() for p in found):
            assert {name for k, name, _ in declared if k == key} == set(names), key
    assert {o.status for o in result.outcomes} == {NOT_PLANNED} and {o.autocast for o in result.outcomes} == {WRITTEN}
    assert lower(written).encode() == original
    changed = changed_items(result.native_functions.decode(), original.decode())
    assert lint_round_trip(changed) == changed
    assert max(len(line) for line in changed.splitlines() if line.startswith("  autocast:")) <= 160


def test_the_line_follows_type_constraints_and_a_second_run_changes_nothing(real_copy, evidence):
    variables = (Variable("T", named("bfloat16", "float32"), ("self", "mat2", "return.0")),)
    typed = OverloadPlan("mm", variables)
    result = _annotated(real_copy, evidence, (typed,))
    lines = result.native_functions.decode().splitlines()
    at = lines.index("- func: mm(T self, T mat2) -> T")
    assert lines[at + 1] == "  type_constraints: {T: [torch.bfloat16, torch.float32]}"
    assert lines[at + 2].startswith("  autocast: {CPU: lower_precision_fp, CUDA: lower_precision_fp")
    real_copy.write_bytes(result.native_functions)
    again = _annotated(real_copy, evidence, (typed,))
    assert again.native_functions == result.native_functions
    assert {o.autocast for o in again.outcomes} == {UNCHANGED}


def test_a_hand_written_policy_is_kept_unless_overwrite(real_copy, evidence):
    text = real_copy.read_text().replace("- func: mm(Tensor self, Tensor mat2) -> Tensor\n", "- func: mm(Tensor self, Tensor mat2) -> Tensor\n  autocast: {CPU: fp32}\n")
    real_copy.write_text(text)
    result = _annotated(real_copy, evidence)
    mm = next(o for o in result.outcomes if o.name == "mm")
    assert mm.autocast == "kept" and mm.conflicts[-1].kind == "hand-written-autocast-kept"
    assert "- func: mm(Tensor self, Tensor mat2) -> Tensor\n  autocast: {CPU: fp32}\n" in result.native_functions.decode()


def test_autocast_gen_round_trip_equals_the_registrations_and_the_policies_read(real_copy, evidence):
    real_copy.write_bytes(_annotated(real_copy, evidence).native_functions)
    header = installed_header().read_text()
    text, skipped = generate(NativeFunctions.load(real_copy), header)
    assert skipped == []
    generated = read_registrations(text, header, "generated.cpp")
    assert len(generated) == len({(r.key, r.overload, r.policy) for r in generated})  # nothing registered twice
    assert {(r.key, r.overload, r.policy) for r in generated} == _triples(evidence)
    for key in {r.key for r in generated}:
        assert {r.overload for r in generated if r.key == key} == set(evidence.registrations[key])
    cuda = text[text.index("TORCH_LIBRARY_IMPL(aten, AutocastCUDA, m)") :]
    assert "AT_FORALL_LOWER_PRECISION_FP(_KERNEL_CUDA_LOWER_PRECISION_FP)" in cuda
    assert "AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_CUDA)" in cuda
    cpu = text[text.index("TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)") : text.index("TORCH_LIBRARY_IMPL(_, AutocastCUDA")]
    assert "KERNEL_CPU(mm, lower_precision_fp)" in cpu and "AT_FORALL" not in cpu  # CPU's policies are no shared list's


def test_the_source_reader_reads_autocast_mode_cpp_blocks():
    header = installed_header().read_text()
    cpp = """
TORCH_LIBRARY_IMPL(aten, Autocast, m) {
  // lower_precision_fp
#define _KERNEL_CUDA_LOW_PRECISION_FP(...) \\
  KERNEL_CUDA(__VA_ARGS__, lower_precision_fp)

  AT_FORALL_LOWER_PRECISION_FP(_KERNEL_CUDA_LOW_PRECISION_FP)
  KERNEL_CUDA(cudnn_convolution, lower_precision_fp)
  // KERNEL_CUDA(norm, ScalarOpt_dtype, fp32_set_opt_dtype)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(
      KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_CUDA)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN((&at::autocast::binary_cross_entropy_banned)));
}
TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) {
  KERNEL_CPU(conv1d, padding, lower_precision_fp)
  KERNEL_CPU(prod, fp32)
}
"""
    found = {(r.key, r.overload, r.policy) for r in read_registrations(cpp, header)}
    assert ("CUDA", "mm", "lower_precision_fp") in found and ("CUDA", "conv_transpose2d.input", "lower_precision_fp") in found
    assert ("CUDA", "cudnn_convolution", "lower_precision_fp") in found and ("CUDA", "norm.ScalarOpt_dim", "fp32_append_dtype") in found
    assert ("CUDA", "binary_cross_entropy", "banned") in found and ("CUDA", "norm.ScalarOpt_dtype", "fp32_set_opt_dtype") not in found
    assert ("CPU", "conv1d.padding", "lower_precision_fp") in found and ("CPU", "prod", "fp32") in found


def test_a_declaration_lacking_the_autocast_dtype_is_a_contradiction_settled_by_a_run(real_copy, evidence):
    narrow = (OverloadPlan("mm", (Variable("T", named("float16", "float32"), ("self", "mat2", "return.0")),)),)
    real_copy.write_bytes(_annotated(real_copy, evidence, narrow).native_functions)
    native = NativeFunctions.load(real_copy)
    found = contradictions(native, GlobalSetsFile.load(sibling_constraints_path(real_copy)).by_name, evidence.dtypes)
    assert {(c.key, c.overload, c.policy, c.missing) for c in found} == {("CPU", "mm", "lower_precision_fp", "torch.bfloat16")}
    (cpu,) = settled(found)
    assert cpu.settled.startswith("the kernel took it")  # mm runs in bfloat16 on CPU: the declaration is wrong
    assert "mm" in str(replace(cpu, settled=""))


def test_a_mask_that_follows_its_query_takes_the_autocast_dtype_with_it(real_copy, evidence):
    """sdpa under autocast: the query and the mask are both cast to bfloat16; the mask follows the query, no contradiction."""
    floats = named("float16", "bfloat16", "float32", "float64")
    query = Variable("Q", floats, ("query", "key", "value", "return.0"))
    mask = Variable("M", named("bool", "float32"), ("attn_mask",), follows=("Q",))
    plan = (OverloadPlan("scaled_dot_product_attention", (query, mask)),)
    real_copy.write_bytes(_annotated(real_copy, evidence, plan).native_functions)
    native = NativeFunctions.load(real_copy)
    found = contradictions(native, GlobalSetsFile.load(sibling_constraints_path(real_copy)).by_name, evidence.dtypes)
    assert [c for c in found if c.overload == "scaled_dot_product_attention"] == []


def test_autocast_gen_command_writes_the_cpu_block(real_copy, evidence, capfd, tmp_path):
    real_copy.write_bytes(_annotated(real_copy, evidence).native_functions)
    out = tmp_path / "autocast.cpp"
    code, _, err = run_cli(capfd, "autocast-gen", real_copy, "--key", "CPU", "-o", out)
    assert code == 0 and err == ""
    text = out.read_text()
    assert "TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)" in text and "AutocastCUDA" not in text
    assert text.count("KERNEL_CPU(") == len(evidence.registrations["CPU"])


def test_a_source_tree_gives_the_policy_and_a_disagreeing_observation_is_reported(tmp_path):
    tree = tmp_path / "aten" / "src" / "ATen"
    tree.mkdir(parents=True)
    (tree / "autocast_mode.h").write_text(installed_header().read_text())
    (tree / "autocast_mode.cpp").write_text(
        "TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) {\n  KERNEL_CPU(mm, fp32)\n  KERNEL_CPU(prod, fp32)\n  KERNEL_CPU(erfinv, fp32)\n}\n"
    )
    evidence = autocast_policies(NativeFunctions.load(REAL_NATIVE_FUNCTIONS).by_name, StageCache.at(), source=tmp_path)
    cpu = {name: p for name, found in evidence.policies.items() for p in found if p.key == "CPU"}
    assert "mm" not in cpu  # the tree says fp32, the run shows lower_precision_fp: not written, reported
    assert any(u.key == "CPU" and u.overload == "mm" and "autocast_mode.cpp:2 says fp32" in u.reason for u in evidence.unresolved)
    assert cpu["prod"].source == "autocast_mode.cpp:3" and cpu["prod"].observed  # read, and confirmed by the run
    assert cpu["cat"].source == "observed"  # the tree does not list it: the observed run gives it
    assert any(d.startswith("CPU mm: autocast_mode.cpp:2 says fp32, the observed run shows lower_precision_fp") for d in evidence.disagreements)
    assert any(d.startswith("CPU erfinv: autocast_mode.cpp:4 registers fp32; the installed torch's dispatcher does not") for d in evidence.disagreements)
