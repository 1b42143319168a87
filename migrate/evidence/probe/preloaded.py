"""The prober as the fork server preloads it (``migrate.runtime.processes.PRELOAD``): its tables, the OpInfo
database's operators among them (seconds), made there once, so that every worker forked from it has them. A process
that imports the prober for another reason (a test module collected) makes them only if it probes."""

from migrate.evidence.probe import prober

prober.make_tables()
