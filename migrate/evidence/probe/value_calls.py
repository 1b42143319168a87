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

import functools
from collections.abc import Iterator
from typing import Any

from migrate.evidence.probe import catalogue_calls, schema_calls
from migrate.evidence.probe.catalogue import RECIPES
from migrate.runtime import torch_private
from migrate.runtime.aten_call import PROBE_TIMEOUT
from migrate.runtime.runs import SCHEMA_CALL, ProbedCall
from migrate.runtime.worker_stage import WorkerStage, each_overload, listed_in_worker

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


def _reports_of(name: str) -> Iterator[dict[str, Any]]:
    """The probes of one call per value the overload takes, each naming its argument and value."""
    from migrate.evidence.probe.prober import probe_call  # imports torch: workers only (the --op fast path)

    func = torch_private.aten_overload(name)
    argument = valued_argument(func._schema)
    for value in _value_domain(func._schema, argument):
        if name in RECIPES:
            calls = catalogue_calls.recipe_calls(func, {**RECIPES[name], argument: value}, PROBE_TIMEOUT, [])
        else:
            calls = schema_calls.built_calls(func, PROBE_TIMEOUT, given={argument: value})
        for call in calls[:1]:
            yield {**probe_call(call, f"{name}\0{argument}={value}", PROBE_TIMEOUT), ARGUMENT: argument, VALUE: value}


value_reports = functools.partial(each_overload, _reports_of)
"""The job: for each overload named, announced, the probes of one call per value it takes."""


def _names_report(_: None) -> Iterator[list[str]]:
    yield sorted(torch_private.overload_slots(f).name for f in schema_calls.targets() if valued_argument(f._schema))


def probe_value_calls(jobs: int | None) -> list[dict[str, Any]]:
    """Reports for every overload with a valued argument, in name order (one whose probe ended its worker: none)."""
    names = listed_in_worker(_names_report, "the overloads with a valued argument")
    reports, _ = schema_calls.probe_built_calls(names, jobs, value_reports, "value calls")
    return reports


STAGE = WorkerStage(
    "value-calls",
    probe_value_calls,
    "building calls at each value of string arguments, in workers (once)",
    lambda reports: tuple(ProbedCall.from_report(SCHEMA_CALL, report) for report in reports),
)
"""Each value's probed call report; a run reads the probed calls (their union is the set), inference the reports."""
