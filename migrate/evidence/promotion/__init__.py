"""Type promotion (issue 31): the calls that show whether ATen promotes an overload's arguments.

``calls`` makes mixed and diagonal calls in workers (cached), one report per overload. Inference weighs them
against torch's refs (``migrate.infer.promotion_findings``) and turns an overload's plan into one variable of the
dtypes its kernel computes in (``migrate.infer.promotion_sets``).
"""

from __future__ import annotations

from typing import Any

from migrate.cache import StageCache
from migrate.evidence.promotion import calls
from migrate.runtime.runs import overload_key


def promotion_reports(cache: StageCache, jobs: int | None) -> dict[str, dict[str, Any]]:
    """Per overload ('add.Tensor'), its report of the calls built for promotion (``calls.promotion_reports``)."""
    return {overload_key(report["overload"]): report for report in calls.STAGE.entry(cache, jobs)}
