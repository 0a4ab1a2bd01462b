"""TimelineView and StepperView in a real JupyterLab, in the system Chromium.

The timeline: it draws a profiled step's lanes, bars and Send/Recv flows; hovering a bar
shows the op's details and lights its node in the linked GraphView; clicking a bar
selects that node (its panel opens); clicking a node marks its bars.  The Stepper: its
buttons advance the step (step, step n, run to the selected node, continue), a click on
a node in break mode sets a breakpoint, stop on NaN/Inf names the op, abort ends it, and
after a kernel restart the panel says the kernel is gone.
"""

from __future__ import annotations

import json
import shutil

import pytest

from flowlab.viz.widgets import labextension_installed
from tests.browser.lab import ARTIFACTS, save_image
from tests.browser.test_graph_view import EVIL

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not labextension_installed(),
                       reason="the flowlab-widgets labextension is not built (scripts/_setup.sh)"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed"),
]

GRAPH = """\
import dataclasses
import numpy as np
import flowlab as fl
g = fl.Graph()
with g.as_default():
    x = fl.placeholder(fl.float32, [None, 3], name="x")
    with fl.name_scope("layer1"):
        w = fl.Variable(np.ones((3, 4), np.float32), name="w")
        y = fl.nn.relu(fl.matmul(x, w))
    with fl.device("/cpu:1"), fl.name_scope("layer2"):
        z = fl.reduce_sum(fl.log(y - 3.0), name="sum")
    init = fl.global_variables_initializer()
sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
sess.run(init)
feed = {x: np.ones((2, 3), np.float32)}
"""

TIMELINE = GRAPH + """\
with fl.profile(sess) as prof:
    for _ in range(3):
        sess.run(z, feed)
# The same records on a fixed clock (each op 10 us, 2 us apart, in the order they ran),
# steps and thread numbered from 1: the picture saved for the docs changes only when
# the UI does.
recs, t = [], 0.0
for k, s in enumerate(prof.trace.steps):
    for r in prof.trace.step(s).ops:
        recs.append(dataclasses.replace(r, start_us=t, end_us=t + 10.0, step_id=k + 1, thread=1))
        t += 12.0
    t += 30.0
trace = fl.profiler.Trace(recs, {1: "executor"})
view = fl.viz.GraphView(sess, z, feed, live=False, height=300)
view
"""

TIMELINE_2 = """\
fl.viz.TimelineView(trace, graph=view)
"""

STEPPER = GRAPH + """\
sv = fl.viz.StepperView(sess, z, feed, height=300)
sv
"""


def test_timeline_renders_hovers_and_links_with_the_graph(lab):
    page = lab.open("timeline.ipynb", TIMELINE, TIMELINE_2)
    lab.run_all(page)
    tl = page.locator(".fl-timeline-view")
    tl.locator(".fl-bar").first.wait_for(timeout=90_000)
    graph = page.locator(".fl-graph-view")
    graph.locator(".fl-node").first.wait_for()
    assert tl.locator(".fl-lane-label").all_text_contents() == ["CPU:0", "CPU:1"]
    assert tl.locator(".fl-step-title").count() == 3
    assert tl.locator(".fl-bar").count() == 3 * 11
    assert tl.locator("line.fl-flow").count() == 3  # one Send -> Recv per step
    assert "3 steps" in tl.locator(".fl-status").inner_text()

    # Hover: the op's details, as text, and its node lights in the graph.
    bar = tl.locator('.fl-bar[data-name="layer1/MatMul"]').first
    bar.hover()
    tip = tl.locator(".fl-tip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "layer1/MatMul" in text and "MatMul" in text and "float32 (2, 4) 32 B" in text
    assert "10 µs" in text and "CPU:0" in text
    graph.locator('.fl-node.fl-linked[data-name="layer1/MatMul"]').wait_for()
    save_image(tl, "timeline.png")

    # Click a bar: the graph selects its node and opens its panel.
    tl.locator('.fl-bar[data-name="layer2/Log"]').nth(1).click()
    graph.locator(".fl-panel-title", has_text="layer2/Log").wait_for()
    assert graph.locator('.fl-node.fl-selected[data-name="layer2/Log"]').count() == 1

    # Click a node: its bars, one per step, are marked.
    graph.locator('.fl-node[data-name="layer2/sum"]').click()
    page.wait_for_function("() => document.querySelectorAll('.fl-bar-marked').length === 3")
    marked = tl.locator(".fl-bar-marked").evaluate_all("els => els.map(e => e.dataset.name)")
    assert marked == ["layer2/sum"] * 3
    assert "layer2/sum: 3 bars" in tl.locator(".fl-status").inner_text()

    # What is shown, downloaded as Chrome trace events (what Perfetto opens).
    with page.expect_download() as dl:
        tl.locator(".fl-export").click()
    events = json.loads(open(dl.value.path()).read())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 33
    assert sorted(e["ph"] for e in events if e.get("cat") == "transfer") == ["f"] * 3 + ["s"] * 3
    mm = [e for e in events if e["ph"] == "X" and e["name"] == "layer1/MatMul"]
    assert len(mm) == 3 and mm[0]["dur"] == 10 and mm[0]["cat"] == "MatMul"

    # Zoom in: bars get wider.
    width = float(bar.get_attribute("width"))
    tl.locator(".fl-zoom-in").click()
    assert float(bar.get_attribute("width")) == pytest.approx(2 * width, rel=0.01)
    page.screenshot(path=str(ARTIFACTS / "timeline_linked.png"))
    page.close()


def _click_node(graph, name: str) -> None:
    """Click node `name` of the graph, wherever the fitted view put it (a tall graph
    fitted to its width shows its top: a node below is in the page but not on screen)."""
    graph.locator(f'.fl-node[data-name="{name}"]').dispatch_event("click")


def _ran(panel) -> int:
    return int(panel.locator(".fl-stepper").get_attribute("data-ran"))


def test_stepper_buttons_advance_the_step(lab):
    page = lab.open("stepper.ipynb", STEPPER)
    lab.run_all(page)
    panel = page.locator(".fl-stepper-view")
    panel.locator(".fl-queue-op").first.wait_for(timeout=90_000)
    graph = page.locator(".fl-graph-view")
    graph.locator(".fl-node").first.wait_for()
    assert _ran(panel) == 0
    text = panel.text_content()
    assert "ready on CPU:0" in text and "ready on CPU:1" in text
    # The op to run next is outlined in the graph.
    first = panel.locator('.fl-queue[data-device="CPU:0"] .fl-queue-op').first.inner_text()
    graph.locator(f'.fl-node.fl-state-next[data-name="{first}"]').wait_for()

    def wait_ran(k: int) -> None:
        page.wait_for_function(f"() => document.querySelector('.fl-stepper').dataset.ran === '{k}'")

    panel.locator("button.fl-step").click()
    wait_ran(1)
    graph.locator(f'.fl-node.fl-state-done[data-name="{first}"]').wait_for()
    panel.locator("input.fl-count").fill("2")
    panel.locator("button.fl-step-n").click()
    wait_ran(3)
    assert "stepped 2 ops" in panel.locator(".fl-stop").inner_text()

    # Run to the node selected in the graph; the inspector shows its output.
    _click_node(graph, "layer1/Relu")
    panel.locator(".fl-selected-op", has_text="layer1/Relu").wait_for()
    panel.locator("button.fl-run-to").click()
    panel.locator(".fl-stop", has_text="stopped after 'layer1/Relu' (run_to)").wait_for()
    panel.locator(".fl-inspected", has_text="layer1/Relu:0").wait_for()
    assert panel.locator(".fl-inspect-shape").inner_text() == "(2, 4)"
    assert panel.locator(".fl-inspect-max").inner_text() == "3"
    assert panel.locator(".fl-hist rect").count() >= 1

    # Break mode: a click on a node sets a breakpoint there.
    panel.locator("input.fl-break-mode").check()
    _click_node(graph, "layer2/sum")
    panel.locator(".fl-breakpoints li", has_text="layer2/sum").wait_for()
    graph.locator('.fl-node.fl-state-break[data-name="layer2/sum"]').wait_for()
    panel.locator("input.fl-break-mode").uncheck()

    # Stop on NaN/Inf: continue stops after the op that made the Inf, naming it.
    panel.locator("input.fl-nan").check()  # messages keep their order: no wait needed
    panel.locator("button.fl-continue").click()
    stop = panel.locator(".fl-stop-nan_or_inf")
    stop.wait_for()
    assert "layer2/Log" in stop.inner_text() and "8 Inf" in stop.inner_text()
    graph.locator('.fl-node.fl-state-stopped[data-name="layer2/Log"]').wait_for()
    assert panel.locator(".fl-inspect-inf").inner_text() == "8"

    # Continue again: the breakpoint before layer2/sum.
    panel.locator("button.fl-continue").click()
    panel.locator(".fl-stop-breakpoint", has_text="layer2/sum").wait_for()
    page.screenshot(path=str(ARTIFACTS / "stepper.png"))

    panel.locator("button.fl-abort").click()
    page.wait_for_function("() => document.querySelector('.fl-stepper').dataset.status === 'aborted'")
    assert panel.locator("button.fl-step").is_disabled()

    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    panel.locator(".fl-error", has_text="kernel gone").wait_for(timeout=30_000)
    page.close()


def test_timeline_names_are_text(lab):
    cell = f"""\
import flowlab as fl
from flowlab.profiler.trace import OpRecord, Trace
fl.viz.TimelineView(Trace([OpRecord({EVIL!r}, "Const", "/device:CPU:0", "", 1, 0.0, 5.0)]))
"""
    page = lab.open("timeline_html.ipynb", cell)
    lab.run_all(page)
    tl = page.locator(".fl-timeline-view")
    tl.locator(".fl-bar").first.wait_for(timeout=90_000)
    tl.locator(".fl-bar").first.hover()
    tl.locator(".fl-tip-title").wait_for(state="visible")
    assert tl.locator(".fl-tip-title").inner_text() == EVIL
    assert page.locator("img[src=x]").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    page.close()
