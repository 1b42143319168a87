"""The returns a ``ScalarType`` argument sets, taken out of their variables and given their own.

The calls are the evidence's (``migrate.evidence.probe.dtype_arguments``): the argument called at every dtype,
what ATen accepted and what each call returned. A return that had the argument's dtype in every accepted call
*is the argument's value*; its variable is then exactly the dtypes the argument was accepted at. A return that
took other dtypes gets every dtype it returned.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from migrate.evidence.probe.dtype_arguments import DtypeArgument
from migrate.evidence.sites import seen_on
from migrate.model.constraint import DtypeArgument as SetByArgument
from migrate.model.dtypes import TENSOR_DTYPES, DType, canonical
from migrate.model.plan import EMPTY, PROBE, TORCHLIB, Evidence, OverloadPlan, Variable
from migrate.model.promotion import Promotion, computation_dtype
from migrate.model.verdict import ACCEPTED, DTYPE_ARGUMENT, REJECTED, Verdict

ARGUMENT_DTYPES = 2  # dtypes the argument must be accepted at for a return to be set by it


def _returned_evidence(fact: DtypeArgument, slot: str) -> tuple[tuple[DType, ...], tuple[Evidence, ...]]:
    """The dtypes the return slot takes, and the evidence: accepted, and, for a return that is the argument's value,
    each refusal with ATen's message (a refused argument says nothing of a return that follows an input:
    ``_rowwise_prune``'s rows)."""
    at = fact.returns.index(slot)
    exact = fact.follows_argument(slot)
    dtypes = canonical(asked if exact else returned[at] for asked, returned in fact.accepted if returned[at] is not None)
    subject = f"{fact.argument} at each dtype, a call built from the schema"
    said = "the return is the argument's value" if exact else "what it returned"
    evidence = [Evidence(PROBE, "", dtypes, (slot,), len(fact.accepted), Verdict(ACCEPTED, seen_on(DTYPE_ARGUMENT, f"{subject} ({said})")))]
    for dtype, message in fact.refused if exact else ():
        evidence.append(Evidence(PROBE, "", (dtype,), (slot,), 1, Verdict(REJECTED, seen_on(DTYPE_ARGUMENT, subject), ((dtype, message),))))
    return dtypes, tuple(evidence)


def probed_everywhere(fact: DtypeArgument) -> bool:
    """Whether the argument was tried at every dtype a tensor can have, each accepted (with elements) or refused."""
    return set(TENSOR_DTYPES) <= {d for d, _ in fact.accepted} | {d for d, _ in fact.refused}


def _returned_by_calls(variable: Variable | None) -> tuple[DType, ...]:
    """The variable's dtypes that calls showed (samples, probes, a device's claim): not torchlib's annotations, which
    a run rewrites, nor refusals or calls on empty tensors."""
    if variable is None:
        return ()
    shown = {d for e in variable.evidence if e.source not in (TORCHLIB, EMPTY) and not e.refused for d in e.dtypes}
    return tuple(d for d in variable.dtypes if d in shown)


def with_dtype_arguments(
    plan: OverloadPlan | None, name: str, fact: DtypeArgument | None, optional: bool | None = None, numbers: bool = True
) -> OverloadPlan | None:
    """The plan with each tensor return its ScalarType argument sets taken out of its variable and given its own.

    Where other evidence speaks for the returns, only when the argument was accepted at ``ARGUMENT_DTYPES``
    dtypes or more and some return had its dtype in every accepted call (``_log_softmax_backward_data``'s
    ``input_dtype``, accepted only beside inputs of its own dtype, sets nothing there); where none does
    (``sparse_csr_tensor``), whatever the calls returned.

    A return that was the argument's value in every accepted call, the argument tried at every dtype
    (``probed_everywhere``) and in the yaml's schema (``optional``: whether it may be None there), is
    *set by* the argument: its variable names it (``U: [dtype]``), the argument's own dtypes are those it was
    accepted at, and the variable's dtypes are what it is when the argument is None: none for a required
    argument (``to.dtype``); the inputs' variable, followed, where the calls with the argument None returned the
    dtype their tensors were cast to (``_to_copy``: ``[dtype, self.dtype]``); else, where no ``Scalar`` argument may
    set it (``numbers`` False) and those calls cast every tensor input, what they returned (``sum``: int64 for
    integers, the input's dtype for floats; ``zeros``: the default dtype; not ``_scaled_mm``, whose float32 scales
    stay); else what other calls returned there (samples, probes; not torchlib, which a run
    rewrites: ``full(size, True)`` is bool, the run keeps every dtype it saw there, as it cannot tell calls that gave
    the argument from calls that did not), or, when no other call returned there, every dtype the argument was
    accepted at.
    Any other return takes the dtypes the argument was accepted at if it was its value, else every dtype it
    returned; both keep what other calls returned there (``linalg_vector_norm(float16 tensor)`` returns
    float16 with ``dtype=None``). Inputs keep what the rest of the evidence says.
    """
    if fact is None or not fact.accepted:
        return plan
    plan = plan or OverloadPlan(name, ())
    unbound = not {s for v in plan.variables for s in v.binds} & set(fact.returns)
    if not unbound and (len(fact.accepted_dtypes) < ARGUMENT_DTYPES or not any(fact.follows_argument(slot) for slot in fact.returns)):
        return plan
    kept = plan.kept({s for v in plan.variables for s in v.binds} - set(fact.returns))
    variables = list(kept.variables)
    inputs = {s for v in plan.variables for s in v.binds if not s.startswith("return.")}
    for number, slot in enumerate(fact.returns):
        dtypes, evidence = _returned_evidence(fact, slot)
        theirs = next((v for v in plan.variables if slot in v.binds), None)
        if theirs is not None:  # what other calls returned there stays (the argument at None, other inputs)
            evidence = tuple(replace(e, slots=(slot,)) for e in theirs.evidence if not e.slots or slot in e.slots) + evidence
        argument, follows = None, ()
        if optional is not None and fact.follows_argument(slot) and probed_everywhere(fact) and len(fact.accepted_dtypes) >= ARGUMENT_DTYPES:
            argument = SetByArgument(fact.argument, dtypes, optional)
            if not optional:
                dtypes = ()
            elif (followed := _followed_when_unset(fact, slot, kept)) is not None:
                dtypes, follows, evidence = (), (followed.name,), evidence + (_unset_evidence(fact, slot),)
            elif fact.unset and not numbers and set(fact.unset_cast) == inputs:
                dtypes, evidence = fact.unset_returned(slot), evidence + (_unset_evidence(fact, slot),)
            else:
                dtypes = _returned_by_calls(theirs) or dtypes
        elif theirs is not None:
            dtypes = canonical((*dtypes, *theirs.dtypes))
        variables.append(Variable(f"R{number}~{fact.argument}", dtypes, (slot,), evidence, follows, argument=argument))
    return replace(kept, variables=tuple(variables))


def _followed_when_unset(fact: DtypeArgument, slot: str, kept: OverloadPlan) -> Variable | None:
    """The variable the return follows when the argument is None: the one binding every tensor the calls with the
    argument None cast, where the return had their dtype in each of those calls (``fact.unset_follows_inputs``), or,
    those tensors promoted (``sum``'s ``int_to_long``), the dtype the call computed in: the promoted variable's."""
    if not fact.unset_cast or not fact.unset_follows_inputs(slot, functools.partial(_computed, kept.promotion, fact.unset_cast)):
        return None
    return next((v for v in kept.variables if set(fact.unset_cast) <= set(v.binds)), None)


def _computed(promotion: Promotion | None, cast: tuple[str, ...], dtype: DType) -> DType:
    """The dtype a call computes in with the ``cast`` tensors at ``dtype``: theirs, unless the promotion moves it."""
    if promotion is None or not set(cast) <= set(promotion.args):
        return dtype
    return DType(computation_dtype(promotion.kind, dtype.name) or dtype.name)


def _unset_evidence(fact: DtypeArgument, slot: str) -> Evidence:
    cast = ", ".join(fact.unset_cast) or "no tensor"
    site = seen_on(DTYPE_ARGUMENT, f"{fact.argument} None, {cast} at each dtype, a call built from the schema (what it returned)")
    return Evidence(PROBE, "", fact.unset_returned(slot), (slot,), len(fact.unset), Verdict(ACCEPTED, site))


def returns_following_the_promotion(plan: OverloadPlan, fact: DtypeArgument) -> OverloadPlan:
    """The plan whose returns set by the argument follow its promoted variable where the argument is None: a
    reduction's ``U: [dtype, self.dtype]`` once ``int_to_long`` promotes ``self`` (``_followed_when_unset``)."""
    variables = []
    for variable in plan.variables:
        if variable.argument is not None and len(variable.binds) == 1 and variable.binds[0] in fact.returns:
            followed = _followed_when_unset(fact, variable.binds[0], plan)
            if followed is not None:
                variable = replace(variable, dtypes=(), follows=(followed.name,))
        variables.append(variable)
    return replace(plan, variables=tuple(variables))
