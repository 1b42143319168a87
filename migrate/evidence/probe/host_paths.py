"""Where this host's own CPU paths give another verdict than the reference paths the evidence is made on.

Every worker takes the CPU kernels' reference paths (``processes.reference_cpu_paths``), so a run's bytes
never depend on the host. ATen takes oneDNN's paths where the host's CPU has the instructions for them,
and those can refuse what the reference kernel takes (on AMX hardware, ``_scaled_mm``'s float64 bias:
``itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor input``). The catalogue's calls,
built as ``catalogue_calls`` builds them, are probed again with oneDNN on; each (overload, slots, dtype)
whose verdict differs is listed in ``--report``, with both verdicts and ATen's message. The stage is keyed
by this host's CPU flags as well as the code and torch's version: it is the one part of a report a host decides.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.cache import Stage, StageCache, digest
from migrate.evidence.probe import catalogue_calls, schema_calls
from migrate.evidence.probe.catalogue import RECIPES
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT
from migrate.runtime.worker_stage import each_overload

HOST_PATHS = "oneDNN on, at this host's CPU flags"


def host_fingerprint() -> str:
    """The machine and its CPU's flags as the kernel lists them: what decides which paths ATen may take."""
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith(("flags", "Features"))), "")
    except OSError:
        flags = ""
    return f"{platform.machine()} {digest(flags)[:16]}"


def _host_reports_of(name: str) -> Iterator[dict[str, Any]]:
    """Each recipe's call, built as the catalogue stage builds it, probed with oneDNN on."""
    import torch  # here: the parent imports this module without torch (the --op fast path)

    from migrate.evidence.probe.prober import probe_call  # imports torch: workers only

    func = torch_private.aten_overload(name)
    calls = catalogue_calls.recipe_calls(func, RECIPES[name], PROBE_TIMEOUT, [])
    with torch.backends.mkldnn.flags(enabled=True):
        for number, call in enumerate(calls):
            yield probe_call(call, f"{name}\0catalogue\0{number}", PROBE_TIMEOUT)


_host_reports = functools.partial(each_overload, _host_reports_of)
"""The job: each recipe's calls, probed with oneDNN on."""


@dataclass(frozen=True)
class PathDifference:
    """One dtype of one probe whose verdict differs between the reference paths and this host's."""

    overload: str
    slots: tuple[str, ...]  # the slots the probe cast
    dtype: str
    reference: str  # "accepted" or ATen's refusal
    host: str

    def to_json(self) -> dict[str, Any]:
        return {"overload": self.overload, "slots": list(self.slots), "dtype": self.dtype, "reference": self.reference, "host": self.host}


def _verdicts(report: dict[str, Any]) -> dict[tuple[tuple[str, ...], str], str]:
    """(slots cast, dtype) -> "accepted" or ATen's refusal, over one probed call's report."""
    found = {}
    for cast, accepted, refused, *_ in report.get("probes") or ():
        found.update({(tuple(cast), dtype): "accepted" for dtype, _ in accepted})
        found.update({(tuple(cast), dtype): message for dtype, message in refused})
    return found


def differences(reference: list[dict[str, Any]], host: list[dict[str, Any]]) -> tuple[PathDifference, ...]:
    """Each verdict both settled that differs, matching each overload's calls in order."""
    by_overload: dict[str, list[dict[str, Any]]] = {}
    for report in host:
        by_overload.setdefault(report["overload"], []).append(report)
    seen: dict[str, int] = {}
    found = []
    for report in reference:
        if schema_calls.REFUSED in report:
            continue
        name = report["overload"]
        number = seen[name] = seen.get(name, -1) + 1
        calls = by_overload.get(name, [])
        if number >= len(calls):
            continue
        other = calls[number]
        if other["again"] and not report["again"]:
            found.append(PathDifference(name, tuple(s for s, _ in report["slots"]), "as built", "accepted", other["again"]))
            continue
        theirs = _verdicts(other)
        for key, verdict in sorted(_verdicts(report).items()):
            if key in theirs and (verdict == "accepted") != (theirs[key] == "accepted"):
                found.append(PathDifference(name, key[0], key[1], verdict, theirs[key]))
    return tuple(found)


@dataclass(frozen=True)
class HostPathsSummary:
    """The verdicts this host's CPU paths give otherwise (``--report`` alone lists them)."""

    host: str
    differences: tuple[PathDifference, ...]

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "paths": HOST_PATHS, "differences": [d.to_json() for d in self.differences]}

    def lines(self) -> list[str]:
        overloads = len({d.overload for d in self.differences})
        return [f"host CPU paths ({HOST_PATHS}): {len(self.differences)} verdicts of {overloads} overloads differ from the reference paths the yaml states (listed in --report)"]


def stage(cache: StageCache) -> Stage:
    return cache.stage("host-paths", __name__)


def host_paths(cache: StageCache, jobs: int | None) -> HostPathsSummary:
    """The differences, from the stage (keyed by this host's fingerprint), else probed in workers and stored."""
    fingerprint = host_fingerprint()

    def probe() -> list[dict[str, Any]]:
        names = sorted(r["overload"].removeprefix("aten::") for r in catalogue_calls.STAGE.entry(cache, jobs) if schema_calls.REFUSED not in r)
        reports, _ = schema_calls.probe_built_calls(list(dict.fromkeys(names)), jobs, _host_reports, "host-path calls")
        return reports

    host = stage(cache).get((fingerprint,), probe, list, cold="probing the catalogue's calls on this host's CPU paths, in workers (once)")
    return HostPathsSummary(fingerprint, differences(catalogue_calls.STAGE.entry(cache, jobs), host))
