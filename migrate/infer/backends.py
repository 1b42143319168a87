"""Each variable's set per backend, where CPU's and CUDA's differ (the entry's ``dispatch_dtypes:`` line).

The union (``dtypes``) stays what every reader that serves any device takes (torchlib). CPU's set is the union
less the dtypes only CUDA's claims put there (``other-device`` verdicts): what calls ran with here. CUDA's set
rests on what the overload's own OpInfos claim (``supported_dtypes``) at the variable's slots, where the claims
tell CUDA from CPU: a dtype they claim for CPU and not for CUDA is not CUDA's (integer ``addmm``); a dtype they
claim for CUDA is (complex32 ``cos``); a dtype they name for neither device (uint16, float8: OpInfo does not test
it) takes CPU's verdict. Claims are what PyTorch's CI tests, a lower bound of what a kernel takes; the set is
said to rest on them (``CLAIMED``). With no claim at its slots nothing is stated for CUDA: it reads as the union.

A backend the entry's ``dispatch:`` gives no kernel (``histogram.bins_tensor`` lists CPU and MPS) takes no dtype
there, whatever OpInfo claims: its set is empty (``NO_KERNEL``).

A recording (``--recording``) replaces what a backend's set rests on at the overloads it covers: its verdicts, read
as the inference reads the CPU's (``Recorded``: each slot's set), are that backend's set; a recorded CUDA set
replaces OpInfo's claims, so the union is then the CPU's set and CUDA's; a recorded CPU set replaces the CPU's
observations, the union widened by what it accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from migrate.model.backends import CLAIMED, NO_KERNEL, OBSERVED, BackendSet
from migrate.model.dtypes import DType, canonical
from migrate.model.plan import OverloadPlan, Variable

Claims = tuple[tuple[str, tuple[DType, ...], tuple[DType, ...]], ...]
"""(slot, CPU's claimed dtypes, CUDA's claimed dtypes) of one overload (``evidence.opinfo.observations.cuda_claims``)."""


@dataclass(frozen=True)
class Recorded:
    """One backend's sets at one overload's slots, from a recording, and what they rest on (``Recording.origin``)."""

    per_slot: Mapping[str, tuple[DType, ...]]
    origin: str

    def at(self, slots: tuple[str, ...]) -> tuple[DType, ...] | None:
        """The dtypes every one of these slots took (None: the recording speaks for none of them)."""
        sets = [set(self.per_slot[slot]) for slot in slots if slot in self.per_slot]
        return canonical(set.intersection(*sets)) if sets else None


def _backends(
    variable: Variable, claims: Mapping[str, tuple[tuple[DType, ...], tuple[DType, ...]]], recorded: Mapping[str, Recorded]
) -> tuple[tuple[DType, ...], tuple[BackendSet, ...]]:
    """The variable's union and its sets per backend where they differ from it."""
    if variable.verdicts is None or variable.listed:  # a list's set depends on other variables: the union serves both
        return variable.dtypes, ()
    cpu = tuple(d for d in variable.dtypes if d not in variable.verdicts.other_device)
    claimed = [claims[slot] for slot in variable.binds if slot in claims]
    cpu_recorded = recorded["CPU"].at(variable.binds) if "CPU" in recorded else None
    cuda_recorded = recorded["CUDA"].at(variable.binds) if "CUDA" in recorded else None
    cpu_basis = recorded["CPU"].origin if cpu_recorded is not None else OBSERVED
    cpu = cpu if cpu_recorded is None else cpu_recorded
    if cuda_recorded is not None:  # observed on the device: OpInfo's claims no longer speak
        union = canonical({*cpu, *cuda_recorded})
        cuda: tuple[DType, ...] | None = cuda_recorded
        cuda_basis = recorded["CUDA"].origin
    else:
        union = canonical({*variable.dtypes, *cpu})
        cuda_lacks = {d for cpu_claim, cuda_claim in claimed for d in cpu_claim if d not in cuda_claim}
        cuda = tuple(d for d in variable.dtypes if d not in cuda_lacks) if claimed else None
        cuda_basis = CLAIMED
    if cuda is None:
        return union, ((BackendSet("CPU", cpu, cpu_basis),) if cpu != union else ())
    if cpu == cuda:
        return union, ()
    return union, (BackendSet("CPU", cpu, cpu_basis), BackendSet("CUDA", cuda, cuda_basis))


def _without_cuda_kernel(variable: Variable, stated: tuple[tuple[DType, ...], tuple[BackendSet, ...]]) -> tuple[tuple[DType, ...], tuple[BackendSet, ...]]:
    """The variable's union and sets per backend where no CUDA kernel backs the entry: CUDA's set is empty (a list's
    set depends on other variables: it has none per backend)."""
    union, backends = stated
    if variable.listed:
        return stated
    cpu = next((b for b in backends if b.key == "CPU"), BackendSet("CPU", union, OBSERVED))
    return union, (cpu, BackendSet("CUDA", (), NO_KERNEL))


def with_backends(plan: OverloadPlan, claims: Claims, recorded: Mapping[str, Recorded] | None = None, cuda_kernel: bool = True) -> OverloadPlan:
    """The plan with each variable's sets per backend where they differ (``claims``: the overload's own OpInfos';
    ``recorded``: per dispatch key, the sets a recording gives this overload; ``cuda_kernel``: whether the entry's
    ``dispatch:`` gives CUDA a kernel)."""
    by_slot = {slot: (cpu, cuda) for slot, cpu, cuda in claims}
    stated = [_backends(v, by_slot, recorded or {}) for v in plan.variables]
    if not cuda_kernel and "CUDA" not in (recorded or {}):
        stated = [_without_cuda_kernel(v, s) for v, s in zip(plan.variables, stated)]
    if not any(backends for _, backends in stated) and all(union == v.dtypes for v, (union, _) in zip(plan.variables, stated)):
        return plan
    variables = tuple(replace(v, dtypes=union, backends=backends) for v, (union, backends) in zip(plan.variables, stated))
    return replace(plan, variables=variables)
