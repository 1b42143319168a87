"""One kernel, one declaration: the overloads of a ``structured_delegate`` family run one kernel per backend, so on CPU
and on CUDA the functional and its out= allow the same dtypes at each input they share, and the in-place the
functional's dtypes whose result casts back into ``self``. Checked over the real full run, every family."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.model.declared import declared_promotion, declared_with_backends
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.model.promotion import INT_TO_LONG
from tests.conftest import report_of

pytestmark = pytest.mark.slow  # the full run

BACKENDS = ("CPU", "CUDA")


def _families(native: NativeFunctions) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entry in native.entries:
        delegate = native.fields(entry).get("structured_delegate")
        if delegate in native.by_name:
            found.setdefault(delegate, []).append(entry.name)
    return found


def _sets(native: NativeFunctions, sets, name: str) -> tuple[dict[str, dict[str, frozenset]], dict[str, str]]:
    """Per slot, each backend's dtypes; and per slot, its variable's name. A tensor a reduction's ``int_to_long``
    promotes takes any dtype: a ``dtype=`` given casts it first (``cumsum(float8 tensor, 0, dtype=torch.float32)``),
    as its in-place and out= siblings, which compute in the tensor they write into, take it."""
    per_slot, variable_of = {}, {}
    promotion = declared_promotion(native, native.by_name[name])
    for variable in declared_with_backends(native, native.by_name[name], sets):
        stated = {b.key: frozenset(b.dtypes) for b in variable.backends}
        for slot in variable.binds:
            per_slot[slot] = {key: stated.get(key, frozenset(variable.dtypes)) for key in BACKENDS}
            if promotion is not None and promotion.kind == INT_TO_LONG and slot in promotion.args:
                per_slot[slot] = dict.fromkeys(BACKENDS, frozenset(TENSOR_DTYPES))
            variable_of[slot] = variable.name
    return per_slot, variable_of


def _is_inplace(name: str) -> bool:
    return name.split(".")[0].endswith("_")


def test_every_structured_delegate_family_declares_one_kernels_dtypes(full_run: Path):
    path = full_run / "native_functions.yaml"
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(sibling_constraints_path(path)).by_name
    families = _families(native)
    assert len(families) >= 270
    disagreeing, inplace_checked = {}, 0
    for out, members in families.items():
        out_sets, _ = _sets(native, sets, out)
        for functional in (m for m in members if not _is_inplace(m)):
            own, variable_of = _sets(native, sets, functional)
            for slot, backends in own.items():
                if slot.startswith("return.") or slot not in out_sets:
                    continue
                for key in BACKENDS:
                    if backends[key] != out_sets[slot][key]:
                        disagreeing.setdefault((out, slot), set()).add(key)
            for inplace in (m for m in members if _is_inplace(m)):
                mutated, _ = _sets(native, sets, inplace)
                if "self" not in mutated or "self" not in own:
                    continue
                same_result = variable_of.get("return.0") == variable_of["self"]  # the result is self's dtype: it casts back
                for key in BACKENDS:
                    inplace_checked += 1
                    if same_result:
                        assert mutated["self"][key] == own["self"][key], (inplace, functional, key)
                    else:
                        assert mutated["self"][key] <= own["self"][key], (inplace, functional, key)
    assert inplace_checked > 200
    assert disagreeing == {}, sorted(disagreeing)


OUT_INPUTS = {  # (out=, an input its own calls cast together with the out tensor): ATen's message names the out tensor
    ("lerp.Tensor_out", "weight"): "Found dtype Bool but expected Float",
    ("nll_loss_backward.grad_input", "total_weight"): "Expected out tensor to have dtype float, but got bool instead",
    ("upsample_bicubic2d_backward.grad_input", "grad_output"): "Expected out tensor to have dtype float, but got bool instead",
    ("_upsample_bilinear2d_aa.out", "self"): "Expected out tensor to have dtype float, but got bool instead",
}


@pytest.mark.parametrize("overload, slot", sorted(OUT_INPUTS))
def test_an_input_an_out_overload_only_reads_takes_the_functionals_dtypes_not_the_out_tensors(full_run: Path, overload, slot):
    """Its own calls cast the input together with ``out`` and ATen refused the out tensor; one kernel reads the input."""
    path = full_run / "native_functions.yaml"
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(sibling_constraints_path(path)).by_name
    functional = native.groups[overload].of_kind("functional")[0]
    ours, ours_variable = _sets(native, sets, overload)
    theirs, _ = _sets(native, sets, functional)
    written = [s.name for s in native.by_name[overload].schema.slots if not s.is_return and "!" in s.alias]
    assert ours[slot] == theirs[slot] and ours_variable[slot] != ours_variable[written[0]]
    report = report_of(full_run)
    (plan,) = [o for o in report["overloads"] if o["name"] == overload]
    (out,) = [v for v in plan["variables"] if written[0] in v["binds"]]
    assert slot not in out["binds"] and OUT_INPUTS[overload, slot] in " ".join(out["verdicts"]["messages"].values())


def test_the_siblings_of_a_functional_claimed_for_cuda_take_its_claim(full_run: Path):
    """complex32 ``cos`` is OpInfo's claim for CUDA: ``cos_`` and ``cos.out`` run the same kernel there."""
    path = full_run / "native_functions.yaml"
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(sibling_constraints_path(path)).by_name
    for name in ("cos", "cos_", "cos.out", "div.Tensor", "div_.Tensor", "div.out"):
        per_slot, _ = _sets(native, sets, name)
        assert "torch.complex32" in {str(d) for d in per_slot["self"]["CUDA"]}, name
        assert "torch.complex32" not in {str(d) for d in per_slot["self"]["CPU"]}, name


def test_a_backend_no_kernel_backs_takes_no_dtype_there(full_run: Path):
    """histogram.bins_tensor's dispatch: names CPU and MPS: on CUDA no call reaches a kernel, whatever OpInfo claims."""
    path = full_run / "native_functions.yaml"
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(sibling_constraints_path(path)).by_name
    per_slot, _ = _sets(native, sets, "histogram.bins_tensor")
    assert all(backends["CUDA"] == frozenset() and backends["CPU"] for backends in per_slot.values()), per_slot
    assert "dispatch_dtypes: {CUDA: {T: []}}" in path.read_text().split("- func: histogram.bins_tensor(", 1)[1].split("\n- func:", 1)[0]


ALIASES = {
    "arccos": "acos",
    "arccos_": "acos_",
    "arccos.out": "acos.out",
    "clip": "clamp",
    "clip_": "clamp_",
    "clip.Tensor": "clamp.Tensor",
    "clip.out": "clamp.out",
    "concat": "cat",
    "concat.out": "cat.out",
}
ANNOTATIONS = ("type_constraints:", "type_promotion:", "dispatch_dtypes:")


def _declared_lines(text: str, name: str) -> tuple[str, ...]:
    """The entry's schema after its name, and its annotation lines (autocast aside: registrations are per name)."""
    entry = text.split(f"\n- func: {name}(", 1)[1].split("\n- func:", 1)[0]
    schema, *rest = entry.split("\n")
    return ("(" + schema, *(line for line in rest if line.strip().startswith(ANNOTATIONS)))


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_an_alias_declares_what_its_target_declares(full_run: Path, alias):
    text = (full_run / "native_functions.yaml").read_text()
    target = ALIASES[alias]
    assert _declared_lines(text, alias) == _declared_lines(text, target)
    assert any(line.strip().startswith("type_promotion:") for line in _declared_lines(text, target))


def test_the_summary_counts_the_families_the_siblings_that_took_claims_and_the_entries_no_kernel_backs(full_run: Path):
    native = NativeFunctions.load(full_run / "native_functions.yaml")
    backends = report_of(full_run)["summary"]["backends"]
    families = _families(native)
    assert backends["families"] == {"structured_delegate": len(families), "members": sum(len(m) + 1 for m in families.values())}
    assert backends["family_claims"]["overloads"] >= 50 and backends["family_claims"]["pairs"] >= backends["family_claims"]["overloads"]
    stating = [e for e in native.entries if not native.has_kernel(e, "CUDA") and "dispatch_dtypes" in native.fields(e)]
    assert backends["no_kernel"]["CUDA"] == len(stating) >= 30
    assert all(list(native.fields(e)["dispatch_dtypes"]["CUDA"].values()) == [[]] * len(native.fields(e)["dispatch_dtypes"]["CUDA"]) for e in stating)
