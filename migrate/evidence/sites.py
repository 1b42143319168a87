"""Where the workers' calls run: the backend and the torch release every verdict they give is seen on."""

from __future__ import annotations

import functools
import importlib.metadata

from migrate.model.verdict import OPINFO_CLAIM, Backend, Site
from migrate.runtime.processes import CPU_CAPABILITY

WORKERS = Backend("cpu", f"{CPU_CAPABILITY}, reference paths")  # the workers' one CPU capability, oneDNN off


@functools.cache
def torch_release() -> str:
    return importlib.metadata.version("torch")


def seen_on(kind: str, call: str, **probed: object) -> Site:
    """The site of a call the workers made (``probed``: a probe's cast slots, companions, numbers and gate)."""
    return Site(kind, call, WORKERS, torch_release(), **probed)  # type: ignore[arg-type]


def claimed_for(devices: list[str], claim: str) -> Site:
    """The site of an OpInfo's claim for other devices: this torch release's OpInfo, nothing run."""
    return Site(OPINFO_CLAIM, claim, Backend(", ".join(devices), "claimed, not run here"), torch_release())
