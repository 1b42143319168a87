"""A sibling's own evidence first, and its functional overload's constraints only where none of its own speaks.

In-place and out= overloads are called on calls built from their functional sibling's accepted
ones (``migrate.evidence.probe.siblings``), so their verdicts stand on their own where they write:
the ``out`` tensor, the mutated ``self``, and the slots that share a variable with them. An input
they only read is judged on the functional overload's many calls instead (``index_put_``'s
``indices`` take a bool mask in the samples' calls; a sibling's call, built on an int64 index,
refuses one of the wrong shape). What their calls never reach (an optional tensor no call passed,
a sibling no call could be built for) takes the functional overload's constraints too, as the
``groups`` source always gave them.

A return that an overload's own calls fixed (``fixed_returns``: one dtype in every call, its inputs cast to
several) keeps that dtype over whatever structure would give it: ``_cast_Byte`` forwards to ``_to_copy``,
whose return its ``dtype`` argument sets, yet always returns uint8.
"""

from __future__ import annotations

from dataclasses import replace

from migrate.infer.verdicts import returns_probed, verdicts_of
from migrate.model.dtypes import canonical
from migrate.model.plan import KERNEL, OPINFO, PROBE, OverloadPlan, Variable
from migrate.model.schema import TypedSchema

FALLBACK_SUFFIX = "~group"  # appended to a carried variable's name where the sibling's own variables use it


def with_fallback(own: OverloadPlan, carried: tuple[Variable, ...]) -> OverloadPlan:
    """``own`` (a sibling's plan from its own calls, maybe empty) with the ``carried`` variables at slots it leaves free.

    A carried variable whose name one of its own has is renamed (the names are the sources' own until
    ``name_variables``), together with the lists of the carried variables that follow it.
    """
    taken = {v.name for v in own.variables}
    renamed = {v.name: f"{v.name}{FALLBACK_SUFFIX}" if v.name in taken else v.name for v in carried}
    variables = tuple(
        replace(v, name=renamed[v.name], follows=tuple(renamed.get(n, n) for n in v.follows), opmath=tuple(renamed.get(n, n) for n in v.opmath))
        for v in carried
    )
    return replace(own, variables=own.variables + variables)


def written_by_own_calls(own: OverloadPlan, sibling: TypedSchema, covered: set[str]) -> OverloadPlan:
    """``own`` without the variables that bind only inputs the sibling reads (no return, no ``!`` argument)
    and the functional overload's constraints all cover: those take the functional's."""
    written = {s.name for s in sibling.slots if s.is_return or "!" in s.alias}
    kept = tuple(v for v in own.variables if set(v.binds) & written or not set(v.binds) <= covered)
    return own if kept == own.variables else replace(own, variables=kept)


def with_inputs_read_as_the_functional(own: OverloadPlan, sibling: TypedSchema, functional_sets: dict[str, frozenset]) -> OverloadPlan:
    """``own`` (an out= sibling's plan from its own calls) with each input it only reads taken out of a variable that
    also binds the ``out`` tensor, where the functional overload's calls ran that input with more dtypes than its own
    calls accepted (``functional_sets``: the functional's accepted dtypes per slot; OpInfo's claims aside): one kernel
    reads the input, and the out= calls that refused the rest cast it together with ``out`` (ATen's message names the
    out tensor: ``Expected out tensor to have dtype float, but got bool instead``). The input then takes the
    functional's constraints (``group_siblings``)."""
    written = {s.name for s in sibling.slots if s.is_return or "!" in s.alias}
    variables, changed = [], False
    for variable in own.variables:
        own_accepted = frozenset(variable.verdicts.accepted if variable.verdicts is not None else variable.dtypes)
        narrower = {slot for slot in variable.binds if slot not in written and slot in functional_sets and functional_sets[slot] > own_accepted}
        if narrower and set(variable.binds) & written:
            variable = replace(variable, binds=tuple(slot for slot in variable.binds if slot not in narrower))
            changed = True
        variables.append(variable)
    return replace(own, variables=tuple(variables)) if changed else own


def with_what_the_functional_returns(own: OverloadPlan, written_at: dict[str, Variable]) -> OverloadPlan:
    """``own`` (an out= sibling's plan from its own calls) with each variable that binds only slots it writes widened by
    the dtypes the functional overload's calls returned there (``written_at``: its return's variable per written slot):
    the out= overload runs the functional's computation and writes its result, so ``out`` at the result's dtype is a
    call that runs. Its own calls held the inputs at the few dtypes some sample had (``fft_ifft.out``'s, float32 and
    int64, wrote complex64 alone; a complex128 input writes complex128), and a refusal beside those is no refusal beside
    every input. Only a functional's return of its own variable (no input's dtype) widens it: where the return is an
    input's dtype, the out= calls cast ``out`` with that input, and may meet a kernel the functional never reaches
    (``conj_physical`` of uint16 copies; ``conj_physical.out`` calls ``conj_cpu``, which refuses it). A variable that
    follows another already says what ``out`` takes beside each input's dtype. Only calls that ran widen it; the
    functional's claims for other devices reach it with the family's."""
    variables, changed = [], False
    for variable in own.variables:
        returned = [written_at[slot] for slot in variable.binds if slot in written_at]
        own_kind = all(s.startswith("return.") for theirs in returned for s in theirs.binds)
        if returned and len(returned) == len(variable.binds) and own_kind and not variable.depends_on:
            ran = tuple(e for theirs in returned for e in theirs.evidence if e.source in (OPINFO, PROBE, KERNEL) and not e.refused)
            added = {d for e in ran for d in e.dtypes} - set(variable.dtypes)
            if added:
                evidence = variable.evidence + tuple(replace(e, slots=variable.binds) for e in ran)
                variable = replace(variable, dtypes=canonical((*variable.dtypes, *added)), evidence=evidence)
                variable = replace(variable, verdicts=verdicts_of(variable))
                changed = True
        variables.append(variable)
    return replace(own, variables=tuple(variables)) if changed else own


def fixed_returns(own: OverloadPlan, schema: TypedSchema) -> tuple[Variable, ...]:
    """The variables of ``own`` (an overload's plan from its own calls) that bind only returns every call returned at
    one dtype while probes cast the inputs to two or more: the return has that dtype whatever the inputs' dtypes.

    None where a Scalar or ScalarType argument may set the return (``where.Scalar``'s numbers, ``to.device``'s
    ``dtype``): the calls held each such argument at one value, so the one dtype may be that value's.
    """
    if schema.numbers_may_set_returns:
        return ()
    inputs = [v for v in own.variables if not all(slot.startswith("return.") for slot in v.binds)]
    if not any(len(v.dtypes) > 1 for v in inputs):
        return ()
    return tuple(v for v in own.variables if len(v.dtypes) == 1 and returns_probed(v))
