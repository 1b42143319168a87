"""The autocast policy of every overload, per key: the dispatcher says which, a source tree or observed runs say how.

Without a source tree, a key's policy for an overload is the one an observed run shows
(``worker.py``); the installed header's shared lists corroborate it where they list the
overload. With ``--autocast-source DIR``, the tree's ``autocast_mode.cpp`` gives the policy and
observation confirms it. A registration neither read nor observed is reported, never guessed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from migrate.cache import StageCache
from migrate.errors import InputError
from migrate.autocast_source import SHARED_LISTS, installed_header, read_registrations, shared_lists, source_files
from migrate.model.autocast import KEYS, Policies, ordered
from migrate.runtime.processes import worker_environment, worker_slot
from migrate.runtime.worker_stage import WorkerStage

BANNED_MESSAGE = "unsafe to autocast"
OBSERVED_KEY = "CPU"  # the key whose every written policy an observed run must confirm, even one a source tree gives
FLOAT32 = "torch.float32"


@dataclass(frozen=True)
class KeyPolicy:
    """One key's policy for one overload and where it comes from."""

    key: str
    policy: str
    source: str  # 'observed' or 'autocast_mode.cpp:812'
    observed: str = ""  # the run that shows it: 'mm(self: float32 -> bfloat16, mat2: float32 -> bfloat16)'
    header_list: str = ""  # the shared list of the installed header that gives the same policy, if any

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


@dataclass(frozen=True)
class Unresolved:
    key: str
    overload: str
    reason: str


@dataclass(frozen=True)
class AutocastEvidence:
    """Per overload its policies; the registrations per key; what could not be settled or disagrees."""

    torch: str
    dtypes: dict[str, str]  # key -> the autocast dtype its runs used
    registrations: dict[str, tuple[str, ...]]
    policies: dict[str, tuple[KeyPolicy, ...]]
    unresolved: tuple[Unresolved, ...] = ()
    disagreements: tuple[str, ...] = ()
    not_in_yaml: tuple[str, ...] = ()  # registered overloads the yaml lacks (another release's file)

    def of(self, overload: str) -> Policies:
        return ordered((p.key, p.policy) for p in self.policies.get(overload, ()))

    def summary(self) -> AutocastSummary:
        counts: dict[str, dict[str, int]] = {}
        for found in self.policies.values():
            for policy in found:
                counts.setdefault(policy.key, {}).setdefault(policy.policy, 0)
                counts[policy.key][policy.policy] += 1
        return AutocastSummary(
            self.torch,
            {k: len(v) for k, v in self.registrations.items()},
            {k: dict(sorted(counts.get(k, {}).items())) for k in self.registrations},
            {k: sum(1 for f in self.policies.values() for p in f if p.key == k and p.observed) for k in self.registrations},
            tuple(vars(u) for u in self.unresolved),
            self.disagreements,
            self.not_in_yaml,
        )


@dataclass(frozen=True)
class AutocastSummary:
    """What the run's summary says about autocast (its ``autocast`` section): per key the registrations, the policies
    read, those an observed run confirms, what was left; and, once written, the entries annotated per policy."""

    torch: str
    registrations: dict[str, int]
    policies: dict[str, dict[str, int]]
    observed: dict[str, int]
    unresolved: tuple[dict[str, str], ...]
    disagreements: tuple[str, ...]
    not_in_yaml: tuple[str, ...]
    annotated: dict[str, dict[str, int]] | None = None  # per key and policy, in the written yaml (None: nothing written)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "torch": self.torch,
            "registrations": dict(self.registrations),
            "policies": dict(self.policies),
            "observed": dict(self.observed),
            "unresolved": list(self.unresolved),
            "disagreements": list(self.disagreements),
            "not_in_yaml": list(self.not_in_yaml),
        }
        if self.annotated is not None:
            found["annotated"] = dict(self.annotated)
        return found

    def lines(self) -> list[str]:
        """The run's autocast lines: per key the registrations, the entries annotated per policy, and what was left."""
        annotated = self.annotated or {}
        lines = []
        for key, registered in self.registrations.items():
            written = annotated.get(key, {})
            policies = ", ".join(f"{policy} {n}" for policy, n in written.items()) or "none"
            lines.append(
                f"autocast {key}: {sum(written.values())} of {registered} registrations annotated ({policies}); "
                f"{self.observed.get(key, 0)} confirmed by an observed run"
            )
        unresolved: dict[str, int] = {}
        for item in self.unresolved:
            unresolved[item["key"]] = unresolved.get(item["key"], 0) + 1
        if unresolved:
            lines.append("autocast not settled (neither read nor observed, not written): " + ", ".join(f"{k} {n}" for k, n in unresolved.items()) + " (listed in --report)")
        lines += [f"autocast disagreement: {d}" for d in self.disagreements]
        return lines


def observations(cache: StageCache) -> dict[str, Any]:
    """The worker's registrations and runs, from the release's facts, else observed and stored."""
    return OBSERVATIONS.entry(cache)


def _observed() -> dict[str, Any]:
    """What the worker (a process of its own: it sets autocast state) prints, in one of the run's worker slots."""
    with worker_slot():
        done = subprocess.run([sys.executable, "-m", "migrate.evidence.autocast.worker"], capture_output=True, text=True, env=worker_environment())
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise InputError(f"observing autocast failed: {last[0]}", Path("migrate/evidence/autocast/worker.py"))
    return json.loads(done.stdout)


def autocast_dtypes(cache: StageCache) -> dict[str, str]:
    """Each observed key's autocast dtype as the installed torch sets it ('CPU': 'torch.bfloat16')."""
    return {key: found["dtype"] for key, found in observations(cache)["keys"].items() if found["dtype"]}


OBSERVATIONS = WorkerStage(
    "autocast",
    lambda jobs: _observed(),
    "observing autocast in a worker (once per torch and code)",
    kind=dict,
    evidence="autocast",
)
"""The worker's registrations and runs (a process of its own: it sets autocast state)."""


def _short(dtype: str) -> str:
    return dtype.removeprefix("torch.")


def _flat(dtypes: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f"{name}[{i}]" if isinstance(value, list) else name, d) for name, value in dtypes.items() for i, d in enumerate(value if isinstance(value, list) else [value]) if d]


def _shown(run: dict[str, Any], sent: dict[str, str]) -> str:
    """'mm(self: float32 -> bfloat16, mat2: ...)' for a record; the dtype argument appended when set."""
    parts = []
    for slot, dtype in _flat(run["dtypes"]):
        before = sent.get(slot, dtype)
        parts.append(f"{slot}: {_short(before)}" + (f" -> {_short(dtype)}" if before != dtype else ""))
    if run.get("dtype_argument"):
        parts.append(f"dtype={_short(run['dtype_argument'])}")
    return f"{run['reached']}({', '.join(parts)})"


def classify(overload: str, runs: dict[str, Any], lower: str) -> tuple[str | None, str]:
    """The policy the three runs show, with the run that shows it; (None, why) when none does."""
    first = runs.get("float32", {})
    if BANNED_MESSAGE in first.get("error", ""):
        return "banned", f"{overload}: raised '{first['error']}'"
    if "reached" in first:
        dtypes = [d for _, d in _flat(first["dtypes"])]
        if dtypes and all(d == lower for d in dtypes) and first["reached"] == overload:
            return "lower_precision_fp", _shown(first, {s: FLOAT32 for s, _ in _flat(first["dtypes"])})
    low = runs.get("lower", {})
    if "reached" in low:
        sent = {s: lower for s, _ in _flat(low["dtypes"])}
        dtypes = [d for _, d in _flat(low["dtypes"])]
        if low["reached"] != overload and low.get("dtype_argument") == FLOAT32:
            return "fp32_append_dtype", f"{overload} -> {_shown(low, sent)}"
        if low["reached"] == overload and low.get("dtype_argument") == FLOAT32 and all(d == lower for d in dtypes):
            return "fp32_set_opt_dtype", _shown(low, sent)
        if low["reached"] == overload and dtypes and all(d == FLOAT32 for d in dtypes):
            return "fp32", _shown(low, sent)
    mixed = runs.get("mixed", {})
    if "reached" in mixed and mixed["reached"] == overload:
        flat = _flat(mixed["dtypes"])
        sent = {s: FLOAT32 if i == 0 else lower for i, (s, _) in enumerate(flat)}
        if any(sent[s] == lower and d == FLOAT32 for s, d in flat):  # widened to the widest input (not Tensor?[] items)
            return "promote", _shown(mixed, sent)
    errors = sorted({r["error"] for r in runs.values() if "error" in r})
    return None, "no run showed a cast" + (f" ({errors[0]})" if errors else "")


def _header_policies(header: str) -> dict[str, tuple[str, str]]:
    """overload -> (policy, list macro) from the shared lists."""
    found = {}
    for macro, items in shared_lists(header).items():
        for item in items:
            found[item.overload] = (item.policy or SHARED_LISTS[macro] or "", macro)
    return found


def autocast_policies(
    overloads: Collection[str], cache: StageCache, source: Path | None = None, header: Path | None = None
) -> AutocastEvidence:
    """Every registered overload's policy per key, for the overloads the yaml has (``overloads``: their names)."""
    seen = observations(cache)
    header_text = (header or installed_header()).read_text()
    listed = _header_policies(header_text)
    read: dict[tuple[str, str], tuple[str, str]] = {}
    if source is not None:
        cpp, source_header = source_files(source)
        for registration in read_registrations(cpp.read_text(), source_header.read_text(), cpp.name):
            read[registration.key, registration.overload] = (registration.policy, registration.where)
    policies: dict[str, list[KeyPolicy]] = {}
    unresolved, disagreements, missing = [], [], set()
    registrations = {key: tuple(seen["keys"][key]["registrations"]) for key in KEYS if key in seen["keys"]}
    for key, names in registrations.items():
        info = seen["keys"][key]
        for overload in names:
            if overload not in overloads:
                missing.add(overload)
                continue
            runs = info["observed"].get(overload)
            policy, shown = classify(overload, runs, info["dtype"]) if runs else (None, "not observed: no device for the key")
            in_list = listed.get(overload)
            header_list = in_list[1] if in_list and in_list[0] == policy else ""
            if (key, overload) in read:
                from_source, where = read[key, overload]
                if policy is not None and policy != from_source:
                    disagreements.append(f"{key} {overload}: {where} says {from_source}, the observed run shows {policy}: {shown}")
                if key == OBSERVED_KEY and policy != from_source:  # every CPU policy written is one a run confirms
                    unresolved.append(Unresolved(key, overload, f"{where} says {from_source}; no observed run confirms it ({shown})"))
                    continue
                policies.setdefault(overload, []).append(KeyPolicy(key, from_source, where, shown if policy == from_source else "", header_list))
            elif policy is not None:
                policies.setdefault(overload, []).append(KeyPolicy(key, policy, "observed", shown, header_list))
            else:
                unresolved.append(Unresolved(key, overload, shown))
    for (key, overload), (policy, where) in sorted(read.items()):
        if overload in overloads and overload not in registrations.get(key, ()):
            disagreements.append(f"{key} {overload}: {where} registers {policy}; the installed torch's dispatcher does not")
    return AutocastEvidence(
        seen["torch"],
        {k: seen["keys"][k]["dtype"] for k in registrations if seen["keys"][k]["dtype"]},
        registrations,
        {name: tuple(sorted(found, key=lambda p: KEYS.index(p.key))) for name, found in sorted(policies.items())},
        tuple(unresolved),
        tuple(disagreements),
        tuple(sorted(missing)),
    )
