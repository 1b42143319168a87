"""How the installed torch's runtime evidence meets a file of another release.

OpInfo and probe evidence name slots by the installed torch's schemas; on a file of another release
``align_runtime_evidence`` first skips the overloads the file lacks and keeps, where a schema differs,
only the slots of the same name in both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from migrate.model.native import NativeFunctions
from migrate.model.plan import OverloadPlan
from migrate.model.schema import TypedSchema


@dataclass(frozen=True)
class Remapped:
    """An overload whose schema in the file differs from the installed torch's: its evidence kept where an argument name maps."""

    name: str
    installed: str  # the installed torch's schema text
    file: str  # the file's schema text, lowered
    kept: tuple[str, ...]  # tensor slots of both schemas: their evidence stays
    dropped: tuple[str, ...]  # slots the evidence spoke of that the file has not as tensor slots

    def to_json(self) -> dict:
        return {"name": self.name, "installed": self.installed, "file": self.file, "kept": list(self.kept), "dropped": list(self.dropped)}


@dataclass(frozen=True)
class Alignment:
    """How the installed torch's runtime evidence met a file of another release."""

    skipped: tuple[str, ...]  # overloads with runtime evidence (observed, probed, schema calls) the installed torch has and the file lacks
    remapped: tuple[Remapped, ...]

    def to_json(self) -> dict:
        return {
            "overloads_skipped": len(self.skipped),
            "overloads_remapped": len(self.remapped),
            "skipped": list(self.skipped),
            "remapped": [r.to_json() for r in self.remapped],
        }


def _slot_shape(schema: TypedSchema) -> tuple[tuple[str, bool], ...]:
    """Each argument and return by name, and whether it holds tensors: what evidence maps through (int -> SymInt does not matter)."""
    return tuple((s.name, s.is_tensor) for s in schema.slots)


def align_runtime_evidence(
    native: NativeFunctions, installed: NativeFunctions, *sources: Mapping[str, OverloadPlan]
) -> tuple[list[dict[str, OverloadPlan]], Alignment]:
    """The installed torch's per-overload plans (OpInfo, probe) restricted to what the file's schemas can take.

    Runtime evidence names slots by the installed torch's schemas. On a file of another release an
    overload the file lacks is skipped; where the file's schema differs (arguments renamed, added or
    removed) only the slots that are tensor slots of the same name in both keep their evidence.
    Returns are named by position (``return.N``), so they map by position. On the installed file
    nothing changes.
    """
    observed = sorted({name for plans in sources for name in plans})
    skipped = tuple(name for name in observed if name not in native.by_name and name in installed.by_name)
    keep: dict[str, set[str]] = {}
    remapped = []
    for name in observed:
        entry, theirs = native.by_name.get(name), installed.by_name.get(name)
        if entry is None or theirs is None or _slot_shape(entry.schema) == _slot_shape(theirs.schema):
            continue
        keep[name] = {s.name for s in entry.schema.tensor_slots} & {s.name for s in theirs.schema.tensor_slots}
        spoken = {s for plans in sources if name in plans for v in plans[name].variables for s in v.binds}
        remapped.append(Remapped(name, theirs.schema.text, entry.schema.lowered(), tuple(sorted(keep[name])), tuple(sorted(spoken - keep[name]))))
    aligned = [
        {name: plan.kept(keep[name]) if name in keep else plan for name, plan in plans.items() if name in native.by_name}
        for plans in sources
    ]
    return aligned, Alignment(skipped, tuple(remapped))


@dataclass(frozen=True)
class RuntimeEvidenceSummary:
    """What the run's summary says about the alignment (its ``runtime_evidence`` section), with the torch it came from."""

    torch: str
    alignment: Alignment

    def to_json(self) -> dict:
        return {"torch": self.torch, **self.alignment.to_json()}

    def lines(self) -> list[str]:
        skipped, remapped = len(self.alignment.skipped), len(self.alignment.remapped)
        if not (skipped or remapped):
            return []
        return [
            f"runtime evidence of torch {self.torch}: {skipped} overloads with runtime evidence the yaml lacks skipped, "
            f"{remapped} whose schema differs keep the evidence that maps by argument name (listed in --report)"
        ]
