"""graph/display.py: the lower layers' objects display through the drawer flowlab.viz
registers, and as text without one."""

from __future__ import annotations

import flowlab as fl
import flowlab.viz
from flowlab.graph import display


def test_viz_registers_its_drawer():
    assert display._drawer is flowlab.viz.mimebundle


def test_a_graph_displays_as_text_without_a_drawer(monkeypatch):
    g = fl.Graph()
    with g.as_default():
        fl.constant(1.0, name="c")
    monkeypatch.setattr(display, "_drawer", None)
    assert g._repr_mimebundle_() == {"text/plain": repr(g)}
    assert g._repr_svg_() is None


def test_the_drawer_gets_the_object_and_the_mime_filters(monkeypatch):
    seen = []
    monkeypatch.setattr(display, "_drawer",
                        lambda obj, include, exclude: seen.append((obj, include, exclude)) or {"x": "y"})
    g = fl.Graph()
    assert g._repr_mimebundle_(include=["image/svg+xml"]) == {"x": "y"}
    assert seen == [(g, ["image/svg+xml"], None)]
