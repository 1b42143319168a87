"""How many torchlib functions of a run annotate each tensor input with the yaml's ONNX-expressible set.

For every public, real (not complex) ``@torch_op`` function of OUT/torch_lib and each overload it
registers, each annotated tensor argument's dtypes are compared with the ONNX part of the dtypes the
written yaml (OUT/native_functions.yaml) declares at that argument. A function agrees when every slot of
every overload it serves does. Prints the count, and with ``--list`` the functions that disagree.

    PYTHONPATH=$PWD python -m bench.torchlib_agreement OUT [--list]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from migrate.cache import StageCache
from migrate.model.declared import declared_variables
from migrate.model.dtypes import DType, canonical
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.torchlib_source.resolve import scan_torchlib


def _onnx(dtypes) -> tuple[DType, ...]:
    return canonical(d for d in dtypes if d.onnx is not None)


def agreement(out: Path) -> tuple[int, int, list[str]]:
    """(functions agreeing, functions compared, the disagreeing ones as 'path:function overload slot: torchlib vs yaml')."""
    native = NativeFunctions.load(out / "native_functions.yaml")
    sets = GlobalSetsFile.load(sibling_constraints_path(out / "native_functions.yaml")).by_name
    torchlib = scan_torchlib(out / "torch_lib", native, StageCache.at())
    functions: dict[str, list[str]] = {}
    for overload, registrations in sorted(torchlib.by_overload.items()):
        plan = torchlib.overloads.get(overload)
        entry = native.by_name.get(overload)
        if plan is None or entry is None:
            continue
        declared = {slot: v for v in declared_variables(native, entry, sets) for slot in v.binds}
        for registration in registrations:
            if registration.complex or registration.private:
                continue
            wrong = functions.setdefault(f"{registration.path}:{registration.function}", [])
            for variable in plan.variables:
                for slot in variable.binds:
                    if slot.startswith("return.") or slot not in declared:
                        continue
                    yaml = _onnx(declared[slot].dtypes)
                    if _onnx(variable.dtypes) != yaml:
                        wrong.append(f"{overload} {slot}: {[d.name for d in _onnx(variable.dtypes)]} vs {[d.name for d in yaml]}")
    disagreeing = [f"{name} {w}" for name, found in sorted(functions.items()) for w in found[:1] if found]
    return sum(1 for found in functions.values() if not found), len(functions), disagreeing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="a run's --out (native_functions.yaml, type_constraints.yaml, torch_lib)")
    parser.add_argument("--list", action="store_true", help="also list the functions that disagree (their first slot)")
    args = parser.parse_args(argv)
    agreeing, compared, disagreeing = agreement(args.out)
    print(f"torchlib functions whose annotations equal the yaml's ONNX-expressible sets: {agreeing} of {compared}")
    if args.list:
        print("\n".join(disagreeing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
