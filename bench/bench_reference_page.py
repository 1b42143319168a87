"""The dtype reference of a run: its three files' sizes and index.html's load time in headless Chromium; prints, never asserts.

Generates the reference from a written yaml and its report (``dtype-migrate docs``) into a temporary
folder (or reads --reference DIR), then opens index.html in Debian's headless Chromium (tests/chromium.py)
--repeats times in a fresh tab each and reports the median of the page's own ready mark (performance.now()
when the first rows are drawn, from the start of navigation) and of the wall time from navigate to ready,
beside the same for a blank page of the same folder (the browser's fixed cost) in the same run.
--shots DIR saves three screenshots: the page filtered to the `pointwise` tag and two clicked cells
(add.Tensor's uint16 of its first variable, and sqrt's float8_e4m3fn with ATen's refusal).

    python bench/bench_reference_page.py --native-functions OUT/native_functions.yaml --report OUT/report.json [--shots DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.cli import main as cli  # noqa: E402
from tests.chromium import Browser  # noqa: E402


def _load(browser: Browser, url: str) -> tuple[float, float]:
    """(the page's ready mark, wall seconds from navigate to ready) in a fresh tab."""
    page = browser.page()
    start = time.perf_counter()
    page.open(url)
    ready = page.wait_for("document.body.dataset.ready || (document.readyState === 'complete' && !document.getElementById('data') && '0')")
    wall = time.perf_counter() - start
    page.call("Page.close")
    return float(ready) / 1000, wall


def _shots(browser: Browser, url: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page = browser.page()
    page.open(url)
    page.wait_for("document.body.dataset.ready")
    tag = page.evaluate("JSON.parse(document.getElementById('data').textContent).tags.indexOf('pointwise')")
    page.click(f'.chip[data-filter="tag"][data-value="{tag}"]')
    count = page.evaluate("document.getElementById('count').textContent")
    print(f"pointwise filter: {count} -> {page.screenshot(folder / 'pointwise.png')}")
    page.click(f'.chip[data-filter="tag"][data-value="{tag}"]')
    page.type("#search", "add.Tensor")
    page.click('.row[data-overload="add.Tensor"] .c[data-dtype="uint16"]')
    verdict = page.evaluate("document.getElementById('d-verdict').dataset.verdict")
    message = page.evaluate("document.getElementById('d-message').textContent")
    print(f"add.Tensor uint16 (self): {verdict}{': ' + message if message else ''} -> {page.screenshot(folder / 'cell.png')}")
    page.evaluate("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
    page.type("#search", "aten::sqrt")
    page.click('.row[data-overload="sqrt"] .c[data-dtype="float8_e4m3fn"]')
    verdict = page.evaluate("document.getElementById('d-verdict').dataset.verdict")
    message = page.evaluate("document.getElementById('d-message').textContent")
    print(f"sqrt float8_e4m3fn (self): {verdict}{': ' + message if message else ''} -> {page.screenshot(folder / 'rejected.png')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--native-functions", type=Path, help="a written yaml (with --report): generate the reference from it")
    parser.add_argument("--report", type=Path)
    parser.add_argument("--reference", type=Path, help="instead: a folder dtype-migrate docs wrote")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shots", type=Path, help="save pointwise.png, cell.png and rejected.png here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.reference or Path(tmp)
        if args.reference is None:
            if args.native_functions is None:
                parser.error("give --native-functions (and --report) or --reference")
            command = ["docs", str(args.native_functions), "-o", str(folder)] + (["--report", str(args.report)] if args.report else [])
            assert cli(command) == 0
        for name in ("OperatorDtypes.md", "autocast.md", "index.html"):
            size = (folder / name).stat().st_size
            print(f"{name}: {size} bytes ({size / 2**20:.2f} MiB)")
        blank = Path(tmp) / "blank.html"
        blank.write_text("<!doctype html><title>blank</title><body></body>")
        with Browser() as browser:
            _load(browser, blank.as_uri())  # the first tab warms the browser up
            ready, wall, blank_wall = [], [], []
            for _ in range(args.repeats):
                mark, seconds = _load(browser, (folder / "index.html").as_uri())
                ready.append(mark)
                wall.append(seconds)
                blank_wall.append(_load(browser, blank.as_uri())[1])
            print(
                f"index.html ready (the page's mark, from navigation start): median {statistics.median(ready):.3f} s of {args.repeats} "
                f"({', '.join(f'{r:.3f}' for r in ready)})"
            )
            print(
                f"index.html navigate -> ready, wall: median {statistics.median(wall):.3f} s; a blank page: {statistics.median(blank_wall):.3f} s "
                f"(ratio {statistics.median(wall) / statistics.median(blank_wall):.1f}x)"
            )
            if args.shots:
                _shots(browser, (folder / "index.html").as_uri(), args.shots)


if __name__ == "__main__":
    main()
