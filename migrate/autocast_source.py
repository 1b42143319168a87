"""ATen's autocast registrations read from C++: ``autocast_mode.h``'s shared lists and ``autocast_mode.cpp``'s blocks.

The header's ``AT_FORALL_*`` lists (``_(mm)``, ``_(pow, Scalar)``) are the vocabulary every key's
block may reuse; a ``.cpp`` block is ``TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) { ... }`` holding
``KERNEL_CPU(op[, overload], policy)`` lines, lists expanded through a local ``#define`` that appends
the policy, ``KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_*`` registrations and ``m.impl`` of a banned op.
The same reader reads the blocks ``autocast-gen`` writes.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from migrate.errors import InputError
from migrate.model.autocast import KEYS, POLICIES

SHARED_LISTS = {  # list macro -> the policy the CUDA-like blocks give it (None: each item names its own)
    "AT_FORALL_LOWER_PRECISION_FP": "lower_precision_fp",
    "AT_FORALL_FP32": "fp32",
    "AT_FORALL_FP32_SET_OPT_DTYPE": "fp32_set_opt_dtype",
    "AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE": None,
    "AT_FORALL_PROMOTE": "promote",
}


@dataclass(frozen=True)
class ListItem:
    """One item of a shared list: the overload (yaml spelling), and for a redispatch item its whole C++ text and policy."""

    overload: str
    policy: str | None = None
    text: str = ""


@dataclass(frozen=True)
class Registration:
    key: str
    overload: str
    policy: str
    where: str  # 'autocast_mode.cpp:812' or 'autocast_mode.cpp:812 AT_FORALL_FP32'


def installed_header() -> Path:
    """The installed torch's ``ATen/autocast_mode.h``, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("torch is not installed: no autocast_mode.h to read", Path("torch"))
    return Path(list(spec.submodule_search_locations)[0]) / "include" / "ATen" / "autocast_mode.h"


def _without_comments(text: str) -> str:
    """Comments blanked, line breaks kept (so offsets still give line numbers)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)


def _balanced(text: str, open_at: int) -> int:
    """The index just after the parenthesis or brace matching the one at ``open_at``."""
    closing = {"(": ")", "{": "}"}[text[open_at]]
    depth = 0
    for index in range(open_at, len(text)):
        if text[index] == text[open_at]:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index + 1
    raise ValueError("unbalanced")


def _arguments(inner: str) -> list[str]:
    """Top-level comma-separated arguments of a macro call's inside."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(inner):
        if char in "(<{":
            depth += 1
        elif char in ")>}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(inner[start:index].strip())
            start = index + 1
    parts.append(inner[start:].strip())
    return [p for p in parts if p]


def _overload(op: str, overload: str | None = None) -> str:
    return f"{op}.{overload}" if overload else op


def _defines(text: str) -> dict[str, tuple[str, int]]:
    """Every ``#define NAME(...) body`` (continuations joined) with the line it starts on."""
    found = {}
    for match in re.finditer(r"^[ \t]*#define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", text, flags=re.M):
        found[match.group(1)] = (match.group(3).replace("\\\n", " "), text.count("\n", 0, match.start()) + 1)
    return found


def shared_lists(header: str) -> dict[str, tuple[ListItem, ...]]:
    """The header's ``AT_FORALL_*`` policy lists, in order."""
    defines = _defines(_without_comments(header))
    lists = {}
    for name in SHARED_LISTS:
        if name not in defines:
            continue
        body, items = defines[name][0], []
        for match in re.finditer(r"(?<![\w])_\(", body):
            inner = body[match.end() : _balanced(body, match.end() - 1) - 1]
            args = _arguments(inner)
            if SHARED_LISTS[name] is None:  # (REDISPATCH_FUNC, "name", signature, redispatch signature, policy)
                items.append(ListItem(args[1].strip('"'), args[-1], " ".join(inner.split())))
            else:
                items.append(ListItem(_overload(*args)))
        lists[name] = tuple(items)
    return lists


def key_of_dispatch_key(name: str) -> str | None:
    """'AutocastCPU' -> 'CPU'; 'Autocast' (the CUDA key's old name) -> 'CUDA'."""
    if name == "Autocast":
        return "CUDA"
    key = name.removeprefix("Autocast")
    return key if name.startswith("Autocast") and key in KEYS else None


def read_registrations(cpp: str, header: str, cpp_name: str = "autocast_mode.cpp") -> tuple[Registration, ...]:
    """Every (key, overload, policy) the blocks of ``cpp`` register, the shared lists expanded from ``header``."""
    lists = shared_lists(header)
    code = _without_comments(cpp)
    local = {}  # a #define that appends a policy: _KERNEL_CUDA_FP32(...) -> 'fp32'
    for name, (body, _) in _defines(code).items():
        policy = re.search(r"KERNEL\w*\(\s*__VA_ARGS__\s*,\s*(\w+)\s*\)", body)
        if policy:
            local[name] = policy.group(1)
    found = []
    for block in re.finditer(r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*(\w+)\s*,\s*m\s*\)\s*\{", code):
        key = key_of_dispatch_key(block.group(1))
        if key is None:
            continue
        body_start = block.end() - 1
        body = code[body_start : _balanced(code, body_start)]

        def where(offset: int, via: str = "") -> str:
            line = code.count("\n", 0, body_start + offset) + 1
            return f"{cpp_name}:{line}" + (f" {via}" if via else "")

        for call in re.finditer(r"\b(KERNEL\w*|AT_FORALL_\w+|m\.impl)\(", body):
            if body[: call.start()].rstrip().endswith("define") or _in_define(body, call.start()):
                continue
            inner = body[call.end() : _balanced(body, call.end() - 1) - 1]
            args = _arguments(inner)
            macro = call.group(1)
            if macro.startswith("AT_FORALL_") and macro in lists:
                expander = args[0]
                for item in lists[macro]:
                    policy = item.policy if expander.startswith("KERNEL_DIFFERENT_REDISPATCH_SIGNATURE") else local.get(expander)
                    if policy is not None:
                        found.append(Registration(key, item.overload, policy, where(call.start(), macro)))
            elif macro.startswith("KERNEL_DIFFERENT_REDISPATCH_SIGNATURE"):
                found.append(Registration(key, args[1].strip('"'), args[-1], where(call.start())))
            elif macro.startswith("KERNEL") and args and args[-1] in POLICIES:
                if macro == "KERNEL":  # KERNEL(c10::DeviceType::HPU, op[, overload], policy)
                    args = args[1:]
                found.append(Registration(key, _overload(*args[:-1]), args[-1], where(call.start())))
            elif macro == "m.impl" and "banned" in inner:
                name = re.search(r'"aten::([\w.]+)"', inner)
                if name:
                    found.append(Registration(key, name.group(1), "banned", where(call.start())))
    return tuple(found)


def _in_define(body: str, at: int) -> bool:
    """Whether offset ``at`` lies in a ``#define`` line (or its continuations)."""
    line_start = body.rfind("\n", 0, at) + 1
    while line_start > 0 and body[line_start - 2 : line_start - 1] == "\\":
        line_start = body.rfind("\n", 0, line_start - 1) + 1
    return body[line_start:at].lstrip().startswith("#define")


def source_files(directory: Path) -> tuple[Path, Path]:
    """``autocast_mode.cpp`` and ``.h`` under a source tree (its root or any folder holding both)."""
    directory = Path(directory)
    for folder in (directory, directory / "aten" / "src" / "ATen"):
        cpp, header = folder / "autocast_mode.cpp", folder / "autocast_mode.h"
        if cpp.is_file() and header.is_file():
            return cpp, header
    raise InputError("no autocast_mode.cpp and autocast_mode.h here or under aten/src/ATen", directory)
