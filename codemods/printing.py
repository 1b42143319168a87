"""A module's code with each module-level statement printed once per process.

The walks here leave a statement they do not edit as the very node the module was parsed to
(``toplevel``), and a process parses a module's bytes once (``migrate.torchlib_source.scan.parsed_module``). So the
rewrites one process makes of the same modules (a test suite's runs, a benchmark's repeats) share the
text of every statement none of them changed: libcst prints ``ops/core.py`` in most of a second, and
a rewrite changes a few hundred of its functions. A libcst tree never changes in place, so a node's
text stays what it was printed to.
"""

from __future__ import annotations

import collections
import threading

import libcst as cst

KEPT = 50_000
"""Statements whose text is kept, the last printed: torchlib's modules have about 5,000 together."""

_texts: collections.OrderedDict[int, tuple[cst.CSTNode, str, str, str]] = collections.OrderedDict()  # by id(node)
_lock = threading.Lock()


def module_code(module: cst.Module) -> str:
    """``module.code``, byte for byte."""
    if not module.body or not module.has_trailing_newline:  # libcst adds or takes a final newline there
        return module.code
    header = [module.code_for_node(line) for line in module.header]
    footer = [module.code_for_node(line) for line in module.footer]
    return "".join([*header, *(_statement_code(module, statement) for statement in module.body), *footer])


def _statement_code(module: cst.Module, statement: cst.BaseStatement) -> str:
    key = id(statement)
    with _lock:
        found = _texts.get(key)
        if found is not None and found[0] is statement and found[1:3] == (module.default_indent, module.default_newline):
            _texts.move_to_end(key)
            return found[3]
    text = module.code_for_node(statement)
    with _lock:
        _texts[key] = (statement, module.default_indent, module.default_newline, text)  # the node held: its id stays its
        _texts.move_to_end(key)
        while len(_texts) > KEPT:
            _texts.popitem(last=False)
    return text
