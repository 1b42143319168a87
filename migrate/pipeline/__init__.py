"""How a run is driven: one ``Session`` made from the options owns the inputs, the stage cache, the evidence,
the plan, the writers' outputs and the summary, and runs the audits; the commands are thin adapters over it
(``files`` holds the commands on one written file, which need no session)."""

from migrate.pipeline.files import AUTOCAST_KEYS, autocast_registrations, lowered, promotion_comparison, promotion_rules, reference
from migrate.pipeline.session import EVIDENCE, Finding, Migration, Options, OverloadEvidence, RunRequest, Session

__all__ = ["AUTOCAST_KEYS", "EVIDENCE", "Finding", "Migration", "Options", "OverloadEvidence", "RunRequest", "Session", "autocast_registrations", "lowered", "promotion_comparison", "promotion_rules", "reference"]
