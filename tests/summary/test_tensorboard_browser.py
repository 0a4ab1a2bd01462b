"""TensorBoard's own graph dashboard, in a real Chromium, shows a graph flowlab wrote:
its name scope, the ops inside once expanded, and the edge shapes flowlab exported as
`_output_shapes`.  The server binds to 127.0.0.1 on a free port and is stopped by its
PID; the browser is the system Chromium (scripts/test installs it), driven by Playwright."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import flowlab as fl
from tests.summary.test_tensorboard_server import _free_port, _tensorboard_command

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _labels(page) -> str:
    """The text of the drawn nodes and edge labels (a node's text holds its title too)."""
    return " ".join(page.locator("g.node text, g.edge text").all_text_contents())


def test_graph_dashboard_shows_a_flowlab_graph(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("no system Chromium (scripts/test installs it with apt-get)")
    logdir = tmp_path / "logs"
    with fl.Graph().as_default():
        with fl.name_scope("dense_layer"):
            x = fl.placeholder(fl.float32, [None, 3], name="x")
            w = fl.Variable(fl.ones([3, 2]), name="weights")
            fl.matmul(x, w, name="product")
        with fl.Session() as sess, fl.summary.FileWriter(str(logdir / "run1"), sess.graph):
            pass
    port = _free_port()
    log = open(tmp_path / "tensorboard.log", "wb")
    proc = subprocess.Popen(
        _tensorboard_command() + ["--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/data/plugin/graphs/info", timeout=5) as r:
                    if b"run1" in r.read():
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.5)
        with sync_api.sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=_ARGS)
            try:
                page = ctx.new_page()
                page.goto(f"{base}/#graphs&run=run1")
                page.wait_for_selector("g.node >> text=dense_layer", state="attached", timeout=90000)
                assert "dense_layer" in _labels(page)
                page.locator("g.node", has_text="dense_layer").first.dblclick()  # expand the scope
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not ("?×3" in _labels(page)
                                                           and "product" in _labels(page)):
                    page.wait_for_timeout(250)
                labels = _labels(page)
                page.screenshot(path=str(tmp_path / "graph-dashboard.png"))
            finally:
                ctx.close()
        for name in ("x", "weights", "product"):
            assert name in labels, labels
        assert "?×3" in labels and "3×2" in labels, labels  # the edges' _output_shapes
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
