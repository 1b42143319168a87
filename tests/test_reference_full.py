"""The dtype reference of the real full run: its files, the API on the written yaml, and the page in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.api import load_declarations
from migrate.cli import main
from migrate.model.native import NativeFunctions
from tests.chromium import Browser
from tests.test_api import CALLS, PROMOTED, aten_takes

pytestmark = pytest.mark.slow  # a full run, and a browser

MUST_SHOW = ("add.Tensor", "scaled_dot_product_attention", "mm", "sqrt")


@pytest.fixture(scope="module")
def run(full_run, tmp_path_factory) -> Path:
    """The full run on the installed files with its report, and the reference generated from both under reference/."""
    out = tmp_path_factory.mktemp("reference-run")
    for name in ("native_functions.yaml", "type_constraints.yaml", "report.json"):
        (out / name).symlink_to(full_run / name)
    assert main(["docs", str(out / "native_functions.yaml"), "--report", str(out / "report.json"), "-o", str(out / "reference")]) == 0
    return out


def test_the_full_reference_has_every_overload_and_the_page_stays_small(run):
    native = NativeFunctions.load(run / "native_functions.yaml")
    table = (run / "reference" / "OperatorDtypes.md").read_text()
    rows = [line.split(" | ")[0][3:-1] for line in table.splitlines() if line.startswith("| `")]
    sections: dict[str, list[str]] = {}
    for entry in native.entries:
        sections.setdefault(native.fields(entry).get("python_module") or "torch", []).append(entry.name)
    assert rows == [name for names in sections.values() for name in names]  # the yaml's order within each python_module
    assert set(MUST_SHOW) <= set(rows)
    assert (run / "reference" / "index.html").stat().st_size < 4_000_000
    autocast = (run / "reference" / "autocast.md").read_text()
    bfloat16 = autocast.split("### CPU Ops that can autocast to `bfloat16`\n\n")[1].split("\n")[0]
    assert "`mm`" in bfloat16 and "`scaled_dot_product_attention`" in bfloat16 and "`conv2d`" in bfloat16
    assert main(["docs", str(run / "native_functions.yaml"), "--report", str(run / "report.json"), "-o", str(run / "reference"), "--check"]) == 0


@pytest.mark.parametrize("overload, values, call", CALLS + PROMOTED, ids=[f"{c[0]}-{'-'.join(c[1].values())}" for c in CALLS + PROMOTED])
def test_the_written_yaml_answers_as_aten_does(run, overload, values, call):
    assert bool(load_declarations(run / "native_functions.yaml").accepts(overload, **values)) == aten_takes(call)


def _report_verdict(run: Path, overload: str, slot: str, dtype: str) -> tuple[str, str]:
    report = json.loads((run / "report.json").read_text())
    plan = next(o for o in report["overloads"] if o["name"] == overload)
    variable = next(v for v in plan["variables"] if slot in v["binds"])
    return variable["verdicts"]["by_dtype"][f"torch.{dtype}"], variable["verdicts"]["messages"].get(f"torch.{dtype}", "")


def test_the_page_in_chromium_searches_shows_a_cells_evidence_and_filters(run, tmp_path):
    with Browser() as browser:
        page = browser.page()
        page.open((run / "reference" / "index.html").as_uri())
        page.wait_for("document.body.dataset.ready")
        everything = page.evaluate("document.getElementById('count').textContent")
        page.type("#search", "add.Tensor")
        shown = page.evaluate("[...document.querySelectorAll('.row')].map((r) => r.dataset.overload)")
        assert "add.Tensor" in shown and all("add.tensor" in name.lower() for name in shown)
        cell = '.row[data-overload="add.Tensor"] .c[data-dtype="uint16"]'  # the first row: self's variable
        verdict, message = _report_verdict(run, "add.Tensor", "self", "uint16")
        assert page.evaluate(f"document.querySelector('{cell}').dataset.verdict") == verdict
        page.click(cell)
        assert page.evaluate("document.getElementById('d-title').textContent") == "aten::add.Tensor"
        assert page.evaluate("document.getElementById('d-verdict').dataset.verdict") == verdict
        assert page.evaluate("document.getElementById('d-message').textContent") == message
        assert page.evaluate("document.getElementById('d-evidence').children.length") > 0
        page.screenshot(tmp_path / "cell.png")

        page.evaluate("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
        assert page.evaluate("document.getElementById('count').textContent") == everything
        page.click('.chip[data-filter="tag"][data-value="' + str(page.evaluate("JSON.parse(document.getElementById('data').textContent).tags.indexOf('pointwise')")) + '"]')
        assert page.evaluate("document.querySelector('.chip[aria-pressed=\"true\"]').textContent") == "pointwise"
        pointwise = set(page.evaluate("[...document.querySelectorAll('.row')].map((r) => r.dataset.overload)"))
        native = NativeFunctions.load(run / "native_functions.yaml")
        tagged = {e.name for e in native.entries if "pointwise" in str(native.fields(e).get("tags", ""))}
        assert pointwise and pointwise <= tagged
        assert page.evaluate("document.getElementById('count').textContent") != everything
        page.screenshot(tmp_path / "pointwise.png")
        assert (tmp_path / "cell.png").stat().st_size > 10_000 and (tmp_path / "pointwise.png").stat().st_size > 10_000
