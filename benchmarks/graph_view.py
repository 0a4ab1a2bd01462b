"""GraphView's render-time targets, in a real JupyterLab and headless Chromium.

  .venv/bin/python benchmarks/graph_view.py            # prints one JSON object

Measures (issue: the JupyterLab extension):
  - first render of a 2,000-op unrolled LSTM with scopes collapsed: from running the
    cell `GraphView(g)` to its nodes drawn in the page (kernel layout, comm, drawing);
  - expanding one scope of it (double-click -> the re-laid-out stage drawn);
  - first render of a 20,000-op one;
  - the saved widget state of the 2,000-op view (bytes of its JSON);
  - the live view's cost on a 200-step training loop: the loop with and without a live
    GraphView watching the session, 24 interleaved A/B rounds with one view in the same kernel, the
    order alternating (median ratio of the times).
The kernel-side layout alone is measured too (`GraphView(g)` in this process).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LSTM = """\
import json, time, statistics
import numpy as np
import flowlab as fl

def lstm(steps, hidden=8):
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, hidden], name="x")
        h = fl.zeros([1, hidden])
        c = fl.zeros([1, hidden])
        W = fl.Variable(np.ones((2 * hidden, 4 * hidden), np.float32) * 0.01, name="W")
        for t in range(steps):
            with fl.name_scope(f"step_{t}"):
                i, f, o, u = fl.split(fl.matmul(fl.concat([x, h], 1), W), 4, axis=1)
                c = fl.sigmoid(f) * c + fl.sigmoid(i) * fl.tanh(u)
                h = fl.sigmoid(o) * fl.tanh(c)
        fl.reduce_sum(h, name="loss")
    return g

g2k = lstm(140)
g20k = lstm(1400)
print(len(g2k.get_operations()), len(g20k.get_operations()))
"""

VIEW_2K = "v2k = fl.viz.GraphView(g2k)\nv2k"
VIEW_20K = "v20k = fl.viz.GraphView(g20k)\nv20k"
STATE = "print('STATE', len(json.dumps(v2k.get_state())))"

AB = """\
def train_graph():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 32], name="x")
        y = fl.placeholder(fl.float32, [None, 1], name="y")
        h = x
        for k in range(3):
            with fl.name_scope(f"dense_{k}"):
                w = fl.Variable(np.random.RandomState(k).randn(h.shape[1], 32).astype(np.float32) * 0.1)
                h = fl.nn.relu(fl.matmul(h, w))
        with fl.name_scope("out"):
            w = fl.Variable(np.zeros((32, 1), np.float32))
            loss = fl.reduce_mean(fl.square(fl.matmul(h, w) - y))
        train = fl.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = fl.global_variables_initializer()
    return g, x, y, loss, train, init

g, x, y, loss, train, init = train_graph()
sess = fl.Session(graph=g)
sess.run(init)
feed = {x: np.ones((64, 32), np.float32), y: np.ones((64, 1), np.float32)}
def loop():
    t = time.perf_counter()
    for _ in range(200):
        sess.run(train, feed)
    return time.perf_counter() - t
loop()
# One view, laid out once (its layout is not part of a step's cost); its live bridge
# on or off around each loop, interleaved, the order alternating, so that the
# machine's noise falls on both sides alike.
view = fl.viz.GraphView(sess, train, feed)
view.stop()
ratios, on_s, off_s = [], 0.0, 0.0
for r in range(24):
    if r % 2:
        view.bridge.start(); on = loop(); view.bridge.stop(); off = loop()
    else:
        off = loop(); view.bridge.start(); on = loop(); view.bridge.stop()
    ratios.append(on / off)
    on_s += on
    off_s += off
view.close()
print("AB", json.dumps({"ratios": [round(q, 3) for q in ratios],
                        "median": round(statistics.median(ratios), 3),
                        "total_on_over_off": round(on_s / off_s, 3)}))
"""


def _run_cell(page, index: int) -> None:
    page.evaluate(f"""() => {{
        const nb = window.jupyterapp.shell.currentWidget;
        nb.content.activeCellIndex = {index};
        window.jupyterapp.commands.execute('notebook:run-cell');
    }}""")


def _done(page, index: int, timeout_ms: int = 600_000) -> None:
    """Wait until cell `index` has run: its prompt shows an execution count."""
    page.wait_for_function(
        f"() => /\\[\\d+\\]/.test(document.querySelectorAll('.jp-Cell')[{index}]"
        ".querySelector('.jp-InputPrompt').textContent)", timeout=timeout_ms)


def _output(page, index: int) -> str:
    return page.locator(".jp-Cell").nth(index).locator(".jp-OutputArea").inner_text()


def in_kernel_layout() -> dict[str, float]:
    """GraphView(g) in this process (layout only, no browser)."""
    ns: dict[str, object] = {}
    exec(LSTM.replace("print(", "(lambda *a: None)("), ns)  # noqa: S102 - our own source
    from flowlab.viz.widgets import GraphView

    out = {}
    for key in ("g2k", "g20k"):
        t = time.perf_counter()
        GraphView(ns[key])
        out[f"layout_{key}_s"] = round(time.perf_counter() - t, 3)
    return out


def main() -> None:
    from tests.browser.lab import ARTIFACTS, jupyter_lab

    figures: dict[str, object] = in_kernel_layout()
    with tempfile.TemporaryDirectory() as tmp, jupyter_lab(Path(tmp)) as lab:
        page = lab.open("bench.ipynb", LSTM, VIEW_2K, STATE, STATE, VIEW_20K, AB)
        _run_cell(page, 0)
        _done(page, 0)
        figures["ops"] = _output(page, 0).strip()

        t = time.perf_counter()
        _run_cell(page, 1)
        view = page.locator(".fl-graph-view").first
        view.locator(".fl-node").first.wait_for(timeout=120_000)
        figures["first_render_2k_s"] = round(time.perf_counter() - t, 3)
        drawn = view.locator(".fl-node").count()
        figures["drawn_nodes_2k"] = drawn
        _done(page, 1)
        page.screenshot(path=str(ARTIFACTS / "bench_2k.png"))
        _run_cell(page, 2)
        _done(page, 2)
        figures["saved_state_2k_bytes"] = int(_output(page, 2).split()[-1])

        times = []
        for k in (10, 70, 130):
            t = time.perf_counter()
            # The event itself: a scope below the fitted view is in the page, not on screen.
            view.locator(f'.fl-node-scope[data-name="step_{k}"]').dispatch_event("dblclick")
            view.locator(f'.fl-node[data-name="step_{k}/MatMul"]').wait_for(timeout=60_000)
            times.append(time.perf_counter() - t)
            page.wait_for_timeout(300)
        figures["expand_scope_s"] = [round(x, 3) for x in times]
        figures["expand_scope_median_s"] = round(statistics.median(times), 3)

        _run_cell(page, 3)
        _done(page, 3)
        figures["saved_state_2k_after_3_expands_bytes"] = int(_output(page, 3).split()[-1])

        t = time.perf_counter()
        _run_cell(page, 4)
        view20 = page.locator(".fl-graph-view").nth(1)
        view20.locator(".fl-node").first.wait_for(timeout=300_000)
        figures["first_render_20k_s"] = round(time.perf_counter() - t, 3)
        figures["drawn_nodes_20k"] = view20.locator(".fl-node").count()
        _done(page, 4)

        _run_cell(page, 5)
        _done(page, 5)
        ab = [ln for ln in _output(page, 5).splitlines() if ln.startswith("AB ")]
        figures["live_overhead_200_steps"] = json.loads(ab[0][3:]) if ab else _output(page, 5)
        page.close()
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
