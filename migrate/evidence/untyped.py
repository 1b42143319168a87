"""What a run can say of the entries it leaves untyped: ATen's last refusal, or OpInfo's CUDA claim.

An entry with a CPU kernel that no evidence typed is listed in ``--report`` with the last message
ATen gave a call built from its schema (``migrate.evidence.probe.schema_calls``, and for an overload
with a ``ScalarType`` argument, ``dtype_arguments``); one no call could be built for says so. An entry
with no CPU kernel cannot be judged on CPU at all: it stays untyped, and the report shows which
dtypes the OpInfos about its operator claim for CUDA (what PyTorch's CI tests there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from migrate.cache import StageCache
from migrate.evidence.probe.catalogue import LEFT_OUT
from migrate.evidence.probe import catalogue_calls, schema_calls
from migrate.evidence.probe.catalogue_calls import cached_catalogue_refusals
from migrate.evidence.probe.dtype_arguments import DtypeArgument
from migrate.evidence.probe.schema_calls import cached_refusals
from migrate.model.dtypes import canonical
from migrate.runtime.runs import CatalogueEntry, overload_key

NOT_BUILT = "no call was built from its schema (an out= overload, or an argument the catalogue has no value for)"
LISTS_ONLY = "calls built from its schema ran, but on tensor lists only, which such calls leave free (mixed lists were never tried)"
EMPTY_ONLY = "calls built for it ran, but each with an empty tensor argument or return, which proves no dtype"
MIXED_LISTS = "calls built from the catalogue ran, on tensor lists ATen also takes of mixed dtypes, which T[] (one dtype for every element) cannot state"
TIED = "calls built for it ran, but an out= or in-place overload takes its functional overload's constraints, which no evidence gives"


def last_refusals(names: Iterable[str], cache: StageCache, dtype_arguments: Mapping[str, DtypeArgument]) -> dict[str, str]:
    """Per untyped entry with a CPU kernel, ATen's last refusal of a call built for it, else why none was tried or why
    the calls that ran say nothing."""
    refused = cached_refusals(cache) | cached_catalogue_refusals(cache)  # a recipe's refusal says more than the schema's
    from_catalogue = catalogue_calls.STAGE.cached(cache, [])
    built: dict[str, bool] = {}  # overloads a built call ran for: whether one had an element in every tensor
    for call in schema_calls.STAGE.cached(cache, []) + from_catalogue:
        if (key := overload_key(call.overload)) is not None:
            built[key] = built.get(key, False) or call.nonempty
    recipes = {key for call in from_catalogue if (key := overload_key(call.overload)) is not None}
    lists = {key for call in from_catalogue if any(isinstance(d, tuple) for _, d in call.slots) and (key := overload_key(call.overload))}
    found = {}
    for name in names:
        fact = dtype_arguments.get(name)
        if name in LEFT_OUT:
            found[name] = f"left out of the argument catalogue: {LEFT_OUT[name]}"
        elif built.get(name):
            found[name] = LISTS_ONLY if name not in recipes else MIXED_LISTS if name in lists else TIED
        elif name in refused:
            found[name] = refused[name]
        elif name in built:
            found[name] = EMPTY_ONLY
        elif fact is not None and fact.refused:
            found[name] = fact.refused[-1][1]
        else:
            found[name] = NOT_BUILT
    return found


def cuda_claims(names: Iterable[str], catalogue: Iterable[CatalogueEntry]) -> dict[str, list[str]]:
    """Per entry ('_fft_c2c'), the dtypes the OpInfos about its operator claim for CUDA (an entry none is about: left out)."""
    claims: dict[str, set] = {}
    for entry in catalogue:
        cuda = dict(entry.declared).get("cuda", ())
        for operator in entry.operator_names:
            claims.setdefault(operator, set()).update(cuda)
    found = {}
    for name in names:
        dtypes = claims.get(name.split(".")[0])
        if dtypes:
            found[name] = [str(d) for d in canonical(dtypes)]
    return found
