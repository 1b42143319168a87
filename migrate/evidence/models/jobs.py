"""The ``models`` job, inside a worker: one architecture's passes run under the recorders, then the calls probed.

Each mode (``zoo.MODES``) builds the model afresh in its weights' dtype and runs its two passes (inference, a training
step) under a ``ModelRecording`` (``migrate.evidence.models.recorder``). A report per pass, as an OpInfo's per sample
dtype, then the probes of the calls captured across every pass, made as the sweep's
(``migrate.evidence.probe.prober.probe_reports``): each overload up to ``PROBE_CALLS`` calls, one per computing dtype
first (float32, then the half ones), of each dtype a call whose tensors mix dtypes first (``ModelCapture``), so a
mixed-precision backward's float32 statistics are cast beside half gradients. No sibling (in-place, out=) is
probed: the OpInfos probe those.

Importing this module imports neither torch nor transformers; the job does (``passes``, ``recorder``).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

from migrate.evidence.models import zoo
from migrate.runtime.aten_call import PROBE_TIMEOUT
from migrate.runtime.processes import one_line
from migrate.runtime import torch_private
from migrate.runtime.runs import CALL_RAISED
from migrate.runtime.worker_stage import REPORT, TRYING

PROBE_CALLS = 5  # calls probed per overload and model: float32, then the half ones, mixed calls first


def _budget(overload: str, direct: bool) -> int:
    return PROBE_CALLS if overload.startswith("aten::") else 0


def chunk_reports(names: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The job of a chunk of architectures, one worker paying once for importing transformers and for the first
    model's warm-up (about 6 s, against 1–2 s a model after it): each announced (``{TRYING: name}``), then its
    reports (``{REPORT: [name, report]}``), for ``worker_stage.reports_by_chunk``."""
    for name in names:
        yield {TRYING: name}
        for report in model_reports(name):
            yield {REPORT: [name, report]}


def model_reports(name: str) -> Iterator[dict[str, Any]]:
    """The job: per mode and pass, ``{"dtype", "samples", "mode", "pass", "observations", "calls", "errors"}``; then the
    probes (``{"probing"}``, ``{"probed"}``, ``{"probe_seconds"}``), as an OpInfo job reports them."""
    from migrate.evidence.models import passes  # here: imports torch and transformers, workers only (the parent imports this module)
    from migrate.evidence.models.recorder import ModelCapture, ModelRecording  # imports torch: workers only
    from migrate.evidence.probe import prober  # as above

    arch = zoo.architecture(name)
    capture = ModelCapture(_budget)
    cast_by_autocast = frozenset(torch_private.dispatch_key_registrations("AutocastCPU"))
    for mode in zoo.MODES:
        capture.sample_dtype = mode.compute
        try:
            model = passes.build(arch).to(getattr(passes.torch, mode.weights))
        except Exception as exc:
            yield _report(mode, "inference", None, collections.Counter({(CALL_RAISED, f"building: {one_line(exc)}"): 1}))
            continue
        for phase in zoo.PASSES:
            errors: collections.Counter[tuple[str, str]] = collections.Counter()
            given = passes.inputs(arch, mode)
            with ModelRecording(capture, cast_by_autocast if mode.autocast else frozenset()) as recording:
                try:
                    with recording.active():
                        passes.run_pass(model, mode, given, phase == "training")
                except Exception as exc:
                    errors[CALL_RAISED, one_line(exc)] += 1
            yield _report(mode, phase, recording, errors)
    yield from prober.probe_reports(capture.chosen(), f"model {name}", PROBE_TIMEOUT, lambda call: False)


def _report(mode: zoo.Mode, phase: str, recording: Any, errors: collections.Counter[tuple[str, str]]) -> dict[str, Any]:
    observations = [] if recording is None else recording.observations()
    return {
        "dtype": mode.compute,
        "samples": 1,
        "mode": mode.name,
        "pass": phase,
        "observations": [[o.overload, o.direct, o.count, list(o.slots), o.nonempty] for o in observations],
        "calls": [] if recording is None else recording.call_reports(),
        "errors": [[kind, reason, count] for (kind, reason), count in sorted(errors.items())],
    }
