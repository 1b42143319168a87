"""The layout of rewritten function headers, as torchlib's formatter (ruff, black's style) lays them out.

A longer annotation can push a one-line ``def`` past the line length. Such a header is
split as the formatter splits it: the parameters on one indented line of their own
when that fits, else one parameter per line with a trailing comma. Headers that fit,
and headers already split over several lines, keep their layout.
"""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from codemods.toplevel import DefKey, TopLevelTransformer

_code = cst.Module([]).code_for_node


def _parameter_texts(params: cst.Parameters) -> list[str]:
    """Each parameter (and ``*``, ``/`` marker) as written, without its comma, in order."""
    texts = [_code(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for p in params.posonly_params]
    if params.posonly_ind is not cst.MaybeSentinel.DEFAULT:
        texts.append("/")
    texts += [_code(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for p in params.params]
    if isinstance(params.star_arg, cst.Param):
        texts.append(_code(params.star_arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip())
    elif isinstance(params.star_arg, cst.ParamStar):
        texts.append("*")
    texts += [_code(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for p in params.kwonly_params]
    if params.star_kwarg is not None:
        texts.append(_code(params.star_kwarg.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip())
    return texts


class SignatureLayout(TopLevelTransformer):
    """Splits the one-line headers of the given functions that are longer than ``line_length``."""

    def __init__(self, keys: Collection[DefKey], line_length: int, indent: str):
        super().__init__()
        self.keys = keys
        self.line_length = line_length
        self.indent = indent
        self._depth = 0  # blocks (if/try/...) the walk is inside of

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self._depth += 1
        return True

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        self._depth -= 1
        return updated_node

    def leave_def(self, key: DefKey, node: cst.FunctionDef) -> cst.FunctionDef:
        if key not in self.keys:
            return node
        params_code = _code(node.params)
        if "\n" in params_code or "#" in params_code or "\n" in _code(node.whitespace_before_params):
            return node
        margin = self.indent * self._depth
        header = _code(node.with_changes(body=cst.SimpleStatementSuite([cst.Pass()]), decorators=(), leading_lines=()))
        header = header.splitlines()[0].removesuffix(" pass")
        opened = header.index("(") + 1 + len(_code(node.whitespace_before_params))
        texts = _parameter_texts(node.params)
        if len(margin) + opened + len(", ".join(texts)) + len(header) - opened - len(params_code) <= self.line_length or not texts:
            return node
        inner = margin + self.indent
        closing = margin
        if len(inner) + len(", ".join(texts)) <= self.line_length:
            body = f"{inner}{', '.join(texts)}\n"
        else:
            body = "".join(f"{inner}{text},\n" for text in texts)
        template = cst.parse_statement(f"def f(\n{body}{closing}): pass\n")
        assert isinstance(template, cst.FunctionDef)
        return node.with_changes(params=template.params, whitespace_before_params=template.whitespace_before_params)
