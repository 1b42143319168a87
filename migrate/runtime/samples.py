"""The sample runner, inside a worker: an OpInfo by its identity, its samples per CPU dtype (seeded as
every run of the OpInfo is), and the samples run with one backward. The OpInfo sweep's jobs
(``migrate.evidence.opinfo.jobs``), ``verify`` and ``export-check`` run samples through it.

Importing this module imports torch (the fork server preloads it): the sweep's jobs import it inside the job. The
OpInfo database loads when a job runs.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy
import torch

from migrate.model.dtypes import DType
from migrate.runtime import recorders, torch_private
from migrate.runtime.processes import one_line
from migrate.runtime.runs import BACKWARD_RAISED, CALL_RAISED, SAMPLE_INPUTS_RAISED, OpInfoId


def _seed(opinfo: OpInfoId, dtype_name: str) -> None:
    """Every (OpInfo, dtype) starts from its own fixed seed: samples do not depend on what ran before."""
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
    op: Any, opinfo: OpInfoId, only: str | None = None, backward: bool = True, device: str = "cpu"
) -> Iterator[tuple[str, list[Any], Counter[tuple[str, str]]]]:
    """Per CPU dtype (or only the one named), in canonical order and seeded as every run of the OpInfo is:
    its samples, and the errors making them.

    For the dtypes the OpInfo declares for backward, the samples require grad (``call_samples`` runs backward
    once); ``backward=False`` makes none require it (the benchmark's forward-only baseline). ``device``: where the
    samples are made (``record --device cuda``), at the same CPU dtypes, so that both backends run the same samples.
    """
    with_grad = torch_private.opinfo_backward_dtypes(op) if backward else frozenset()
    for dtype in sorted(torch_private.opinfo_cpu_dtypes(op), key=lambda d: DType(recorders.dtype_name(d)).sort_key):
        name = recorders.dtype_name(dtype)
        if only is not None and name != only:
            continue
        _seed(opinfo, name)
        errors: Counter[tuple[str, str]] = Counter()
        samples: list[Any] = []
        try:
            samples.extend(torch_private.opinfo_samples(op, dtype, dtype in with_grad, device))
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
