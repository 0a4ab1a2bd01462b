"""A converted NoOp keeps only the dependencies its others do not imply
(flowlab.runtime.master.noop_dependencies): values and orderings stay, cross-device control
pairs TensorFlow does not have go."""

from __future__ import annotations

import numpy as np

import flowlab as fl
from flowlab.runtime.config import ConfigProto, GraphOptions, OptimizerOptions
from flowlab.runtime.master.optimize import optimization

CPU = "/job:localhost/replica:0/task:0/device:CPU:"
OFF = ConfigProto(graph_options=GraphOptions(optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0)))


def _gated_layer(tf):
    """minimize()'s GATE_OP groups the unused input gradient gradients/mm_grad/MatMul
    (grad . w^T) with the weight gradient; w/read reaches grad through the forward pass."""
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
    loss = tf.reduce_sum(tf.square(tf.matmul(x, w, name="mm")), name="loss")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)}
    return w, loss, train, feed


def _noop_node(opt, name):
    return {n["name"]: n for n in opt.graph_def()["node"]}[name]


def test_the_weight_read_implied_by_the_gradient_is_dropped():
    # The weight gradient's tuple Identity is fetched, so the group and the NoOp it
    # waits for stay (unfetched, all three go: test_optimize).
    w, loss, train, feed = _gated_layer(fl)
    dw = fl.get_default_graph().get_tensor_by_name("gradients/mm_grad/tuple/control_dependency_1:0")
    with fl.Session() as s:
        s.run(w.initializer)
        opt = optimization(s, [train, loss, dw], feed)
    assert opt.noops == ["gradients/mm_grad/MatMul"]
    kept = [t.op.name for t in opt.inputs_of(fl.get_default_graph().get_operation_by_name("gradients/mm_grad/MatMul"))]
    assert kept == ["gradients/Square_grad/Mul_1"]
    assert _noop_node(opt, "gradients/mm_grad/MatMul")["input"] == ["^gradients/Square_grad/Mul_1"]


def test_values_and_the_training_trajectory_are_unchanged():
    w, loss, train, feed = _gated_layer(fl)
    with fl.Session() as on, fl.Session(config=OFF) as off:
        for s in (on, off):
            s.run(w.initializer)
        for _ in range(3):
            a, b = on.run([train, loss], feed), off.run([train, loss], feed)
            np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(on.run(w), off.run(w))


def test_independent_dependencies_are_all_kept():
    a = fl.placeholder(fl.float32, [2], name="a")
    b = fl.placeholder(fl.float32, [2], name="b")
    ea, eb = fl.exp(a, name="ea"), fl.exp(b, name="eb")
    side = fl.add(ea, eb, name="side")  # read by nobody: converts
    with fl.control_dependencies([side]):
        y = fl.identity(a, name="y")
    feed = {a: np.ones(2, np.float32), b: np.ones(2, np.float32)}
    with fl.Session() as s:
        np.testing.assert_array_equal(s.run(y, feed), np.ones(2))
        opt = optimization(s, y, feed)
    assert opt.noops == ["ea", "eb", "side"] and opt.noop_inputs == {}
    assert _noop_node(opt, "side")["input"] == ["^ea", "^eb"]


def test_a_fed_tensor_cuts_the_path_that_would_imply_a_dependency():
    q = fl.placeholder(fl.float32, [2], name="q")
    v = fl.negative(q, name="v")
    h = fl.exp(v, name="h")
    g = fl.tanh(h, name="g")
    side = fl.add(g, v, name="side")  # v reaches g through h unless h is fed
    with fl.control_dependencies([side]):
        y = fl.identity(g, name="y")
    with fl.Session() as s:
        full = optimization(s, y, [q])
        cut = optimization(s, y, [q, h])
    assert _noop_node(full, "side")["input"] == ["^g"]
    assert _noop_node(cut, "side")["input"] == ["^g", "^v"]


def test_a_path_through_control_flow_does_not_imply_a_dependency():
    x = fl.placeholder(fl.float32, [], name="x")
    p = fl.placeholder(fl.bool, [], name="p")
    m = fl.cond(p, lambda: x * 2.0, lambda: x + 1.0)  # x reaches m only through Switch/Merge
    t = fl.tanh(m, name="t")  # reads the Merge: never converted
    side = fl.add(t, x, name="side")
    with fl.control_dependencies([side]):
        y = fl.identity(m, name="y")
    with fl.Session() as s:
        assert s.run(y, {x: 1.0, p: True}) == 2.0
        opt = optimization(s, y, [x, p])
    assert opt.noops == ["side"]
    assert _noop_node(opt, "side")["input"] == ["^t", "^x"]


def test_no_control_pair_for_the_implied_read_across_devices():
    with fl.device("/cpu:1"):
        w = fl.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
    with fl.device("/cpu:2"):
        h = fl.tanh(fl.matmul(fl.constant(np.eye(2, dtype=np.float32), name="x"), w, name="mm"), name="h")
        loss = fl.reduce_sum(fl.square(h, name="sq"), name="loss")
    step = fl.train.GradientDescentOptimizer(0.1).minimize(loss)
    with fl.Session(config=ConfigProto(device_count={"CPU": 4})) as s:
        s.run(w.initializer)
        s.run(step)
        pairs = [(p.tensor, p.src_device, p.dst_device) for p in s.partitions(step).pairs]
    assert not any(src == CPU + "1" and dst == CPU + "0" for _, src, dst in pairs), pairs
