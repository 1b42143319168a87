"""``index.html``: the overloads x the 21 dtypes in one self-contained page (inline CSS and JS, no network).

The rows travel as one compact JSON document inside the page (``page.html`` is the template): a
string table shared by every evidence line and message, each variable's 21 cell states as one
string of letters, each evidence item's dtypes as a bit mask. The page renders only the rows in
view (a virtual list), so the full yaml opens in well under a second.
"""

from __future__ import annotations

import html
import json
from importlib import resources

from migrate.model.backends import BACKEND_KEYS
from migrate.model.dtypes import TENSOR_DTYPES
from migrate.model.plan import Evidence
from migrate.model.verdict import ACCEPTED, OTHER_DEVICE, PROMOTED, REJECTED, UNKNOWN
from migrate.write.reference.rows import DECLARED, NOT_DECLARED, OverloadRow

STATES = (ACCEPTED, OTHER_DEVICE, REJECTED, PROMOTED, UNKNOWN, DECLARED, NOT_DECLARED)
CODES = {state: state[0] if state != NOT_DECLARED else "n" for state in STATES}  # a, o, r, p, u, d, n
PLACEHOLDER = "/*DATA*/null"


def _line(evidence: Evidence) -> str:
    """An evidence line without the messages of a refusal: each rejected cell shows its dtype's own."""
    return evidence.verdict.headline if evidence.verdict is not None else evidence.where


class _Strings:
    """Each distinct text once, numbered in order of first use (deterministic)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))


def _numbered(values) -> tuple[list[str], dict[str, int]]:
    ordered = sorted(set(values))
    return ordered, {v: i for i, v in enumerate(ordered)}


def page_data(rows: tuple[OverloadRow, ...], source: str) -> dict:
    modules, module_of = _numbered(r.module for r in rows)
    tags, tag_of = _numbered(t for r in rows for t in r.tags)
    sources, source_of = _numbered(e.source for r in rows for v in r.variables for e in v.evidence)
    bit = {d: 1 << i for i, d in enumerate(TENSOR_DTYPES)}
    column = {d: i for i, d in enumerate(TENSOR_DTYPES)}
    text = _Strings()
    ops, variables = [], []
    for number, row in enumerate(rows):
        slots = ", ".join(f"{slot}: {variable or 'Tensor'}" for slot, variable in row.slots)
        promotion = row.promotion_text
        autocast = ", ".join(f"{key}: {policy}" for key, policy in row.autocast)
        ops.append([row.name, module_of[row.module], [tag_of[t] for t in row.tags], slots, promotion, autocast, row.line, [text(str(r)) for r in row.value_refusals]])
        if not row.variables:
            variables.append([number, "", "", "", CODES[NOT_DECLARED] * len(TENSOR_DTYPES), "not declared" if row.slots else "no tensor", [], [], 0, None])
        for variable in row.variables:
            states = "".join(CODES[variable.state(d)] for d in TENSOR_DTYPES)
            dtypes = ", ".join([*(d.name for d in variable.dtypes), *variable.follows])
            listed = f"{variable.set_name} = [{dtypes}]" if variable.set_name and variable.set_name != variable.name else f"[{dtypes}]"
            evidence: dict[tuple[int, int, int], int] = {}  # lines that differed only by their message become one
            for e in variable.evidence:
                key = (source_of[e.source], text(_line(e)), e.count)
                evidence[key] = evidence.get(key, 0) | sum(bit.get(d, 0) for d in e.dtypes)
            messages = [[column[d], text(m)] for d, m in variable.verdicts.rejected if d in column] if variable.verdicts else []
            in_set = sum(bit[d] for d in variable.possible if d in bit)
            lines = [[*key, mask] for key, mask in evidence.items()]
            by_backend = {key: sum(bit[d] for d in dtypes if d in bit) for key, dtypes in variable.backends} or None
            variables.append([number, variable.name, listed, ", ".join(variable.binds), states, variable.stands, lines, messages, in_set, by_backend])
    return {
        "source": source,
        "dtypes": [d.name for d in TENSOR_DTYPES],
        "states": {CODES[s]: s for s in STATES},
        "modules": modules,
        "tags": tags,
        "sources": sources,
        "text": list(text.index),
        "ops": ops,
        "rows": variables,
        "backends": [key for key in BACKEND_KEYS if any(key == k for r in rows for v in r.variables for k, _ in v.backends)],
    }


def index_html(rows: tuple[OverloadRow, ...], source: str) -> str:
    data = json.dumps(page_data(rows, source), ensure_ascii=False, separators=(",", ":"))
    # Inside <script>, "</" could close the element and "<!--" open a comment: JSON allows escaping both.
    data = data.replace("</", "<\\/").replace("<!--", "<\\u0021--")
    template = resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")
    return template.replace("{{SOURCE}}", html.escape(source)).replace(PLACEHOLDER, data)
