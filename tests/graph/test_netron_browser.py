"""Netron, in a real Chromium, opens a GraphDef protobuf flowlab wrote with
`tf.train.write_graph`: its ops are drawn with TensorFlow's op types and flowlab's
node names.  Netron's page forbids `window.eval`, which Playwright's locators use, so
the test reads the page through the DevTools protocol (DOM.*) and clicks by position
(tests/browser_support.py: the server and the browser)."""

from __future__ import annotations

import sys
import time

import pytest

import flowlab as fl
from tests.browser_support import chromium, free_port, server

pytestmark = pytest.mark.slow


def _html(cdp) -> str:
    root = cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
    return cdp.send("DOM.getOuterHTML", {"nodeId": root["nodeId"]})["outerHTML"]


def _click_text(page, cdp, text: str) -> bool:
    """Click the centre of the first element whose text is `text`, if there is one."""
    cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
    found = cdp.send("DOM.performSearch", {"query": f"//*[text()='{text}']"})
    if not found["resultCount"]:
        return False
    (node,) = cdp.send("DOM.getSearchResults", {"searchId": found["searchId"], "fromIndex": 0,
                                                "toIndex": 1})["nodeIds"]
    try:
        quad = cdp.send("DOM.getBoxModel", {"nodeId": node})["model"]["content"]
    except Exception:  # noqa: BLE001 - not laid out yet: the caller tries again
        return False
    page.mouse.click(sum(quad[0::2]) / 4, sum(quad[1::2]) / 4)
    return True


def test_netron_draws_a_flowlab_graphdef(tmp_path):
    pytest.importorskip("netron")
    with fl.Graph().as_default() as g:
        with fl.name_scope("dense_layer"):
            x = fl.placeholder(fl.float32, [None, 3], name="x")
            w = fl.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="weights")
            fl.nn.relu(fl.matmul(x, w, name="product"), name="act")
        fl.train.write_graph(g, str(tmp_path), "model.pb", as_text=False)
    port = free_port()
    serve = (f"import netron, time; netron.serve({str(tmp_path / 'model.pb')!r}, None, "
             f"address=('127.0.0.1', {port}), browse=False); time.sleep(3600)")
    with server([sys.executable, "-c", serve], tmp_path / "netron.log",
                f"http://127.0.0.1:{port}/", timeout=60), chromium(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        page.goto(f"http://127.0.0.1:{port}/")
        html = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "MatMul" not in html:
            _click_text(page, cdp, "Accept")  # the usage-cookie notice, when shown
            page.wait_for_timeout(500)
            html = _html(cdp)
        page.screenshot(path=str(tmp_path / "netron.png"))
    for op_type in ("Placeholder", "MatMul", "Relu"):
        assert op_type in html, (op_type, (tmp_path / "netron.log").read_text()[-1000:])
    assert "dense_layer/product" in html and "dense_layer/act" in html  # flowlab's names
