"""Figures of the code's shape: modules (grimp graph of migrate + codemods), functions, the longest one, cli.py lines.

Usage: python scripts/code_figures.py [CHECKOUT]  (default: the checkout this script is in).
"""

from __future__ import annotations

import ast
import statistics
import sys
from pathlib import Path

import grimp

PACKAGES = ("migrate", "codemods")


def functions(path: Path) -> list[tuple[int, str]]:
    """(lines, qualified name) of every function and method in a file, nested ones included."""
    found = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((child.end_lineno - child.lineno + 1, f"{prefix}{child.name}"))
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text()), "")
    return found


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    sys.path.insert(0, str(root))
    graph = grimp.build_graph(*PACKAGES)
    modules = sorted(m for m in graph.modules if m.split(".")[0] in PACKAGES)
    every = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            every += [(lines, f"{module}.{name}") for lines, name in functions(path)]
    lines = [n for n, _ in every]
    longest = max(every)
    cli = root / "migrate" / "cli.py"
    print(f"modules: {len(modules)} (grimp graph of {' + '.join(PACKAGES)})")
    print(f"functions: {len(every)}, median {statistics.median(lines)} lines")
    print(f"longest function: {longest[1]} ({longest[0]} lines)")
    print(f"cli.py: {len(cli.read_text().splitlines())} lines")


if __name__ == "__main__":
    main()
