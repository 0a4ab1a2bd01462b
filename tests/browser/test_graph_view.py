"""GraphView in a real JupyterLab, in the system Chromium (tests/browser_support.py).

One `jupyter lab` server (127.0.0.1, a free port, no token, stopped by its PID) and one
headless Chromium for the whole of tests/browser (conftest.py).  Each test writes a notebook through the contents
API, opens it, runs its cells through JupyterLab's own command, and reads the widget's
SVG.  Screenshots go to tests/browser/artifacts/ (git-ignored).

What they check: the view renders the step's stage with devices in its legend; nodes
light up while the cell that runs the steps is still running (its prompt is `[*]`);
clicking a node opens its panel with the kernel's details; the stage switch shows the
Send/Recv nodes after partitioning; a node named like HTML is shown as text and runs
nothing; after a kernel restart the view says the kernel is gone; a reopened notebook
draws its saved graph and timeline, still linked, with no kernel.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from typing import Any

import pytest

from flowlab.viz.widgets import labextension_installed
from tests.browser.lab import ARTIFACTS, Lab, save_image

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not labextension_installed(),
                       reason="the flowlab-widgets labextension is not built (scripts/_setup.sh)"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed"),
]

SETUP = """\
import time
import numpy as np
import flowlab as fl
g = fl.Graph()
with g.as_default():
    x = fl.placeholder(fl.float32, [None, 3], name="x")
    with fl.name_scope("layer1"):
        w = fl.Variable(np.ones((3, 4), np.float32), name="w")
        y = fl.nn.relu(fl.matmul(x, w))
    with fl.device("/cpu:1"), fl.name_scope("layer2"):
        z = fl.reduce_sum(y * 2.0, name="sum")
    init = fl.global_variables_initializer()
sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
sess.run(init)
view = fl.viz.GraphView(sess, z, {x: None}, height=420)
view
"""

LOOP = """\
feed = {x: np.ones((2, 3), np.float32)}
for i in range(1000):  # ~40 s; the test restarts the kernel once it has seen enough
    sess.run(z, feed)
    time.sleep(0.04)
"""

EVIL = "<img src=x onerror=alert(1)>"
HTML_NAME = f"""\
import flowlab as fl
gd = {{"node": [
    {{"name": {EVIL!r}, "op": "Const", "attr": {{}}}},
    {{"name": "out", "op": "Identity", "input": [{EVIL!r}], "attr": {{}}}},
]}}
fl.viz.GraphView(gd)
"""


def _view(page: Any, index: int = 0) -> Any:
    views = page.locator(".fl-graph-view")
    views.nth(index).locator(".fl-node").first.wait_for(timeout=90_000)
    return views.nth(index)


def test_graph_view_renders_lights_up_and_shows_details(lab):
    page = lab.open("live.ipynb", SETUP, LOOP)
    lab.run_all(page)
    view = _view(page)
    assert view.locator("svg.fl-svg").get_attribute("data-stage") == "placed"
    legend = view.locator(".fl-legend-item")
    assert legend.count() == 2 and "CPU:1" in legend.all_inner_texts()[1]
    names = view.locator(".fl-node").evaluate_all("els => els.map(e => e.dataset.name)")
    assert "layer1/MatMul" in names and "layer2/sum" in names
    # A cross-device edge of the placed stage is drawn as one (red, class fl-edge-x).
    assert view.locator("path.fl-edge-x").count() >= 1

    # While the loop cell is still running, nodes that ran light up.
    page.locator(".fl-node.fl-done").first.wait_for(timeout=30_000)
    prompt = page.locator(".jp-Cell").nth(1).locator(".jp-InputPrompt").inner_text()
    assert "*" in prompt, f"the loop had already finished (prompt {prompt!r})"
    lit = view.locator(".fl-node.fl-done").evaluate_all("els => els.map(e => e.dataset.name)")
    assert "layer1/MatMul" in lit
    status = view.locator(".fl-status").inner_text()
    assert "steps seen" in status
    page.screenshot(path=str(ARTIFACTS / "graph_view_live.png"))

    # Clicking a node opens its panel, with the kernel's details (shapes, placement).
    view.locator('.fl-node[data-name="layer1/MatMul"]').click()
    panel = view.locator(".fl-panel")
    panel.locator("text=float32 (?, 4)").wait_for(timeout=15_000)
    text = panel.inner_text()
    assert "MatMul" in text and "layer1/MatMul:0" in text and "reason" in text
    assert "defined at" in text.lower()
    page.screenshot(path=str(ARTIFACTS / "graph_view_panel.png"))

    # The stage switch: after partitioning, the Send/Recv nodes and their edges show.
    view.locator("select.fl-stage").select_option("partitioned")
    page.wait_for_function("() => document.querySelector('svg.fl-svg').dataset.stage === 'partitioned'")
    view.locator(".fl-node-send").first.wait_for()
    assert view.locator(".fl-node-recv").count() >= 1
    assert view.locator("path.fl-edge-t").count() >= 1
    assert view.locator(".fl-cluster-partition").count() == 2
    page.screenshot(path=str(ARTIFACTS / "graph_view_partitioned.png"))

    # Steps still running light the partitioned stage, and Send/Recv edges show bytes.
    page.locator(".fl-edge-bytes[data-bytes]").first.wait_for(timeout=30_000, state="attached")
    assert "B" in page.locator(".fl-edge-bytes[data-bytes]").first.text_content()

    # After a kernel restart the view says so, and still shows its picture.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    view.locator(".fl-status", has_text="kernel gone").wait_for(timeout=30_000)
    assert view.locator(".fl-node").count() > 0
    page.screenshot(path=str(ARTIFACTS / "graph_view_kernel_gone.png"))
    page.close()


def test_a_node_named_like_html_is_text(lab):
    page = lab.open("html_name.ipynb", HTML_NAME)
    lab.run_all(page)
    view = _view(page)
    labels = view.locator(".fl-node-label").all_text_contents()
    assert any(EVIL in t for t in labels), labels
    assert view.locator("img").count() == 0
    assert page.locator("img[src=x]").count() == 0
    view.locator(".fl-node").first.click()
    view.locator(".fl-panel-title").wait_for()
    time.sleep(1.0)  # the kernel's details arrive; an injected script would have run
    assert EVIL in view.locator(".fl-panel").inner_text()
    assert view.locator(".fl-panel img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    page.screenshot(path=str(ARTIFACTS / "graph_view_html_name.png"))
    page.close()


def _api(lab: Lab, path: str, method: str = "GET") -> Any:
    req = urllib.request.Request(f"{lab.base}{path}", method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    return json.loads(body) if body else None


TIMELINE = """\
with fl.profile(sess) as prof:
    for _ in range(2):
        sess.run(z, {x: np.ones((2, 3), np.float32)})
fl.viz.TimelineView(prof, graph=view)
"""


def test_a_reopened_notebook_draws_its_saved_picture(lab):
    page = lab.open("saved.ipynb", SETUP, TIMELINE)
    lab.run_cell(page, 0)
    view = _view(page)
    drawn = view.locator(".fl-node").count()
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                           ".session.kernel.status === 'idle'")
    # The README's picture: the placed stage with a node's panel open, before any step
    # (nothing that changes from run to run is shown).
    view.locator('.fl-node[data-name="layer1/MatMul"]').click()
    view.locator(".fl-panel", has_text="defined at").wait_for()
    view.locator(".fl-status", has_text="live").wait_for()
    save_image(view, "graph-view.png")
    lab.run_cell(page, 1)  # a timeline linked with the view, saved with it
    timeline = page.locator(".fl-timeline-view")
    timeline.locator(".fl-bar").first.wait_for()
    bars = timeline.locator(".fl-bar").count()
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                           ".session.kernel.status === 'idle'")
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.monotonic() + 30
    state: dict[str, Any] = {}
    while time.monotonic() < deadline and not state:
        nb = _api(lab, "/api/contents/saved.ipynb")["content"]
        state = nb["metadata"].get("widgets", {}).get(
            "application/vnd.jupyter.widget-state+json", {}).get("state", {})
        time.sleep(0.5)
    ours = [m for m in state.values() if m["model_name"] == "GraphModel"]
    assert len(ours) == 1 and ours[0]["state"]["layouts"]["placed"]["nodes"]
    size = len(json.dumps(ours[0]))
    assert size < 100_000, size
    (ARTIFACTS / "saved_state_bytes.txt").write_text(f"{size}\n")
    page.close()
    for s in _api(lab, "/api/sessions"):  # no kernel keeps the old widgets alive
        _api(lab, f"/api/sessions/{s['id']}", method="DELETE")

    page = lab.open("saved.ipynb")  # not run: drawn from the saved state alone
    view = _view(page)
    assert view.locator(".fl-node").count() == drawn
    view.locator(".fl-status", has_text="kernel gone").wait_for()
    view.locator('.fl-node[data-name="layer2/sum"]').click()
    assert "layer2/sum" in view.locator(".fl-panel").inner_text()
    # The timeline too, still linked with the graph (its reference is in the saved state).
    timeline = page.locator(".fl-timeline-view")
    timeline.locator(".fl-bar").first.wait_for()
    assert timeline.locator(".fl-bar").count() == bars
    assert "a saved timeline (no kernel)" in timeline.locator(".fl-status").inner_text()
    timeline.locator('.fl-bar[data-name="layer1/MatMul"]').first.hover()
    view.locator('.fl-node.fl-linked[data-name="layer1/MatMul"]').wait_for()
    page.screenshot(path=str(ARTIFACTS / "graph_view_reopened.png"))
    page.close()


def test_opening_a_scope_redraws_its_stage_and_keeps_the_others(lab):
    setup = SETUP.replace("height=420)", "height=420, collapse=['layer1'])")
    page = lab.open("scope.ipynb", setup)
    lab.run_all(page)
    view = _view(page)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                           ".session.kernel.status === 'idle'")
    assert view.locator('.fl-node[data-name="layer1/MatMul"]').count() == 0
    view.locator('.fl-node-scope[data-name="layer1"]').dispatch_event("dblclick")
    view.locator('.fl-node[data-name="layer1/MatMul"]').wait_for()  # the kernel's new layout
    view.locator(".fl-cluster-scope").first.wait_for()
    # The other stages are as they were: layer1 still one box after partitioning.
    view.locator("select.fl-stage").select_option("partitioned")
    view.locator('.fl-node-scope[data-name="layer1"]').wait_for()
    view.locator("select.fl-stage").select_option("placed")
    view.locator('.fl-node[data-name="layer1/MatMul"]').wait_for()
    page.close()

