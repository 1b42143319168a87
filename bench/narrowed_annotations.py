"""The torchlib annotations a run narrowed: per function and slot, the dtypes its rewritten torch_lib lost
against the installed one. For comparing runs of two revisions, whatever their summaries count.

    .venv/bin/python bench/narrowed_annotations.py OUT [OUT2 ...] [--function NAME]...

Each OUT is a run's ``--out``; the listed functions' signatures are printed as each OUT writes them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.cache import StageCache  # noqa: E402
from migrate.torchlib_source.resolve import installed_torchlib, scan_torchlib  # noqa: E402
from migrate.model.native import NativeFunctions, installed_native_functions  # noqa: E402


def slot_dtypes(torchlib: Path, native: NativeFunctions) -> dict[tuple[str, str], set]:
    """(function, slot) -> the dtypes its annotation admits, over every overload the function serves."""
    scanned = scan_torchlib(torchlib, native, StageCache.at())
    found: dict[tuple[str, str], set] = {}
    for overload, plan in scanned.overloads.items():
        function = next((r.function for r in scanned.by_overload.get(overload, ()) if not r.complex), None)
        if function is None:
            continue
        for variable in plan.variables:
            for slot in variable.binds:
                found.setdefault((function, slot), set()).update(variable.dtypes)
    return found


def signature(torchlib: Path, function: str) -> str:
    for path in sorted((torchlib / "ops").glob("*.py")):
        text = path.read_text()
        start = text.find(f"def {function}(")
        if start >= 0:
            return " ".join(text[start : text.index(":\n", start)].split())
    return f"{function}: not found"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outs", nargs="+", type=Path)
    parser.add_argument("--function", action="append", default=[])
    args = parser.parse_args()
    native = NativeFunctions.load(installed_native_functions())
    before = slot_dtypes(installed_torchlib(), native)
    for out in args.outs:
        after = slot_dtypes(out / "torch_lib", native)
        lost = {key: before[key] - after[key] for key in before.keys() & after.keys() if before[key] - after[key]}
        functions = sorted({function for function, _ in lost})
        print(f"{out}: {len(lost)} annotation slots narrowed in {len(functions)} functions: {', '.join(functions)}")
        for name in args.function:
            print(f"  {signature(out / 'torch_lib', name)}")


if __name__ == "__main__":
    main()
