"""One row per overload of the yaml, with what the reference prints of it: read, never inferred.

The yaml says each variable's set (by the name it is spelled with, when a global set spells it),
its promotion and autocast lines, python_module and tags; a run's report, when given, adds each
variable's verdict per dtype, its evidence and ATen's messages (matched to the yaml's variables by
the slots they bind: a variable the run did not write has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.model.autocast import Policies, declared_autocast
from migrate.model.constraint import possible_dtypes
from migrate.model.declared import declared_promotion, declared_with_backends
from migrate.model.dtypes import TENSOR_DTYPES, DType
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import CONSTRAINTS_KEY, NativeFunctions, sibling_constraints_path
from migrate.model.plan import OTHER_DEVICE, UNKNOWN, Evidence, OverloadPlan, Plan, Verdicts
from migrate.model.promotion import Promotion
from migrate.model.values import ValueRefusal

# A cell's state beside the evidence's four verdicts: what the yaml alone says of a dtype.
DECLARED = "declared"  # in the set; no report (or no runtime evidence) judged it
NOT_DECLARED = "not-declared"  # outside the set, and nothing judged it


@dataclass(frozen=True)
class VariableRow:
    """A variable as the yaml declares it, with the report's verdicts and evidence for it when there are any."""

    name: str
    set_name: str | None  # the global set the yaml spells it with
    dtypes: tuple[DType, ...]
    follows: tuple[str, ...]  # the names its list gives after its dtypes: variables it follows, the argument that sets it
    binds: tuple[str, ...]
    possible: frozenset[DType]  # its own dtypes, those of the variables it follows, those its argument may name
    verdicts: Verdicts | None = None
    evidence: tuple[Evidence, ...] = ()
    backends: tuple[tuple[str, tuple[DType, ...]], ...] = ()  # (dispatch key, its set there) where dispatch_dtypes: states one

    def state(self, dtype: DType) -> str:
        """The cell's state: the evidence's verdict, else whether the set holds the dtype."""
        if self.verdicts is not None:
            return self.verdicts.of(dtype)
        return DECLARED if dtype in self.possible else NOT_DECLARED

    @property
    def unknown(self) -> tuple[DType, ...]:
        return tuple(d for d in TENSOR_DTYPES if self.state(d) == UNKNOWN)

    @property
    def other_device(self) -> tuple[DType, ...]:
        """Dtypes only OpInfo's CUDA claim gives: marked apart, as no CPU call showed them."""
        return tuple(d for d in TENSOR_DTYPES if self.state(d) == OTHER_DEVICE)

    @property
    def stands(self) -> str:
        """How the set stands: complete, or a lower bound with its count of unknown dtypes; CUDA-only dtypes apart."""
        if self.verdicts is None:
            return "no runtime evidence"
        unknown = len(self.unknown)
        text = "complete" if not unknown else f"lower bound, {unknown} unknown"
        if self.other_device:
            text += "; CUDA only: " + ", ".join(d.name for d in self.other_device)
        return text


@dataclass(frozen=True)
class OverloadRow:
    name: str  # 'add.Tensor'
    line: int  # the func line, 1-based
    module: str  # python_module, '' for torch's own namespace
    tags: tuple[str, ...]
    slots: tuple[tuple[str, str | None], ...]  # each tensor slot and the variable binding it (None: plain Tensor)
    variables: tuple[VariableRow, ...]
    promotion: Promotion | None
    autocast: Policies
    written: tuple[str, ...] = ()  # the tensors it writes into (out, an in-place self) that share its promoted variable
    value_refusals: tuple[ValueRefusal, ...] = ()  # dtypes some value of an argument refuses that another takes (the report's)

    @property
    def incomplete(self) -> bool:
        return any(v.unknown for v in self.variables)

    @property
    def promotion_text(self) -> str:
        """The ``type_promotion:`` line as the reference prints it, with the reader's rule for the tensors it writes:
        any dtype of the set that torch casts the computation dtype to (``add(float32, float32, out=int64)`` is refused)."""
        if self.promotion is None:
            return ""
        text = f"{self.promotion.kind} ({', '.join(self.promotion.args)})"
        if self.written:
            text += f"; {', '.join(self.written)}: a dtype of the set the result casts to (torch.can_cast)"
        return text


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    return tuple(str(t) for t in value) if isinstance(value, list) else ()


def _set_names(entry, fields: dict[str, Any], sets) -> dict[str, str]:
    """Each variable spelled by a global set's name: by the word in the schema, or by ``T: Name``."""
    mapping = fields.get(CONSTRAINTS_KEY) or {}
    names = {}
    for word in entry.schema.variables():
        value = mapping.get(word, word) if isinstance(mapping, dict) else word
        if isinstance(value, str) and value in sets:
            names[word] = value
    return names


def _matched(plan: OverloadPlan | None, binds: tuple[str, ...]):
    """The report's variable binding exactly the same slots: the verdicts of another variable (a yaml edited since
    the run, a hand-written constraint kept) are no verdicts of this one."""
    if plan is None:
        return None
    return next((v for v in plan.variables if set(v.binds) == set(binds)), None)


def overload_rows(native: NativeFunctions, plan: Plan | None, refusals: tuple[ValueRefusal, ...] = ()) -> tuple[OverloadRow, ...]:
    """Every entry of the yaml in its order; an entry that declares nothing still has its row (``refusals``: the
    report's refusals at some value of an argument)."""
    refused_at: dict[str, list[ValueRefusal]] = {}
    for refusal in refusals:
        refused_at.setdefault(refusal.overload, []).append(refusal)
    sets = GlobalSetsFile.load(sibling_constraints_path(native.path)).by_name
    reported = {o.name: o for o in plan.overloads} if plan is not None else {}
    rows = []
    for entry in native.entries:
        fields = native.fields(entry)
        variables = declared_with_backends(native, entry, sets)
        own = {v.name: v.dtypes for v in variables}
        follows = {v.name: v.follows for v in variables}
        arguments = {v.name: v.argument.dtypes for v in variables if v.argument is not None}
        computed = {v.name: v.opmath for v in variables}
        names = _set_names(entry, fields, sets)
        found = []
        for variable in variables:
            match = _matched(reported.get(entry.name), variable.binds)
            excepted = {d for e in variable.exceptions for d in e.dtypes}
            possible = excepted | (frozenset(possible_dtypes(variable.name, own, follows, arguments, computed)) if variable.listed else frozenset(variable.dtypes))
            found.append(
                VariableRow(
                    variable.name,
                    names.get(variable.name),
                    variable.dtypes,
                    variable.constraint.names,
                    variable.binds,
                    possible,
                    match.verdicts if match is not None else None,
                    match.evidence if match is not None else (),
                    tuple((b.key, b.dtypes) for b in variable.backends),
                )
            )
        by_slot = {slot: v.name for v in variables for slot in v.binds}
        slots = tuple((s.name, by_slot.get(s.name)) for s in entry.schema.tensor_slots)
        promotion = declared_promotion(native, entry)
        promoted = {by_slot.get(arg) for arg in promotion.args} - {None} if promotion is not None else set()
        written = tuple(s.name for s in entry.schema.tensor_slots if not s.is_return and "!" in s.alias and by_slot.get(s.name) in promoted)
        module = fields.get("python_module") or ""
        rows.append(
            OverloadRow(
                entry.name,
                entry.func_line + 1,
                str(module),
                _tags(fields.get("tags")),
                slots,
                tuple(found),
                promotion,
                declared_autocast(native, entry),
                written,
                tuple(refused_at.get(entry.name, ())),
            )
        )
    return tuple(rows)
