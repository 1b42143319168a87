"""How a run is driven: one ``Session`` made from the options owns the inputs, the stage cache, the evidence,
the plan, the writers' outputs and the summary; the commands are thin adapters over it."""

from migrate.pipeline.session import EVIDENCE, Migration, Options, Session

__all__ = ["EVIDENCE", "Migration", "Options", "Session"]
