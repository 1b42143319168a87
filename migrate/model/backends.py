"""Dtype sets per backend, as the yaml declares them: ``dispatch_dtypes: {CPU: {T: TReal}, CUDA: {T: TFloating}}``.

ATen's kernels are per dispatch key and take different dtypes (CUDA takes complex32 ``cos``, CPU integer
``addmm``). ``type_constraints:`` keeps the union over backends (what torchlib reads: a model on any device
reaches the exporter); where one backend's set differs from it, this line states that backend's set, spelled as
``type_constraints:`` spells sets. A variable a key does not name, and a key the line lacks, read as the union.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate.model.dtypes import DType, canonical
from migrate.model.keyed_sets import KeyedSets

BACKENDS_KEY = "dispatch_dtypes"
BACKEND_KEYS = ("CPU", "CUDA")
"""The dispatch keys a set may be stated for, as ``dispatch:`` names them, in the order the line lists them."""
DEVICES = {"cpu": "CPU", "cuda": "CUDA"}
"""A tensor's device type -> the dispatch key whose set judges it."""

OBSERVED = "observed"  # the CPU set: the dtypes CPU calls ran with (the union less the dtypes only CUDA claims)
CLAIMED = "OpInfo claims"  # the CUDA set: what the overload's own OpInfo claims for CUDA, a lower bound
NO_KERNEL = "no kernel"  # the empty set of a backend the entry's dispatch: gives no kernel (histogram's CUDA)
UNION = "the union"  # a backend no set is stated for: it reads as the entry's type_constraints

@dataclass(frozen=True)
class BackendSet:
    """One variable's dtypes on one backend, and what they rest on (``OBSERVED``, ``CLAIMED``)."""

    key: str
    dtypes: tuple[DType, ...]
    basis: str

    def __post_init__(self) -> None:
        if self.key not in BACKEND_KEYS:
            raise ValueError(f"unknown backend {self.key!r} (known: {', '.join(BACKEND_KEYS)})")
        object.__setattr__(self, "dtypes", canonical(self.dtypes))


@dataclass(frozen=True)
class DispatchDtypes(KeyedSets):
    """An entry's ``dispatch_dtypes:`` line: per dispatch key, the variables whose set there is not the union."""

    KEY = BACKENDS_KEY
    KEYS = BACKEND_KEYS
    WHAT = "dispatch key"


def backend_of(device: str) -> str:
    """The dispatch key whose set judges a tensor on ``device`` ('cpu', 'cuda:0', 'meta'); '' reads the union."""
    return DEVICES.get(device.split(":", 1)[0], "")
