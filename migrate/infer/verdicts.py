"""A verdict per dtype for each variable, read from its merged evidence (docs/evidence.md).

A maintainer trusts a written set only if each of its dtypes rests on something ATen did.
So every dtype a plain tensor can have gets one verdict per variable, the first that holds:

- ``accepted``: a call with an element in every tensor argument and return ran (an OpInfo
  observation, an accepted probe, a metadata-reading kernel on meta tensors); calls with an
  empty tensor are ``empty`` evidence and never count, since ATen returns before its dtype
  dispatch (``mm`` of (0, 2) and (2, 3) bool tensors runs);
- ``other-device``: the OpInfo of this very overload claims it for CUDA (PyTorch's CI tests
  that claim; the MPS, XPU and HPU sets OpInfo derives by default are no evidence);
- ``rejected``: a probe of such a call raised, with ATen's message; for a variable of returns only,
  also a dtype no accepted call returned although probing cast the inputs to every dtype
  (``NEVER_RETURNED``): a return takes what the inputs give it, unless a number may set it (a ``Scalar``
  or ``ScalarType`` argument, which probes never vary);
- ``promoted``: a diagonal call with every promoted tensor at this dtype ran, and the kernel computed
  in another dtype, as the overload's ``type_promotion:`` kind says (``acos`` of int64 computes in
  float32 under ``int_to_float``): settled, and not in the set of computation dtypes;
- ``unknown``: nothing says. A variable with unknown verdicts is ``incomplete``: its set is a
  lower bound, never a reason to narrow anything.

In-place, out= and alias overloads that take another overload's constraints take its verdicts.
"""

from __future__ import annotations

from dataclasses import replace

from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.plan import (
    DECLARED,
    EMPTY,
    EMPTY_ONLY,
    NO_CPU_KERNEL,
    NO_VALID_CALL,
    NOT_TRIED,
    KERNEL,
    OPINFO,
    PROBE,
    OverloadPlan,
    Variable,
    Verdicts,
)
from migrate.model.verdict import PROMOTED, RETURNED


NEVER_RETURNED = "never returned: no accepted call returned this dtype, though probing cast the inputs to every dtype"


def returns_probed(variable: Variable) -> bool:
    """Only returns, and probes cast the inputs of its calls to every dtype: what they never returned, no call returns."""
    return all(slot.startswith("return.") for slot in variable.binds) and any(
        e.source == PROBE and e.outcome == RETURNED for e in variable.evidence
    )


def verdicts_of(variable: Variable, cpu_kernel: bool = True, tensors_set_returns: bool = True) -> Verdicts:
    """The verdicts its evidence gives (see the module's docstring), each unknown one with why (``UNKNOWN_REASONS``).

    ``tensors_set_returns`` False: an argument other than a tensor may set a return (``TypedSchema.numbers_may_set_returns``),
    which no probe varied, so what probes never returned is no refusal (``where.Scalar`` with complex numbers)."""
    accepted, other, rejected, empty, promoted = set(), set(), {}, set(), {}
    for evidence in variable.evidence:
        if evidence.source == PROBE and evidence.outcome == PROMOTED:
            for dtype in evidence.dtypes:
                promoted.setdefault(dtype, evidence.verdict.promotion_note)
        elif evidence.refused:
            for dtype, message in evidence.messages.items():
                rejected.setdefault(dtype, message)
        elif evidence.source in (OPINFO, PROBE, KERNEL):
            accepted.update(evidence.dtypes)
        elif evidence.source == DECLARED:
            other.update(evidence.dtypes)
        elif evidence.source == EMPTY:
            empty.update(evidence.dtypes)
    if tensors_set_returns and returns_probed(variable):
        for dtype in TENSOR_DTYPES:
            if dtype not in accepted and dtype not in other:
                rejected.setdefault(dtype, NEVER_RETURNED)
    if not cpu_kernel:
        reason = dict.fromkeys(TENSOR_DTYPES, NO_CPU_KERNEL)
    elif not accepted:
        reason = dict.fromkeys(TENSOR_DTYPES, NO_VALID_CALL)
    else:
        reason = {d: EMPTY_ONLY if d in empty else NOT_TRIED for d in TENSOR_DTYPES}
    return Verdicts(tuple(accepted), tuple(other), tuple(rejected.items()), tuple(reason.items()), tuple(promoted.items()))


def with_verdicts(plan: OverloadPlan, cpu_kernel: bool = True, tensors_set_returns: bool = True) -> OverloadPlan:
    """The plan with each variable's verdicts (``cpu_kernel``: whether a CPU call can reach the overload at all;
    ``tensors_set_returns`` as ``verdicts_of`` takes it)."""
    return replace(plan, variables=tuple(replace(v, verdicts=verdicts_of(v, cpu_kernel, tensors_set_returns)) for v in plan.variables))
