"""The runtime's passes over one step, as pictures (paper section 3.2; TensorFlow never
shows these).

`passes(sess, fetches, feed_dict)` asks the session for each stage of the step it
would run and returns them in order: the full graph, the pruned graph (only what the
fetches need, cut at the feeds), the optimized graph, the placed graph (colored by
device, cross-device edges in red) and the partitions with their Send/Recv pairs.
A stage the session cannot show (no optimizer, no partitioner in this build) is left
out, and `Passes.missing` says which and why.  Nothing is run: only the session's
compile-time passes are asked.
"""

from __future__ import annotations

import html
from typing import Any

import graphviz

from flowlab.graph.graph_def import graph_to_dict
from flowlab.profiler.trace import plural
from flowlab.viz.model import Picture, from_graph_def, from_ops, reasons_of, to_picture


class Passes:
    """The stages of a step: `[(stage name, Picture), ...]`; shown side by side."""

    def __init__(self, stages: list[tuple[str, Picture]], missing: dict[str, str] | None = None,
                 **draw: Any) -> None:
        self.stages = stages
        self.missing = missing or {}
        self._draw = draw

    def __len__(self) -> int:
        return len(self.stages)

    def __iter__(self) -> Any:
        return iter(self.pictures())

    def __getitem__(self, key: int | str) -> graphviz.Digraph:
        """A stage's picture, by position or by name ("pruned", "placed", ...)."""
        if isinstance(key, str):
            for name, pic in self.stages:
                if name == key:
                    return self._dot(pic)
            raise KeyError(f"no stage {key!r}; stages: {', '.join(n for n, _ in self.stages)}")
        return self._dot(self.stages[key][1])

    def names(self) -> list[str]:
        return [n for n, _ in self.stages]

    def pictures(self) -> list[graphviz.Digraph]:
        return [self._dot(p) for _, p in self.stages]

    def _dot(self, pic: Picture) -> graphviz.Digraph:
        from flowlab.viz import to_dot

        return to_dot(pic, **self._draw)

    def __repr__(self) -> str:
        lines = ["<flowlab.viz.Passes"]
        for name, pic in self.stages:
            devs = pic.devices() if pic.placed else []
            extra = f" on {plural(len(devs), 'device')}" if devs else ""
            lines.append(f"  {name}: {plural(len(pic.nodes), 'op')}{extra}")
        for name, why in self.missing.items():
            lines.append(f"  {name}: not shown ({why})")
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str | None:
        """The stages side by side, each fitted and zoomable (`viz.show.zoomable_html`):
        a stage takes its natural width when the row has room for it, and shrinks to
        the output's width when it is wider."""
        from flowlab.viz import svg
        from flowlab.viz.show import natural_size, zoomable_html

        cells = []
        for (name, _), dot in zip(self.stages, self.pictures()):
            s = svg(dot)
            if s is None:
                return None  # no dot binary: the text repr is shown
            width, _ = natural_size(s)
            cells.append(
                f'<div style="flex:0 1 {width:.0f}px;min-width:0;max-width:100%;margin:0 12px 12px 0;">'
                f"{zoomable_html(s, title=name)}</div>"
            )
        for name, why in self.missing.items():
            cells.append(
                '<div style="flex:0 0 auto;margin:0 12px 12px 0;color:#888;font-family:sans-serif">'
                f"<b>{html.escape(name)}</b><br>{html.escape(why)}</div>"
            )
        return '<div style="display:flex;flex-wrap:wrap;align-items:flex-start;">' + "".join(cells) + "</div>"

    def select(self, *names: str) -> Passes:
        """The same step with only the stages named (in the order given), e.g.
        `passes.select("pruned", "optimized")` when the full graph is shown elsewhere.

        Raises:
          KeyError: a name is not one of `names()`.
        """
        by_name = dict(self.stages)
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise KeyError(f"no stage {unknown[0]!r}; stages: {', '.join(self.names())}")
        return Passes([(n, by_name[n]) for n in names],
                      {k: v for k, v in self.missing.items() if k in names}, **self._draw)


def passes(sess: Any, fetches: Any, feed_dict: Any = None, **draw: Any) -> Passes:
    """Pictures of each pass the session makes over the step `sess.run(fetches, feed_dict)`.

    Args:
      sess: a flowlab Session.
      fetches, feed_dict: the step, as `Session.run` takes them (feed values only
        matter to stages that need them).
      **draw: drawing options of `flowlab.viz.graph` (collapse_above, expand, ...).

    Returns:
      A `Passes`: `passes[i]` or `passes["placed"]` is a graphviz Digraph; in a notebook
      the stages show side by side.
    """
    from flowlab.runtime.client.fetches import FetchMapper
    from flowlab.runtime.master.prune import prune

    g = sess.graph
    mapper = FetchMapper(g, fetches)
    feeds = _feed_tensors(g, feed_dict)
    stages: list[tuple[str, Picture]] = []
    missing: dict[str, str] = {}
    stages.append(("full graph", from_graph_def(graph_to_dict(g), title="full graph")))
    ops = prune(mapper.tensors, mapper.targets, feeds)
    stages.append(("pruned", from_ops(ops, title="pruned")))

    optimized = _optimization(sess, fetches, feed_dict, feeds, mapper)
    if optimized is None:
        missing["optimized"] = "this session has no graph optimization pass"
    else:
        stages.append(("optimized", to_picture(optimized, graph=g, title="optimized")))

    placement = _call(sess, ("placement",), fetches, feed_dict)
    if placement is None:
        placement = sess._plan_for(feeds, mapper.tensors, mapper.targets).placement
    placed_ops = [op for op in ops if op.name in placement.device_of] or ops
    stages.append(("placed", from_ops(placed_ops, placement.device_of, reasons_of(placement),
                                      title="placed")))

    parts = _call(sess, ("partitions",), fetches, feed_dict)
    if parts is None:
        missing["partitioned"] = "this session cannot partition yet"
    else:
        stages.append(("partitioned", to_picture(parts, graph=g, title="partitioned")))
    return Passes(stages, missing, **draw)


def _call(sess: Any, names: tuple[str, ...], fetches: Any, feed_dict: Any) -> Any:
    for name in names:
        fn = getattr(sess, name, None)
        if callable(fn):
            return fn(fetches, feed_dict)
    return None


def _optimization(sess: Any, fetches: Any, feed_dict: Any, feeds: list[Any], mapper: Any) -> Any:
    """The session's optimization of the step: `sess.optimization(...)`, or
    `flowlab.runtime.master.optimize.optimization(sess, ...)`, or the cached plan's."""
    found = _call(sess, ("optimization",), fetches, feed_dict)
    if found is not None:
        return found
    try:
        from flowlab.runtime.master import optimize as opt_mod
    except ImportError:
        return None
    fn = getattr(opt_mod, "optimization", None)
    if callable(fn):
        return fn(sess, fetches, feed_dict)
    plan = sess._plan_for(feeds, mapper.tensors, mapper.targets)
    return getattr(plan, "optimization", None)


def _feed_tensors(g: Any, feed_dict: Any) -> list[Any]:
    out = []
    for key in (feed_dict or {}):
        if hasattr(key, "_feed_parts"):
            out.extend(key._feed_parts())
        else:
            out.append(g.as_graph_element(key, allow_tensor=True, allow_operation=False))
    return out
