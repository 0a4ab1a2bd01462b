"""Placement you can try, in a real JupyterLab: choosing another device for a node in
GraphView's side panel makes the kernel place and partition the step again (new
Send/Recv pairs in the partitioned stage), and shows the predicted step time beside
the measured one once the next step ran."""

from __future__ import annotations

import shutil

import pytest

from flowlab.viz.widgets import labextension_installed
from tests.browser.lab import ARTIFACTS
from tests.browser.test_graph_view import SETUP, _view

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not labextension_installed(),
                       reason="the flowlab-widgets labextension is not built (scripts/_setup.sh)"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed"),
]

CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def test_moving_a_node_changes_the_partitions(lab):
    setup = SETUP.replace("view = ", "feed = {x: np.ones((2, 3), np.float32)}\nview = ")
    page = lab.open("place.ipynb", setup)
    lab.run_all(page)
    view = _view(page)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                           ".session.kernel.status === 'idle'")
    view.locator("select.fl-stage").select_option("partitioned")
    view.locator(".fl-node-send").first.wait_for()
    recvs = view.locator(".fl-node-recv").count()
    predicted = view.locator(".fl-timing").inner_text()
    assert predicted.startswith("predicted ")

    view.locator('.fl-node[data-name="layer1/MatMul"]').click()
    view.locator("select.fl-move-device").select_option(CPU1)
    # The step placed again: MatMul's inputs now cross to CPU:1 (more Recvs), and the
    # panel says where it is.
    page.wait_for_function(f"() => document.querySelectorAll('.fl-node-recv').length > {recvs}")
    view.locator(".fl-timing", has_text="moved: layer1/MatMul → CPU:1").wait_for()
    assert view.locator(".fl-timing").inner_text() != predicted
    view.locator(".fl-panel", has_text="device:CPU:1").wait_for()
    cpu1 = view.locator(".fl-cluster-partition").all_text_contents()
    assert len(cpu1) == 2

    # The next step: its measured time shows beside the prediction.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                  ".requestExecute({code: 'sess.run(z, feed)'})")
    view.locator(".fl-timing", has_text="measured").wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "placement_moved.png"))

    # Back to its own request: the partitions are as they were.
    view.locator("select.fl-move-device").select_option("-")
    page.wait_for_function(f"() => document.querySelectorAll('.fl-node-recv').length === {recvs}")
    page.close()
