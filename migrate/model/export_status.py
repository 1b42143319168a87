"""What a real export says about one dtype: the statuses of ``export-check`` and how they combine.

Here (in the data model) because three stages read them: the export worker gives them,
the check stage caches and reports them, and the torchlib writer builds annotations from
them. No torch, no onnxruntime: messages in, statuses out.
"""

from __future__ import annotations

from collections.abc import Iterable


OK = "ok"
PARTIAL = "partial"  # some sampled calls of the case export and match, some do not
EXPORT_ERROR = "export-error"  # torch.onnx.export raised
INVALID_MODEL = "invalid-model"  # the model breaks the ONNX spec (a type an op does not take): the torchlib function's fault
NO_KERNEL = "no-kernel"  # a valid model whose op onnxruntime's CPU provider has no kernel for: a runtime gap
RUNTIME_ERROR = "runtime-error"  # onnxruntime loaded it but failed running it, or cannot take an input of that dtype
MISMATCH = "mismatch"  # ran, but dtype, shape or values differ from eager PyTorch
NO_SAMPLE = "no-sample"  # no OpInfo sample gave a call of the overload that eager PyTorch runs with that dtype
DECOMPOSED = "decomposed"  # the exporter decomposed the overload before dispatch: its torchlib function never ran
STATUSES = (OK, PARTIAL, EXPORT_ERROR, INVALID_MODEL, NO_KERNEL, RUNTIME_ERROR, MISMATCH, NO_SAMPLE, DECOMPOSED)

HANDLED = (OK, PARTIAL, NO_KERNEL)  # the ONNX function is right for the dtype (no-kernel: onnxruntime's gap, not its)
FAILED = (EXPORT_ERROR, INVALID_MODEL, MISMATCH)  # the torchlib function is wrong for the dtype

_NO_KERNEL_MARKS = ("NOT_IMPLEMENTED", "Could not find an implementation for")


def load_failure_status(message: str) -> str:
    """The status of a model onnxruntime refused to load: ``no-kernel`` when it found no CPU kernel for a node
    (type checking came first and passed), else ``invalid-model`` (a type error against the ONNX spec)."""
    return NO_KERNEL if all(mark in message for mark in _NO_KERNEL_MARKS) else INVALID_MODEL


def combined(outcomes: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """One status for several calls (or overloads) of one dtype, and its message.

    ``ok`` when every call is ok; ``partial`` when some are ok (or partial) and some are not, with the
    first failing call's message; otherwise the first call's status and message. No calls: no-sample.
    """
    outcomes = list(outcomes)
    if not outcomes:
        return NO_SAMPLE, "no call"
    good = [o for o in outcomes if o[0] == OK]
    others = [o for o in outcomes if o[0] != OK]
    if not others:
        return OK, ""
    if good or any(status == PARTIAL for status, _ in others):
        failing = next((o for o in others if o[0] != PARTIAL), others[0])
        return PARTIAL, failing[1]
    return others[0]
