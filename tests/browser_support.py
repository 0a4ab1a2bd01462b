"""What the browser tests share: a server started on 127.0.0.1 at a free port and
stopped by its PID, and the system Chromium driven by Playwright (never a downloaded
browser; scripts/test installs Debian's chromium)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(command: list[str], log: Path, ready_url: str, ready: bytes = b"",
           timeout: float = 120) -> Iterator[subprocess.Popen[bytes]]:
    """Run `command` until the block ends; first wait until `ready_url` answers (with
    `ready` in its body).  Output goes to `log` (a file: nobody drains a pipe)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(ready_url, timeout=5) as r:
                        if ready in r.read():
                            break
                except (urllib.error.URLError, ConnectionError):
                    pass
                time.sleep(0.5)
            yield proc
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless system Chromium's browser context (skips when there is none)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("no system Chromium (scripts/test installs it with apt-get)")
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield ctx
        finally:
            ctx.close()
