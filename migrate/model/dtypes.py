"""The dtype vocabulary: torch dtypes, their one canonical order, and their ONNX names.

Dtypes are spelled as ``str(torch.float32)`` prints them. The table fixes the
canonical order used wherever a set of dtypes is written; a dtype that a newer
torch adds and the table does not know yet is still accepted (it sorts after the
known ones, by name) so that the tool keeps working on other releases.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Iterable

# (torch name, onnxscript type name or None), in canonical order.
_KNOWN: tuple[tuple[str, str | None], ...] = (
    ("bool", "BOOL"),
    ("uint8", "UINT8"),
    ("int8", "INT8"),
    ("int16", "INT16"),
    ("int32", "INT32"),
    ("int64", "INT64"),
    ("uint16", "UINT16"),
    ("uint32", "UINT32"),
    ("uint64", "UINT64"),
    ("float16", "FLOAT16"),
    ("bfloat16", "BFLOAT16"),
    ("float32", "FLOAT"),
    ("float64", "DOUBLE"),
    ("complex32", None),
    ("complex64", "COMPLEX64"),
    ("complex128", "COMPLEX128"),
    ("float8_e4m3fn", "FLOAT8E4M3FN"),
    ("float8_e4m3fnuz", "FLOAT8E4M3FNUZ"),
    ("float8_e5m2", "FLOAT8E5M2"),
    ("float8_e5m2fnuz", "FLOAT8E5M2FNUZ"),
    ("float8_e8m0fnu", "FLOAT8E8M0"),
    ("float4_e2m1fn_x2", "FLOAT4E2M1"),
    ("int4", "INT4"),
    ("uint4", "UINT4"),
    ("int2", "INT2"),
    ("uint2", "UINT2"),
    ("qint8", None),
    ("quint8", None),
    ("qint32", None),
    ("quint4x2", None),
    ("quint2x4", None),
    ("bits1x8", None),
    ("bits2x4", None),
    ("bits4x2", None),
    ("bits8", None),
    ("bits16", None),
    ("uint1", None),
    ("uint3", None),
    ("uint5", None),
    ("uint6", None),
    ("uint7", None),
    ("int1", None),
    ("int3", None),
    ("int5", None),
    ("int6", None),
    ("int7", None),
)
_RANK = {name: rank for rank, (name, _) in enumerate(_KNOWN)}
_ONNX = {name: onnx for name, onnx in _KNOWN}
_FROM_ONNX = {onnx: name for name, onnx in _KNOWN if onnx is not None}

PREFIX = "torch."


@functools.cache
def _installed_torch_dtype_names() -> frozenset[str]:
    """Names of every dtype the installed torch defines (imported lazily: torch is slow to import)."""
    import torch  # here: the data model never imports torch (5 s) but for a dtype name newer than the table

    return frozenset(name for name, value in vars(torch).items() if isinstance(value, torch.dtype))


class UnknownDType(ValueError):
    """A dtype spelling that is neither in the table nor defined by the installed torch."""


_INTERNED: dict[str, DType] = {}  # name -> its one DType


@dataclass(frozen=True, eq=False)
class DType:
    """One torch dtype, e.g. ``DType("float32")``, printed ``torch.float32``.

    One object per name (``DType("x") is DType("x")``), so that equality and hashing are the object's own, done in C:
    dtypes are the keys and members of the inference's sets and maps, millions of times a run."""

    name: str

    def __new__(cls, name: str) -> DType:
        found = _INTERNED.get(name)
        if found is None:
            made = super().__new__(cls)
            object.__setattr__(made, "name", name)
            object.__setattr__(made, "_order", (_RANK.get(name, len(_RANK)), name))
            found = _INTERNED.setdefault(name, made)  # atomic: two threads making one name get one object
        return found

    def __reduce__(self) -> tuple[type[DType], tuple[str]]:
        return DType, (self.name,)  # unpickled or copied, it is the receiving process's one object

    @classmethod
    def parse(cls, text: str) -> DType:
        if not text.startswith(PREFIX):
            raise UnknownDType(f"dtype {text!r} is not spelled 'torch.<name>'")
        name = text[len(PREFIX) :]
        if name not in _RANK and name not in _installed_torch_dtype_names():
            raise UnknownDType(f"unknown dtype {text!r}")
        return cls(name)

    @classmethod
    def from_onnx(cls, onnx_name: str) -> DType | None:
        """The torch dtype of an onnxscript tensor type name (``FLOAT`` -> float32), if any."""
        name = _FROM_ONNX.get(onnx_name)
        return None if name is None else cls(name)

    @property
    def onnx(self) -> str | None:
        """The onnxscript type name, or None for dtypes ONNX cannot express."""
        return _ONNX.get(self.name)

    @property
    def sort_key(self) -> tuple[int, str]:
        return self._order  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return PREFIX + self.name


def canonical(dtypes: Iterable[DType]) -> tuple[DType, ...]:
    """Deduplicated, in the canonical order."""
    return tuple(sorted(set(dtypes), key=_ORDER))


_ORDER = operator.attrgetter("_order")


def parse_set(texts: Iterable[str]) -> tuple[DType, ...]:
    return canonical(DType.parse(text) for text in texts)


def format_set(dtypes: Iterable[DType]) -> str:
    """Flow-style yaml list, the one spelling the writers use: ``[torch.float16, torch.float32]``."""
    return "[" + ", ".join(str(d) for d in canonical(dtypes)) + "]"


def known_dtypes() -> tuple[DType, ...]:
    """Every dtype of the table, in canonical order."""
    return tuple(DType(name) for name, _ in _KNOWN)


def named(*names: str) -> tuple[DType, ...]:
    return canonical(DType(n) for n in names)


COMPLEX = named("complex64", "complex128")
TENSOR_DTYPES = canonical(DType(name) for name, _ in _KNOWN[: [n for n, _ in _KNOWN].index("float8_e8m0fnu") + 1])
"""The dtypes a plain CPU tensor can have (bool to float8_e8m0fnu, 21 in torch 2.13): each gets a verdict per variable."""

_OPMATH = {"float16": "float32", "bfloat16": "float32", "complex32": "complex64"}


def opmath(dtype: DType) -> DType:
    """The dtype ATen's kernels compute a tensor of ``dtype`` in (``at::opmath_type``, ``torch._prims_common``'s
    ``get_computation_dtype``): half and bfloat16 in float32, complex32 in complex64, any other in itself."""
    return DType(_OPMATH.get(dtype.name, dtype.name))
