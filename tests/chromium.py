"""Headless Chromium driven over its DevTools protocol on a pipe: no Python package, no port, no download.

Debian's ``chromium`` (scripts/chromium.sh, which test.sh sources, installs it when /usr/bin/chromium is missing) is started with
``--remote-debugging-pipe``: it reads JSON commands from file descriptor 3 and writes answers and
events to descriptor 4, each message ended by a NUL byte. ``Browser.page()`` opens a tab to drive.
Used by the browser test and by bench/bench_reference_page.py.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def chromium_path() -> str | None:
    """The Chromium binary, if installed."""
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


class ProtocolError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process; ``close()`` ends it (and only it)."""

    def __init__(self, width: int = 1600, height: int = 1000, timeout: float = 30.0):
        binary = chromium_path()
        if binary is None:
            raise FileNotFoundError("chromium is not installed (test.sh installs Debian's package through scripts/chromium.sh)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="dtype-migrate-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def descriptors() -> None:  # in the child: the pipe ends at 3 and 4, as --remote-debugging-pipe expects
            read, write = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=descriptors,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.width, self.height = width, height

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise ProtocolError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._from_browser], [], [], remaining)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise ProtocolError("chromium closed its pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for number, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(number)
            self.events.append(self._receive(deadline))

    def page(self) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.call("Page.enable")
        page.call("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (ProtocolError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab: navigate, evaluate JavaScript, click and type as a person does, take screenshots."""

    def __init__(self, browser: Browser, session: str):
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.call("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.02)
        raise TimeoutError(f"never true: {expression}")

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the first element matching ``selector`` (scrolled into view)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null; e.scrollIntoView({{block: 'nearest'}});"
            " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise ProtocolError(f"no element {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        """Focus an input and type into it (the page sees input events)."""
        self.click(selector)
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path
