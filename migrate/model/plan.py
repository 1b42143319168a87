"""The plan: the one interface between inference and the writers.

Per overload: its type variables, each with its dtypes, the slots it binds and the
evidence behind it, and the conflicts found on the way. Global sets are the named
dtype sets of ``type_constraints.yaml``. Every evidence source also speaks in these
classes (an ``OverloadPlan`` per overload it knows about), so merging is plain data.
The JSON form is what ``--report`` writes and ``--plan`` reads back.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from migrate.cache import Remembered
from migrate.errors import InputError
from migrate.model.autocast import Policies, ordered
from migrate.model.backends import BACKEND_KEYS, BackendSet
from migrate.model.constraint import ConstraintList, DtypeArgument, possible_dtypes
from migrate.model.dtypes import TENSOR_DTYPES, DType, UnknownDType, canonical, parse_set
from migrate.model.exceptions import TypeException
from migrate.model.json_text import indented
from migrate.model.promotion import Promotion
from migrate.model.verdict import ACCEPTED, OTHER_DEVICE, PROMOTED, REJECTED, UNKNOWN, Verdict

FORMAT_VERSION = 2  # 2: verdicts are records, variables carry their sets per backend (``backends``)

# Where evidence comes from.
TORCHLIB = "torchlib"  # annotations of onnxscript's torchlib functions
OPINFO = "opinfo"  # dtypes observed while running OpInfo samples
DECLARED = "declared"  # dtypes OpInfos declare for other devices, never observed here
GROUPS = "groups"  # taken from an in-place/out= sibling of the same group
ALIASES = "aliases"  # taken from the overload an alias stands for (OpInfo alias lists, kernels forwarding to another)
PROBE = "probe"  # dtypes ATen accepted when called directly
KERNEL = "kernel"  # dtypes a composite kernel that reads only metadata accepted, run on meta tensors
HAND = "hand"  # written by a person in the yaml
EMPTY = "empty"  # calls with an empty tensor (observed or probed): ATen returned before its dtype dispatch; never acceptance
SOURCES = (TORCHLIB, OPINFO, DECLARED, GROUPS, ALIASES, PROBE, KERNEL, HAND, EMPTY)
FAMILY_CLAIM = "the kernel family's claim"  # the provenance of a declared claim an in-place or out= sibling takes from its functional


def _dtypes_json(dtypes: tuple[DType, ...]) -> list[str]:
    return [str(d) for d in dtypes]


@dataclass(frozen=True)
class Evidence:
    """One source's word about some slots: which dtypes, where it was read or seen, how often.

    Evidence of what ATen did (the probes', the calls built for promotion or a dtype argument) carries its
    ``verdict`` record; the rest (torchlib's annotations, the yaml, samples' observations) its ``provenance``.
    """

    source: str
    provenance: str  # where it was read or seen, e.g. 'ops/nn.py:1802 aten_scaled_dot_product_attention'; '' with a verdict
    dtypes: tuple[DType, ...]
    slots: tuple[str, ...] = ()
    count: int = 1
    verdict: Verdict | None = None

    @property
    def where(self) -> str:
        """The line that shows it: the verdict's, else the provenance."""
        return str(self.verdict) if self.verdict is not None else self.provenance

    @property
    def outcome(self) -> str:
        """What it says of its dtypes: the verdict's outcome; else what its source shows (``ACCEPTED`` for calls that
        ran, ``OTHER_DEVICE`` for an OpInfo's claim, '' for annotations)."""
        if self.verdict is not None:
            return self.verdict.outcome
        return {OPINFO: ACCEPTED, PROBE: ACCEPTED, KERNEL: ACCEPTED, DECLARED: OTHER_DEVICE}.get(self.source, "")

    @property
    def refused(self) -> bool:
        """Probe evidence whose dtypes ATen refused, not accepted (a refusal on empty tensors is ``EMPTY`` evidence)."""
        return self.source == PROBE and self.outcome == REJECTED

    @property
    def messages(self) -> dict[DType, str]:
        """Each refused dtype of this evidence with ATen's message."""
        if self.verdict is None:
            return {}
        found = dict(self.verdict.messages)
        return {d: found.get(d, "") for d in self.dtypes}

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"source": self.source}
        if self.verdict is not None:
            found["verdict"] = self.verdict.to_json()
        else:
            found["where"] = self.provenance
        found.update(dtypes=_dtypes_json(self.dtypes), slots=list(self.slots), count=self.count)
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Evidence:
        verdict = Verdict.from_json(obj["verdict"]) if "verdict" in obj else None
        provenance = "" if verdict is not None else obj["where"]
        return cls(obj["source"], provenance, parse_set(obj["dtypes"]), tuple(obj.get("slots", ())), obj.get("count", 1), verdict)


# Why a dtype's verdict is unknown: no CPU call could judge it (docs/evidence.md).
NO_CPU_KERNEL = "no-cpu-kernel"  # the overload has only CUDA (MPS, sparse, ...) kernels: no CPU call reaches it
NO_VALID_CALL = "no-valid-call"  # no call of this variable's slots with elements ran: samples, probes and built calls all failed or never reached it
EMPTY_ONLY = "empty-calls-only"  # only calls on empty tensors tried the dtype here: ATen returns before its dtype dispatch
NOT_TRIED = "not-tried"  # calls ran, yet none put this dtype at these slots (a list, a return no argument sets, a slot only structure ties)
UNKNOWN_REASONS = (NO_CPU_KERNEL, NO_VALID_CALL, EMPTY_ONLY, NOT_TRIED)


@dataclass(frozen=True)
class Verdicts:
    """A verdict for each dtype a plain tensor can have (``TENSOR_DTYPES``), for one variable; the first that holds wins."""

    accepted: tuple[DType, ...] = ()
    other_device: tuple[DType, ...] = ()
    rejected: tuple[tuple[DType, str], ...] = ()  # each with ATen's message
    unknown_reasons: tuple[tuple[DType, str], ...] = ()  # why each unknown dtype is (``UNKNOWN_REASONS``)
    promoted: tuple[tuple[DType, str], ...] = ()  # each with the dtype the kernel computed in, and the promotion kind

    def __post_init__(self) -> None:
        accepted = canonical(self.accepted)
        other = canonical(d for d in self.other_device if d not in accepted)
        rejected = tuple(sorted(((d, m) for d, m in dict(self.rejected).items() if d not in accepted and d not in other), key=lambda p: p[0].sort_key))
        object.__setattr__(self, "accepted", accepted)
        object.__setattr__(self, "other_device", other)
        object.__setattr__(self, "rejected", rejected)
        known = {*accepted, *other, *dict(rejected)}
        promoted = tuple(sorted(((d, m) for d, m in dict(self.promoted).items() if d not in known), key=lambda p: p[0].sort_key))
        object.__setattr__(self, "promoted", promoted)
        known |= set(dict(promoted))
        reasons = sorted(((d, r) for d, r in dict(self.unknown_reasons).items() if d not in known), key=lambda p: p[0].sort_key)
        object.__setattr__(self, "unknown_reasons", tuple(reasons))

    @functools.cached_property
    def _by_dtype(self) -> dict[DType, str]:
        """Each dtype with a verdict other than unknown (a run's summary asks for every one of thousands of variables)."""
        found = dict.fromkeys((d for d, _ in self.promoted), PROMOTED)
        found.update(dict.fromkeys((d for d, _ in self.rejected), REJECTED))
        found.update(dict.fromkeys(self.other_device, OTHER_DEVICE))
        found.update(dict.fromkeys(self.accepted, ACCEPTED))
        return found

    def of(self, dtype: DType) -> str:
        return self._by_dtype.get(dtype, UNKNOWN)

    @functools.cached_property
    def unknown(self) -> tuple[DType, ...]:
        return tuple(d for d in TENSOR_DTYPES if d not in self._by_dtype)

    @property
    def incomplete(self) -> bool:
        """Some dtype is unknown: the variable's set is then a lower bound."""
        return bool(self.unknown)

    def reason_of(self, dtype: DType) -> str:
        """Why the dtype's verdict is unknown ('' when it is not, or nobody said)."""
        return dict(self.unknown_reasons).get(dtype, "") if self.of(dtype) == UNKNOWN else ""

    def to_json(self) -> dict[str, Any]:
        dtypes = canonical((*TENSOR_DTYPES, *self.accepted, *self.other_device, *dict(self.rejected)))
        found = {"by_dtype": {str(d): self.of(d) for d in dtypes}, "messages": {str(d): m for d, m in self.rejected}}
        if self.promoted:
            found["promoted"] = {str(d): m for d, m in self.promoted}
        reasons = {str(d): self.reason_of(d) for d in dtypes if self.reason_of(d)}
        if reasons:
            found["unknown_reasons"] = reasons
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Verdicts:
        by_verdict: dict[str, list[DType]] = {}
        for text, verdict in obj["by_dtype"].items():
            by_verdict.setdefault(verdict, []).append(DType.parse(text))
        messages = obj.get("messages", {})
        rejected = tuple((d, messages.get(str(d), "")) for d in by_verdict.get(REJECTED, ()))
        reasons = tuple((DType.parse(text), reason) for text, reason in obj.get("unknown_reasons", {}).items())
        promoted = tuple((DType.parse(text), note) for text, note in obj.get("promoted", {}).items())
        return cls(tuple(by_verdict.get(ACCEPTED, ())), tuple(by_verdict.get(OTHER_DEVICE, ())), rejected, reasons, promoted)


@dataclass(frozen=True)
class Variable:
    """A type variable of one overload: the slots that carry one dtype per call, and its dtypes.

    A variable that ``follows`` others of its overload may also take, in a call, the dtype they have
    in that call (``migrate.model.constraint``), and one with ``opmath`` names the dtype those compute in;
    ``dtypes`` are then the ones it takes whatever they have.
    A variable set by an ``argument`` (``ScalarType dtype``) is exactly the dtype the argument names when the
    call gives one; ``dtypes`` and ``follows`` are then what it is when the argument is None.
    """

    name: str
    dtypes: tuple[DType, ...]
    binds: tuple[str, ...]  # slot names: argument names and 'return.N'
    evidence: tuple[Evidence, ...] = ()
    follows: tuple[str, ...] = ()  # names of other variables of the overload
    verdicts: Verdicts | None = None  # per dtype, once inference has merged the evidence; None for a hand-written one
    argument: DtypeArgument | None = None  # the ScalarType argument whose value it is when given
    backends: tuple[BackendSet, ...] = ()  # its set per dispatch key where the backends differ (``dispatch_dtypes:``)
    opmath: tuple[str, ...] = ()  # names of other variables of the overload whose computation dtype it may take
    exceptions: tuple[TypeException, ...] = ()  # its dtypes where a call takes the path a condition names (``type_exceptions:``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", canonical(self.dtypes))
        object.__setattr__(self, "follows", tuple(sorted(set(self.follows))))
        object.__setattr__(self, "opmath", tuple(sorted(set(self.opmath))))
        stated = {b.key: b for b in self.backends}
        object.__setattr__(self, "backends", tuple(stated[key] for key in BACKEND_KEYS if key in stated))

    def on(self, key: str) -> tuple[DType, ...]:
        """Its dtypes on the backend of that dispatch key: the set stated for it, else the union (``dtypes``)."""
        return next((b.dtypes for b in self.backends if b.key == key), self.dtypes)

    @property
    def listed(self) -> bool:
        """Written as its own list (it names variables or an argument): no global set spells it."""
        return bool(self.follows or self.argument or self.opmath)

    @property
    def depends_on(self) -> tuple[str, ...]:
        """The other variables whose dtype in a call its own depends on."""
        return tuple(sorted({*self.follows, *self.opmath}))

    @property
    def constraint(self) -> ConstraintList:
        """The list the entry writes for it (its dtypes spelled out, where the writer may name a set)."""
        return ConstraintList(self.dtypes, self.follows, self.argument.name if self.argument else "", self.opmath)

    @property
    def incomplete(self) -> bool:
        """Some dtype's verdict is unknown: the dtypes are a lower bound of what ATen accepts."""
        return self.verdicts is not None and self.verdicts.incomplete

    @property
    def sources(self) -> tuple[str, ...]:
        found = {e.source for e in self.evidence}
        return tuple(s for s in SOURCES if s in found)

    def to_json(self) -> dict[str, Any]:
        found = {"name": self.name, "dtypes": _dtypes_json(self.dtypes)}
        if self.follows:
            found["follows"] = list(self.follows)
        if self.opmath:
            found["opmath"] = list(self.opmath)
        if self.argument is not None:
            found["argument"] = {"name": self.argument.name, "dtypes": _dtypes_json(self.argument.dtypes), "optional": self.argument.optional}
        found.update(binds=list(self.binds), sources=list(self.sources), evidence=[e.to_json() for e in self.evidence])
        if self.verdicts is not None:
            found.update(incomplete=self.incomplete, verdicts=self.verdicts.to_json())
        if self.backends:
            found["backends"] = {b.key: {"dtypes": _dtypes_json(b.dtypes), "from": b.basis} for b in self.backends}
        if self.exceptions:
            found["exceptions"] = {e.condition: _dtypes_json(e.dtypes) for e in self.exceptions}
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Variable:
        return cls(
            obj["name"],
            parse_set(obj["dtypes"]),
            tuple(obj["binds"]),
            tuple(Evidence.from_json(e) for e in obj.get("evidence", ())),
            tuple(obj.get("follows", ())),
            Verdicts.from_json(obj["verdicts"]) if "verdicts" in obj else None,
            _argument_from_json(obj["argument"]) if "argument" in obj else None,
            tuple(BackendSet(key, parse_set(b["dtypes"]), b["from"]) for key, b in obj.get("backends", {}).items()),
            tuple(obj.get("opmath", ())),
            tuple(TypeException(condition, parse_set(dtypes)) for condition, dtypes in obj.get("exceptions", {}).items()),
        )


def _argument_from_json(obj: dict[str, Any]) -> DtypeArgument:
    return DtypeArgument(obj["name"], parse_set(obj["dtypes"]), obj.get("optional", True))


@dataclass(frozen=True)
class Conflict:
    """A disagreement found while planning, e.g. torchlib narrower than what ATen accepts."""

    kind: str
    slots: tuple[str, ...]
    dtypes: tuple[DType, ...]
    message: str
    export: str = ""  # an export coverage gap as real exports judged it: 'confirmed', 'refuted', or '' (not checked)

    def to_json(self) -> dict[str, Any]:
        found = {"kind": self.kind, "slots": list(self.slots), "dtypes": _dtypes_json(self.dtypes), "message": self.message}
        if self.export:
            found["export"] = self.export
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Conflict:
        return cls(obj["kind"], tuple(obj["slots"]), parse_set(obj["dtypes"]), obj["message"], obj.get("export", ""))


@dataclass(frozen=True)
class OverloadPlan:
    """What to declare for one overload (``add.Tensor``); no variables means every slot stays Tensor.

    ``autocast`` is its cast policy per autocast key (``(('CPU', 'fp32'), ('CUDA', 'fp32'))``); empty leaves
    the entry's ``autocast:`` line as it is. ``promotion`` is the ``type_promotion:`` line (None: ATen does
    not promote this overload's tensors, or nothing says it does).
    """

    name: str
    variables: tuple[Variable, ...]
    conflicts: tuple[Conflict, ...] = ()
    autocast: Policies = ()
    promotion: Promotion | None = None

    def variable_of(self, slot: str) -> Variable | None:
        return next((v for v in self.variables if slot in v.binds), None)

    def possible(self, variable: Variable) -> tuple[DType, ...]:
        """Every dtype the variable may take in some call: its own, those of the variables it follows, those
        the argument that sets it may name, and those it takes on a path a condition names."""
        excepted = tuple(d for e in variable.exceptions for d in e.dtypes)
        if not variable.listed:
            return canonical(variable.dtypes + excepted) if excepted else variable.dtypes
        arguments = {v.name: v.argument.dtypes for v in self.variables if v.argument is not None}
        found = possible_dtypes(
            variable.name, {v.name: v.dtypes for v in self.variables}, {v.name: v.follows for v in self.variables}, arguments, {v.name: v.opmath for v in self.variables}
        )
        return canonical(found + excepted)

    def kept(self, keep: set[str]) -> OverloadPlan:
        """The plan with only the slots in ``keep``: variables bind them alone, evidence and conflicts speak of no other."""
        variables = []
        for variable in self.variables:
            binds = tuple(s for s in variable.binds if s in keep)
            if binds:
                evidence = tuple(
                    replace(e, slots=tuple(s for s in e.slots if s in keep)) for e in variable.evidence if not e.slots or set(e.slots) & keep
                )
                variables.append(replace(variable, binds=binds, evidence=evidence))
        conflicts = tuple(c for c in self.conflicts if set(c.slots) <= keep)
        return OverloadPlan(self.name, self.followed_within(variables, same_schema=True), conflicts, self.autocast, self.promotion)

    def followed_within(self, variables: Iterable[Variable], same_schema: bool = False, others: Iterable[str] = ()) -> tuple[Variable, ...]:
        """Variables carried from this plan's (same names) to other slots: one that follows a variable neither carried
        with it nor among ``others`` (the target's own), or (to another overload's schema) is set by an argument,
        takes every dtype it could take here instead, so that nothing is narrowed."""
        variables = tuple(variables)
        names = {v.name for v in variables} | set(others)
        return tuple(
            v if set(v.depends_on) <= names and (same_schema or v.argument is None) else replace(v, dtypes=self.possible(v), follows=(), argument=None, opmath=(), exceptions=())
            for v in variables
        )

    def to_json(self) -> dict[str, Any]:
        found = {
            "name": self.name,
            "variables": [v.to_json() for v in self.variables],
            "conflicts": [c.to_json() for c in self.conflicts],
        }
        if self.autocast:
            found["autocast"] = dict(self.autocast)
        if self.promotion is not None:
            found["promotion"] = self.promotion.to_json()
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> OverloadPlan:
        return cls(
            obj["name"],
            tuple(Variable.from_json(v) for v in obj.get("variables", ())),
            tuple(Conflict.from_json(c) for c in obj.get("conflicts", ())),
            ordered(obj.get("autocast", {}).items()),
            Promotion.from_json(obj["promotion"]) if "promotion" in obj else None,
        )


@dataclass(frozen=True)
class GlobalSet:
    """A named dtype set of type_constraints.yaml (``TFloat``), usable by every entry."""

    name: str
    dtypes: tuple[DType, ...]
    desc: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", canonical(self.dtypes))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtypes": _dtypes_json(self.dtypes), "desc": self.desc}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> GlobalSet:
        return cls(obj["name"], parse_set(obj["dtypes"]), obj.get("desc", ""))


@dataclass(frozen=True)
class Plan:
    """Global sets plus one OverloadPlan per overload to write; overloads not listed are left alone."""

    global_sets: tuple[GlobalSet, ...] = ()
    overloads: tuple[OverloadPlan, ...] = ()
    summary: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "summary": self.summary,
            "global_sets": [g.to_json() for g in self.global_sets],
            "overloads": [o.to_json() for o in self.overloads],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Plan:
        if obj.get("version") != FORMAT_VERSION:
            raise ValueError(version_problem(obj.get("version")))
        return cls(
            tuple(GlobalSet.from_json(g) for g in obj.get("global_sets", ())),
            tuple(OverloadPlan.from_json(o) for o in obj.get("overloads", ())),
            obj.get("summary", {}),
        )

    def dumps(self) -> str:
        return plan_text(self.to_json())

    def write(self, path: Path) -> None:
        Path(path).write_text(self.dumps())

    @classmethod
    def read(cls, path: Path | str) -> Plan:
        """Read a plan file; a bad part is reported with the line and overload it is in."""
        return cls.parse(cls.text_of(path), path)

    @staticmethod
    def text_of(path: Path | str) -> str:
        """A plan file's text (``InputError`` when it cannot be read as text)."""
        try:
            return Path(path).read_text()
        except OSError as exc:
            raise InputError(f"cannot read the plan: {exc.strerror}", path) from exc
        except UnicodeDecodeError as exc:
            raise InputError(f"the plan is not JSON: {exc}", path) from exc

    @classmethod
    def parse(cls, text: str, path: Path | str) -> Plan:
        """The plan of a file's text, read from ``path``, parsed once per process (``docs`` and ``docs --check`` read
        one report; a suite's runs are given one plan again and again)."""
        return _READ.get(text, lambda: cls._parsed(text, path))

    @classmethod
    def _parsed(cls, text: str, path: Path | str) -> Plan:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"the plan is not JSON: {exc.msg}", path, exc.lineno) from exc
        if not isinstance(obj, dict) or obj.get("version") != FORMAT_VERSION:
            raise InputError(version_problem(obj.get("version") if isinstance(obj, dict) else None), path, 1)
        parts: list[tuple[str, Any, Any]] = [("global_sets", g, GlobalSet) for g in obj.get("global_sets", ())]
        parts += [("overloads", o, OverloadPlan) for o in obj.get("overloads", ())]
        parsed: dict[str, list[Any]] = {"global_sets": [], "overloads": []}
        for key, item, kind in parts:
            name = item.get("name") if isinstance(item, dict) else None
            try:
                parsed[key].append(kind.from_json(item))
            except UnknownDType as exc:
                raise InputError(f"plan names an {exc}", path, line_of(text, name), name) from exc
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise InputError(f"malformed plan entry: {exc!r}", path, line_of(text, name), name) from exc
        return cls(tuple(parsed["global_sets"]), tuple(parsed["overloads"]), obj.get("summary", {}))


_READ = Remembered(1)  # a full run's report is tens of MB


def version_problem(version: Any) -> str:
    """Why a plan of another format version is refused: a version 1 plan spells its verdicts as text and lacks the sets
    per backend, neither of which is parsed back: infer it again."""
    if version == 1:
        return (
            f"plan format version 1 spells its verdicts as text and has no sets per backend, which version {FORMAT_VERSION} "
            "keeps as records: write the plan again with --report"
        )
    return f"plan format version {version!r}, expected {FORMAT_VERSION}"


def line_of(text: str, name: Any) -> int | None:
    """The 1-based line where a plan item with this name starts, for error messages."""
    if not isinstance(name, str):
        return None
    at = text.find(json.dumps(name))
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def plan_text(obj: dict[str, Any]) -> str:
    """A plan's JSON as ``--report`` writes it (a merged report too: the same bytes for the same plan)."""
    return indented(obj) + "\n"
