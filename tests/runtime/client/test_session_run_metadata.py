"""What Session.run leaves in RunMetadata (flowlab.runtime.client.run_metadata), and the
GraphDefs that read as TensorFlow's protos (flowlab.graph.graph_def_proto)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import flowlab as fl
from flowlab.graph import graph_def as gd
from flowlab.graph.graph_def_proto import (
    PRODUCER,
    AttrValue,
    GraphDef,
    NodeDef,
    as_graph_def,
)
from tests.programs.hidden_support import same_results

CPU = "/job:localhost/replica:0/task:0/device:CPU:"


def _four(tf):
    return tf.ConfigProto(device_count={"CPU": 4})


def _two_devices(tf):
    with tf.device("/cpu:1"):
        a = tf.tanh(tf.Variable([1.0, 2.0], name="v"), name="a")
    return tf.exp(a, name="b")


# --- against TensorFlow ---------------------------------------------------------------
def test_metadata_of_untraced_traced_and_plain_steps(tf1):
    """TensorFlow rewrites the RunMetadata after each step given one: partition graphs
    whenever asked (also untraced, also on one device), step stats only when traced."""
    def steps(tf):
        b = _two_devices(tf)
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.tanh(x, name="y")
        out = []
        with tf.Session(config=_four(tf)) as s:
            s.run(tf.global_variables_initializer())
            md = tf.RunMetadata()
            asks = tf.RunOptions(output_partition_graphs=True)
            traced = tf.RunOptions(output_partition_graphs=True, trace_level=tf.RunOptions.FULL_TRACE)
            for fetch, feed, opts in ((b, None, asks), (y, {x: [1.0, 2.0]}, asks), (b, None, traced),
                                      (b, None, asks), (y, {x: [1.0, 2.0]}, None)):
                s.run(fetch, feed, options=opts, run_metadata=md)
                out.append((len(md.partition_graphs), len(md.step_stats.dev_stats) > 0))
        return out

    assert same_results(tf1, steps) == [(2, False), (1, False), (2, True), (2, False), (0, False)]


def test_partition_graphs_read_as_protos_against_tensorflow(tf1):
    def protos(tf):
        b = _two_devices(tf)
        with tf.Session(config=_four(tf)) as s:
            s.run(tf.global_variables_initializer())
            md = tf.RunMetadata()
            s.run(b, options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
        out = []
        for pg in md.partition_graphs:
            for n in pg.node:
                if n.op in ("_Send", "_Recv"):
                    out.append((n.op, n.device, n.attr["send_device"].s, n.attr["recv_device"].s,
                                n.attr["client_terminated"].b, n.attr["client_terminated"].WhichOneof("value")))
                elif n.op in ("Tanh", "Exp"):
                    out.append((n.name, n.device, n.attr["T"].type, len(n.input)))
        return sorted(out), [pg.versions.producer for pg in md.partition_graphs]

    same_results(tf1, protos)


def test_make_callable_with_options_fills_partition_graphs(tf1):
    def callable_(tf):
        b = _two_devices(tf)
        with tf.Session(config=_four(tf)) as s:
            s.run(tf.global_variables_initializer())
            f = s.make_callable(b, accept_options=True)
            md = tf.RunMetadata()
            val = f(options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
        return val, len(md.partition_graphs), len(md.step_stats.dev_stats)

    same_results(tf1, callable_)


# --- flowlab's own ------------------------------------------------------------------------
def test_one_device_partition_is_the_optimized_step():
    x = fl.placeholder(fl.float32, [2], name="x")
    k = fl.add(fl.constant(1.0), fl.constant(2.0), name="k")  # folds to a Const
    y = fl.multiply(x, k, name="y")
    with fl.Session() as s:
        md = fl.RunMetadata()
        s.run(y, {x: [1.0, 2.0]}, options=fl.RunOptions(output_partition_graphs=True), run_metadata=md)
        parts = s.partitions(y, [x])
    (pg,) = md.partition_graphs
    assert isinstance(pg, GraphDef) and dict(pg) == dict(parts[CPU + "0"])
    ops = {n.name: n.op for n in pg.node}
    assert ops == {"k": "Const", "y": "Mul", "_arg_x_0_0": "_Arg", "_retval_y_0_0": "_Retval"}
    assert {n.device for n in pg.node} == {CPU + "0"}
    assert len(md.step_stats.dev_stats) == 0
    gd.validate_graph_def(json.loads(json.dumps(pg)))


def test_session_partitions_give_graph_defs_that_stay_json():
    b = _two_devices(fl)
    with fl.Session(config=_four(fl)) as s:
        s.run(fl.global_variables_initializer())
        parts = s.partitions(b)
        assert float(s.run(b)[0]) == pytest.approx(np.exp(np.tanh(1.0)))
    assert len(parts) == 2 and len(parts.pairs) == 1
    for dev, pg in parts.items():
        assert isinstance(pg, GraphDef) and all(isinstance(n, NodeDef) for n in pg["node"])
        assert {n.device for n in pg.node} == {dev}
        gd.validate_graph_def(pg)
        assert json.loads(json.dumps(pg)) == pg  # plain JSON values underneath
    recv = next(n for n in parts[CPU + "0"].node if n.op == "_Recv")
    assert recv["attr"]["tensor_name"] == {"s": recv.attr["tensor_name"].s.decode()}
    assert recv.attr["tensor_type"].type == fl.float32.as_datatype_enum


def test_attr_values_read_as_the_proto_with_its_defaults():
    node = NodeDef({"name": "n", "op": "X", "input": ["a", "^b"], "device": "", "attr": {
        "s": {"s": "text"}, "f": {"f": "NaN"}, "shape": {"shape": {"dim": [2, -1]}},
        "ls": {"list": {"s": ["x", "y"], }}, "li": {"list": {"i": [1, 2]}}, "t": {"type": "DT_INT32"},
        "u": {"shape": {"unknown_rank": True}}, "fn": {"func": {"name": "f"}},
    }})
    a = node.attr
    assert node.input == ["a", "^b"] and a["s"].s == b"text" and a["s"].i == 0 and a["s"].b is False
    assert np.isnan(a["f"].f) and a["f"].WhichOneof("value") == "f"
    assert [d.size for d in a["shape"].shape.dim] == [2, -1] and not a["shape"].shape.unknown_rank
    assert a["u"].shape.unknown_rank and a["ls"].list.s == [b"x", b"y"] and a["li"].list.i == [1, 2]
    assert a["t"].type == 3 and a["fn"].func.name == "f" and a["li"].list.f == []
    assert a["s"].HasField("s") and not a["s"].HasField("i") and AttrValue().WhichOneof("value") is None
    with pytest.raises(ValueError, match="no field"):
        a["s"].HasField("nope")
    g = as_graph_def({"format": gd.FORMAT, "version": gd.VERSION, "node": [dict(node)], "library": {}})
    assert as_graph_def(g) is g and g.versions.producer == PRODUCER and g.library == type(g.library)()
    assert g.node[0] == node and g["node"][0]["attr"]["ls"] == {"list": {"s": ["x", "y"]}}
