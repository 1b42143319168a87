"""An ``--out`` folder that holds an earlier run's output of the same input: the run continues from it.

An ``--op`` run then changes only the selected entries, their sets, their torchlib functions and their report
entries; every other byte of the folder stays. Nothing is inferred here: the folder's files are read, checked to
lower to the input's bytes, and merged item by item with what this run writes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterator, Mapping

from migrate.cache import StageCache
from migrate.errors import InputError
from migrate.model.backends import DispatchDtypes
from migrate.model.declared import declared_variables
from migrate.model.exceptions import TypeExceptions
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import CONSTRAINTS_KEY, NativeFunctions, read_native, sibling_constraints_path
from migrate.model.plan import GlobalSet, OverloadPlan
from migrate.write.native_functions import lower, resolved_variable, same_declaration
from migrate.write.torchlib.rewrite import OUTPUT_FOLDER

START_OVER = "pass --overwrite to start from the inputs"


@dataclass(frozen=True)
class EarlierOutput:
    """What an earlier run left in the folder: its yaml, its sets file (``data`` None when absent), its torch_lib."""

    native: NativeFunctions
    sets: GlobalSetsFile
    torchlib: Path | None


def read_earlier(folder: Path, source: NativeFunctions, cache: StageCache) -> EarlierOutput | None:
    """The folder's earlier output of ``source`` (None when the folder holds no yaml of that name).

    A yaml this run cannot continue from (unreadable, or one that does not lower to the input's bytes: another
    torch release, a hand edit) is an error naming it.
    """
    path = folder / source.path.name
    if not path.is_file():
        return None
    try:
        earlier = read_native(path, cache)
        same = lower(earlier) == lower(source)
        sets = GlobalSetsFile.load(sibling_constraints_path(path))
    except InputError as exc:
        raise InputError(f"cannot continue from it ({exc}); {START_OVER}", path) from exc
    if not same:
        raise InputError(f"does not lower to {source.path}: not its output, or edited by hand; {START_OVER}", path)
    torchlib = folder / OUTPUT_FOLDER
    return EarlierOutput(earlier, sets, torchlib if torchlib.is_dir() else None)


def _items(native: NativeFunctions) -> list[str]:
    """The text before the first entry, then each entry's text up to the next entry's first line (or the end)."""
    starts = [e.start for e in native.entries] + [len(native.lines)]
    return ["".join(native.lines[: starts[0]])] + ["".join(native.lines[a:b]) for a, b in zip(starts, starts[1:])]


def merged_native(earlier: NativeFunctions, written: bytes, selected: Collection[str]) -> bytes:
    """The earlier file with the selected entries as this run wrote them (both lower to one file, entry for entry)."""
    ours = NativeFunctions.parse(written, earlier.path)
    pieces = _items(earlier)
    for index, (mine, entry) in enumerate(zip(_items(ours)[1:], earlier.entries), start=1):
        if entry.name in selected:
            pieces[index] = mine
    return "".join(pieces).encode("utf-8")


def _set_names(earlier: EarlierOutput, entries: Collection[str]) -> set[str]:
    """The global sets these entries of the earlier yaml name: the schema's words no key maps, the keys' values, and
    the sets their ``dispatch_dtypes:`` and ``type_exceptions:`` lines state."""
    native, names = earlier.native, set()
    for entry in native.entries:
        if entry.name not in entries:
            continue
        mapping = native.fields(entry).get(CONSTRAINTS_KEY) if native.key_span(entry, CONSTRAINTS_KEY) else {}
        mapping = mapping if isinstance(mapping, dict) else {}
        names |= {word for word in entry.schema.variables() if word not in mapping}
        for value in mapping.values():
            names |= {value} if isinstance(value, str) else set(value) if isinstance(value, list) else set()
        for kind in (DispatchDtypes, TypeExceptions):
            if native.key_span(entry, kind.KEY):
                stated = kind.from_mapping(native.fields(entry).get(kind.KEY))
                names |= {value for _, values in stated.by_key for _, value in values if isinstance(value, str)}
    return names & set(earlier.sets.by_name)


def carried_sets(earlier: EarlierOutput, selected: Collection[str], written: Collection[GlobalSet]) -> tuple[GlobalSet, ...]:
    """The earlier sets the entries outside the selection still name; one this run writes with other dtypes is an error."""
    kept = {e.name for e in earlier.native.entries if e.name not in selected}
    ours = {g.name: g for g in written}
    carried = []
    for name in sorted(_set_names(earlier, kept)):
        global_set = earlier.sets.by_name[name]
        if name in ours and ours[name].dtypes != global_set.dtypes:
            message = f"entries outside the selection name {name}, whose dtypes this run's evidence changes; run without --op, or {START_OVER}"
            raise InputError(message, earlier.sets.path, op=name)
        if name not in ours:
            carried.append(global_set)
    return tuple(carried)


def carried_overloads(
    earlier: EarlierOutput,
    source: NativeFunctions,
    source_sets: Mapping[str, GlobalSet],
    selected: Collection[str],
    candidates: Mapping[str, OverloadPlan],
    candidate_sets: Mapping[str, GlobalSet],
) -> Iterator[OverloadPlan]:
    """The plans the earlier run's torchlib rewrite applied for the entries outside the selection.

    Where a candidate (this run's plan of the overload) declares what the earlier yaml declares, the candidate, with
    its verdicts; else the earlier declaration when the input did not declare it already (the tool wrote it);
    hand-written declarations the earlier run kept are not pushed into torchlib, as a run never pushes them.
    """
    by_name = earlier.sets.by_name
    for entry in earlier.native.entries:
        if entry.name in selected:
            continue
        declared = declared_variables(earlier.native, entry, by_name)
        if not declared:
            continue
        candidate = candidates.get(entry.name)
        if candidate is not None and candidate.variables:
            if same_declaration(declared, tuple(resolved_variable(v, candidate_sets) for v in candidate.variables)):
                yield candidate
                continue
        if not same_declaration(declared, declared_variables(source, source.by_name[entry.name], source_sets)):
            yield OverloadPlan(entry.name, declared)


def _function_texts(data: bytes) -> dict[str, list[str]]:
    """The texts of the functions of each name, decorators included (torchlib defines some under ``if``)."""
    text = data.decode("utf-8")
    lines = text.splitlines(keepends=True)
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.setdefault(node.name, []).append("".join(lines[first - 1 : node.end_lineno]))
    return found


def changed_functions(source: Path, earlier: Path) -> set[tuple[str, str]]:
    """The (module path, function) pairs whose text differs between the input torchlib and the earlier output's."""
    changed = set()
    for path in sorted(source.rglob("*.py")):
        relative = path.relative_to(source).as_posix()
        other, data = earlier / relative, path.read_bytes()
        if not other.is_file() or other.read_bytes() == data:
            continue
        try:
            theirs = _function_texts(other.read_bytes())
        except (SyntaxError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot continue from it ({exc}); {START_OVER}", other) from exc
        ours = _function_texts(data)
        changed |= {(relative, name) for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name)}
    return changed
