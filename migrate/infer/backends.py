"""Each variable's set per backend, where CPU's and CUDA's differ (the entry's ``dispatch_dtypes:`` line).

The union (``dtypes``) stays what every reader that serves any device takes (torchlib). CPU's set is the union
less the dtypes only CUDA's claims put there (``other-device`` verdicts): what calls ran with here. CUDA's set
rests on what the overload's own OpInfos claim (``supported_dtypes``) at the variable's slots, where the claims
tell CUDA from CPU: a dtype they claim for CPU and not for CUDA is not CUDA's (integer ``addmm``); a dtype they
claim for CUDA is (complex32 ``cos``); a dtype they name for neither device (uint16, float8: OpInfo does not test
it) takes CPU's verdict. Claims are what PyTorch's CI tests, a lower bound of what a kernel takes; the set is
said to rest on them (``CLAIMED``). With no claim at its slots nothing is stated for CUDA: it reads as the union.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from migrate.model.backends import CLAIMED, OBSERVED, BackendSet
from migrate.model.dtypes import DType
from migrate.model.plan import OverloadPlan, Variable

Claims = tuple[tuple[str, tuple[DType, ...], tuple[DType, ...]], ...]
"""(slot, CPU's claimed dtypes, CUDA's claimed dtypes) of one overload (``evidence.opinfo.observations.cuda_claims``)."""


def _backends(variable: Variable, claims: Mapping[str, tuple[tuple[DType, ...], tuple[DType, ...]]]) -> tuple[BackendSet, ...]:
    if variable.verdicts is None or variable.listed:  # a list's set depends on other variables: the union serves both
        return ()
    cpu = tuple(d for d in variable.dtypes if d not in variable.verdicts.other_device)
    claimed = [claims[slot] for slot in variable.binds if slot in claims]
    if not claimed:
        return (BackendSet("CPU", cpu, OBSERVED),) if cpu != variable.dtypes else ()
    cuda_lacks = {d for cpu_claim, cuda_claim in claimed for d in cpu_claim if d not in cuda_claim}
    cuda = tuple(d for d in variable.dtypes if d not in cuda_lacks)
    return () if cpu == cuda else (BackendSet("CPU", cpu, OBSERVED), BackendSet("CUDA", cuda, CLAIMED))


def with_backends(plan: OverloadPlan, claims: Claims) -> OverloadPlan:
    """The plan with each variable's sets per backend where they differ (``claims``: the overload's own OpInfos')."""
    by_slot = {slot: (cpu, cuda) for slot, cpu, cuda in claims}
    stated = [_backends(v, by_slot) for v in plan.variables]
    if not any(stated):
        return plan
    return replace(plan, variables=tuple(replace(v, backends=backends) for v, backends in zip(plan.variables, stated)))
