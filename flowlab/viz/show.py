"""`fl.show(obj)`: the best view of an object the front end can show.

With flowlab's JupyterLab extension installed (its Python side is the module
`flowlab.viz.widgets`, whose `available()` says whether the front end is there too),
`show` displays the live widget for the object; otherwise it displays the static SVG
picture of `flowlab.viz.graph(obj)`, fitted to the output's width and zoomable.  The
extension is looked for, never required: without it, or outside a notebook, nothing
fails.

Outside IPython there is nothing to display into: `show` then returns the graphviz
Digraph (render it with `.render(...)`, or read `.source`).

How a static picture is shown (`zoomable_html`): dot writes an SVG at its natural size
(a graph of a hundred ops is thousands of pixels wide), and a notebook's output area is
about a thousand.  The picture is drawn inline, `width="100%"` of the output area with its
`viewBox` kept, so it scales to fit and never past its natural size (`max-width`); the
buttons above it zoom in and out and go back to "fit", and a zoomed picture scrolls in
its box.  Without JavaScript (an untrusted notebook) the picture still fits.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import re
from typing import Any

import graphviz

WIDGETS_MODULE = "flowlab.viz.widgets"


def extension_available() -> bool:
    """Whether flowlab's JupyterLab extension (widget views) can be used here."""
    try:
        if importlib.util.find_spec(WIDGETS_MODULE) is None:
            return False
        mod = importlib.import_module(WIDGETS_MODULE)
    except ImportError:
        return False
    available = getattr(mod, "available", None)
    try:
        return bool(available()) if callable(available) else False
    except Exception:  # noqa: BLE001 - a broken front end means: use the SVG
        return False


def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def show(obj: Any, **kwargs: Any) -> Any:
    """Show `obj` (a Graph, GraphDef, Placement, partitions, Trace, Stepper, ...).

    Args:
      obj: anything `flowlab.viz.graph` draws, a graphviz Digraph, or the `Passes` of
        `flowlab.viz.passes`.
      **kwargs: drawing options of `flowlab.viz.graph` (trace=, collapse_above=,
        expand=, ...), or of the widget when the extension is used.

    Returns:
      None in a notebook (the view is displayed); outside IPython, the graphviz
      Digraph of the picture.
    """
    from flowlab import viz

    ip = _ipython()
    if ip is not None and extension_available():
        widgets = importlib.import_module(WIDGETS_MODULE)
        view = widgets.view(obj, **kwargs)
        from IPython.display import display

        display(view)
        return None
    if isinstance(obj, viz.Passes):  # several pictures: they show side by side themselves
        if ip is None:
            return obj
        from IPython.display import display

        display(obj)
        return None
    picture = obj if isinstance(obj, graphviz.Digraph) else viz.graph(obj, **kwargs)
    if ip is None:
        return picture
    from IPython.display import HTML, display

    svg = viz.svg(picture)
    if svg is None:  # no `dot` binary: show the DOT text rather than nothing
        print("flowlab.show: the graphviz `dot` program is not installed (apt install graphviz); "
              "the picture's DOT source follows.\n")
        print(picture.source)
        return None
    display(HTML(zoomable_html(svg)))
    return None


_SVG_TAG = re.compile(r"<svg\b[^>]*>", re.S)
_LENGTH = re.compile(r"^\s*([0-9.]+)\s*(pt|px)?\s*$")


def natural_size(svg: str) -> tuple[float, float]:
    """The width and height (in CSS px) an SVG asks for: `width="134pt"` is 178.7 px."""
    tag = _SVG_TAG.search(svg)
    if tag is None:
        raise ValueError("not an SVG document: no <svg> element")
    size = []
    for attr in ("width", "height"):
        m = re.search(rf'\s{attr}="([^"]*)"', tag.group(0))
        n = _LENGTH.match(m.group(1)) if m else None
        if n is None:
            raise ValueError(f"the <svg> element has no absolute {attr} (got {m.group(1) if m else None!r})")
        size.append(float(n.group(1)) * (4 / 3 if n.group(2) == "pt" else 1.0))
    return size[0], size[1]


def fitted_svg(svg: str) -> str:
    """`svg` (dot's output) as an inline `<svg>` that fits its container's width.

    The XML prolog, doctype and comments before the element go; the element gets
    `width="100%"`, no height (its `viewBox` gives the aspect ratio) and a `max-width` of
    its natural size, so a small picture is not blown up.

    >>> fitted_svg('<svg width="150pt" height="75pt" viewBox="0 0 150 75"></svg>')
    '<svg width="100%" viewBox="0 0 150 75" style="max-width:200px;height:auto;display:block"></svg>'
    """
    width, _ = natural_size(svg)
    tag = _SVG_TAG.search(svg)
    assert tag is not None  # natural_size checked it
    head = re.sub(r'\s(width|height|style)="[^"]*"', "", tag.group(0))
    if "viewBox=" not in head:
        raise ValueError("the <svg> element has no viewBox: it cannot be scaled")
    head = head.replace("<svg", '<svg width="100%"', 1)
    head = head[:-1].rstrip() + f' style="max-width:{width:.0f}px;height:auto;display:block">'
    return head + svg[tag.end():]


# The zoom buttons act on the <svg> in their own box; zoom is relative to the natural size.
_ZOOM_JS = (
    "var b=this.closest('.flowlab-picture'),s=b.querySelector('svg'),"
    "w=parseFloat(b.dataset.width),z=parseFloat(b.dataset.zoom||'0');"
    "if(!z){{z=s.getBoundingClientRect().width/w;}}"
    "z={expr};b.dataset.zoom=z;"
    "if(z){{s.style.maxWidth='none';s.style.width=(w*z)+'px';}}"
    "else{{s.style.maxWidth=w+'px';s.style.width='100%';}}"
)


def zoomable_html(svg: str, title: str | None = None) -> str:
    """An HTML block showing `svg` fitted to the output's width, with zoom buttons.

    Args:
      svg: an SVG document with absolute width/height and a viewBox (dot's output).
      title: an optional heading shown above the picture (escaped, plain text).

    Returns:
      `<div class="flowlab-picture" data-width=...>` holding the buttons and the
      fitted `<svg>` (see `fitted_svg`); the box scrolls when the picture is zoomed.
    """
    width, _ = natural_size(svg)
    buttons = "".join(
        f'<button type="button" title="{tip}" style="font-size:11px;padding:0 6px;margin-right:2px" '
        f'onclick="{html.escape(_ZOOM_JS.format(expr=expr))}">{label}</button>'
        for label, tip, expr in (
            ("fit", "fit the width", "0"),
            ("\u2212", "zoom out", "z/1.5"),
            ("+", "zoom in", "z*1.5"),
            ("1:1", "natural size", "1"),
        )
    )
    head = (f'<span style="font:bold 12px sans-serif;margin-right:8px">{html.escape(title)}</span>'
            if title else "")
    return (
        f'<div class="flowlab-picture" data-width="{width:.0f}" '
        'style="max-width:100%;overflow:auto">'
        f'<div style="margin:0 0 2px 0">{head}{buttons}</div>{fitted_svg(svg)}</div>'
    )
