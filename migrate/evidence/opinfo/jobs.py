"""The OpInfo jobs, inside a sweep worker: describe every OpInfo (the catalogue), or run one
OpInfo's samples per CPU dtype under the recorders and then probe the calls it captured.

Importing this module imports neither torch nor the OpInfo database; running a job does
(the fork server has them imported already).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from migrate.model.dtypes import DType, canonical
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT
from migrate.runtime.runs import CatalogueEntry, OpInfoId


def catalogue_reports(_: None) -> Iterator[list[dict[str, Any]]]:
    """The catalogue job: check the recorders work on this torch, then describe every OpInfo (its CUDA claim as this
    host evaluates it: ``with_claims_on_a_current_gpu`` replaces it)."""
    from migrate.runtime import recorders  # imports torch: workers only (the --op fast path)

    recorders.check_recorders()
    entries = []
    for op in torch_private.op_db():
        entry = CatalogueEntry(
            OpInfoId(*torch_private.opinfo_identity(op)),
            _canonical(torch_private.opinfo_cpu_dtypes(op)),
            tuple(sorted((device, _canonical(d)) for device, d in torch_private.opinfo_declared_dtypes(op).items())),
            tuple(sorted(torch_private.opinfo_operator_names(op))),
            torch_private.opinfo_aliases(op),
        )
        entries.append(entry.to_json())
    yield entries


def with_claims_on_a_current_gpu(
    entries: Iterable[CatalogueEntry], on_a_gpu: dict[tuple[str, str], tuple[str, ...]]
) -> tuple[CatalogueEntry, ...]:
    """The entries with each OpInfo's CUDA claim as on a current GPU (``torch_private.opinfo_claims_on_a_current_gpu``),
    never as this host evaluates it."""
    found = []
    for entry in entries:
        if (claimed := on_a_gpu.get((entry.opinfo.name, entry.opinfo.variant))) is not None:
            declared = dict(entry.declared) | {"cuda": canonical(DType(d) for d in claimed)}
            entry = replace(entry, declared=tuple(sorted(declared.items())))
        found.append(entry)
    return tuple(found)


def _canonical(dtypes: Iterable[Any]) -> tuple[DType, ...]:
    from migrate.runtime.recorders import dtype_name  # imports torch: workers only

    return canonical(DType(dtype_name(d)) for d in dtypes)



def opinfo_reports(argument: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
    """The OpInfo job: one report per CPU dtype, with the samples run, the observations and the errors; then the probes.

    ``argument``: (OpInfo, record, probe, backward), and the device the samples are made on where it is not the CPU
    (``record --device cuda``; the probes cast the captured tensors where they are)."""
    from migrate.evidence.probe import prober as probing  # imports torch: workers only
    from migrate.runtime import recorders  # as above
    from migrate.runtime.samples import call_samples, find_opinfo, samples_by_dtype  # as above

    opinfo, record, probe, backward, *device = argument
    op = find_opinfo(opinfo)
    capture = recorders.CallCapture(probing.budget(op)) if probe else None
    for name, samples, errors in samples_by_dtype(op, opinfo, backward=backward, device=device[0] if device else "cpu"):
        if capture is not None:
            capture.sample_dtype = name
        # All samples are made first, then run under the recorders, entered once: entering
        # them costs more than a call, and making samples must not be recorded.
        with recorders.Recording(capture) as recording:
            with recording.active() if record else contextlib.nullcontext():
                call_samples(op, samples, errors)
        yield {
            "dtype": name,
            "samples": len(samples),
            "observations": [[o.overload, o.direct, o.count, list(o.slots), o.nonempty] for o in recording.observations()],
            "errors": [[kind, reason, count] for (kind, reason), count in sorted(errors.items())],
        }
    if capture is not None:
        yield from probing.probe_reports(capture.chosen(), str(opinfo), PROBE_TIMEOUT, probing.about(op))
