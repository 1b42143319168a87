"""The ``models`` job, inside a worker: one architecture's passes run under the recorders, then the calls probed.

Each mode (``zoo.MODES``) builds the model afresh in its weights' dtype and runs its two passes (inference, a training
step) under a ``ModelRecording``: the OpInfo recorders (``migrate.runtime.recorders``) with each call's 0-dim slots and
Python numbers beside. A report per pass, as an OpInfo's per sample dtype, then the probes of the calls captured across
every pass, made as the sweep's (``migrate.evidence.probe.prober.probe_reports``): each overload up to
``PROBE_CALLS`` calls, one per computing dtype first (float32, then the half ones), of each dtype a call whose
tensors mix dtypes first (``ModelCapture``), so a mixed-precision backward's float32 statistics are cast beside
half gradients. No sibling (in-place, out=) is probed: the OpInfos
probe those.

Importing this module imports neither torch nor transformers; the job does.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

from migrate.evidence.models import zoo
from migrate.runtime.runs import CALL_RAISED

PROBE_CALLS = 5  # calls probed per overload and model: float32, then the half ones, mixed calls first


def _recording_classes() -> tuple[Any, Any]:
    """``ModelRecording`` and ``ModelCapture``, defined once torch is imported (the recorders import it)."""
    import torch

    from migrate.runtime import recorders

    class ModelCapture(recorders.CallCapture):
        """A CallCapture that chooses, of each computing dtype, a call whose input tensors mix dtypes first: what a
        model adds to OpInfo's samples is mostly such calls."""

        def chosen(self) -> list[recorders.CapturedCall]:
            for calls in self._kept.values():
                calls.sort(key=lambda call: not _mixed(call.dtypes[: len(call.slots.arguments)]))
            return super().chosen()

    class ModelRecording(recorders.Recording):
        """A Recording that also counts each call by its 0-dim slots and Python numbers (``ModelCall``)."""

        def __init__(self, capture: Any) -> None:
            super().__init__(capture)
            self.calls: collections.Counter[tuple[Any, ...]] = collections.Counter()

        def add(self, func: Any, args: tuple, kwargs: dict, out: Any, direct: bool, before: tuple | None = None) -> None:
            super().add(func, args, kwargs, out, direct, before)
            slots = self._slots_of(func)
            values = tuple(recorders.slot_values(slots, args, kwargs, out))
            names = [name for _, name, _, _ in slots.arguments] + [name for _, name, _ in slots.returns]
            zero_dim = tuple(name for name, (value, _) in zip(names, values) if isinstance(value, torch.Tensor) and value.dim() == 0)
            dtypes = tuple(recorders.dtypes_of(value, holds_list) for value, holds_list in values)
            nonempty = all(recorders.has_elements(value) for value, _ in values)
            self.calls[id(func), direct, dtypes, zero_dim, _numbers(func, args, kwargs), nonempty] += 1

        def call_reports(self) -> list[list[Any]]:
            """Each distinct call as ``ModelCall.from_report`` reads it, sorted (a deterministic order)."""
            found = []
            for (key, direct, dtypes, zero_dim, numbers, nonempty), count in self.calls.items():
                slots = self._slots[key]
                names = [name for _, name, _, _ in slots.arguments] + [name for _, name, _ in slots.returns]
                named = [[name, recorders._named(d)] for name, d in zip(names, dtypes)]
                found.append([slots.name, named, list(zero_dim), [list(n) for n in numbers], direct, count, nonempty])
            return sorted(found, key=repr)

    return ModelRecording, ModelCapture


def _mixed(dtypes: tuple[Any, ...]) -> bool:
    """Whether a call's input slots (a list's elements included) hold more than one dtype."""
    found = {d for value in dtypes for d in (value if isinstance(value, tuple) else (value,)) if d is not None}
    return len(found) > 1


_NUMBERS: dict[int, tuple[tuple[int, str, bool], ...]] = {}  # id(overload) -> its Scalar arguments (position, name, kwarg-only)


def _numbers(func: Any, args: tuple, kwargs: dict) -> tuple[tuple[str, str], ...]:
    """The call's Scalar arguments that held a Python number, with its kind."""
    scalars = _NUMBERS.get(id(func))
    if scalars is None:
        schema = func._schema
        kinds = ((p, a, str(getattr(a, "real_type", a.type))) for p, a in enumerate(schema.arguments))
        scalars = _NUMBERS[id(func)] = tuple((p, a.name, a.kwarg_only) for p, a, kind in kinds if kind in ("number", "Optional[number]"))
    found = []
    for position, name, keyword_only in scalars:
        value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
        if isinstance(value, (bool, int, float, complex)):
            found.append((name, type(value).__name__))
    return tuple(found)


def _budget(overload: str, direct: bool) -> int:
    return PROBE_CALLS if overload.startswith("aten::") else 0


def model_reports(name: str) -> Iterator[dict[str, Any]]:
    """The job: per mode and pass, ``{"dtype", "samples", "mode", "pass", "observations", "calls", "errors"}``; then the
    probes (``{"probing"}``, ``{"probed"}``, ``{"probe_seconds"}``), as an OpInfo job reports them."""
    import torch
    import transformers  # noqa: F401  (imported before any recording: its lazy modules load outside it)

    from migrate.evidence.probe import prober
    from migrate.runtime.processes import one_line

    arch = zoo.architecture(name)
    recording_class, capture_class = _recording_classes()
    capture = capture_class(_budget)
    for mode in zoo.MODES:
        capture.sample_dtype = mode.compute
        try:
            model = zoo.build(arch).to(getattr(torch, mode.weights))
        except Exception as exc:
            yield _report(mode, "inference", None, {(CALL_RAISED, f"building: {one_line(exc)}"): 1})
            continue
        for phase in zoo.PASSES:
            zoo.inputs(arch, mode)  # made once outside the recording: the first call of each pass pays no lazy set-up
            errors: collections.Counter[tuple[str, str]] = collections.Counter()
            with recording_class(capture) as recording:
                try:
                    with recording.active():
                        zoo.run_pass(model, arch, mode, phase == "training")
                except Exception as exc:
                    errors[CALL_RAISED, one_line(exc)] += 1
            yield _report(mode, phase, recording, errors)
    yield from prober.probe_reports(capture.chosen(), f"model {name}", prober.PROBE_TIMEOUT, lambda call: False)


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
