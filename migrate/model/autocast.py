"""Autocast policy as the yaml declares it: ``autocast: {CPU: lower_precision_fp, CUDA: fp32}``.

Keys are the autocast dispatch keys without their ``Autocast`` prefix, as torch names them
(``AutocastCPU`` -> ``CPU``; the CUDA key is ``Autocast``, spelled ``CUDA``). Values are
ATen's ``CastPolicy`` names, plus ``banned`` for a registration that raises instead of casting
(``binary_cross_entropy`` on CUDA).
"""

from __future__ import annotations

from typing import Any, Iterable

import yaml

from migrate.errors import InputError
from migrate.model.native import Entry, NativeFunctions

AUTOCAST_KEY = "autocast"
POLICIES = ("lower_precision_fp", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned")
KEYS = ("CPU", "CUDA", "XPU", "MPS", "MTIA", "MAIA", "HPU", "IPU", "XLA", "PrivateUse1")
"""Every autocast key in the order the yaml lists them (CPU and CUDA first, then torch's other devices)."""

DISPATCH_KEY = {key: f"Autocast{key}" for key in KEYS}
"""The dispatcher's name of each key's autocast dispatch key."""

Policies = tuple[tuple[str, str], ...]
"""(key, policy) pairs of one overload, in ``KEYS`` order."""


def ordered(policies: Iterable[tuple[str, str]]) -> Policies:
    """Pairs in ``KEYS`` order; an unknown key or policy is a ValueError."""
    pairs = dict(policies)
    for key, policy in pairs.items():
        if key not in KEYS:
            raise ValueError(f"unknown autocast key {key!r} (known: {', '.join(KEYS)})")
        if policy not in POLICIES:
            raise ValueError(f"unknown autocast policy {policy!r} (known: {', '.join(POLICIES)})")
    return tuple((key, pairs[key]) for key in KEYS if key in pairs)


def autocast_line(indent: int, policies: Policies) -> str | None:
    """The ``autocast:`` line (no line end); None when the overload has no policy."""
    if not policies:
        return None
    return " " * indent + f"{AUTOCAST_KEY}: {{" + ", ".join(f"{key}: {policy}" for key, policy in policies) + "}"


def declared_autocast(native: NativeFunctions, entry: Entry) -> Policies:
    """The entry's ``autocast:`` mapping, checked; () when it has none."""
    span = native.key_span(entry, AUTOCAST_KEY)
    if span is None:
        return ()
    mapping: Any = native.fields(entry).get(AUTOCAST_KEY)
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise InputError(f"'{AUTOCAST_KEY}:' must map autocast keys to policies", native.path, span.start + 1, entry.name)
    try:
        return ordered((str(k), v) for k, v in mapping.items())
    except ValueError as exc:
        raise InputError(str(exc), native.path, span.start + 1, entry.name) from exc


def annotated_counts(native_functions: bytes) -> dict[str, dict[str, int]]:
    """Entries annotated per key and policy in a written file, read from its ``autocast:`` lines."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    counts: dict[str, dict[str, int]] = {}
    for line in native_functions.decode("utf-8").splitlines():
        if line.lstrip().startswith(AUTOCAST_KEY + ":"):
            for key, policy in (yaml.load(line.strip(), Loader=loader)[AUTOCAST_KEY] or {}).items():
                counts.setdefault(key, {}).setdefault(policy, 0)
                counts[key][policy] += 1
    return {key: dict(sorted(counts[key].items())) for key in KEYS if key in counts}
