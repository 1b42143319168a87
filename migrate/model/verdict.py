"""A verdict as a record: what ATen did with some dtypes at some slots, and where that was seen.

The probes' evidence once spelled its verdict, ATen's messages and the promotion inside its provenance
text, which every reader parsed back. A ``Verdict`` keeps them as fields (the outcome, each refused
dtype's message, the dtype a promoted call computed in, who claims a dtype for another device) beside a
``Site``: the backend, the torch release, the kind of call and the call's label. ``str`` of a verdict is
the line ``show`` and the report's readers print, as the text spelled it.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Any

from migrate.model.dtypes import DType

# What the evidence says of one dtype (docs/evidence.md): the words of a variable's verdicts and of a record's outcome.
ACCEPTED = "accepted"  # a call with an element in every tensor argument and return ran
OTHER_DEVICE = "other-device"  # none ran here, but the OpInfo of this very overload claims it for CUDA (tested by PyTorch's CI)
REJECTED = "rejected"  # no such call ran and one raised: ATen's message is kept
PROMOTED = "promoted"  # a diagonal call at this dtype ran, the kernel computing in another one (``type_promotion:``): not in the set
UNKNOWN = "unknown"  # nothing says: never a reason to narrow anything
VERDICTS = (ACCEPTED, OTHER_DEVICE, REJECTED, PROMOTED, UNKNOWN)
RETURNED = "returned"  # a record's outcome only: the dtypes accepted calls returned at a return slot
OUTCOMES = (ACCEPTED, OTHER_DEVICE, REJECTED, PROMOTED, RETURNED)
COMPUTED_IN = "computed in "  # opens a promoted verdict's line: 'computed in float32 (int_to_float): ...'

# The kinds of call a verdict was seen on.
PROBE_CALL = "probe"  # a recorded call (an OpInfo sample's, autograd's) made again with slots cast
SCHEMA_CALL = "schema-call"  # a call built from the schema or from the argument catalogue, probed as a recorded one
DTYPE_ARGUMENT = "dtype-argument"  # a call with its ScalarType argument at each dtype
PROMOTION_CALL = "promotion-call"  # a call built for promotion, every promoted tensor at one dtype
OPINFO_CLAIM = "opinfo-claim"  # no call: an OpInfo's dtypes for another device, which PyTorch's CI tests there
KINDS_OF_CALL = (PROBE_CALL, SCHEMA_CALL, DTYPE_ARGUMENT, PROMOTION_CALL, OPINFO_CLAIM)


@dataclass(frozen=True)
class Backend:
    """The device a call ran on and how: ``cpu (default, reference paths)`` is the workers' CPU capability, oneDNN off."""

    device: str
    detail: str

    def __str__(self) -> str:
        return f"{self.device} ({self.detail})"

    @classmethod
    def parse(cls, text: str) -> Backend:
        device, _, detail = text.partition(" (")
        if not detail.endswith(")"):
            raise ValueError(f"not a backend: {text!r} (expected 'device (detail)')")
        return cls(device, detail[:-1])


@dataclass(frozen=True)
class Site:
    """Where a verdict was seen: the kind of call, its label, the backend and the torch release.

    A probe of a recorded or built call also says which slots it cast, the other tensor inputs as recorded
    (``query float16``), the Python numbers its Scalars held (``("other", "float")``) and the gating argument
    that let a dtype in (``dtype=torch.float32``): the readers that judge diagonal calls and refusals read them.
    """

    kind: str
    call: str
    backend: Backend
    torch: str
    cast: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()
    numbers: tuple[tuple[str, str], ...] = ()
    gate: str = ""

    def number_of(self, scalar: str) -> str:
        """The kind of Python number the Scalar held ('' when it was none)."""
        return dict(self.numbers).get(scalar, "")

    def beside_dtype(self, slot: str) -> str:
        """The dtype the tensor input ``slot`` had beside the cast ones, as ``beside`` spells it ('float32'; a list of
        mixed dtypes 'mixed list'; '' when the probe names no such input)."""
        return next((spelled for name, _, spelled in (item.partition(" ") for item in self.beside) if name == slot), "")

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"kind": self.kind, "call": self.call, "backend": str(self.backend), "torch": self.torch}
        if self.cast:
            found["cast"] = list(self.cast)
        if self.beside:
            found["beside"] = list(self.beside)
        if self.numbers:
            found["numbers"] = dict(self.numbers)
        if self.gate:
            found["gate"] = self.gate
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Site:
        if obj["kind"] not in KINDS_OF_CALL:
            raise ValueError(f"unknown kind of call {obj['kind']!r}")
        return cls(
            obj["kind"],
            obj["call"],
            Backend.parse(obj["backend"]),
            obj["torch"],
            tuple(obj.get("cast", ())),
            tuple(obj.get("beside", ())),
            tuple(obj.get("numbers", {}).items()),
            obj.get("gate", ""),
        )


@dataclass(frozen=True)
class Verdict:
    """What ATen did with an evidence's dtypes at its slots, and where (``site``).

    ``messages``: each refused dtype's message, word for word. A promoted verdict names the dtype the kernel
    computed in and the promotion kind; its site's ``call`` is the line of the accepted call it was read from.
    An other-device verdict names who claims the dtypes (``OpInfo add``).
    """

    outcome: str
    site: Site
    messages: tuple[tuple[DType, str], ...] = ()
    computed_in: DType | None = None
    kind: str = ""
    claimed_by: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if (self.outcome == REJECTED) != bool(self.messages):
            raise ValueError("a rejected verdict, and only one, carries ATen's messages")
        if (self.outcome == PROMOTED) != (self.computed_in is not None):
            raise ValueError("a promoted verdict, and only one, names the dtype it computed in")
        if (self.outcome == OTHER_DEVICE) != bool(self.claimed_by):
            raise ValueError("an other-device verdict, and only one, names who claims it")
        ordered = dict(sorted(dict(self.messages).items(), key=lambda item: item[0].sort_key))
        object.__setattr__(self, "messages", tuple(ordered.items()))

    def message_of(self, dtype: DType) -> str:
        return dict(self.messages).get(dtype, "")

    @property
    def promotion_note(self) -> str:
        """'computed in float32 (int_to_float)': what a variable's verdicts keep of a promoted dtype."""
        return f"{COMPUTED_IN}{self.computed_in} ({self.kind})"

    def __str__(self) -> str:
        if self.outcome == REJECTED:
            return f"{self.site.call}: {REJECTED}: {one_per_dtype([m for _, m in self.messages])}"
        if self.outcome == PROMOTED:
            return f"{self.promotion_note}: {self.site.call}"
        if self.outcome == ACCEPTED:
            return f"{self.site.call}: {ACCEPTED}"
        return self.site.call

    @property
    def headline(self) -> str:
        """The line without ATen's messages, which a table shows per dtype instead."""
        return f"{self.site.call}: {REJECTED}" if self.outcome == REJECTED else str(self)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"outcome": self.outcome, "site": self.site.to_json()}
        if self.messages:
            found["messages"] = {str(d): m for d, m in self.messages}
        if self.computed_in is not None:
            found.update(computed_in=str(self.computed_in), kind=self.kind)
        if self.claimed_by:
            found["claimed_by"] = self.claimed_by
        return found

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Verdict:
        computed = obj.get("computed_in")
        return cls(
            obj["outcome"],
            Site.from_json(obj["site"]),
            tuple((DType.parse(d), m) for d, m in obj.get("messages", {}).items()),
            DType.parse(computed) if computed is not None else None,
            obj.get("kind", ""),
            obj.get("claimed_by", ""),
        )


def one_per_dtype(messages: list[str]) -> str:
    """Messages that differ only where they name a dtype, as one text: 'got dtype {Char|Short|Float}'.

    The alternatives follow the messages' order, so each dtype's own message is in it word for word, and
    a report stays a few megabytes.
    """
    if len(set(messages)) == 1:
        return messages[0]
    prefix = os.path.commonprefix(messages)
    prefix = prefix[: max(prefix.rfind(c) for c in " :'\"(<") + 1]  # whole words only
    suffix = os.path.commonprefix([m[len(prefix) :][::-1] for m in messages])[::-1]
    cut = [i for i, c in enumerate(suffix) if not (c.isalnum() or c == "_")]
    suffix = suffix[cut[0] :] if cut else ""
    middles = [m[len(prefix) : len(m) - len(suffix)] for m in messages]
    return f"{prefix}{{{'|'.join(middles)}}}{suffix}"


# Spellings of dtypes in ATen's messages (C++ type names, ScalarType names, Python names).
DTYPE_SPELLING = re.compile(
    r"c10::complex<[^>]*>|c10::\w+|torch\.\w+"
    r"|\b(?:(?:unsigned|signed|short|long)\s+)*(?:char|short|int|long)\b(?:\s+int\b)?"
    r"|\b(?:Byte|Char|Short|Int|Long|Half|Float|Double|Complex\w*|Bool|BFloat16|U?Int\d+|Float\d\w*|Q\w*Int\w*|Bits\w+"
    r"|bool|float|double|half|bfloat16|u?int\d+|float\d\w*|complex\d*)\b"
)


@functools.lru_cache(maxsize=4096)
def names_a_dtype(message: str) -> bool:
    """Whether ATen's refusal names a dtype: a check of dtypes, which the same dtypes meet the same way whatever the
    values (``"le_cpu" not implemented for 'UInt16'``), not of the call's data (an index out of range)."""
    return DTYPE_SPELLING.search(message) is not None
