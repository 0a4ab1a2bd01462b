"""The notebook view of a trace: an inline SVG timeline above the summary tables.

The SVG needs nothing but the browser: one row per (device, thread) lane, one rect per
op colored by op type (waiting ops -- Recv, queue waits -- pale), its name and times in a `<title>` tooltip, Send->Recv pairs as
lines.  Every name is escaped: op names are user text, never markup.
"""

from __future__ import annotations

import html

from flowlab.profiler.summary import summarize
from flowlab.profiler.trace import Trace

__all__ = ["timeline_svg", "trace_html"]

_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac")
_MAX_OPS = 5000  # beyond this the SVG gets heavy; the tables still show everything




def timeline_svg(trace: Trace, width: int = 900, lane_height: int = 18) -> str:
    """An SVG Gantt chart of `trace` as a string."""
    lanes = [(d, th) for d in trace.devices for th in trace.threads(d)]
    color = {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(sorted({r.op_type for r in trace.ops}))}
    waiting = {id(r) for r in trace.queue_waits} | {
        id(r) for r in trace.ops if r.op_type in ("_Recv", "_HostRecv")}
    row = {lane: i for i, lane in enumerate(lanes)}
    label_w = 110
    span = max(trace.duration_us, 1.0)
    t0 = trace.start_us
    scale = (width - label_w - 10) / span
    height = lane_height * len(lanes) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'style="font: 11px sans-serif">']
    for (dev, th), i in row.items():
        y = i * lane_height
        name = dev.rsplit("/device:", 1)[-1]
        if len(trace.threads(dev)) > 1:
            name += f" t{trace.threads(dev).index(th)}"
        out.append(f'<text x="2" y="{y + lane_height - 5}">{html.escape(name)}</text>')
    for r in trace.ops[:_MAX_OPS]:
        y = row[(r.device, r.thread)] * lane_height + 2
        x = label_w + (r.start_us - t0) * scale
        w = max(r.duration_us * scale, 1.0)
        fill = "none" if r.dead else color[r.op_type]
        opacity = ' fill-opacity="0.3"' if id(r) in waiting else ""
        tip = (f"{r.name} ({r.op_type}) {r.duration_us:.1f} us"
               + (f", {r.frame} iteration {r.iteration}" if r.frame else "")
               + (", dead" if r.dead else f", {r.bytes} B"))
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{lane_height - 4}" '
                   f'fill="{fill}"{opacity} stroke="#333" stroke-width="0.3">'
                   f"<title>{html.escape(tip)}</title></rect>")
    for t in trace.transfers:
        if t.send is None or t.recv is None:
            continue
        x1 = label_w + (t.send.start_us + t.send.duration_us / 2 - t0) * scale
        y1 = row[(t.send.device, t.send.thread)] * lane_height + lane_height / 2
        x2 = label_w + (t.recv.end_us - t0) * scale
        y2 = row[(t.recv.device, t.recv.thread)] * lane_height + lane_height / 2
        tip = f"{t.tensor_name}: {t.bytes} B, wait {t.wait_us:.1f} us"
        out.append(f'<line x1="{x1:.2f}" y1="{y1}" x2="{x2:.2f}" y2="{y2}" stroke="crimson">'
                   f"<title>{html.escape(tip)}</title></line>")
    out.append(f'<text x="{label_w}" y="{height - 6}">0 us</text>'
               f'<text x="{width - 10}" y="{height - 6}" text-anchor="end">{span:,.0f} us</text>')
    out.append("</svg>")
    return "".join(out)


def trace_html(trace: Trace) -> str:
    """Header, SVG timeline and summary tables."""
    return (f"<div><b>{html.escape(repr(trace))}</b><div>{timeline_svg(trace)}</div>"
            f"{summarize(trace)._repr_html_()}</div>")
