"""native_functions.yaml as text with structure: entries, their exact lines, and overload groups.

The file is read as lines, not as a yaml tree: every edit the writers make is a
replacement of known spans, so every byte they did not need to touch stays. Each
entry's yaml is parsed only when asked for (libyaml, as torchgen reads it), which
keeps a one-overload update from paying for the whole file.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torchgen
import yaml

from migrate.cache import Remembered, StageCache
from migrate.errors import InputError
from migrate.model.names import OverloadName
from migrate.model.schema import SchemaError, TypedSchema

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ITEM = re.compile(r"-(?: +|$)")
_FUNC_KEY = re.compile(r"func:[ \t]*")
_KEY_HEAD = re.compile(r"(.*?):(?:\s|$)")  # a mapping key at the start of a line's text: the shortest name before ': '
CONSTRAINTS_KEY = "type_constraints"


def installed_native_functions() -> Path:
    """The yaml that ships inside the installed torch wheel (torchgen's packaged copy)."""
    return Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"


def sibling_constraints_path(native_functions: Path) -> Path:
    return native_functions.with_name("type_constraints.yaml")


TREE_YAML = Path("aten/src/ATen/native/native_functions.yaml")


def source_tree_root(path: Path) -> Path | None:
    """The PyTorch source tree holding the yaml at aten/src/ATen/native/ with torchgen/ at its root, if any."""
    path = Path(path).resolve()
    if path.parts[-len(TREE_YAML.parts) :] != TREE_YAML.parts:
        return None
    root = path.parents[len(TREE_YAML.parts) - 1]
    return root if (root / "torchgen" / "model.py").is_file() else None


@dataclass(frozen=True)
class Entry:
    """One ``- func:`` item: its lines, where its schema text stands, its key indentation."""

    index: int
    start: int  # 0-based index of the item's first line
    end: int  # exclusive; ends before trailing blank and column-0 comment lines
    func_line: int
    schema_start: int  # column span of the schema text on the func line
    schema_end: int
    key_indent: int
    schema: TypedSchema

    @property
    def name(self) -> str:
        """The overload name as torchgen prints it: 'add.Tensor', 'add' for the default one."""
        return self.schema.name


@dataclass(frozen=True)
class OverloadGroup:
    """Overloads that share one signature: torchgen's functional / inplace / out / mutable kinds."""

    signature: str
    members: tuple[tuple[str, tuple[str, ...]], ...]  # (SchemaKind name, overload names), sorted

    def of_kind(self, kind: str) -> tuple[str, ...]:
        return dict(self.members).get(kind, ())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for _, names in self.members for name in names)


@dataclass(frozen=True)
class KeySpan:
    """Lines [start, end) holding one top-level key of an entry and its value."""

    start: int
    end: int


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_gap(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _schema_span(line: str, value_at: int) -> tuple[int, int]:
    """The column span of a func: value on its line: plain, or quoted without escapes."""
    rest = line[value_at:].rstrip("\r\n")
    comment = re.search(r"\s#", rest)
    value = (rest[: comment.start()] if comment else rest).rstrip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        if len(value) < 2 or value[-1] != quote or quote * 2 in value[1:-1] or "\\" in value:
            raise SchemaError("quoted func: values with escapes are not supported")
        return value_at + 1, value_at + len(value) - 1
    return value_at, value_at + len(value)


def file_bytes(path: Path) -> bytes:
    """A native_functions.yaml's bytes; one that cannot be read is an InputError naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path) from exc


def _lines(data: bytes, path: Path) -> list[str]:
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError as exc:
        raise InputError("not UTF-8 text", path) from exc


def scan_entries(data: bytes, path: Path | str) -> list[Entry]:
    """Every ``- func:`` entry of the file's bytes, with its lines and typed schema (what a cache may keep)."""
    return list(_SCANNED.get(data, lambda: tuple(_scanned(data, Path(path)))))


def _scanned(data: bytes, path: Path) -> list[Entry]:
    lines = _lines(data, path)
    return [_read_entry(path, lines, index, start, stop) for index, (start, stop) in enumerate(top_level_items(lines, path, "'- func:' entries"))]


_SCANNED = Remembered(4)
"""The entries of the contents read last, by the file's bytes: a test suite loads copies of one file hundreds of times
(the installed file, its migrated form, a test's edits), and entries are frozen and name no path. A file that fails
names its path, and fails again when read again."""


def read_native(path: Path, cache: StageCache) -> NativeFunctions:
    """The yaml at ``path``, its entries scanned once per content (the ``native`` stage)."""
    return native_of(file_bytes(path), path, cache)


def native_of(data: bytes, path: Path, cache: StageCache) -> NativeFunctions:
    """The yaml ``data`` (read from ``path``), its entries scanned once per content (the ``native`` stage)."""
    stage = cache.stage("native", "migrate.model.native")
    entries = _SCANNED.get(data, lambda: tuple(stage.get((data,), lambda: _scanned(data, path), list)))
    if not stage.holds(data):  # remembered from a run on another cache folder: this one keeps them too
        stage.write(list(entries), data)
    return NativeFunctions.parse(data, path, list(entries))


@dataclass
class NativeFunctions:
    """A native_functions.yaml file: its exact text and its entries."""

    path: Path
    data: bytes
    lines: list[str]
    entries: tuple[Entry, ...]
    by_name: dict[str, Entry] = field(repr=False)
    _keys_of: dict[int, dict[str, int]] = field(default_factory=dict, init=False, repr=False, compare=False)  # ``_key_lines`` per entry start

    @classmethod
    def load(cls, path: Path | str) -> NativeFunctions:
        path = Path(path)
        return cls.parse(file_bytes(path), path)

    @classmethod
    def parse(cls, data: bytes, path: Path | str, entries: list[Entry] | None = None) -> NativeFunctions:
        """The file of these bytes; ``entries`` are its scanned entries when a cache holds them (``scan_entries``)."""
        path = Path(path)
        lines = _lines(data, path)
        entries = scan_entries(data, path) if entries is None else entries
        by_name: dict[str, Entry] = {}
        for entry in entries:
            if entry.name in by_name:
                raise InputError("overload declared twice", path, entry.func_line + 1, entry.name)
            by_name[entry.name] = entry
        return cls(path, data, lines, tuple(entries), by_name)

    def fields(self, entry: Entry) -> dict[str, Any]:
        """The entry's yaml mapping (parsed on first use); a parse error names file, line and op."""
        return _parse_entry_yaml(self.path, "".join(self.lines[entry.start : entry.end]), entry.start, entry.name)

    def validate(self) -> tuple[str, ...]:
        """Parse every entry's yaml and every schema through the installed torchgen (by grouping every family).

        Broken yaml or a schema torchgen refuses anywhere in the file is reported. Returns the overloads whose
        schema uses type words the installed torchgen does not know.
        """
        for entry in self.entries:
            self.fields(entry)
        self.groups.check_all()
        return tuple(sorted(self.groups.unchecked))

    def key_span(self, entry: Entry, key: str) -> KeySpan | None:
        """Where a top-level key of the entry and its value stand (block or flow style)."""
        number = self._key_lines(entry).get(key)
        if number is None:
            return None
        stop = number + 1
        while stop < entry.end and (_is_gap(self.lines[stop]) or _indent(self.lines[stop]) > entry.key_indent):
            stop += 1
        while stop > number + 1 and _is_gap(self.lines[stop - 1]):
            stop -= 1
        return KeySpan(number, stop)

    def _key_lines(self, entry: Entry) -> dict[str, int]:
        """The line of each top-level key of the entry (its first), read in one pass: the writers ask for several keys
        of every entry."""
        found = self._keys_of.get(entry.start)
        if found is None:
            found = {}
            for number in range(entry.start, entry.end):
                body = _key_body(self.lines[number], number == entry.start, entry.key_indent)
                head = _KEY_HEAD.match(body) if body is not None else None
                if head is not None:
                    found.setdefault(head.group(1), number)
            self._keys_of[entry.start] = found
        return found

    def autogen_names(self, entry: Entry) -> tuple[str, ...]:
        """Overloads torchgen generates from this entry (``autogen: foo.out``): not in the file themselves."""
        value = self.fields(entry).get("autogen")
        return tuple(n.strip() for n in value.split(",")) if isinstance(value, str) else ()

    def overloads_named(self, requested: list[str], with_autogen: bool = False) -> tuple[str, ...]:
        """Overload names, in file order, for ``aten::name.overload``, ``name.overload`` or ``name`` (every overload).

        ``with_autogen`` admits the overloads only ``autogen:`` declares; an unknown name is an error listing close matches.
        """
        known = [*self.by_name, *(self.autogen_index if with_autogen else ())]
        by_base: dict[str, list[str]] = {}
        for name in known:
            by_base.setdefault(OverloadName.parse(name).operator, []).append(name)
        selected: set[str] = set()
        for raw in requested:
            name = OverloadName.parse(raw)
            if not name.overload and name.operator in by_base:
                selected.update(by_base[name.operator])
            elif str(name) in known:
                selected.add(str(name))
            else:
                raise InputError(f"unknown operator {raw!r}{close_matches(str(name), dict.fromkeys([*known, *by_base]))}", self.path)
        return tuple(name for name in known if name in selected)

    @functools.cached_property
    def autogen_index(self) -> dict[str, Entry]:
        """Each autogen-only overload name, mapped to the entry that declares it."""
        return {name: entry for entry in self.entries for name in self.autogen_names(entry) if name not in self.by_name}

    def has_cpu_kernel(self, entry: Entry) -> bool:
        """Whether CPU calls can reach a kernel of the entry (``has_kernel``)."""
        return self.has_kernel(entry, "CPU")

    def has_kernel(self, entry: Entry, key: str) -> bool:
        """Whether calls on this dispatch key's tensors (CPU, CUDA) can reach a kernel of the entry: no ``dispatch:``
        (CompositeImplicitAutograd), the key or a composite key, a ``ufunc_inner_loop:`` (torchgen generates its CPU
        and CUDA kernels), or a ``structured_delegate:`` that has one; not when only other backends' keys are listed."""
        fields = self.fields(entry)
        delegate = fields.get("structured_delegate")
        if isinstance(delegate, str) and delegate in self.by_name and delegate != entry.name:
            return self.has_kernel(self.by_name[delegate], key)
        if fields.get("ufunc_inner_loop") and key in _UFUNC_KEYS:
            return True
        dispatch = fields.get("dispatch")
        if not isinstance(dispatch, dict):
            return True
        keys = {k.strip() for keys in dispatch for k in str(keys).split(",")}
        return bool(keys & (_COMPOSITE_KEYS | {key}))

    @functools.cached_property
    def groups(self) -> OverloadGroups:
        """Every overload's group (torchgen's grouping: one signature, functional/in-place/out=/mutable kinds)."""
        return OverloadGroups(self)


_COMPOSITE_KEYS = frozenset({"CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "Math", "DefaultBackend"})
"""Dispatch keys whose kernel a call on any backend's tensors can reach (torchgen's names; Math and DefaultBackend are their old spellings)."""
_UFUNC_KEYS = frozenset({"CPU", "CUDA"})  # the backends torchgen generates a ufunc_inner_loop's kernels for


def close_matches(name: str, names) -> str:
    """' (close matches: a, b)' for an error message, or nothing."""
    matches = difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    return f" (close matches: {', '.join(matches)})" if matches else ""


_INPLACE_DUNDER = re.compile(r"^__i(\w+)__$")


def _family(name: str) -> str:
    """What every member of a group shares in its name: the base, without in-place '_', '__i' or '_functional'."""
    base = _INPLACE_DUNDER.sub(r"__\1__", OverloadName.parse(name).operator)
    return base if base.startswith("__") else base.removesuffix("_functional").rstrip("_")


class OverloadGroups:
    """Groups computed one family at a time, so a one-overload run parses only the schemas near it."""

    def __init__(self, native: NativeFunctions):
        self._native = native
        self._families: dict[str, list[Entry]] = {}
        for entry in native.entries:
            self._families.setdefault(_family(entry.name), []).append(entry)
        self._groups: dict[str, OverloadGroup] = {}
        self.unchecked: set[str] = set()
        """Overloads whose schema uses a type word the installed torchgen no longer knows (another release's file)."""

    def get(self, name: str) -> OverloadGroup | None:
        if name not in self._groups and name in self._native.by_name:
            self._group_family(_family(name))
        return self._groups.get(name)

    def check_all(self) -> None:
        """Every schema through the installed torchgen, by grouping every family."""
        for family in self._families:
            if not all(e.name in self._groups for e in self._families[family]):
                self._group_family(family)

    def state(self) -> tuple[dict[str, OverloadGroup], frozenset[str]]:
        """Every group and the unchecked overloads, as ``restore`` takes them back."""
        return dict(self._groups), frozenset(self.unchecked)

    def restore(self, groups: dict[str, OverloadGroup], unchecked: frozenset[str]) -> None:
        self._groups.update(groups)
        self.unchecked.update(unchecked)

    def __getitem__(self, name: str) -> OverloadGroup:
        group = self.get(name)
        if group is None:
            raise KeyError(name)
        return group

    def _group_family(self, family: str) -> None:
        members: dict[str, dict[str, list[str]]] = {}
        for entry in self._families[family]:
            try:
                schema = entry.schema.torchgen()
            except SchemaError as exc:
                schema = _grouping_schema(entry, exc)
                if schema is None:
                    raise InputError(str(exc), self._native.path, entry.func_line + 1, entry.name) from exc
                self.unchecked.add(entry.name)
            kinds = members.setdefault(str(schema.signature()), {})
            kinds.setdefault(schema.kind().name, []).append(entry.name)
        for signature, kinds in members.items():
            group = OverloadGroup(signature, tuple(sorted((k, tuple(v)) for k, v in kinds.items())))
            for name in group.names:
                self._groups[name] = group


_UNKNOWN_TYPE = re.compile(r"unrecognized type (\w+)")


def _grouping_schema(entry: Entry, error: SchemaError):
    """torchgen's schema with the type words it does not know (e.g. an older release's Dimname) read as `str`.

    Used only to group overloads (signature and kind); the schema itself was read by the tool's own model.
    None when torchgen refuses the schema for another reason.
    """
    from torchgen.model import FunctionSchema  # here: torchgen.model (40 ms) loads only when a schema is parsed, never on a warm --op run

    text, unknown = entry.schema.lowered(), set()
    for _ in range(8):
        match = _UNKNOWN_TYPE.search(str(error))
        if match is None or match.group(1) in unknown:
            return None
        unknown.add(match.group(1))
        text = re.sub(rf"\b{match.group(1)}\b", "str", text)
        try:
            return FunctionSchema.parse(text)
        except Exception as exc:  # torchgen raises AssertionError and friends
            error = exc
    return None


def top_level_items(lines: list[str], path: Path, what: str) -> list[tuple[int, int]]:
    """Line spans [start, stop) of the items of a top-level yaml list, trailing gap lines excluded."""
    starts = []
    for number, line in enumerate(lines):
        if _ITEM.match(line):
            starts.append(number)
        elif not _is_gap(line) and not line.startswith((" ", "\t")):
            raise InputError(f"expected a top-level list of {what}", path, number + 1)
    spans = []
    for index, start in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else len(lines)
        while stop > start + 1 and _is_gap(lines[stop - 1]) and not lines[stop - 1].startswith(" "):
            stop -= 1
        spans.append((start, stop))
    return spans


def _key_body(line: str, is_item_line: bool, key_indent: int) -> str | None:
    """The text from a top-level key of an entry on, or None when the line holds no such key."""
    if is_item_line or (_indent(line) == key_indent and not _is_gap(line)):
        return line[key_indent:]
    return None


def _read_entry(path: Path, lines: list[str], index: int, start: int, stop: int) -> Entry:
    first = lines[start]
    key_indent = _ITEM.match(first).end()
    func_line = None
    for number in range(start, stop):
        body = _key_body(lines[number], number == start, key_indent)
        if body is not None and _FUNC_KEY.match(body):
            func_line = number
            break
    if func_line is None:
        raise InputError("entry has no 'func:' key", path, start + 1)
    line = lines[func_line]
    value_at = key_indent + _FUNC_KEY.match(line[key_indent:]).end()
    try:
        schema_start, schema_end = _schema_span(line, value_at)
        schema = TypedSchema.parse(line[schema_start:schema_end])
    except SchemaError as exc:
        op = line[value_at:].split("(")[0].strip() or None
        raise InputError(f"unparsable schema: {exc}", path, func_line + 1, op) from exc
    return Entry(index, start, stop, func_line, schema_start, schema_end, key_indent, schema)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    return getattr(exc, "problem", None) or str(exc).splitlines()[0]


def _yaml_error_line(exc: yaml.YAMLError, text: str) -> int:
    """The 1-based line of a yaml error in ``text``; an error found only at the end points back to its context."""
    mark = getattr(exc, "problem_mark", None)
    context = getattr(exc, "context_mark", None)
    if mark is not None and context is not None and mark.index >= len(text.rstrip()):
        mark = context
    return 1 + (mark.line if mark is not None else 0)


def load_item(path: Path, text: str, first_line: int, op: str | None = None) -> Any:
    """The one item of a top-level list item's text; a parse error names file, line and op."""
    try:
        items = _loaded(text)
    except yaml.YAMLError as exc:
        raise InputError(f"yaml does not parse: {_yaml_problem(exc)}", path, first_line + _yaml_error_line(exc, text), op) from exc
    return items[0] if isinstance(items, list) and len(items) == 1 else None


@functools.lru_cache(maxsize=1 << 14)
def _loaded(text: str) -> Any:
    """libyaml's reading of an item's text, once per process whichever file holds it (copies of one yaml, a file and
    its rewrite share most entries); the values are only read, never changed."""
    return yaml.load(text, Loader=_LOADER)


def _parse_entry_yaml(path: Path, text: str, first_line: int, op: str) -> dict[str, Any]:
    fields = load_item(path, text, first_line, op)
    if not isinstance(fields, dict):
        raise InputError("entry is not a mapping", path, first_line + 1, op)
    if "func" not in fields:
        raise InputError("entry has no 'func:' key", path, first_line + 1, op)
    return fields
