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
from migrate.evidence.probe.dtype_arguments import DtypeArgument
from migrate.evidence.probe.schema_calls import cached_refusals, cached_schema_calls
from migrate.model.dtypes import canonical
from migrate.runtime.runs import CatalogueEntry, overload_key

NOT_BUILT = "no call was built from its schema (an out= overload, or an argument the catalogue has no value for)"
LISTS_ONLY = "calls built from its schema ran, but on tensor lists only, which such calls leave free (mixed lists were never tried)"


def last_refusals(names: Iterable[str], cache: StageCache, dtype_arguments: Mapping[str, DtypeArgument]) -> dict[str, str]:
    """Per untyped entry with a CPU kernel, ATen's last refusal of a call built for it, else why none was tried."""
    refused = cached_refusals(cache)
    built = {key for call in cached_schema_calls(cache) or () if (key := overload_key(call.overload)) is not None}
    found = {}
    for name in names:
        fact = dtype_arguments.get(name)
        if name in refused:
            found[name] = refused[name]
        elif fact is not None and fact.refused:
            found[name] = fact.refused[-1][1]
        else:
            found[name] = LISTS_ONLY if name in built else NOT_BUILT
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
