"""The OpInfo jobs, inside a sweep worker: describe every OpInfo (the catalogue), or run one
OpInfo's samples per CPU dtype under the recorders and then probe the calls it captured.

Importing this module imports neither torch nor the OpInfo database; running a job does
(the fork server has them imported already).
"""

from __future__ import annotations

import contextlib
import random
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from migrate import torch_private
from migrate.evidence.runtime.runs import (
    BACKWARD_RAISED,
    CALL_RAISED,
    SAMPLE_INPUTS_RAISED,
    CatalogueEntry,
    OpInfoId,
    interned_dtype,
)
from migrate.evidence.runtime.processes import one_line
from migrate.model.dtypes import DType, canonical


def catalogue_reports(_: None) -> Iterator[list[dict[str, Any]]]:
    """The catalogue job: check the recorders work on this torch, then describe every OpInfo."""
    from migrate.evidence.runtime import recorders

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


def _canonical(dtypes: Iterable[Any]) -> tuple[DType, ...]:
    from migrate.evidence.runtime.recorders import dtype_name

    return canonical(interned_dtype(dtype_name(d)) for d in dtypes)


def _seed(opinfo: OpInfoId, dtype_name: str) -> None:
    """Every (OpInfo, dtype) starts from its own fixed seed: samples do not depend on what ran before."""
    import numpy
    import torch

    seed = zlib.crc32(f"{opinfo.name}\0{opinfo.variant}\0{dtype_name}".encode())
    torch.default_generator.manual_seed(seed)  # torch.manual_seed would also queue seeds for absent GPUs
    random.seed(seed)
    numpy.random.seed(seed)


def find_opinfo(opinfo: OpInfoId) -> Any:
    """This torch's OpInfo of that identity (a stale cached catalogue is an error)."""
    found = [op for op in torch_private.op_db() if torch_private.opinfo_identity(op) == (opinfo.name, opinfo.variant)]
    if not found:
        raise LookupError(f"this torch has no OpInfo {opinfo}: the cached catalogue is stale (refresh it)")
    return found[0]


def samples_by_dtype(
    op: Any, opinfo: OpInfoId, only: str | None = None, backward: bool = True
) -> Iterator[tuple[str, list[Any], Counter[tuple[str, str]]]]:
    """Per CPU dtype (or only the one named), in canonical order and seeded as every run of the OpInfo is:
    its samples, and the errors making them.

    For the dtypes the OpInfo declares for backward, the samples require grad (``call_samples`` runs backward
    once); ``backward=False`` makes none require it (the benchmark's forward-only baseline).
    """
    from migrate.evidence.runtime import recorders

    with_grad = torch_private.opinfo_backward_dtypes(op) if backward else frozenset()
    for dtype in sorted(torch_private.opinfo_cpu_dtypes(op), key=lambda d: interned_dtype(recorders.dtype_name(d)).sort_key):
        name = recorders.dtype_name(dtype)
        if only is not None and name != only:
            continue
        _seed(opinfo, name)
        errors: Counter[tuple[str, str]] = Counter()
        samples: list[Any] = []
        try:
            samples.extend(torch_private.opinfo_samples(op, dtype, dtype in with_grad))
        except Exception as exc:  # making the samples failed; those made before still run
            errors[SAMPLE_INPUTS_RAISED, one_line(exc)] += 1
        yield name, samples, errors


def call_samples(op: Any, samples: list[Any], errors: Counter[tuple[str, str]]) -> None:
    """Run each sample, and backward from the first whose outputs require grad; one the op refuses is counted
    in ``errors`` and the rest still run.

    One backward per dtype: a backward pass costs about as much as all of the dtype's forward calls, and the
    first sample already reaches the op's backward kernels. No double backward.
    """
    backward_pending = True
    for sample in samples:
        try:
            result = torch_private.call_sample(op, sample)
        except Exception as exc:
            errors[CALL_RAISED, one_line(exc)] += 1
            continue
        if backward_pending:
            try:
                backward_pending = not torch_private.run_backward(result)
            except Exception as exc:
                errors[BACKWARD_RAISED, one_line(exc)] += 1
                backward_pending = False


def opinfo_reports(argument: tuple[OpInfoId, bool, bool, bool]) -> Iterator[dict[str, Any]]:
    """The OpInfo job: one report per CPU dtype, with the samples run, the observations and the errors; then the probes."""
    from migrate.evidence.probe import prober as probing
    from migrate.evidence.runtime import recorders

    opinfo, record, probe, backward = argument
    op = find_opinfo(opinfo)
    capture = recorders.CallCapture(probing.budget(op)) if probe else None
    for name, samples, errors in samples_by_dtype(op, opinfo, backward=backward):
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
        yield from probing.probe_reports(capture.chosen(), str(opinfo), probing.PROBE_TIMEOUT)
