"""Recordings (issue 45): ``record --device DEV -o FILE`` writes the sweep's samples and probes made on a device, and
``--recording FILE`` merges them as that backend's evidence. CI has no GPU: every recording here is made with
``--device cpu``, whose merge must change nothing, and edited to stand for what another device or release did."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from migrate.errors import InputError
from migrate.evidence.recording import VERSION, Recording, matching, read_recording, trusted
from migrate.infer.backends import Recorded, with_backends
from migrate.model.backends import CLAIMED, OBSERVED, BackendSet
from migrate.model.dtypes import DType, named
from migrate.model.declared import set_dtypes
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.plan import OverloadPlan, Variable, Verdicts
from migrate.runtime.runs import CatalogueEntry, OpInfoId
from tests.conftest import run_cli, snapshot

INTS = named("uint8", "int8", "int16", "int32", "int64")
FLOATS = named("float16", "bfloat16", "float32", "float64")
SLOTS = ("self", "mat2", "return.0")
CLAIMS = (("self", INTS + FLOATS, FLOATS), ("mat2", INTS + FLOATS, FLOATS))  # OpInfo: integers on CPU alone


def _mm(union=INTS + FLOATS, other_device=()) -> OverloadPlan:
    verdicts = Verdicts(accepted=tuple(d for d in union if d not in other_device), other_device=other_device)
    return OverloadPlan("mm", (Variable("T", union, SLOTS, verdicts=verdicts),))


def _recorded(dtypes, origin="recorded on cuda (GPU, capability 9.0), torch 9.9") -> Recorded:
    return Recorded(dict.fromkeys(SLOTS, dtypes), origin)


def test_a_recorded_cuda_set_replaces_the_claims_and_widens_the_union():
    claimed = with_backends(_mm(), CLAIMS).variables[0]
    assert claimed.backends == (BackendSet("CPU", INTS + FLOATS, OBSERVED), BackendSet("CUDA", FLOATS, CLAIMED))
    recorded = with_backends(_mm(), CLAIMS, {"CUDA": _recorded(FLOATS[2:] + named("int64", "complex64"))}).variables[0]
    assert recorded.dtypes == INTS + FLOATS + named("complex64")  # the union holds what either backend ran
    assert recorded.on("CPU") == INTS + FLOATS and recorded.on("CUDA") == named("int64", "float32", "float64", "complex64")
    assert recorded.backends[1].basis.startswith("recorded on cuda")
    # only the claims put complex32 there: a CUDA recording that refused it leaves it out of both sets
    cos = _mm(INTS + FLOATS + named("complex32"), other_device=named("complex32"))
    assert with_backends(cos, (), {"CUDA": _recorded(INTS + FLOATS)}).variables[0].dtypes == INTS + FLOATS


def test_a_recorded_cpu_set_equal_to_the_observed_one_changes_nothing_and_one_verdict_less_changes_cpu_alone():
    for claims in ((), CLAIMS):
        plan = with_backends(_mm(), claims)
        same = with_backends(_mm(), claims, {"CPU": _recorded(INTS + FLOATS, "recorded on cpu")})
        assert [(v.dtypes, [(b.key, b.dtypes) for b in v.backends]) for v in same.variables] == [
            (v.dtypes, [(b.key, b.dtypes) for b in v.backends]) for v in plan.variables
        ]
        less = with_backends(_mm(), claims, {"CPU": _recorded(INTS[1:] + FLOATS, "recorded on cpu")}).variables[0]
        assert less.dtypes == plan.variables[0].dtypes and less.on("CUDA") == plan.variables[0].on("CUDA")
        assert less.on("CPU") == INTS[1:] + FLOATS


def _recording(**changes) -> Recording:
    entry = CatalogueEntry(OpInfoId("mm"), FLOATS, (), ("mm",), ())
    made = Recording("2.99", "cuda", "GPU", "9.0", (("addmm", "addmm(Tensor self) -> Tensor"), ("mm", "mm(Tensor self, Tensor mat2) -> Tensor")), (entry,), ())
    return replace(made, **changes)


def test_a_recording_of_another_release_counts_where_its_schema_matches(tmp_path):
    here = {"mm": "mm(Tensor self, Tensor mat2) -> Tensor", "addmm": "addmm(Tensor self, Tensor mat1) -> Tensor"}
    assert matching(_recording(), here) == (frozenset({"mm"}), frozenset({"addmm"}))
    path = tmp_path / "r.json.gz"
    path.write_bytes(_recording().to_bytes())
    assert read_recording(path)[0] == _recording()
    assert path.read_bytes() == _recording().to_bytes()  # the same bytes for the same recording
    assert _recording().origin == "recorded on cuda (GPU, capability 9.0), torch 2.99" and _recording().key == "CUDA"


def test_refusals_of_a_poisoned_cuda_context_are_no_verdicts():
    from migrate.runtime.runs import Probe, ProbedCall, OpInfoRun

    probe = Probe(("self",), (), ((DType("int64"), "CUDA error: device-side assert triggered"), (DType("bool"), '"mm" not implemented for \'Bool\'')))
    call = ProbedCall("aten::mm", (("self", DType("float32")),), OpInfoId("mm"), DType("float32"), True, (probe,))
    run = OpInfoRun(OpInfoId("mm"), (), (), 1, True, 0.0, 0.0, (call,), 0.0)
    (kept,) = trusted((run,))[0].probes[0].probes
    assert kept.rejected == ((DType("bool"), '"mm" not implemented for \'Bool\''),)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read the recording"),
        (b"not gzip, not json", "not a dtype-migrate recording (not gzipped JSON"),
        (gzip.compress(b'{"format": "something else"}', mtime=0), "not a dtype-migrate recording (no \"format\""),
        ("version", f"recording format version {VERSION + 1}; this dtype-migrate reads versions 1, {VERSION}: record it again"),
        ("device", "recording of device 'xla'"),
    ],
    ids=["unreadable", "not-gzip", "foreign-json", "version", "device"],
)
def test_a_bad_recording_is_one_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "r.json.gz"
    obj = _recording().to_json()
    if content == "version":
        path.write_bytes(gzip.compress(json.dumps({**obj, "version": VERSION + 1}).encode()))
    elif content == "device":
        path.write_bytes(gzip.compress(json.dumps({**obj, "device": "xla"}).encode()))
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as raised:
        read_recording(path)
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value) and "\n" not in str(raised.value)


def test_a_bad_recording_on_the_command_line_exits_2_and_writes_nothing(tmp_path, capfd):
    bad = tmp_path / "r.json.gz"
    bad.write_bytes(gzip.compress(json.dumps({**_recording().to_json(), "version": 0}).encode()))
    code, _, err = run_cli(capfd, "--op", "mm", "--recording", bad, "--out", tmp_path / "out")
    assert code == 2 and err.strip().endswith(f"{bad}: recording format version 0; this dtype-migrate reads versions 1, {VERSION}: record it again")
    assert not (tmp_path / "out").exists()


# --- recorded on the CPU, merged into a run (workers: slow) ------------------------------------------


def _run(capfd, out: Path, *extra) -> tuple[dict[str, bytes], dict]:
    code, _, err = run_cli(capfd, "--op", "mm", "--yaml-only", "--out", out, "--report", out / "report.json", "-j", "2", *extra)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    return {k: v for k, v in snapshot(out).items() if k != "report.json"}, report


@pytest.fixture(scope="module")
def recorded_mm(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("recording") / "r.json.gz"
    from migrate.cli import main

    assert main(["record", "--device", "cpu", "--op", "mm", "-o", str(path), "-j", "2"]) == 0
    return path


def _edited(source: Path, target: Path, edit) -> Path:
    obj = json.loads(gzip.decompress(source.read_bytes()))
    edit(obj)
    target.write_bytes(gzip.compress(json.dumps(obj).encode()))
    return target


@pytest.mark.slow
def test_a_cpu_recording_merged_gives_the_bytes_of_a_run_without_it(recorded_mm, tmp_path, capfd):
    recording = read_recording(recorded_mm)[0]
    assert recording.to_bytes() == recorded_mm.read_bytes()  # no timings in it: the same sweep, the same bytes
    assert recording.device == "cpu" and dict(recording.schemas).keys() == {"mm", "mm.out"} and recording.runs
    without, _ = _run(capfd, tmp_path / "without")
    merged, report = _run(capfd, tmp_path / "with", "--recording", recorded_mm)
    assert merged == without
    (summary,) = report["summary"]["recordings"]["merged"]
    assert summary["backend"] == "CPU" and summary["overloads_matched"] == 2 and summary["overloads_skipped"] == 0
    assert summary["from"].startswith("recorded on cpu (reference paths, capability default), torch ")
    assert summary["verdicts"]["accepted"] > 0 and summary["by_kind_of_call"]["probe"] > 0
    assert "recorded on cpu" in report["summary"]["recordings"]["backends"]["CPU"]


def _refuse(dtype: str):
    """An edit of the recording: every call of aten::mm at ``dtype`` refused (its probes), or gone (its samples)."""

    def edit(obj: dict) -> None:
        for run in [*obj["runs"], obj["built"]]:
            message = len(run["messages"])
            run["messages"].append(f"edited: mm refuses {dtype}")
            run["observations"] = [o for o in run["observations"] if not (o[0] == "aten::mm" and dtype in json.dumps(o[4]))]
            # a call made at the dtype proves it: it is gone too
            run["probes"] = [c for c in run["probes"] if not (c[0] == "aten::mm" and dtype in json.dumps(c[3]))]
            for call in run["probes"]:
                if call[0] != "aten::mm":
                    continue
                for probe in call[5]:
                    refused = [d for d, _ in probe[1] if d == dtype] + [d for d, *_ in probe[3] if d == dtype]
                    probe[1] = [a for a in probe[1] if a[0] != dtype]
                    probe[3] = [g for g in probe[3] if g[0] != dtype]
                    probe[2] += [[d, message] for d in refused]

    return edit


@pytest.mark.slow
def test_one_verdict_changed_in_a_recording_changes_that_backend_s_set_of_that_overload_alone(recorded_mm, tmp_path, capfd):
    without, _ = _run(capfd, tmp_path / "without")
    edited = _edited(recorded_mm, tmp_path / "edited.json.gz", _refuse("int64"))
    merged, _ = _run(capfd, tmp_path / "with", "--recording", edited)
    assert merged.keys() == without.keys()
    before, after = (found["native_functions.yaml"].decode().splitlines() for found in (without, merged))
    differ = [(index, old, new) for index, (old, new) in enumerate(zip(before, after)) if old != new]
    assert len(before) == len(after) and len(differ) == 1  # one line of one entry: mm's sets per backend
    ((index, old, new),) = differ
    entry = next(i for i in range(index, -1, -1) if before[i].startswith("- func:"))
    assert before[entry].startswith("- func: mm(") and new.startswith("  dispatch_dtypes: {CPU: {")
    cpu = re.match(r"  dispatch_dtypes: \{CPU: \{(\w+): ('[^']*'|\w+)\}(, )?", new)  # a set's name or PyTorch spelling
    assert old in ("", "  dispatch_dtypes: {" + new[cpu.end() :])  # CUDA's set as it was
    sets = GlobalSetsFile.load(tmp_path / "with" / "type_constraints.yaml").by_name
    mm = [line for line in after[entry : index + 1] if line.startswith("  type_constraints:")]
    spelled = dict(re.findall(r"(\w+): ('[^']*'|\w+)", mm[0])) if mm else {}  # a letter T is spelled by one T: Name
    union = set_dtypes(spelled.get(cpu.group(1), cpu.group(1)).strip("'"), sets)
    cpu_set = set_dtypes(cpu.group(2).strip("'"), sets)
    assert cpu_set == tuple(d for d in union if d != DType("int64"))  # the one verdict changed, the union as it was
    sets_before, sets_after = (found.get("type_constraints.yaml", b"").decode().splitlines() for found in (without, merged))
    assert set(sets_before) <= set(sets_after)  # at most a set named for CPU's new one


@pytest.mark.slow
def test_a_recording_of_another_release_is_used_where_its_schemas_match(recorded_mm, tmp_path, capfd):
    def other_release(obj: dict) -> None:
        obj["torch"] = "0.0.1"
        obj["schemas"]["mm"] = "mm(Tensor self, Tensor mat2, *, bool renamed=False) -> Tensor"
        _refuse("int64")(obj)

    without, _ = _run(capfd, tmp_path / "without")
    edited = _edited(recorded_mm, tmp_path / "old.json.gz", other_release)
    merged, report = _run(capfd, tmp_path / "with", "--recording", edited)
    assert merged == without  # mm's schema differs: skipped, its refusal not used (mm.out's calls refuse nothing)
    (summary,) = report["summary"]["recordings"]["merged"]
    assert (summary["overloads_matched"], summary["overloads_skipped"]) == (1, 1) and summary["from"].endswith("torch 0.0.1")


@pytest.mark.slow
def test_a_cuda_recording_gives_cuda_s_set_in_place_of_the_claims(recorded_mm, tmp_path, capfd):
    from migrate.api import load_declarations

    def on_cuda(*edits):
        def edit(obj: dict) -> None:
            obj.update(device="cuda", device_name="NVIDIA Test GPU", capability="9.0")
            for more in edits:
                more(obj)

        return edit

    int64_on = {}
    for name, edit in (("claims", None), ("recorded", on_cuda()), ("refused", on_cuda(_refuse("int64")))):
        extra = () if edit is None else ("--recording", _edited(recorded_mm, tmp_path / f"{name}.json.gz", edit))
        _, report = _run(capfd, tmp_path / name, *extra)
        path = tmp_path / name / "native_functions.yaml"
        int64_on[name] = [bool(load_declarations(path, device=d).accepts("mm", self="int64", mat2="int64")) for d in ("cpu", "cuda")]
        assert load_declarations(path, device="cuda").accepts("mm", self="float32", mat2="float32")
    # OpInfo claims no integer mm on CUDA; a recording that ran it says CUDA takes it, one that refused it says not
    assert int64_on == {"claims": [True, False], "recorded": [True, True], "refused": [True, False]}
    backends = report["summary"]["recordings"]["backends"]
    assert backends["CUDA"].startswith("recorded on cuda (NVIDIA Test GPU, capability 9.0), torch ") and "OpInfo claims" in backends["CUDA"]
