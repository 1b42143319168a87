"""The ``models`` evidence source (issue 44): tiny transformers models recorded and probed, their mixed-precision calls
joined to OpInfo's, and the run's yaml checked against them, a training step under autocast included.

transformers is imported here, not skipped: the test set-up installs it (``./test.sh``: the ``models`` extra), and a
missing one is an error, never a green skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers  # noqa: F401  (a missing transformers fails the module: no skip into green)

import migrate
from migrate.cache import StageCache
from migrate.cli import main as cli
from migrate.evidence.models import jobs, passes, zoo
from migrate.evidence.models.recorder import ModelRecording
from migrate.evidence.models.records import BACKEND, ModelCall
from migrate.evidence.models.source import load_models
from migrate.model.dtypes import DType
from migrate.pipeline.session import Options, Session
from migrate.runtime.runs import MODEL_RUN
from tests.conftest import facts_only

CHECKED_MODES = ("autocast-bfloat16", "float16")  # under the checker: a training step under autocast, and half weights


def recorded(calls) -> list[ModelCall]:
    """What a ModelRecording makes of ``calls()``, as the parent reads it."""
    with ModelRecording() as recording:
        with recording.active():
            calls()
    return [ModelCall.from_report(report, "m", "bfloat16", "inference") for report in recording.call_reports()]


def test_a_recorded_call_keeps_its_dtypes_zero_dim_slots_python_numbers_and_backend():
    x = torch.randn(2, 3, dtype=torch.bfloat16)

    def calls():
        x * torch.tensor(2.0)  # a 0-dim float32 scale beside bfloat16: no promotion
        torch.ops.aten.add.Scalar(x, 1.5)
        torch.clamp(x, min=0)
        torch.nn.functional.layer_norm(x, (3,), torch.ones(3), torch.zeros(3))

    found = {call.overload: call for call in recorded(calls)}
    mul = found["aten::mul.Tensor"]
    assert dict(mul.slots) == {"self": DType("bfloat16"), "other": DType("float32"), "return.0": DType("bfloat16")}
    assert (mul.zero_dim, mul.numbers, mul.direct, mul.backend) == (("other",), (), True, BACKEND)
    assert found["aten::add.Scalar"].numbers == (("other", "float"),)
    assert found["aten::clamp"].numbers == (("min", "int"),)
    norm = found["aten::native_layer_norm"]  # inside layer_norm: float32 statistics beside bfloat16 activations
    assert not norm.direct and dict(norm.slots)["return.1"] == DType("float32") and dict(norm.slots)["return.0"] == DType("bfloat16")


def test_a_call_repeated_is_one_distinct_call_counted_twice():
    x = torch.randn(4)
    (call,) = [c for c in recorded(lambda: (torch.ops.aten.add.Scalar(x, 1.5), torch.ops.aten.add.Scalar(x, 2.5))) if c.overload == "aten::add.Scalar"]
    assert call.count == 2
    assert ModelCall.from_report(["aten::add.Scalar", [["self", "float32"], ["return.0", "float32"]], [], [["other", "float"]], True, 2, True], "m", "x", "y").signature == call.signature


def test_the_architectures_cover_text_vision_audio_encoder_decoder_and_both_attentions():
    assert len(zoo.ARCHITECTURES) >= 10
    assert {a.domain for a in zoo.ARCHITECTURES} >= {"text", "vision", "audio", "encoder-decoder"}
    assert {a.attention for a in zoo.ARCHITECTURES} == {"eager", "sdpa"}
    assert [m.name for m in zoo.MODES] == ["float32", "bfloat16", "float16", "autocast-bfloat16", "autocast-float16"]


@pytest.mark.slow
def test_a_models_job_reports_each_mode_and_pass_then_probes_the_mixed_calls():
    reports = list(jobs.model_reports("vit"))
    passes = [(r["mode"], r["pass"]) for r in reports if "calls" in r]
    assert passes == [(m.name, p) for m in zoo.MODES for p in zoo.PASSES]
    assert all(not r["errors"] for r in reports if "calls" in r)
    by_mode = {r["mode"] + " " + r["pass"]: [ModelCall.from_report(c, "vit", r["mode"], r["pass"]) for c in r["calls"]] for r in reports if "calls" in r}
    flash = [c for c in by_mode["autocast-bfloat16 training"] if c.overload == "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    assert {(dict(c.slots)["query"], dict(c.slots)["logsumexp"]) for c in flash} == {(DType("bfloat16"), DType("float32"))}
    probed = [r["probed"] for r in reports if "probed" in r]
    flash_probed = [p for p in probed if p["overload"] == "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    mixed = [p for p in flash_probed if dict(p["slots"])["logsumexp"] != dict(p["slots"])["query"]]
    assert {dict(p["slots"])["query"] for p in mixed} == {"bfloat16", "float16"}, "each half backward beside float32 logsumexp is probed"
    accepted = {tuple(cast): {dtype for dtype, _ in found} for cast, found, _, _ in mixed[0]["probes"]}
    assert accepted[("grad_out", "query", "key", "value", "out")] >= {"float32"}  # logsumexp stays float32: its own variable


# --- the full run, and the models under the checker against its yaml ----------------------------


def _entry(path: Path, name: str) -> str:
    text = path.read_text()
    return text.split(f"- func: {name}(", 1)[1].split("\n- func:", 1)[0]


@pytest.mark.slow
def test_the_run_splits_half_activations_from_float32_statistics(full_run):
    norm = _entry(full_run / "native_functions.yaml", "native_layer_norm_backward").split("\n")[0]
    assert norm.startswith("T grad_out, T input, SymInt[] normalized_shape, U mean, U rstd, U? weight, U? bias"), norm
    flash = _entry(full_run / "native_functions.yaml", "_scaled_dot_product_flash_attention_for_cpu_backward").split("\n")[0]
    grad, logsumexp = flash.split(" grad_out,")[0], flash.split(" logsumexp,")[0].rsplit(", ", 1)[1]
    assert grad != logsumexp, flash
    models = json.loads((full_run / "report.json").read_text())["summary"]["models"]
    assert len(models["architectures"]) == len(zoo.ARCHITECTURES) and models["failures"] == []
    assert models["calls"] > models["distinct_calls"] > 0 and models["overloads_beyond_opinfo"]
    assert "native_layer_norm_backward" in models["verdicts_changed"]


# The five models whose calls reach 154 of the 168 overloads the twelve reach (chosen greedily, most new overloads
# first); bench/models_checked.py runs all twelve under the checker.
CHECKED_ARCHITECTURES = ("t5", "wav2vec2", "mixtral", "clip", "resnet")


@pytest.mark.slow
@pytest.mark.parametrize("arch", CHECKED_ARCHITECTURES)
def test_the_models_run_under_the_checker_against_the_runs_yaml(full_run, arch):
    """0 violations; distinct calls per model and mode (from the run's models stage) beside the calls the checker judged."""
    architecture = zoo.architecture(arch)
    stored = load_models(StageCache.at(), jobs=2)
    assert stored is not None and any(run.opinfo.name == MODEL_RUN and run.opinfo.variant == arch for run in stored.runs)
    lines = []
    for mode in (m for m in zoo.MODES if m.name in CHECKED_MODES):
        model = passes.build(architecture).to(getattr(torch, mode.weights))
        for phase in zoo.PASSES:
            given = passes.inputs(architecture, mode)
            with migrate.checking(full_run / "native_functions.yaml", collect=True) as checker:
                passes.run_pass(model, mode, given, phase == "training")
            distinct = {c.signature for c in stored.calls if (c.model, c.mode, c.phase) == (arch, mode.name, phase)}
            lines.append(f"{arch} {mode.name} {phase}: {len(distinct)} distinct calls, {sum(checker.judged.values())} judged, {len(checker.violations)} violations")
            assert checker.violations == (), "\n".join(map(str, checker.violations[:10]))
    print("\n".join(lines))


def test_without_transformers_a_run_reads_the_models_runs_the_shipped_recording_holds(monkeypatch, tmp_path, capsys):
    from migrate.evidence.models import source

    monkeypatch.setattr(source, "transformers_version", lambda: None)
    found = Session(Options(evidence=("opinfo", "models"), cache_dir=facts_only(tmp_path / "cache"))).models
    assert found is not None and found.transformers == "5.24.0" and len(found.runs) == 12
    assert capsys.readouterr().err == ""


def test_a_refresh_without_transformers_keeps_the_models_runs_the_shipped_recording_holds(monkeypatch, tmp_path):
    """The models cannot run again without transformers: a refresh that dropped their runs would write other sets than
    the run it refreshes (the norms' float32 weights beside a float16 input come from them)."""
    from migrate.evidence import recording
    from migrate.evidence.models import source
    from migrate.runtime.recorded import installed_release

    monkeypatch.setattr(source, "transformers_version", lambda: None)
    cache = StageCache(facts_only(tmp_path / "cache"))
    line = recording.refreshed(cache)
    assert line.startswith(f"--refresh: making every ATen call of torch {installed_release().torch} again (minutes); ")
    (shipped,) = recording.SHIPPED.glob("cpu-*.json.gz")
    assert line.endswith(f", which need transformers, as the shipped {shipped.name} holds them")
    assert not recording.holds_facts(cache)  # every other stage is made again
    found = source.stored_models(cache)
    assert found is not None and found.transformers == "5.24.0" and len(found.runs) == 12
    monkeypatch.setattr(recording, "SHIPPED", tmp_path / "none")  # no recording of this release ships: nothing to keep
    other = StageCache(tmp_path / "other")
    assert recording.refreshed(other) == line.partition("; ")[0] and source.stored_models(other) is None


def test_a_run_without_transformers_nor_recorded_models_says_so_on_one_line(monkeypatch, tmp_path, capsys):
    from migrate.evidence import recording
    from migrate.evidence.models import source

    monkeypatch.setattr(source, "transformers_version", lambda: None)
    monkeypatch.setattr(recording, "SHIPPED", tmp_path / "none")
    assert Session(Options(evidence=("opinfo", "models"), cache_dir=tmp_path)).models is None
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == source.unavailable() and "transformers is not installed" in err[-1]
    assert err[0].startswith("dtype-migrate: recording torch ") and len(err) == 2


@pytest.mark.slow
def test_show_v_reads_the_models_runs_the_run_inferred_from(full_run, capsys):
    name = "_scaled_dot_product_flash_attention_for_cpu_backward"
    assert cli(["show", "-v", name, "--native-functions", str(full_run / "native_functions.yaml")]) == 0
    shown = capsys.readouterr().out
    assert "model llama (float16, bfloat16, float32)" in shown, shown
    assert "out bfloat16, logsumexp float32, model llama" in shown  # the mixed call the models made, probed
    assert "OpInfo model" not in shown
