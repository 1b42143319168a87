"""Sets at the kernel: an overload's promoted tensors as one variable of the dtypes ATen computes in.

Where ATen promotes (``add``, ``where``, ``cat``, comparisons), a slot-by-slot set is useless: a 0-dim
or lower-category companion makes any dtype run at any slot, in the companion's dtype. So the
promoted tensor arguments share one variable, whose set is judged only on **diagonal** calls, where
every promoted tensor has one dtype and an element: the probes that cast all of them together, and
the calls built for promotion (``migrate.evidence.promotion.calls``). A call with a 0-dim or
lower-category companion (a probe casting one of them alone, an observation) proves promotion,
never a dtype. A dtype such a call accepted is that of the kernel: integers under ``int_to_float``
are computed in the default float (``migrate.model.promotion.computation_dtype``). The dtypes a diagonal call ran at and the
kernel computed in another are kept apart (``promoted_away``): each is settled as ``promoted``, not
left unknown, and stays out of the set.

The return takes the kind's rule: it is the promoted variable itself (``default``, ``no_opmath``,
``int_to_float``, ``bool_to_long``), the real counterparts of its dtypes (``complex_to_float``), or
stays as it was (``always_bool``: bool). Every other slot (indices, masks, ``dtype=``-gated inputs)
keeps its variable, its verdicts and its dependent constraints. In-place and out= overloads take
their functional overload's promotion (``sibling_promotions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from migrate.evidence.sites import seen_on
from migrate.infer.promotion_findings import CONFLICT, PromotionFinding
from migrate.infer.verdicts import with_verdicts
from migrate.model.dtypes import DType, canonical
from migrate.model.native import NativeFunctions
from migrate.model.plan import DECLARED, EMPTY, KERNEL, OPINFO, PROBE, TORCHLIB, Conflict, Evidence, OverloadPlan, Variable
from migrate.model.promotion import INT_TO_LONG, Promotion, computation_dtype, result_dtype, returns_possible, with_numbers
from migrate.model.schema import TypedSchema
from migrate.model.verdict import PROMOTED as PROMOTED_VERDICT, PROBE_CALL, Site, Verdict

SHARED_RETURN = ("default", "no_opmath", "int_to_float", "bool_to_long")  # kinds whose return is the computation dtype
PROMOTED = "TPromoted"  # the promoted variable's name until names are given


def _computed(kind: str, dtype: DType, numbers: Iterable[str] = ()) -> DType | None:
    """The dtype the kernel computes in, every promoted tensor at ``dtype`` (``migrate.model.promotion``)."""
    found = computation_dtype(kind, dtype.name, numbers)
    return None if found is None else DType(found)


def _real(dtype: DType) -> DType:
    """What ``complex_to_float`` returns for a computation dtype."""
    return DType(result_dtype("complex_to_float", dtype.name))


def _numbers(evidence: Evidence, scalars: Iterable[str]) -> tuple[str, ...]:
    """The Python kinds the promoted Scalars held in a piece's calls."""
    site = evidence.verdict.site if evidence.verdict is not None else None
    return tuple(kind for s in scalars if site is not None and (kind := site.number_of(s)))


def _scalars(finding: PromotionFinding) -> tuple[str, ...]:
    """The promoted Scalar arguments: the promotion's args less its tensors."""
    return tuple(a for a in finding.promotion.args if a not in finding.tensors)


def _cast_slots(evidence: Evidence) -> set[str] | None:
    """The slots a probe of a recorded or built call cast; None for other evidence."""
    site = evidence.verdict.site if evidence.verdict is not None else None
    return set(site.cast) if site is not None and site.cast else None


def _diagonal_pieces(
    plan: OverloadPlan, finding: PromotionFinding, written: tuple[str, ...] = ()
) -> tuple[list[Evidence], list[Evidence], list[Evidence]]:
    """The plan's evidence that speaks of diagonal calls, at the promoted tensors, in computation dtypes; then, of
    the calls with every slot of the promoted variable at one dtype (``written``: the arguments a sibling writes,
    besides the tensors), those ATen ran, in their own dtypes, and its refusals at dtypes the kernel does not compute
    in (``acos_`` of int64: ``result type Float can't be cast to the desired output type Long``)."""
    tensors, kind = set(finding.tensors), finding.promotion.kind
    together = tensors | {s for s in written if not s.startswith("return.")}
    scalars = _scalars(finding)
    pieces, ran, refused, seen = [], [], [], set()
    for variable in plan.variables:
        for piece in variable.evidence:
            at_tensors = bool(tensors & set(piece.slots))
            if not together & set(piece.slots) or id(piece) in seen:
                continue
            seen.add(id(piece))
            cast = _cast_slots(piece) if piece.source == PROBE else None
            numbers: tuple[str, ...] = ()
            if piece.source == PROBE:
                if cast is None or not tensors <= cast or any(piece.verdict.site.gate.startswith(f"{s}=") for s in scalars):
                    continue  # not a diagonal call, or one whose promoting Scalar was set to let a dtype in
                numbers = _numbers(piece, scalars)
                if piece.refused:
                    # a refusal where a promoted Scalar moved the computation (bool with an int) says nothing of its dtype
                    own = [d for d in piece.dtypes if with_numbers(d.name, numbers) == d.name]
                    away = tuple(d for d in own if _computed(kind, d) != d)
                    if away and cast == together:
                        refused.append(replace(piece, dtypes=away, slots=finding.tensors))
                    if cast != tensors or not at_tensors:
                        continue  # another slot cast with them may be what ATen refused
                    dtypes = tuple(d for d in own if _computed(kind, d) == d)
                    if dtypes:
                        pieces.append(replace(piece, dtypes=dtypes, slots=finding.tensors))
                    continue
                if together <= cast:
                    ran.append(piece)
            elif piece.source not in (DECLARED, TORCHLIB):
                continue  # observations mix dtypes per slot; the rest speaks of slots apart
            if at_tensors:
                dtypes = canonical({_computed(kind, d, numbers) for d in piece.dtypes} - {None})
                if dtypes:
                    pieces.append(replace(piece, dtypes=dtypes, slots=finding.tensors))
    return pieces, ran, refused


def _remaining(variable: Variable, moved: set[str]) -> Variable | None:
    """A variable without the moved slots (None if it binds no other); its dtypes from its evidence at the rest."""
    rest = tuple(s for s in variable.binds if s not in moved)
    if not rest or rest == variable.binds:
        return variable if rest else None
    evidence = tuple(e for e in variable.evidence if not e.slots or set(e.slots) & set(rest))
    dtypes = {
        d for e in evidence if e.source in (OPINFO, PROBE, KERNEL, DECLARED, TORCHLIB) and not e.refused and e.source != EMPTY for d in e.dtypes
    }
    return Variable(variable.name, canonical(dtypes or variable.dtypes), rest, evidence, variable.follows, opmath=variable.opmath)


def _refused_only(pieces: list[Evidence]) -> frozenset[DType]:
    """The dtypes these pieces refused and none accepted."""
    accepted = {d for e in pieces if e.source != TORCHLIB and not e.refused for d in e.dtypes}
    return frozenset(d for e in pieces if e.refused for d in e.dtypes if d not in accepted)


def _mapped(finding: PromotionFinding, refused_here: frozenset[DType] = frozenset()) -> list[Evidence]:
    """The diagonal calls' evidence in computation dtypes: a refusal only where the kernel would compute in the dtype;
    an acceptance not at ``refused_here`` (a sibling's own refusals, which settle those)."""
    kind, found = finding.promotion.kind, []
    for piece in finding.diagonal:  # their promoting Scalars are of each dtype's own kind (``calls``)
        if piece.refused:
            dtypes = tuple(d for d in piece.dtypes if _computed(kind, d) == d)
        else:
            dtypes = canonical({_computed(kind, d) for d in piece.dtypes} - refused_here)
        if dtypes:
            found.append(replace(piece, dtypes=dtypes))
    return found


def promoted_away(pieces: list[Evidence], kind: str, tensors: tuple[str, ...], scalars: tuple[str, ...]) -> list[Evidence]:
    """Of the accepted diagonal probes (before their dtypes were mapped), the dtypes the kernel computed in
    another dtype, per computation dtype: ``computed in float32 (int_to_float): <the accepted call's line>``. A call
    whose promoted ``scalars`` moved the computation (``le`` of uint16 with a Python float computes in float32)
    settles nothing of the tensors' dtype: a call with a Scalar of that dtype's own kind judges it."""
    found: dict[tuple[DType, str], set[DType]] = {}
    seen_at: dict[str, Evidence] = {}  # the first piece of each line: pieces that read alike are one call
    for piece in pieces:
        if piece.source != PROBE or piece.refused or piece.outcome == PROMOTED_VERDICT:
            continue
        numbers = _numbers(piece, scalars)
        for dtype in piece.dtypes:
            if with_numbers(dtype.name, numbers) == dtype.name and (computed := _computed(kind, dtype)) != dtype:
                found.setdefault((computed, piece.where), set()).add(dtype)
                seen_at.setdefault(piece.where, piece)
    return [
        Evidence(PROBE, "", canonical(dtypes), tensors, verdict=Verdict(PROMOTED_VERDICT, _site_of(seen_at[where]), computed_in=computed, kind=kind))
        for (computed, where), dtypes in sorted(found.items(), key=lambda item: (item[0][0].sort_key, item[0][1]))
    ]


def _site_of(piece: Evidence) -> Site:
    """Where a promoted dtype was seen: the accepted call's site, its line as the call (a slot's follower has no site)."""
    if piece.verdict is None:
        return seen_on(PROBE_CALL, piece.where)
    return replace(piece.verdict.site, call=piece.where, cast=(), beside=(), numbers=(), gate="")


def _checked_by_returns(plan: OverloadPlan, finding: PromotionFinding) -> PromotionFinding:
    """The finding, its kind ``default`` where calls seen here returned a dtype the kind never returns
    (``div.Tensor_mode`` built with ``rounding_mode=None`` divides as ``int_to_float``; its samples floor
    integers into integers), with a conflict saying so."""
    kind = finding.promotion.kind
    if kind == INT_TO_LONG:  # its ``dtype`` argument, given, sets the return to any dtype
        return finding
    returned = {
        d
        for v in plan.variables
        for e in v.evidence
        if "return.0" in e.slots and e.source in (OPINFO, PROBE) and not e.refused
        for d in e.dtypes
    }
    impossible = canonical(d for d in returned if not returns_possible(kind, d.name))
    if not impossible:
        return finding
    promotion = Promotion("default", finding.promotion.args)
    message = (
        f"the calls built for promotion agree with {finding.promotion}, but calls seen here returned "
        f"{', '.join(d.name for d in impossible)}, which {kind} never returns: {promotion} is written"
    )
    return replace(finding, promotion=promotion, conflicts=finding.conflicts + (Conflict(CONFLICT, finding.promotion.args, impossible, message),))


def one_tensor_return(schema: TypedSchema) -> bool:
    """The schema returns one plain tensor (not a list, not several)."""
    returned = [s for s in schema.slots if s.is_return]
    return len(returned) == 1 and returned[0].is_tensor and not returned[0].mods


def _with_numbers_returned(plan: OverloadPlan, returned: tuple[Evidence, ...]) -> OverloadPlan:
    """The plan whose variable of returns alone at ``return.0`` also takes what the calls that promoted numbers alone
    returned (``PromotionFinding.returned``); a return that shares a variable with an input is left as it is."""
    if not returned:
        return plan
    variables = []
    for variable in plan.variables:
        if "return.0" in variable.binds and all(s.startswith("return.") for s in variable.binds):
            dtypes = canonical((*variable.dtypes, *(d for e in returned for d in e.dtypes)))
            variable = replace(variable, dtypes=dtypes, evidence=variable.evidence + returned)
        variables.append(variable)
    return replace(plan, variables=tuple(variables))


def with_promotion(
    plan: OverloadPlan,
    finding: PromotionFinding | None,
    returns: bool = True,
    written: tuple[str, ...] = (),
    sibling: bool = False,
    free_return: bool = False,
    own_refusals_settle: bool = False,
) -> OverloadPlan:
    """The plan with its promotion, and its promoted tensors one variable of their diagonal dtypes (see the module).

    ``returns`` False leaves the return with the variable it has; ``written`` (an out= overload's ``out`` and
    return) join the promoted variable: torch casts the result into any dtype of its set. A ``sibling`` (in-place,
    out=) takes its functional overload's kind as written: what it returns is what it writes into. ``free_return``:
    the schema returns one plain tensor, which joins the promoted variable where the kind returns its computation
    dtype although no variable of the plan binds it (``special_xlog1py.self_scalar``'s calls built from the schema
    returned float32 for int64 inputs, so it was a variable of its own, which those calls leave free).
    ``own_refusals_settle``: a sibling whose one input is its promoted tensor; a dtype its own calls refused and never
    ran is not taken from the functional overload's calls (``abs_`` refuses complex tensors, which ``abs`` takes).
    Where the sibling has other inputs, the refusal may be theirs: ``_foreach_add_.List`` refuses integer tensors
    with a float ``alpha``, ``div_.Tensor_mode`` complex ones under a ``rounding_mode``, ``multiply_.Tensor`` float8
    ones beside a 0-dim ``other`` (``"mul_cpu_reduced_float" not implemented``)."""
    if finding is None:
        return plan
    if finding.promotion is None or not finding.tensors:
        plan = _with_numbers_returned(plan, finding.returned) if returns else plan
        return replace(plan, promotion=finding.promotion, conflicts=plan.conflicts + finding.conflicts)
    finding = finding if sibling else _checked_by_returns(plan, finding)
    bound = {s for v in plan.variables for s in v.binds}
    kind = finding.promotion.kind
    # a reduction's own probes may have given its ``dtype``, which sets the computation: its finding's calls left it None
    diagonal, ran, refused = ([], [], []) if kind == INT_TO_LONG else _diagonal_pieces(plan, finding, written)
    pieces = diagonal + _mapped(finding, _refused_only(diagonal) if own_refusals_settle else frozenset())
    dtypes = canonical({d for e in pieces if e.source != TORCHLIB and not e.refused for d in e.dtypes})
    if not dtypes:
        return replace(plan, promotion=finding.promotion, conflicts=plan.conflicts + finding.conflicts)
    # A dtype the kernel computes in another is settled by this overload's own calls: a sibling writes the promoted
    # result into its own tensor, so the functional's calls (its finding's) never say whether its call runs.
    pieces += promoted_away(ran + ([] if sibling else list(finding.diagonal)), kind, finding.tensors, _scalars(finding)) + refused
    shared_return = returns and kind in SHARED_RETURN and ("return.0" in bound or free_return)
    moved = set(finding.tensors) | set(written) | ({"return.0"} if shared_return or (returns and kind == "complex_to_float") else set())
    binds = finding.tensors + tuple(s for s in written if s not in finding.tensors) + (("return.0",) if shared_return else ())
    promoted = Variable(PROMOTED, dtypes, binds, tuple(pieces))
    variables = [promoted]
    if returns and kind == "complex_to_float" and "return.0" in bound:
        real = canonical({_real(d) for d in dtypes})
        where = f"the real counterparts of {', '.join(finding.tensors)}'s computation dtypes (complex_to_float)"
        why = tuple(
            Evidence(source, where, canonical({_real(d) for e in pieces if e.source == source and not e.refused for d in e.dtypes}), ("return.0",))
            for source in (PROBE, DECLARED)
            if any(e.source == source and not e.refused for e in pieces)
        )
        variables.append(Variable(f"{PROMOTED}Real", real, ("return.0",), why))
    gone = set()
    for variable in plan.variables:
        kept = _remaining(variable, moved)
        if kept is None:
            gone.add(variable.name)
        else:
            variables.append(kept)
    variables = [
        replace(v, follows=tuple(PROMOTED if f in gone else f for f in v.follows), opmath=tuple(PROMOTED if f in gone else f for f in v.opmath))
        if set(v.depends_on) & gone
        else v
        for v in variables
    ]
    return replace(plan, variables=tuple(variables), promotion=finding.promotion, conflicts=plan.conflicts + finding.conflicts)


def sibling_promotions(native: NativeFunctions, plans: Mapping[str, OverloadPlan], findings: Mapping[str, PromotionFinding]) -> dict[str, OverloadPlan]:
    """In-place and out= overloads with their functional overload's promotion (its diagonal calls' evidence), where
    their own calls were not made (a promoted result must also cast into ``self`` or ``out``) and their schema has
    its arguments: ``add_.Tensor``, ``sinc_``, ``add.out``. Their verdicts are read again from the evidence."""
    found = {}
    for name, plan in sorted(plans.items()):
        group = native.groups.get(name) if name in native.by_name else None
        functional = group.of_kind("functional") if group is not None else ()
        finding = findings.get(functional[0]) if functional and name not in functional and plan.promotion is None else None
        written = plans[functional[0]].promotion if finding is not None and functional[0] in plans else None
        if written is None:
            continue
        finding = replace(finding, promotion=written)  # as the functional overload's plan writes it (_checked_by_returns)
        arguments = {s.name for s in native.by_name[name].schema.slots if not s.is_return}
        if set(finding.promotion.args) <= arguments:
            sibling = replace(finding, name=name, conflicts=())
            schema = native.by_name[name].schema
            if name in group.of_kind("out"):  # the return is ``out``: it joins the promoted variable where the kind returns its dtype
                out = next((v.binds for v in plan.variables if "return.0" in v.binds), ()) if finding.promotion.kind in SHARED_RETURN else ()
                if not out and finding.promotion.kind in SHARED_RETURN and one_tensor_return(schema):  # no call bound them
                    out = tuple(s.name for s in schema.slots if s.is_tensor and not s.is_return and "!" in s.alias) + ("return.0",)
                found[name] = with_verdicts(with_promotion(plan, sibling, returns=False, written=out, sibling=True))
            else:
                inputs = [s.name for s in schema.slots if not s.is_return]
                alone = len(inputs) == 1 and inputs[0] in finding.tensors
                found[name] = with_verdicts(with_promotion(plan, sibling, sibling=True, free_return=one_tensor_return(schema), own_refusals_settle=alone))
    return found
