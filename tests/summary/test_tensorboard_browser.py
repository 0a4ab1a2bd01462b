"""TensorBoard's own graph dashboard, in a real Chromium, shows a graph flowlab wrote:
its name scope, the ops inside once expanded, and the edge shapes flowlab exported as
`_output_shapes` (tests/browser_support.py: the server and the browser)."""

from __future__ import annotations

import time

import pytest

import flowlab as fl
from tests.browser_support import chromium, free_port, server
from tests.summary.test_tensorboard_server import _tensorboard_command

pytestmark = pytest.mark.slow


def _labels(page) -> str:
    """The text of the drawn nodes and edge labels (a node's text holds its title too)."""
    return " ".join(page.locator("g.node text, g.edge text").all_text_contents())


def test_graph_dashboard_shows_a_flowlab_graph(tmp_path):
    logdir = tmp_path / "logs"
    with fl.Graph().as_default():
        with fl.name_scope("dense_layer"):
            x = fl.placeholder(fl.float32, [None, 3], name="x")
            w = fl.Variable(fl.ones([3, 2]), name="weights")
            fl.matmul(x, w, name="product")
        with fl.Session() as sess, fl.summary.FileWriter(str(logdir / "run1"), sess.graph):
            pass
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = _tensorboard_command() + ["--logdir", str(logdir), "--host", "127.0.0.1",
                                        "--port", str(port)]
    with server(command, tmp_path / "tensorboard.log", f"{base}/data/plugin/graphs/info",
                ready=b"run1"), chromium(tmp_path / "profile") as ctx:
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
    for name in ("x", "weights", "product"):
        assert name in labels, labels
    assert "?×3" in labels and "3×2" in labels, labels  # the edges' _output_shapes
