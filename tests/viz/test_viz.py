"""flowlab.viz: the DOT pictures (no `dot` needed) and their SVG (skipped without it)."""

from __future__ import annotations

import re
import sys
import types

import numpy as np
import pytest

import flowlab as fl
from flowlab import viz
from flowlab.viz import model
from flowlab.viz.show import extension_available

needs_dot = pytest.mark.skipif(not viz.dot_available(), reason="the graphviz `dot` binary is not installed")


def _labels(dot) -> list[str]:
    return re.findall(r'label="((?:[^"\\]|\\.)*)"', dot.source) + re.findall(r"label=(\w+)", dot.source)


def _two_layer_graph():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        with fl.name_scope("layer1"):
            w = fl.Variable(np.ones((3, 4), np.float32), name="w")
            y = fl.nn.relu(fl.matmul(x, w))
        with fl.device("/cpu:1"), fl.name_scope("layer2"):
            z = fl.reduce_sum(y * 2.0, name="sum")
        with fl.control_dependencies([z]):
            done = fl.no_op(name="done")
    return g, x, w, z, done


def test_scopes_are_clusters_and_control_edges_dashed():
    g, *_ = _two_layer_graph()
    src = viz.graph(g).source
    clusters = re.findall(r"subgraph (cluster_\w+) \{\s*\n\s*.*label=(\"?[\w/]+\"?)", src)
    assert {lab.strip('"') for _, lab in clusters} >= {"layer1", "layer2", "w"}
    # The control edge sum -> done is dashed; data edges are not.
    dashed = [ln for ln in src.splitlines() if "->" in ln and "style=dashed" in ln]
    assert len(dashed) == 1 and "done (control)" in dashed[0]
    assert re.search(r'label="?MatMul"? ', src)  # the name in its scope; the type if it differs
    assert 'label="read\\nIdentity"' in src


def test_big_scope_collapses_with_op_count_and_expand_opens_it():
    g = fl.Graph()
    with g.as_default():
        with fl.name_scope("big"):
            y = fl.constant(1.0)
            for _ in range(30):
                y = y + 1.0
        with fl.name_scope("small"):
            fl.identity(y)
    src = viz.graph(g, collapse_above=10).source
    assert "big/\\n61 ops" in src and "shape=box3d" in src
    assert "AddV2" not in src
    opened = viz.graph(g, collapse_above=10, expand=["big"]).source
    assert "shape=box3d" not in opened and opened.count("\\nAddV2") == 30
    forced = viz.graph(g, collapse=["small/"]).source
    assert "small/\\n2 ops" not in forced  # a one-op scope is never a cluster...
    assert "small/" in forced or "small" in forced


def test_single_top_scope_is_opened_not_one_box():
    g = fl.Graph()
    with g.as_default(), fl.name_scope("model"):
        y = fl.constant(1.0)
        for _ in range(50):
            y = y * 2.0
    src = viz.graph(g, collapse_above=10).source
    assert "101 ops" not in src and src.count("Mul\\nMul") + src.count("\\nMul") >= 50


def test_devices_colored_with_legend_and_cross_device_edges_red():
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    placement = sess.placement(z, {x: None})
    d = viz.graph(placement, graph=g)
    src = d.source
    assert "cluster_legend" in src and 'label="CPU:0"' in src and 'label="CPU:1"' in src
    cross = [ln for ln in src.splitlines() if "crosses devices" in ln]
    assert len(cross) == 1 and viz.dot.TRANSFER_COLOR in cross[0]
    fills = set(re.findall(r'fillcolor="(#[0-9a-f]{6})"', src))
    assert {viz.dot.PALETTE[0], viz.dot.PALETTE[1]} <= fills
    # Placement's reasons go into the tooltips.
    for name, why in model.reasons_of(placement).items():
        assert viz.dot.text(why) in src, name
    sess.close()


def test_placement_needs_the_graph_it_names():
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    placement = sess.placement(z, {x: None})
    with pytest.raises(ValueError, match="graph=g"):
        viz.graph(placement, graph=fl.Graph())
    sess.close()


def test_partitions_draw_send_recv_pairs_with_bytes_from_a_trace():
    from flowlab.profiler import Trace

    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    sess.run(w.initializer)
    parts = sess.partitions(z, {x: None})
    src = viz.graph(parts).source
    assert src.count("partition CPU:") == 2
    # The pair's edge is labelled with the tensor it carries, not the rendezvous name.
    pairs = [ln for ln in src.splitlines() if "->" in ln and 'label="layer1/Relu:0' in ln]
    assert "edge_0_layer1/Relu" not in src.replace("tensor_name", "")
    assert len(pairs) == 1 and "style=bold" in pairs[0] and " B" not in pairs[0]
    md = fl.RunMetadata()
    sess.run(z, {x: np.ones((5, 3), np.float32)},
             options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    trace = Trace.from_run_metadata(md)
    traced = viz.graph(parts, trace=trace).source
    pair = [ln for ln in traced.splitlines() if "->" in ln and 'label="layer1/Relu:0' in ln][0]
    assert "\\n80 B" in pair  # 5x4 float32
    # A trace draws by itself too: the ops it recorded, per device, with run times.
    own = viz.graph(trace).source
    assert "80 B" in own and "µs" in own and own.count("partition CPU:") == 2
    sess.close()


def _loop_graph_def():
    def node(name, op, inputs=(), **attr):
        return {"name": name, "op": op, "input": list(inputs),
                "attr": {k: {"s": v} for k, v in attr.items()}}

    return {"node": [
        node("x", "Const"),
        node("while/Enter", "Enter", ["x"], frame_name="while/while_context"),
        node("while/Merge", "Merge", ["while/Enter", "while/NextIteration"]),
        node("while/Less", "Less", ["while/Merge"]),
        node("while/LoopCond", "LoopCond", ["while/Less"]),
        node("while/Switch", "Switch", ["while/Merge", "while/LoopCond"]),
        node("while/Identity", "Identity", ["while/Switch:1"]),
        node("while/one", "Const", ["^while/Identity"]),
        node("while/add", "AddV2", ["while/Identity", "while/one"]),
        node("while/NextIteration", "NextIteration", ["while/add"]),
        node("while/Exit", "Exit", ["while/Switch"]),
        node("y", "Identity", ["while/Exit"]),
    ]}


def test_loop_frames_from_enter_and_exit():
    pic = model.from_graph_def(_loop_graph_def())
    frame = {n.name: n.frame for n in pic.nodes}
    inside = ("while/while_context",)
    assert frame["x"] == () and frame["y"] == ()
    for name in ("while/Enter", "while/Merge", "while/one", "while/NextIteration", "while/Exit"):
        assert frame[name] == inside, name
    src = viz.graph(_loop_graph_def()).source
    assert "loop frame while/while_context" in src
    # The NextIteration -> Merge back edge is drawn.
    ids = dict(re.findall(r'(n\d+) \[label="?(\w+)["\\ ]', src))
    by_label = {v: k for k, v in ids.items()}
    assert f"{by_label['NextIteration']} -> {by_label['Merge']}" in src


def test_nested_frames_nest():
    gd = _loop_graph_def()
    gd["node"].insert(7, {"name": "while/inner/Enter", "op": "Enter", "input": ["while/Identity"],
                          "attr": {"frame_name": {"s": "inner"}}})
    gd["node"].insert(8, {"name": "while/inner/Exit", "op": "Exit", "input": ["while/inner/Enter"]})
    pic = model.from_graph_def(gd)
    assert pic.by_name["while/inner/Exit"].frame == ("while/while_context", "inner")
    src = viz.graph(pic).source
    assert src.index("loop frame while/while_context") < src.index("loop frame inner")


WEIRD = ["<b>bold</b>", "a\\l", 'say "hi"', "x\\", "{rank=same}"]


def test_labels_are_escaped_text_never_html():
    gd = {"node": [{"name": n, "op": "Op<i>", "input": []} for n in WEIRD]}
    src = viz.graph(gd).source
    for line in src.splitlines():
        assert "label=<" not in line and "tooltip=<" not in line
    assert 'label="a\\\\l\\nOp<i>"' in src
    assert 'label="x\\\\\\nOp<i>"' in src


@needs_dot
def test_weird_names_render_as_written():
    gd = {"node": [{"name": n, "op": "Op<i>", "input": []} for n in WEIRD]}
    svg = viz.svg(gd)
    assert svg is not None and "<b>bold" not in svg
    for expected in ("&lt;b&gt;bold&lt;/b&gt;", "a\\l", "say &quot;hi&quot;", "x\\", "{rank=same}", "Op&lt;i&gt;"):
        assert expected in svg, expected


def test_graph_rejects_what_it_cannot_draw():
    with pytest.raises(TypeError, match="cannot draw a int"):
        viz.graph(3)


def test_objects_join_through_the_picture_hook():
    class Mine:
        def _flowlab_picture_(self):
            return {"node": [{"name": "a", "op": "Const"}, {"name": "b", "op": "Neg", "input": ["a"]}]}

    src = viz.graph(Mine(), title="mine").source
    assert 'label="a\\nConst"' in src and "n0 -> n1" in src and "label=mine" in src


@needs_dot
def test_graph_displays_as_svg_in_notebooks():
    g, *_ = _two_layer_graph()
    bundle = g._repr_mimebundle_()
    assert bundle["text/plain"] == repr(g)
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
    assert g._repr_svg_() == bundle["image/svg+xml"]
    assert "image/svg+xml" not in g._repr_mimebundle_(exclude=["image/svg+xml"])
    # In a notebook the bare graph is fitted to the output's width and zoomable.
    html = bundle["text/html"]
    assert 'width="100%"' in html and "viewBox" in html and "<?xml" not in html
    assert "text/html" not in g._repr_mimebundle_(exclude=["text/html"])


def test_big_graphs_display_as_text_only(monkeypatch):
    g, *_ = _two_layer_graph()
    monkeypatch.setattr(viz, "MAX_AUTO_DISPLAY_OPS", 3)
    assert list(g._repr_mimebundle_()) == ["text/plain"]
    assert fl.Graph()._repr_mimebundle_() == {"text/plain": repr(fl.Graph())}


def test_passes_show_each_stage():
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    p = viz.passes(sess, z, {x: np.ones((1, 3))})
    names = p.names()
    assert names[0] == "full graph" and names[1] == "pruned" and "placed" in names
    assert "partitioned" in names and names.index("placed") < names.index("partitioned")
    assert len(model.to_picture(g).nodes) == len(g.get_operations())
    assert [len(pic.nodes) for n, pic in p.stages if n == "pruned"] == [8]  # x is fed: cut
    assert "_Send" in p["partitioned"].source and "done" not in p["pruned"].source
    text = repr(p)
    assert "placed: 8 ops on 2 devices" in text
    if "optimized" not in names:
        assert "optimized: not shown" in text
    with pytest.raises(KeyError, match="stages"):
        p["nope"]
    sess.close()


@needs_dot
def test_passes_html_is_side_by_side_svgs():
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    html = viz.passes(sess, z, {x: None})._repr_html_()
    assert html.startswith('<div style="display:flex') and html.count("<svg") >= 4
    assert "<?xml" not in html
    sess.close()


def test_show_outside_ipython_returns_the_picture(monkeypatch):
    from flowlab.viz import show as show_mod

    g, *_ = _two_layer_graph()
    monkeypatch.setattr(show_mod, "_ipython", lambda: None)
    assert not extension_available()  # outside a Jupyter kernel there is no widget front end
    d = fl.show(g, collapse_above=5)
    assert d.source == viz.graph(g, collapse_above=5).source


def test_show_picks_the_widget_when_the_extension_is_there(monkeypatch):
    from flowlab.viz import show as show_mod

    shown = []
    fake = types.ModuleType(show_mod.WIDGETS_MODULE)
    fake.available = lambda: True
    fake.view = lambda obj, **kw: ("widget", obj)
    monkeypatch.setitem(sys.modules, show_mod.WIDGETS_MODULE, fake)
    monkeypatch.setattr(show_mod.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(show_mod, "_ipython", lambda: object())
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", shown.append)
    g = fl.Graph()
    assert fl.show(g) is None and shown == [("widget", g)]
    fake.available = lambda: False
    if viz.dot_available():
        fl.show(_two_layer_graph()[0])
        assert type(shown[-1]).__name__ == "HTML" and "flowlab-picture" in shown[-1].data


def test_enters_without_frame_names_share_their_scope():
    gd = _loop_graph_def()
    for nd in gd["node"]:
        nd.pop("attr", None)
    gd["node"].insert(2, {"name": "while/Enter_1", "op": "Enter", "input": ["x"]})
    pic = model.from_graph_def(gd)
    assert pic.by_name["while/Enter"].frame == pic.by_name["while/Enter_1"].frame == ("while",)
    assert viz.graph(pic).source.count("loop frame") == 1


def test_show_without_dot_prints_the_dot_source(monkeypatch, capsys):
    from flowlab.viz import show as show_mod

    monkeypatch.setattr(show_mod, "_ipython", lambda: object())
    monkeypatch.setattr(viz, "svg", lambda picture: None)
    g, *_ = _two_layer_graph()
    assert fl.show(g) is None
    out = capsys.readouterr().out
    assert "`dot` program is not installed" in out and "digraph flowlab" in out


def test_show_takes_passes_and_digraphs(monkeypatch):
    from flowlab.viz import show as show_mod

    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    p = viz.passes(sess, z, {x: None})
    monkeypatch.setattr(show_mod, "_ipython", lambda: None)
    assert fl.show(p) is p
    d = viz.graph(g)
    assert fl.show(d) is d
    sess.close()


def test_the_optimized_stage_marks_folded_ops():
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [2], name="x")
        c = fl.multiply(fl.constant(2.0), 3.0, name="six")  # folded into a constant
        y = fl.multiply(x, c, name="y")
    sess = fl.Session(graph=g)
    p = viz.passes(sess, y, {x: None})
    if "optimized" not in p.names():
        pytest.skip("this session has no graph optimization pass")
    pic = dict(p.stages)["optimized"]
    assert pic.by_name["six"].note == "folded" and pic.by_name["six"].op == "Const"
    assert "six\\nConst\\nfolded" in p["optimized"].source
    sess.close()


def test_the_optimized_stage_marks_merged_duplicates():
    g = fl.Graph()
    with g.as_default():
        z = fl.placeholder(fl.float32, [None, 3], name="z")
        with fl.name_scope("softmax"):  # exp(z) / sum(exp(z)): exp written twice
            z = z - fl.reduce_max(z, axis=1, keepdims=True)  # its axis: a duplicate of Sum's
            p = fl.exp(z) / fl.reduce_sum(fl.exp(z), axis=1, keepdims=True)
        z = g.get_tensor_by_name("z:0")
    sess = fl.Session(graph=g)
    opt = sess.optimization(p, {z: None})
    assert opt.merged.get("softmax/Exp_1") == "softmax/Exp"
    pic = dict(viz.passes(sess, p, {z: None}).stages)["optimized"]
    assert "softmax/Exp_1" not in pic.by_name and pic.by_name["softmax/Exp"].note == "merged Exp_1"
    # Duplicates named alike are told apart by their scopes.
    assert opt.merged["softmax/Sum/reduction_indices"] == "softmax/Max/reduction_indices"
    assert pic.by_name["softmax/Max/reduction_indices"].note == "merged Sum/reduction_indices"
    sess.close()


@needs_dot
def test_partitions_placement_and_trace_display_as_pictures():
    from flowlab.profiler import Trace

    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    sess.run(w.initializer)
    parts = sess.partitions(z, {x: None})
    assert "image/svg+xml" in parts._repr_mimebundle_()
    placement = sess.placement(z, {x: None})
    assert "image/svg+xml" in placement._repr_mimebundle_()  # drawn from its own graph
    md = fl.RunMetadata()
    sess.run(z, {x: np.ones((5, 3), np.float32)},
             options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    bundle = Trace.from_run_metadata(md)._repr_mimebundle_()
    assert "80 B" in bundle["image/svg+xml"] and bundle["text/plain"].startswith("<Trace")
    sess.close()


def test_a_placement_draws_from_its_own_graph_not_the_default_one() -> None:
    g = fl.Graph()
    with g.as_default():
        with fl.device("/cpu:1"):
            y = fl.add(fl.constant(1.0), 2.0, name="y")
    with fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2})) as sess:
        placement = sess.placement(y)
    assert placement.graph is g
    source = viz.graph(placement).source  # the default graph does not hold `y`
    assert 'label="y\\nAddV2"' in source
    assert 'tooltip="y (AddV2)\\n/job:localhost/replica:0/task:0/device:CPU:1\\nrequested' in source


# --- fitted, zoomable pictures; bundled edges; runtime-made names (issue 20, item 0) ---
def test_fitted_svg_scales_to_the_width_and_not_past_its_natural_size():
    from flowlab.viz.show import fitted_svg, natural_size

    svg = ('<?xml version="1.0"?>\n<!-- dot -->\n<svg width="2070pt" height="1265pt"\n'
           ' viewBox="0.00 0.00 2070.00 1265.25" xmlns="http://www.w3.org/2000/svg"><g/></svg>')
    assert natural_size(svg) == (2760.0, pytest.approx(1686.67, abs=0.01))
    fitted = fitted_svg(svg)
    tag = fitted[: fitted.index(">") + 1]
    assert fitted.startswith("<svg ") and "<?xml" not in fitted and fitted.endswith("<g/></svg>")
    assert 'width="100%"' in tag and "height=" not in tag.replace("height:auto", "")
    assert 'viewBox="0.00 0.00 2070.00 1265.25"' in tag
    assert 'style="max-width:2760px;height:auto;display:block"' in tag
    with pytest.raises(ValueError, match="viewBox"):
        fitted_svg('<svg width="10pt" height="10pt"></svg>')
    with pytest.raises(ValueError, match="absolute width"):
        fitted_svg('<svg width="100%" viewBox="0 0 1 1"></svg>')


@needs_dot
def test_a_drawing_displays_fitted_and_zoomable():
    g, *_ = _two_layer_graph()
    d = viz.graph(g)
    assert isinstance(d, viz.dot.Drawing)
    bundle = d._repr_mimebundle_()
    html = bundle["text/html"]
    assert html.startswith('<div class="flowlab-picture" data-width="')
    assert 'style="max-width:100%;overflow:auto"' in html  # a zoomed picture scrolls in its box
    assert '<svg width="100%"' in html and "viewBox=" in html
    assert [b for b in ("fit", "+", "1:1") if f">{b}</button>" in html] == ["fit", "+", "1:1"]
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")  # dot's own, for other front ends
    assert list(d._repr_mimebundle_(include=["image/svg+xml"])) == ["image/svg+xml"]
    width = float(re.search(r'data-width="(\d+)"', html).group(1))
    assert f"max-width:{width:.0f}px" in html


@needs_dot
def test_passes_fit_each_stage_and_select_some():
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    p = viz.passes(sess, z, {x: None})
    html = p._repr_html_()
    assert html.count('class="flowlab-picture"') == len(p) and html.count('<svg width="100%"') == len(p)
    assert re.search(r'flex:0 1 \d+px;min-width:0;max-width:100%', html)
    two = p.select("pruned", "optimized") if "optimized" in p.names() else p.select("pruned", "placed")
    assert len(two) == 2 and two.names()[0] == "pruned"
    with pytest.raises(KeyError, match="stages: full graph"):
        p.select("nope")
    sess.close()


def test_parallel_edges_of_a_collapsed_scope_are_one_edge_with_a_count():
    g = fl.Graph()
    with g.as_default():
        with fl.name_scope("big"):
            xs = [fl.constant(float(i), name=f"c{i}") for i in range(45)]
        fl.add_n(xs, name="total")
    src = viz.graph(g).source
    edges = [ln for ln in src.splitlines() if " -> " in ln]
    assert len(edges) == 1 and "label=×45" in edges[0].replace('"', "")
    assert "45 edges drawn as one" in edges[0]
    opened = viz.graph(g, expand=["big"]).source
    assert sum(" -> " in ln for ln in opened.splitlines()) == 45 and "×" not in opened


def _pair(name, src, send_dev, recv_dev, tensor):
    attrs = {"tensor_name": {"s": tensor}, "send_device": {"s": send_dev}, "recv_device": {"s": recv_dev}}
    return ({"name": f"{name}/_0", "op": "_Send", "input": [src], "device": send_dev, "attr": attrs},
            {"name": f"{name}/_1", "op": "_Recv", "device": recv_dev, "attr": attrs})


def test_send_recv_pairs_inside_a_collapsed_scope_are_counted_not_drawn_as_loops():
    a, b = "/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"
    nodes = [{"name": f"g/op{i}", "op": "Neg", "device": a} for i in range(40)]
    for i in range(3):
        s, r = _pair(f"g/op{i}", f"g/op{i}", a, b, f"edge_{i}_g/op{i}")
        nodes += [s, r]
    nodes.append({"name": "out", "op": "AddN", "device": b, "input": [f"g/op{i}/_1" for i in range(3)]})
    s2, r2 = _pair("out", "out", b, a, "edge_9_out")
    nodes += [s2, r2, {"name": "sink", "op": "Identity", "device": a, "input": ["out/_1"]}]
    pic = model.from_graph_def({"node": nodes})
    pic.placed = True
    src = viz.graph(pic).source
    red = [ln for ln in src.splitlines() if " -> " in ln and "style=bold" in ln]
    assert len(red) == 1 and 'label="out:0"' in red[0]  # the pair out -> sink; none loops on g/
    assert not re.search(r"\b(c\d+) -> \1\b", src)
    assert "3 Send/Recv pairs inside" in src and "label=×3" in src.replace('"', "")


def test_runtime_made_names_do_not_label_the_partition_picture():
    assert model.base_name("layer1/Relu/_0") == "layer1/Relu"
    assert model.base_name("GradientDescent/learning_rate/replicate/_1") == "GradientDescent/learning_rate"
    assert model.base_name("GradientDescent/NoOp_2/_38") == "GradientDescent/NoOp_2"
    assert model.base_name("layer_1") == "layer_1" and not model.is_generated("a/b_2")
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    parts = sess.partitions(z, {x: None})
    labels = _labels(viz.graph(parts))
    assert not [lb for lb in labels if re.search(r"(^|/)_\d+|replicate|edge_\d", lb)], labels
    assert "send Relu\\nto CPU:1" in labels and "recv Relu\\nfrom CPU:0" in labels
    sess.close()


def test_pairs_through_the_client_are_grey_and_the_red_edges_are_the_pairs_run():
    g, x, w, z, _ = _two_layer_graph()
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
    parts = sess.partitions(z, {x: np.ones((1, 3), np.float32)})
    assert parts.client_pairs  # z is fetched from CPU:1 through the client device CPU:0
    src = viz.graph(parts).source
    red = [ln for ln in src.splitlines() if " -> " in ln and viz.dot.TRANSFER_COLOR in ln]
    grey = [ln for ln in src.splitlines() if " -> " in ln and "style=dashed" in ln
            and viz.dot.CLIENT_COLOR in ln and "fetch" in ln]
    assert len(red) == len(parts.pairs) and len(grey) == len(parts.client_pairs)
    assert 'label="fetch layer2/sum:0"' in grey[0]
    sess.close()
