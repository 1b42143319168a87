"""Calls built at each value of a string argument, probed as a recorded call is.

Some kernels take a dtype at one value of an argument and refuse it at another: ``div(complex64, complex64,
rounding_mode='floor')`` is refused (``"div_floor_cpu" not implemented for 'ComplexFloat'``) where
``rounding_mode=None`` runs; ``scatter_reduce`` of complex64 runs with ``reduce='sum'``, not ``'amax'``. OpInfo's
samples try a few values, so a set misses what the others take (``index_reduce`` of complex64 with
``reduce='prod'``), and nothing says which values refuse. For each overload with a CPU kernel and an argument
``VALUES`` names (by name and type), a worker builds a call at each value (the catalogue's recipe where there is
one, else from the schema as ``schema_calls`` does, the value given) and probes it dtype by dtype. A value the
overload does not know (``reduce='add'`` of ``scatter_reduce``) builds no call and is left out.

Each report names its argument and value (``ARGUMENT``, ``VALUE``). The probes join the built calls' evidence, so
a set is the union over the values (``migrate.evidence.derived``); which value refused which dtype is decided in
``migrate.infer.values``. Keyed by this code and torch's version; seeds come from the overload's name.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

from migrate.cache import Stage, StageCache
from migrate.evidence.probe import catalogue_calls, schema_calls
from migrate.evidence.probe.catalogue import RECIPES
from migrate.runtime import torch_private
from migrate.runtime.processes import DONE, Job, run_in_workers
from migrate.runtime.runs import SCHEMA_CALL, ProbedCall

VALUES: dict[tuple[str, str], tuple[str | None, ...]] = {
    ("rounding_mode", "Optional[str]"): (None, "trunc", "floor"),
    ("reduce", "str"): ("sum", "prod", "mean", "amax", "amin", "add", "multiply"),
    ("approximate", "str"): ("none", "tanh"),
    ("side", "Optional[str]"): (None, "left", "right"),
    ("interpolation", "str"): ("linear", "lower", "higher", "midpoint", "nearest"),
    ("mode", "str"): ("constant", "reflect", "replicate", "circular"),
}
"""The values tried, by argument name and type: ATen's own words for them (``torch.div``, ``Tensor.scatter_reduce_``,
``scatter_(reduce=)``, ``gelu``, ``searchsorted``, ``quantile``, ``pad``)."""

ARGUMENT, VALUE = "argument", "value"  # a report's keys: the argument varied and its value in this call


def valued_argument(schema: Any) -> str:
    """The schema's argument ``VALUES`` names ('' when none does)."""
    return next((a.name for a in schema.arguments if (a.name, str(getattr(a, "real_type", a.type))) in VALUES), "")


def _value_domain(schema: Any, name: str) -> tuple[str | None, ...]:
    argument = next(a for a in schema.arguments if a.name == name)
    return VALUES[name, str(getattr(argument, "real_type", argument.type))]


def value_reports(names: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The job: for each overload named, announced, the probes of one call per value it takes."""
    from migrate.evidence.probe.prober import PROBE_TIMEOUT, bounded, probe_call

    with warnings.catch_warnings(), bounded():
        warnings.simplefilter("ignore")
        for name in names:
            yield {"trying": name}
            func = torch_private.aten_overload(name)
            argument = valued_argument(func._schema)
            for value in _value_domain(func._schema, argument):
                if name in RECIPES:
                    calls = catalogue_calls.recipe_calls(func, {**RECIPES[name], argument: value}, PROBE_TIMEOUT, [])
                else:
                    calls = schema_calls.built_calls(func, PROBE_TIMEOUT, given={argument: value})
                for call in calls[:1]:
                    yield {"probed": {**probe_call(call, f"{name}\0{argument}={value}", PROBE_TIMEOUT), ARGUMENT: argument, VALUE: value}}


def _names_report(_: None) -> Iterator[list[str]]:
    yield sorted(torch_private.overload_slots(f).name for f in schema_calls.targets() if valued_argument(f._schema))


def probe_value_calls(jobs: int | None) -> list[dict[str, Any]]:
    """Reports for every overload with a valued argument, in name order (one whose probe ended its worker: none)."""
    (listed,) = run_in_workers([Job(_names_report, None, "value call targets")], jobs=1, progress=False)
    if listed.status != DONE:
        raise torch_private.TorchAPIChanged(f"listing the overloads with a valued argument failed: {listed.reason}")
    names = [name for report in listed.reports for name in report]
    reports, _ = schema_calls.probe_built_calls(names, jobs, value_reports, "value calls")
    return reports


def stage(cache: StageCache) -> Stage:
    return cache.stage("value-calls", __name__)


def entry(cache: StageCache, jobs: int | None) -> list[dict[str, Any]]:
    """The stage's entry: each value's probed call, made in workers on a miss."""
    return stage(cache).get((), lambda: probe_value_calls(jobs), list, cold="building calls at each value of string arguments, in workers (once)")


def load_value_calls(cache: StageCache, jobs: int | None) -> tuple[ProbedCall, ...]:
    """The probed calls of every value, as built calls (their union is the set)."""
    return tuple(ProbedCall.from_report(SCHEMA_CALL, report) for report in entry(cache, jobs))


def cached_value_reports(cache: StageCache) -> list[dict[str, Any]]:
    """The reports a run stored (none before one did)."""
    return stage(cache).read(kind=list) or []
