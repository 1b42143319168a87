"""Type promotion (issue 31): whether ATen promotes an overload's arguments, and its promoted tensors' sets.

``calls`` makes mixed and diagonal calls in workers (cached), ``decide`` weighs them against torch's
refs, ``sets`` turns an overload's plan into one variable of the dtypes its kernel computes in.
"""

from __future__ import annotations

from migrate.cache import StageCache
from migrate.evidence.promotion import calls
from migrate.evidence.promotion.decide import findings
from migrate.model.native import NativeFunctions


def promotion_findings(native: NativeFunctions, cache: StageCache, jobs: int | None) -> dict:
    """Per overload of the file, its promotion finding (``decide.PromotionFinding``), kept where the file's schema has its arguments."""
    found = {}
    for name, finding in findings(calls.STAGE.entry(cache, jobs)).items():
        entry = native.by_name.get(name)
        kept = finding.kept({s.name for s in entry.schema.slots if not s.is_return}) if entry is not None else None
        if kept is not None:
            found[name] = kept
    return found
