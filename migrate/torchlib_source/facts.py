"""What the torchlib scan knows of a module, as plain data without libcst: type expressions and module facts.

The facts of a module depend on its bytes alone, so ``migrate.torchlib_source.scan``
caches them by the hash of those bytes; a warm run reads the evidence built from them
without importing libcst, which only the scan needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from migrate.cache import Stage, StageCache


# -- type expressions: annotations as plain data ------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A name or dotted name: ``TFloat``, ``onnxscript.FLOAT``."""

    parts: tuple[str, ...]

    def __str__(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class Subscript:
    """``Optional[X]``, ``Union[A, B]``, ``Sequence[X]``, ``Tuple[A, B]``."""

    base: Ref
    args: tuple[TypeExpr, ...]

    def __str__(self) -> str:
        return f"{self.base}[{', '.join(str(a) for a in self.args)}]"


@dataclass(frozen=True)
class BitOr:
    """``A | B``."""

    members: tuple[TypeExpr, ...]

    def __str__(self) -> str:
        return " | ".join(str(m) for m in self.members)


@dataclass(frozen=True)
class TypeVarCall:
    """``TypeVar("T", bound=X)`` or ``TypeVar("T", A, B)``."""

    name: str
    bound: TypeExpr | None
    constraints: tuple[TypeExpr, ...]

    def __str__(self) -> str:
        args = [repr(self.name)] + [str(c) for c in self.constraints]
        if self.bound is not None:
            args.append(f"bound={self.bound}")
        return f"TypeVar({', '.join(args)})"


@dataclass(frozen=True)
class Opaque:
    """Any other expression (a literal, a call, ``...``): it names no dtype."""

    text: str

    def __str__(self) -> str:
        return self.text


TypeExpr = Union[Ref, Subscript, BitOr, TypeVarCall, Opaque]


# -- module facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """Where a module-level name comes from: ``from <module> import <name>``, or ``import <module>`` (name None)."""

    module: str
    level: int  # leading dots of a relative import
    name: str | None


@dataclass(frozen=True)
class Definition:
    """A module-level ``NAME = <type expression>``: a TypeVar, a Union alias, a plain alias."""

    name: str
    value: TypeExpr
    line: int
    comment: str  # the comment directly above or on the line, without '#'


@dataclass(frozen=True)
class Param:
    name: str
    annotation: TypeExpr | None


@dataclass(frozen=True)
class DtypeCheck:
    """A comparison of a parameter's dtype with dtypes in a trace-only body: ``attn_mask.dtype == ir.DataType.BOOL``."""

    param: str
    dtypes: tuple[str, ...]  # ONNX type names compared with: 'BOOL', 'FLOAT16'
    line: int
    text: str  # the comparison, whitespace collapsed


@dataclass(frozen=True)
class Registration:
    """One ``@torch_op`` function: the names it registers, its flags and its annotations."""

    names: tuple[str, ...]  # qualified: 'aten::add.Tensor'
    function: str
    line: int  # 1-based line of the @torch_op decorator
    params: tuple[Param, ...]
    returns: TypeExpr | None
    complex: bool = False
    private: bool = False
    trace_only: bool = False
    condition: str = ""  # the if/else test(s) the definition sits under, '' at top level
    path: str = ""  # relative to the torchlib dir; set after the (path-independent) scan
    dtype_checks: tuple[DtypeCheck, ...] = ()  # in its body, when trace_only

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line} {self.function}"


@dataclass(frozen=True)
class ScanProblem:
    """Bad input found in a module; the rest of the module (or scan) goes on."""

    message: str
    line: int | None
    op: str | None = None


@dataclass(frozen=True)
class ModuleFacts:
    imports: tuple[tuple[str, Import], ...]  # (bound name, import), in source order
    definitions: tuple[Definition, ...]
    registrations: tuple[Registration, ...]
    problems: tuple[ScanProblem, ...]


def facts_stage(cache: StageCache) -> Stage:
    """Each module's facts, keyed by its bytes and the scan's code."""
    return cache.stage("torchlib-facts", "migrate.torchlib_source.scan")
