"""How a run moves through the layers: structure figures of a tree, and the plan's path from the command line.

    .venv/bin/python bench/structure.py [TREE] [--path]

TREE defaults to this checkout; pass another (a worktree of an older commit) to compare.

Static figures (read from the source, nothing imported):
- modules: the ``.py`` files under ``migrate/``;
- the longest function (or method): its lines, ``def`` to its last line;
- ``cli.py``'s lines;
- the evidence modules (``migrate.evidence.*``) that ``show.py`` and ``write/`` import, lazy imports included.

``--path`` runs the full default run (``--out`` a temporary folder, ``-j 1``) in a subprocess on a copy of the
stage cache without its ``plans`` stage, so the plan is inferred, and counts how the run reaches the
inference. Every module-level function of ``migrate.infer`` (the module, or every module of the package, where the
package re-exports it too) is wrapped; a call from outside ``migrate.infer`` is an entry, and at each entry the chain of the tool's frames
from the command line down to it is read (frames of other packages, such as ``functools``, skipped).
Consecutive frames of two modules are a call from one module to another. Over every entry's chain:
- entries: the calls into ``migrate.infer`` (dynamic count), and the distinct functions entered;
- modules passed: the distinct modules on the chains;
- calls: the distinct (caller function, callee function) pairs between two modules;
- turns back: those calls whose callee's layer is higher than its caller's (the tree's own first
  import-linter ``layers`` contract; the higher layer is the one listed first).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from migrate.cache import cache_root, imported_modules  # noqa: E402  (reads another tree's files as text too)


def _modules(tree: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((tree / "migrate").rglob("*.py")):
        parts = path.relative_to(tree).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def static_figures(tree: Path) -> dict:
    modules = _modules(tree)
    longest = (0, "")
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                longest = max(longest, (length, f"{module}.{node.name}"))

    def evidence_imported(names: list[str]) -> list[str]:
        imported = set().union(*(imported_modules(modules[n], n) for n in names))
        return sorted(m for m in imported if m in modules and (m == "migrate.evidence" or m.startswith("migrate.evidence.")))

    write = [m for m in modules if m.startswith("migrate.write")]
    return {
        "modules": len(modules),
        "longest_function": {"name": longest[1], "lines": longest[0]},
        "cli_lines": len((tree / "migrate" / "cli.py").read_text().splitlines()),
        "evidence_modules_imported_by_show": evidence_imported(["migrate.show"]),
        "evidence_modules_imported_by_write": evidence_imported(write),
    }


# Run in the subprocess, with the tree first on sys.path: wraps migrate.infer's functions, runs the CLI, prints JSON.
_DRIVER = r'''
import functools, importlib, json, pkgutil, sys, types

layers, argv = json.loads(sys.argv[1])
INFER = "migrate.infer"

def in_infer(module):
    return module == INFER or module.startswith(INFER + ".")

def layer(module):
    best = None
    for index, names in enumerate(layers):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
                best = (index, name)
    return None if best is None else best[0]

entries, entered, edges = 0, set(), set()

def chain(frame):
    """The tool's frames from the outermost to ``frame``: (module, function)."""
    found = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("migrate"):
            found.append((module, frame.f_code.co_qualname))
        frame = frame.f_back
    return found[::-1]

def wrap(module_name, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        global entries
        caller = sys._getframe(1)
        while caller is not None and not caller.f_globals.get("__name__", "").startswith("migrate"):
            caller = caller.f_back
        if caller is not None and not in_infer(caller.f_globals["__name__"]):
            entries += 1
            entered.add(f"{module_name}.{function.__qualname__}")
            frames = chain(caller) + [(module_name, function.__qualname__)]
            for (a, f), (b, g) in zip(frames, frames[1:]):
                if a != b:
                    edges.add((a, f, b, g))
        return function(*args, **kwargs)
    return wrapper

root = importlib.import_module(INFER)
names = [INFER] + [m.name for m in pkgutil.walk_packages(getattr(root, "__path__", []), INFER + ".")]
modules = [importlib.import_module(name) for name in names]
wrapped = {
    value: wrap(module.__name__, value)
    for module in modules
    for value in vars(module).values()
    if isinstance(value, types.FunctionType) and value.__module__ == module.__name__
}
for module in modules:  # also where a package re-exports a function of its modules
    for attribute, value in list(vars(module).items()):
        if isinstance(value, types.FunctionType) and value in wrapped:
            setattr(module, attribute, wrapped[value])

from migrate.cli import main
code = main(argv)
modules = sorted({m for a, _, b, _ in edges for m in (a, b)})
turns = sorted(e for e in edges if layer(e[0]) is not None and layer(e[2]) is not None and layer(e[2]) < layer(e[0]))
print(json.dumps({
    "exit": code,
    "entries": entries,
    "entered": sorted(entered),
    "modules_passed": len(modules),
    "calls": len(edges),
    "turns_back": len(turns),
    "modules": modules,
    "call_list": [f"{a}.{f} -> {b}.{g}" for a, f, b, g in sorted(edges)],
    "turn_list": [f"{a}.{f} -> {b}.{g}" for a, f, b, g in turns],
}))
'''


def _layers(tree: Path) -> list[list[str]]:
    contracts = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    first = next(c for c in contracts if c["type"] == "layers" and "containers" not in c)
    return [[name.strip() for name in layer.split("|")] for layer in first["layers"]]


def plan_path(tree: Path, cache: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "cache"
        try:  # other runs may write to the cache meanwhile: a file gone since listed is no matter
            shutil.copytree(cache, copy, ignore=lambda folder, names: ["plans"] if Path(folder) == cache else [])
        except shutil.Error:
            pass
        out = Path(tmp) / "out"
        argv = ["--out", str(out), "--report", str(out / "report.json"), "-j", "1", "--cache-dir", str(copy)]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run(
            [sys.executable, "-c", _DRIVER, json.dumps([_layers(tree), argv])], cwd=tree, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path, default=ROOT)
    parser.add_argument("--path", action="store_true", help="also run the full run and count the plan's path (a minute or more)")
    parser.add_argument("--cache", type=Path, default=None, help="the stage cache to copy (default: the user's)")
    args = parser.parse_args()
    tree = args.tree.resolve()
    figures = static_figures(tree)
    if args.path:
        figures["plan_path"] = plan_path(tree, args.cache or cache_root())
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
