"""Feeds and fetches through the client device (flowlab/runtime/master/partition_client.py):
the partition GraphDefs show TensorFlow's `_Arg`/`_Retval` on CPU:0 and their Send/Recv
pairs; the runtime still feeds and fetches in place (nothing of it runs)."""

from __future__ import annotations

from typing import Any

import numpy as np

import flowlab as fl
from flowlab.graph.graph_def import validate_graph_def
from tests.programs.hidden_support import same_results
from tests.programs.test_hidden_issue5 import _partitions, _traced

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"


def _config(tf: Any) -> Any:
    return tf.ConfigProto(device_count={"CPU": 4})


def _nodes(md: Any) -> list[list[tuple[str, str, str, list[str]]]]:
    """Per partition, (name, op, device, inputs) of every node, sorted."""
    return sorted(sorted((n.name, n.op, n.device, sorted(n.input)) for n in pg.node) for pg in md.partition_graphs)


def test_two_feeds_and_three_fetches_over_three_devices_as_tensorflow(tf1):
    def program(tf):
        with tf.name_scope("s"):
            b = tf.placeholder(tf.float32, [2], name="b")
        a = tf.placeholder(tf.float32, [2], name="a")
        with tf.device("/cpu:2"):
            y = tf.tanh(b + a, name="y")
        with tf.device("/cpu:1"):
            z = tf.exp(b, name="z")
        w = tf.exp(a, name="w")
        with tf.Session(config=_config(tf)) as s:
            opts, md = _traced(tf)
            vals = s.run([z, y, w, a], {b: [1.0, 2.0], a: [3.0, 4.0]}, options=opts, run_metadata=md)
        parts, pairs = _partitions(md)
        # Node names of Send/Recv carry each runtime's own counter: compare the rest.
        kinds = [sorted((op, dev) for op, dev, _ in p) for p in parts]
        args = sorted(n.name for pg in md.partition_graphs for n in pg.node if n.op in ("_Arg", "_Retval"))
        return vals, kinds, [p[:4] for p in pairs], args

    same_results(tf1, program)


def test_a_fetch_on_another_device_without_feeds(tf1):
    def program(tf):
        with tf.device("/cpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.Session(config=_config(tf)) as s:
            s.run(v.initializer)
            opts, md = _traced(tf)
            val = s.run(v.value(), options=opts, run_metadata=md)
        return val, _partitions(md), len(md.partition_graphs)

    same_results(tf1, program)


def test_a_fed_fetch_has_no_retval_and_a_feed_read_on_cpu0_no_pair(tf1):
    def program(tf):
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.exp(x, name="y")
        with tf.Session(config=_config(tf)) as s:
            opts, md = _traced(tf)
            vals = s.run([y, x], {x: [1.0, 2.0]}, options=opts, run_metadata=md)
        return vals, _nodes(md), _partitions(md)[1]

    same_results(tf1, program)


def test_graph_defs_rename_inputs_and_stay_valid():
    x = fl.placeholder(fl.float32, [2], name="x")
    with fl.device("/cpu:2"):
        y = fl.tanh(x, name="y")
    with fl.Session(config=_config(fl)) as s:
        parts = s.partitions(y, [x])
    assert list(parts) == [CPU % 0, CPU % 2]
    assert parts.pairs == []  # nothing runs through the client device
    [feed, fetch] = parts.client_pairs
    assert (feed.src_device, feed.dst_device, feed.tensor) == (CPU % 0, CPU % 2, "x:0")
    assert (fetch.src_device, fetch.dst_device, fetch.tensor) == (CPU % 2, CPU % 0, "y:0")
    by_name = {n["name"]: n for g in parts.values() for n in g["node"]}
    assert by_name["y"]["input"] == [feed.recv_op]
    assert by_name[feed.send_op]["input"] == ["_arg_x_0_0"]
    assert by_name["_retval_y_0_0"]["input"] == [fetch.recv_op]
    attrs = by_name[feed.recv_op]["attr"]
    assert attrs["client_terminated"] == {"b": False} and attrs["tensor_name"] == {"s": feed.tensor_name}
    for g in parts.values():
        validate_graph_def(g)


def test_fed_steps_across_devices_leave_no_rendezvous_entries():
    x = fl.placeholder(fl.float32, [2], name="x")
    with fl.device("/cpu:1"):
        a = fl.exp(x, name="a")
    with fl.device("/cpu:2"):
        y = fl.tanh(a + x, name="y")
    with fl.Session(config=_config(fl)) as s:
        for i in range(200):
            v = np.array([i, -i], np.float32) / 100
            np.testing.assert_allclose(s.run(y, {x: v}), np.tanh(np.exp(v) + v), rtol=1e-6)
        md = fl.RunMetadata()
        s.run(y, {x: [0.0, 1.0]}, options=fl.RunOptions(output_partition_graphs=True), run_metadata=md)
        assert len(s._rendezvous) == 0
    assert len(md.partition_graphs) == 3
