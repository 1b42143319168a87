"""The runtime checker, in collect mode, on calls whose return a ``ScalarType`` argument sets, at each of the 21 dtypes.

For ``to.device``, ``to.dtype``, ``_to_copy``, ``zeros``, ``full``, ``arange``, ``sum`` and ``sum.dim_IntList``, each
called through its own ``torch.ops.aten`` overload with ``dtype=`` at every dtype of the vocabulary (the tensor
argument float32): where ATen ran, the written yaml must report no violation; and the same calls, judged as if
they had returned another dtype, must each be one. Prints one row per overload; never asserts (``tests/test_dtype_argument.py`` does, on the same calls).

    PYTHONPATH=$PWD python -m bench.dtype_argument_calls OUT/native_functions.yaml
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from migrate.check.checker import Declarations, Violation, call_check, checking, judge
from migrate.model.named_sets import ANY

aten = torch.ops.aten


def _self() -> torch.Tensor:
    return torch.arange(1, 7, dtype=torch.float32).reshape(2, 3)


CALLS: dict[str, Callable[[torch.dtype], tuple[Any, tuple, dict]]] = {
    "to.device": lambda d: (aten.to.device, (_self(), torch.device("cpu"), d), {}),
    "to.dtype": lambda d: (aten.to.dtype, (_self(), d), {}),
    "_to_copy": lambda d: (aten._to_copy.default, (_self(),), {"dtype": d}),
    "zeros": lambda d: (aten.zeros.default, ([2, 3],), {"dtype": d}),
    "full": lambda d: (aten.full.default, ([2, 3], 1), {"dtype": d}),
    "arange": lambda d: (aten.arange.default, (5,), {"dtype": d}),
    "sum": lambda d: (aten.sum.default, (_self(),), {"dtype": d}),
    "sum.dim_IntList": lambda d: (aten.sum.dim_IntList, (_self(), [1]), {"dtype": d}),
}
"""Each overload's call with ``dtype=`` at the dtype given: the OpOverload, its arguments and keywords."""


@dataclass(frozen=True)
class Row:
    overload: str
    ran: tuple[str, ...]  # dtypes ATen ran the call at, with the return at that dtype
    refused: tuple[str, ...]  # dtypes ATen refused
    violations: tuple[Violation, ...]  # what the checker collected over every call
    flagged: tuple[str, ...]  # dtypes where the same call with a return of another dtype is a violation

    def __str__(self) -> str:
        said = "; ".join(str(v) for v in self.violations) or "none"
        refused = f", refused at {len(self.refused)} ({', '.join(self.refused)})" if self.refused else ""
        return (
            f"{self.overload}: ran at {len(self.ran)} of 21{refused}; violations where ATen ran: {said}; "
            f"a return of another dtype flagged at {len(self.flagged)} of {len(self.ran)}"
        )


def _other(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype != torch.float64 else torch.float32


def checked(declarations: Declarations, overload: str) -> Row:
    """The overload called at each of the 21 dtypes under the checker in collect mode, and each call that ran judged
    again as if it had returned another dtype (``judge``, the checker's decision)."""
    ran, refused, flagged = [], [], []
    with warnings.catch_warnings(), checking(declarations, collect=True) as checker:
        warnings.simplefilter("ignore")  # complex32 is 'experimental'
        for dtype in ANY:
            asked = getattr(torch, dtype.name)
            func, args, kwargs = CALLS[overload](asked)
            try:
                out = func(*args, **kwargs)
            except Exception:  # ATen refuses the dtype; collect mode judges no call whose kernel raised
                refused.append(dtype.name)
                continue
            if out.dtype != asked or out.numel() == 0:
                raise AssertionError(f"{overload} with dtype={asked} returned {out.dtype} of {out.numel()} elements")
            ran.append(dtype.name)
    check = call_check(declarations, CALLS[overload](torch.float32)[0])
    for name in ran:
        func, args, kwargs = CALLS[overload](getattr(torch, name))
        if check is not None and judge(check, args, kwargs, torch.ones(2, dtype=_other(getattr(torch, name)))):
            flagged.append(name)
    return Row(overload, tuple(ran), tuple(refused), checker.violations, tuple(flagged))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("native_functions", type=Path)
    args = parser.parse_args(argv)
    declarations = Declarations.load(args.native_functions)
    rows = [checked(declarations, overload) for overload in CALLS]
    for row in rows:
        print(row)
    ran = sum(len(r.ran) for r in rows)
    print(f"violations where ATen ran: {sum(len(r.violations) for r in rows)} in {len(rows)} overloads x 21 dtypes ({ran} calls ran)")
    print(f"a return of another dtype flagged: {sum(len(r.flagged) for r in rows)} of {ran} calls")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
