"""``verify --autocast``: where an entry's autocast policy contradicts its declared dtypes.

Autocast casts every floating input but a double one (float32, float16, bfloat16, the float8
kinds). A ``lower_precision_fp`` key casts them to the key's autocast dtype (bfloat16 on CPU, float16
on CUDA): a cast slot (an input whose declared set holds such a dtype) whose set lacks the autocast
dtype says the kernel rejects what autocast feeds it. An ``fp32`` key casts them to float32: a cast
slot whose set lacks float32 says the same. Each contradiction on CPU is settled by a real call under autocast: the kernel running means
the declaration misses the dtype; a dtype error means the policy feeds the kernel what it rejects.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from migrate.errors import InputError
from migrate.model.autocast import declared_autocast
from migrate.model.declared import declared_variables
from migrate.model.dtypes import format_set
from migrate.model.native import NativeFunctions
from migrate.model.plan import OverloadPlan



@dataclass(frozen=True)
class Contradiction:
    key: str
    overload: str
    policy: str
    variable: str
    slots: tuple[str, ...]
    declared: str
    missing: str
    settled: str = ""

    def __str__(self) -> str:
        text = (
            f"{self.key} {self.overload}: {self.policy} feeds {', '.join(self.slots)} {self.missing.removeprefix('torch.')}; "
            f"{self.variable} is declared {self.declared}"
        )
        return text + (f"; settled by a run under autocast: {self.settled}" if self.settled else "")


def _cast_by_autocast(dtype: str) -> bool:
    """Whether autocast casts a tensor of this dtype: floating point, and not double (``is_autocast_eligible``)."""
    return "float" in dtype and dtype != "torch.float64"


def contradictions(native: NativeFunctions, sets, autocast_dtypes: Mapping[str, str]) -> list[Contradiction]:
    """Every contradiction between an entry's autocast line and its declared variables, in file order.

    ``autocast_dtypes`` is each key's autocast dtype ('torch.bfloat16' for CPU), as the installed torch sets it.
    """
    found = []
    for entry in native.entries:
        policies = declared_autocast(native, entry)
        if not policies:
            continue
        inputs = {slot.name for slot in entry.schema.slots if not slot.name.startswith("return")}
        variables = OverloadPlan(entry.name, declared_variables(native, entry, sets))
        for variable in variables.variables:
            # a variable that follows another takes its dtype too: autocast casts both (sdpa's mask beside its query)
            names = {str(d) for d in variables.possible(variable)}
            cast = {n for n in names if _cast_by_autocast(n)}
            slots = tuple(s for s in variable.binds if s in inputs)
            for key, policy in policies:
                if not slots or key not in autocast_dtypes:
                    continue
                missing = None
                if policy == "lower_precision_fp" and cast and autocast_dtypes[key] not in names:
                    missing = autocast_dtypes[key]
                elif policy == "fp32" and cast and "torch.float32" not in names:
                    missing = "torch.float32"
                if missing:
                    found.append(Contradiction(key, entry.name, policy, variable.name, slots, format_set(variable.dtypes), missing))
    return found


def settled(found: list[Contradiction]) -> list[Contradiction]:
    """Each CPU contradiction with the outcome of a real call under autocast; the other keys need their device."""
    cpu = [c for c in found if c.key == "CPU"]
    outcomes: dict[str, str] = {}
    if cpu:
        pairs = [a for c in cpu for a in (c.overload, "float32" if c.policy == "lower_precision_fp" else "lower")]
        done = subprocess.run([sys.executable, "-m", "migrate.evidence.autocast.worker", "--settle", *pairs], capture_output=True, text=True)
        if done.returncode != 0:
            raise InputError(f"settling runs failed: {done.stderr.strip().splitlines()[-1:]}", Path("migrate/evidence/autocast/worker.py"))
        outcomes = json.loads(done.stdout)
    result = []
    for c in found:
        if c.key != "CPU":
            result.append(replace(c, settled=f"not settled here (no {c.key} device)"))
            continue
        outcome = outcomes[f"{c.overload} {'float32' if c.policy == 'lower_precision_fp' else 'lower'}"]
        verdict = "the kernel took it: the declaration misses the dtype" if outcome == "ran" else f"{outcome} (a dtype error blames the policy)"
        result.append(replace(c, settled=verdict))
    return result


def report(native: NativeFunctions, sets: Mapping, dtypes: Mapping[str, str], selected: set[str] | None) -> str:
    """Every contradiction (of the selected overloads), settled where it can be, and a total line."""
    found = [c for c in contradictions(native, sets, dtypes) if selected is None or c.overload in selected]
    annotated = sum(1 for e in native.entries if declared_autocast(native, e))
    lines = [str(c) for c in settled(found)]
    lines.append(f"autocast: {len(found)} contradictions between autocast policy and declared dtypes in {annotated} annotated entries")
    return "\n".join(lines) + "\n"
