"""The dependency optimization in a step split across devices: an op the optimizer
converted to a NoOp (its outputs feed only control edges) is cloned into its
partition as a NoOp whose data inputs became control inputs, as Grappler leaves it
before TensorFlow partitions, so a multi-device step skips the same work."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.config import RewriterConfig

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"


def four_cpus(**kw) -> fl.ConfigProto:
    return fl.ConfigProto(device_count={"CPU": 4}, **kw)


def nodes(parts, i):
    return {n["name"]: n for n in parts[CPU % i]["node"]}


def control_only_program():
    x = fl.placeholder(fl.float32, [3], name="x")
    with fl.device("/cpu:1"):
        big = fl.multiply(x, 2.0, name="big")
    with fl.device("/cpu:2"):
        unused = fl.add(big, 1.0, name="unused")  # read only by a control edge
    with fl.device("/cpu:3"):
        with fl.control_dependencies([unused]):
            out = fl.multiply(x, 3.0, name="out")
    return x, out


def test_a_converted_op_is_a_noop_in_its_partition():
    x, out = control_only_program()
    xv = np.array([1.0, -2.0, 0.5], np.float32)
    with fl.Session(config=four_cpus()) as s:
        np.testing.assert_array_equal(s.run(out, {x: xv}), xv * 3.0)
        parts = s.partitions(out, {x: None})
        plan = s._plan_for([x], [out], [])
    # `unused` is read by nothing but a control edge, `big` only by `unused`: both go.
    assert {"big", "unused"} <= set(plan.optimization.noops)
    big, unused = nodes(parts, 1)["big"], nodes(parts, 2)["unused"]
    assert big["op"] == unused["op"] == "NoOp" and unused["attr"] == {}
    assert big["input"] == ["^big/y"]  # the fed x satisfies its other dependency
    # unused's data input from cpu:1 crosses as a control edge (a dummy Const's Send/Recv).
    pairs = {p.tensor: p for p in parts.pairs}
    assert set(pairs) == {"^big", "^unused"}
    assert unused["input"] == ["^" + pairs["^big"].recv_op, "^unused/y"]
    assert pairs["^unused"].dst_device == CPU % 3


def test_converted_op_runs_no_kernel_on_any_path():
    x, out = control_only_program()
    xv = np.ones(3, np.float32)
    events = []
    with fl.Session(config=four_cpus()) as s:
        s.run(out, {x: xv})  # the fused straight-line path
        s.set_listener(events.append)
        np.testing.assert_array_equal(s.run(out, {x: xv}), [3.0] * 3)  # the executor
    ran = {e.node: e for e in events if e.kind == "op_end"}
    assert "unused" in ran and "big" in ran and ran["unused"].device == CPU % 2


def test_a_failing_op_seen_only_through_a_control_edge_raises_nothing_as_tensorflow():
    # TensorFlow's dependency optimizer drops such an op's computation (see
    # test_optimize.py); split across devices the same holds.
    a = fl.placeholder(fl.float32, [None, None], name="a")
    b = fl.placeholder(fl.float32, [None, None], name="b")
    with fl.device("/cpu:1"):
        a1 = a + 1.0
    with fl.device("/cpu:2"):
        bad = fl.matmul(a1, b, name="bad")  # 2x3 @ 2x3 fails at run time
    with fl.device("/cpu:3"):
        with fl.control_dependencies([bad]):
            out = fl.identity(a * 2.0, name="out")
    xv = np.ones((2, 3), np.float32)
    feed = {a: xv, b: xv}
    with fl.Session(config=four_cpus()) as s:
        np.testing.assert_array_equal(s.run(out, feed), xv * 2.0)
        assert nodes(s.partitions(out, feed), 2)["bad"]["op"] == "NoOp"
    off = four_cpus()
    off.graph_options.rewrite_options.dependency_optimization = RewriterConfig.OFF
    with fl.Session(config=off) as s:
        with pytest.raises(errors.InvalidArgumentError):
            s.run(out, feed)


def mlp_pinned_over_two_cpus(tf):
    """mlp_train's program, small: variables on cpu:1, the model and loss on cpu:0."""
    rng = np.random.default_rng(0)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6])
        y = tf.placeholder(tf.int32, [None])
        h = x
        sizes = [6, 5, 4, 3]
        for i in range(3):
            with tf.device("/cpu:1"):
                w = tf.Variable(rng.standard_normal((sizes[i], sizes[i + 1])).astype(np.float32))
                b = tf.Variable(tf.zeros([sizes[i + 1]]))
            with tf.device("/cpu:0"):
                h = tf.matmul(h, w) + b
                if i < 2:
                    h = tf.nn.relu(h)
        with tf.device("/cpu:0"):
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
        feed = {x: rng.standard_normal((4, 6)).astype(np.float32), y: np.array([0, 1, 2, 1], np.int32)}
        with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as s:
            s.run(init)
            md = tf.RunMetadata()
            opts = tf.RunOptions(output_partition_graphs=True, trace_level=tf.RunOptions.FULL_TRACE)
            losses = [s.run([train, loss], feed, options=opts, run_metadata=md)[1] for _ in range(3)]
    graphs = [[(n.name, n.op) for n in pg.node] if hasattr(pg, "node") else [(n["name"], n["op"]) for n in pg["node"]]
              for pg in md.partition_graphs]
    return losses, graphs


def test_mlp_across_two_cpus_runs_the_matmuls_tensorflow_runs(tf1):
    # TensorFlow never computes the input gradient of the first MatMul (nothing reads
    # it), and neither partition holds it at all: it becomes a NoOp, and goes with its
    # GATE_OP group once the weight gradient's tuple Identity is bypassed.
    tf_losses, tf_graphs = mlp_pinned_over_two_cpus(tf1)
    fl_losses, fl_graphs = mlp_pinned_over_two_cpus(fl)
    np.testing.assert_allclose(fl_losses, tf_losses, rtol=1e-5)

    def matmuls(graphs):
        return sorted(name for g in graphs for name, op in g if op == "MatMul")

    assert matmuls(fl_graphs) == matmuls(tf_graphs)
    assert "gradients/MatMul_grad/MatMul" not in matmuls(fl_graphs)
    for graphs in (tf_graphs, fl_graphs):
        names = {name for g in graphs for name, _ in g}
        assert "gradients/MatMul_grad/MatMul" not in names
        assert "gradients/MatMul_grad/tuple/control_dependency_1" not in names
