"""The package's stages import one way, as pyproject.toml's import-linter contracts state, with no cycles."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _cycle(graph: grimp.ImportGraph, modules: set[str]) -> list[str] | None:
    """One import cycle among ``modules`` (each module's direct imports), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module) & modules):
            if state.get(imported) == 1:
                return path[path.index(imported) :] + [imported]
            if imported not in state and (found := visit(imported)) is not None:
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(modules):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_no_import_cycles_between_modules_or_stages():
    graph = grimp.build_graph("migrate", "codemods")
    modules = {m for m in graph.modules if m.split(".")[0] in ("migrate", "codemods")}
    assert _cycle(graph, modules) is None
    # Stage packages (migrate.model, migrate.evidence.opinfo, ...) as nodes: no cycle between them either.
    packages = {m for m in modules if graph.find_children(m)}
    stage = {m: max((p for p in packages if m == p or m.startswith(p + ".")), key=len, default=m) for m in modules}
    collapsed = grimp.ImportGraph()
    for module in modules:
        collapsed.add_module(stage[module])
        for imported in graph.find_modules_directly_imported_by(module) & modules:
            if stage[imported] != stage[module] and not stage[module].startswith(stage[imported] + "."):
                collapsed.add_import(importer=stage[module], imported=stage[imported])
    assert _cycle(collapsed, set(collapsed.modules)) is None


def test_a_cycle_is_found():
    graph = grimp.ImportGraph()
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a")):
        graph.add_import(importer=importer, imported=imported)
    assert _cycle(graph, {"a", "b", "c"}) == ["a", "b", "c", "a"]


def _private_torch_uses(tree: ast.AST) -> list[str]:
    """``torch._x`` attributes read and ``torch._x`` modules imported (dunders such as ``__version__`` aside)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"torch.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch._"):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("torch._")]
    return found


def test_only_torch_private_touches_torchs_private_api():
    private = ROOT / "migrate" / "runtime" / "torch_private.py"
    uses = {
        path.relative_to(ROOT).as_posix(): found
        for path in sorted((ROOT / "migrate").rglob("*.py"))
        if path != private and (found := _private_torch_uses(ast.parse(path.read_bytes())))
    }
    assert uses == {}
    assert _private_torch_uses(ast.parse("import torch\ntorch._C._dispatch_has_kernel('aten::mm')")) == ["torch._C"]


def test_readme_links_the_architecture_first_and_no_link_leaves_the_repository():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    links = {path: re.findall(r"\]\(([^)\s]+)\)|`(\.\./[^`]+)`", path.read_text()) for path in documents}
    assert [a or b for a, b in links[ROOT / "README.md"]][0] == "docs/architecture.md"
    for path, found in links.items():
        for target in (a or b for a, b in found):
            resolved = (path.parent / target.split("#")[0]).resolve()
            assert "://" not in target and resolved.is_relative_to(ROOT) and resolved.exists(), f"{path.name}: {target}"


def test_the_command_line_imports_only_the_pipeline_the_output_writer_the_adapters_beside_it_and_the_error_type():
    graph = grimp.build_graph("migrate", "codemods")
    allowed = ("migrate.pipeline", "migrate.write.outputs", "migrate.show", "migrate.api", "migrate.errors")
    imported = {m for m in graph.find_modules_directly_imported_by("migrate.cli") if m.startswith("migrate.")}
    assert imported and all(any(m == a or m.startswith(a + ".") for a in allowed) for m in imported), sorted(imported)

