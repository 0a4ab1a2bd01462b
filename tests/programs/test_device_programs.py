"""TensorFlow 1.x programs that pin ops with `tf.device("/cpu:N")` under
`ConfigProto(device_count={"CPU": 4})`, run under TensorFlow and under flowlab: same
values and dtypes, step after step (variables live on their devices between steps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import flowlab as fl
from tests.difftest import _compare


def run_program(tf: Any, build: Callable[[Any], Any], steps: int = 1) -> list[Any]:
    """`build(tf) -> (fetches, feed_dict or None)`; runs `steps` steps with 4 CPUs."""
    g = tf.Graph()
    with g.as_default():
        fetches, feed = build(tf)
        init = tf.global_variables_initializer()
        config = tf.ConfigProto(device_count={"CPU": 4})
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            return [sess.run(fetches, feed) for _ in range(steps)]


def assert_same_on_devices(tf1: Any, build: Callable[[Any], Any], steps: int = 1, rtol: float = 1e-5) -> list[Any]:
    expected = run_program(tf1, build, steps)
    actual = run_program(fl, build, steps)
    _compare(expected, actual, rtol, 1e-6, path="steps")
    return actual


def test_chain_across_four_devices(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [None, 3])
        with tf.device("/cpu:0"):
            a = tf.matmul(x, tf.constant(np.arange(9, dtype=np.float32).reshape(3, 3)))
        with tf.device("/cpu:1"):
            b = tf.nn.relu(a - 10.0)
        with tf.device("/cpu:2"):
            c = tf.concat([a, b], axis=1)
        with tf.device("/cpu:3"):
            d = tf.reduce_sum(c, axis=1)
        return [a, b, c, d], {x: np.array([[1, 2, 3], [-1, 0, 4]], np.float32)}

    assert_same_on_devices(tf1, build)


def test_one_tensor_to_many_devices_and_back(tf1):
    def build(tf):
        with tf.device("/cpu:0"):
            base = tf.range(6, dtype=tf.int64)
        outs = []
        for i in range(1, 4):
            with tf.device(f"/cpu:{i}"):
                outs.append(base * i + tf.reduce_max(base))
        with tf.device("/cpu:0"):
            total = tf.add_n(outs)
            mean = tf.reduce_mean(tf.cast(total, tf.float64))
        return [total, mean, tf.shape(outs[1])], None

    assert_same_on_devices(tf1, build)


def test_variables_on_cpu1_trained_with_gradients_from_cpu0(tf1):
    def build(tf):
        with tf.device("/cpu:1"):
            w = tf.Variable(np.linspace(-0.5, 0.5, 6).reshape(3, 2).astype(np.float32), name="w")
            b = tf.Variable(np.zeros(2, np.float32), name="b")
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None, 2])
        with tf.device("/cpu:0"):
            pred = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.square(pred - y))
            grads = tf.gradients(loss, [w, b])
        with tf.device("/cpu:1"):
            train = tf.train.GradientDescentOptimizer(0.05).apply_gradients(zip(grads, [w, b]))
        xs = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
        ys = np.ones((4, 2), np.float32)
        with tf.control_dependencies([train]):
            after = tf.identity(loss)
        return [after, w.value(), b.value()], {x: xs, y: ys}

    out = assert_same_on_devices(tf1, build, steps=4)
    assert out[-1][0] < out[0][0]  # it learns


def test_momentum_optimizer_with_variables_spread_over_devices(tf1):
    def build(tf):
        ws = []
        for i in range(3):
            with tf.device(f"/cpu:{i + 1}"):
                ws.append(tf.Variable(np.full([2], i + 1.0, np.float32), name=f"w{i}"))
        with tf.device("/cpu:0"):
            loss = tf.add_n([tf.reduce_sum(tf.square(w - 0.5 * k)) for k, w in enumerate(ws)])
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        return [loss, train, [w.value() for w in ws]], None

    assert_same_on_devices(tf1, build, steps=3)


def test_cond_with_branches_on_other_devices(tf1):
    def build(tf):
        p = tf.placeholder(tf.bool, [])
        with tf.device("/cpu:1"):
            v = tf.constant([1.0, 2.0, 3.0])
        with tf.device("/cpu:2"):
            out = tf.cond(p, lambda: v * 2.0, lambda: v - 1.0)
        with tf.device("/cpu:3"):
            final = out + tf.reduce_sum(out)
        return [final], {p: True}

    assert_same_on_devices(tf1, build)

    def build_false(tf):
        fetches, feed = build(tf)
        return fetches, {k: False for k in feed}

    assert_same_on_devices(tf1, build_false)


def test_while_loop_with_its_body_on_two_devices(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [2])

        def body(i, acc):
            with tf.device("/cpu:1"):
                a = acc * 1.5
            with tf.device("/cpu:2"):
                a = a + tf.cast(i, tf.float32)
            return i + 1, a

        with tf.device("/cpu:0"):
            n, r = tf.while_loop(lambda i, acc: i < 6, body, [tf.constant(0), x])
        with tf.device("/cpu:3"):
            s = tf.reduce_sum(r)
        return [n, r, s], {x: np.array([1.0, -2.0], np.float32)}

    assert_same_on_devices(tf1, build)


def test_assign_add_on_one_device_read_on_another_across_steps(tf1):
    def build(tf):
        with tf.device("/cpu:2"):
            counter = tf.Variable(0, dtype=tf.int32, name="counter")
            inc = tf.assign_add(counter, 3)
        with tf.device("/cpu:3"):
            with tf.control_dependencies([inc]):
                doubled = tf.identity(counter.value()) * 2
        return [doubled], None

    assert_same_on_devices(tf1, build, steps=3)


def test_partitions_show_the_pairs_of_a_pinned_program():
    with fl.device("/cpu:1"):
        a = fl.constant(np.ones(4, np.float32))
    x = fl.placeholder(fl.float32, [4])
    with fl.device("/cpu:2"):
        b = a * x
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 4})) as s:
        np.testing.assert_array_equal(s.run(b, {x: np.arange(4, dtype=np.float32)}), np.arange(4))
        parts = s.partitions(b, {x: None})
    (pair,) = parts.pairs
    assert pair.tensor == "Const:0" and pair.src_device.endswith("CPU:1") and pair.dst_device.endswith("CPU:2")
    ops = {n["op"] for n in parts[pair.src_device]["node"]} | {n["op"] for n in parts[pair.dst_device]["node"]}
    assert {"_Send", "_Recv"} <= ops


def test_unpinned_variable_updated_by_a_pinned_op(tf1):
    # TensorFlow places the whole graph once: v follows its pinned user to cpu:2, in
    # the initializer's step too.
    def build(tf):
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        with tf.device("/cpu:2"):
            upd = tf.assign_add(v, tf.ones([3]))
        with tf.device("/cpu:3"):
            with tf.control_dependencies([upd]):
                out = tf.reduce_sum(v.value()) * 2.0
        return [out], None

    assert_same_on_devices(tf1, build, steps=3)


# --- loops whose ops span devices (control-loop skeletons) -------------------------------
def test_gradients_of_a_loop_spanning_devices(tf1):
    # (With colocate_gradients_with_ops TensorFlow 2.21 refuses these programs: a
    # gradient accumulator's Const is pinned to one device and colocated with another;
    # tests/runtime/master/test_partition_loops.py checks flowlab's backward loop across devices.)
    def build(tf):
        x = tf.placeholder(tf.float32, [3])
        with tf.device("/cpu:0"):
            w = tf.constant([0.5, -1.0, 2.0])

        def body(i, v):
            with tf.device("/cpu:1"):
                v2 = tf.tanh(v * w)
            with tf.device("/cpu:2"):
                v3 = v2 + 0.1 * v
            return i + 1, v3

        _, r = tf.while_loop(lambda i, v: i < 4, body, [tf.constant(0), x])
        with tf.device("/cpu:3"):
            loss = tf.reduce_sum(r * r)
        g = tf.gradients(loss, [x, w])
        return [r, loss, g], {x: np.array([0.3, -0.2, 0.7], np.float32)}

    assert_same_on_devices(tf1, build)


def test_nested_loops_on_four_devices(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [2])

        def inner_body(j, u):
            with tf.device("/cpu:3"):
                return j + 1, u * 0.5 + 1.0

        def body(i, v):
            with tf.device("/cpu:1"):
                _, u = tf.while_loop(lambda j, u: j < i, inner_body, [tf.constant(0), v])
            with tf.device("/cpu:2"):
                return i + 1, u - 0.25

        with tf.device("/cpu:0"):
            n, r = tf.while_loop(lambda i, v: i < 4, body, [tf.constant(0), x])
        return [n, r], {x: np.array([1.0, 2.0], np.float32)}

    assert_same_on_devices(tf1, build)


def test_cond_inside_a_loop_across_devices(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [])

        def body(i, v):
            with tf.device("/cpu:1"):
                p = tf.equal(i % 2, 0)
            with tf.device("/cpu:2"):
                v2 = tf.cond(p, lambda: v * 2.0, lambda: v - 1.0)
            with tf.device("/cpu:3"):
                v3 = v2 + tf.cast(i, tf.float32)
            return i + 1, v3

        with tf.device("/cpu:0"):
            _, r = tf.while_loop(lambda i, v: i < 5, body, [tf.constant(0), x], parallel_iterations=1)
        return [r], {x: 3.0}

    assert_same_on_devices(tf1, build)


def test_loop_inside_a_cond_across_devices_taken_and_not(tf1):
    def build(tf, take):
        x = tf.placeholder(tf.float32, [])
        p = tf.placeholder(tf.bool, [])

        def loop():
            def body(i, v):
                with tf.device("/cpu:1"):
                    return i + 1, v * 1.5

            with tf.device("/cpu:0"):
                return tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x])[1]

        with tf.device("/cpu:2"):
            r = tf.cond(p, loop, lambda: x + 100.0)
        with tf.device("/cpu:3"):
            out = r * 2.0
        return [r, out], {x: 2.0, p: take}

    assert_same_on_devices(tf1, lambda tf: build(tf, True))
    assert_same_on_devices(tf1, lambda tf: build(tf, False))


def test_loop_training_a_variable_on_another_device(tf1):
    # A variable on cpu:1 read inside a loop whose body runs on cpu:0 and cpu:2;
    # three minimize steps.
    def build(tf):
        with tf.device("/cpu:1"):
            w = tf.Variable(np.array([0.2, -0.1], np.float32), name="w")
        x = tf.constant(np.array([1.0, 0.5], np.float32))

        def body(i, v):
            with tf.device("/cpu:2"):
                v2 = tf.tanh(v * w + 0.1)
            return i + 1, v2

        with tf.device("/cpu:0"):
            _, r = tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x])
            loss = tf.reduce_sum(tf.square(r - 0.5))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        return [loss, train, w.value()], None

    assert_same_on_devices(tf1, build, steps=3)


def test_dynamic_rnn_with_the_cell_on_cpu1(tf1):
    from tests.nn.test_rnn_cell import _assign_all, _tf_cells

    tf_cells = _tf_cells(tf1)
    xs = np.linspace(-1, 1, 30, dtype=np.float32).reshape(2, 5, 3)
    lengths = np.array([5, 3], np.int32)
    results = []
    for mod, cells in ((tf1, tf_cells), (fl, fl.nn.rnn_cell)):

        class OnCpu1(cells.BasicLSTMCell):
            device = staticmethod(mod.device)

            def __call__(self, inputs, state, scope=None):
                with self.device("/cpu:1"):
                    return super().__call__(inputs, state, scope=scope)

        g = mod.Graph()
        with g.as_default():
            x = mod.placeholder(mod.float32, [2, 5, 3])
            seq = mod.placeholder(mod.int32, [2])
            with mod.device("/cpu:0"):
                out, state = mod.nn.dynamic_rnn(OnCpu1(4), x, sequence_length=seq, dtype=mod.float32)
                loss = mod.reduce_sum(out * out) + mod.reduce_sum(state.h)
                variables = mod.global_variables()
                grads = mod.gradients(loss, [x, *variables])
            config = mod.ConfigProto(device_count={"CPU": 4})
            with mod.Session(graph=g, config=config) as sess:
                sess.run(_assign_all(mod, variables))
                results.append(sess.run([out, state, loss, grads], {x: xs, seq: lengths}))
                if mod is fl:
                    parts = sess.partitions([out, grads], {x: xs, seq: lengths})
    _compare(results[0], results[1], 1e-4, 1e-5, path="rnn")
    # The cell's ops ran on cpu:1 inside the loop: cpu:1 has a control loop.
    cpu1 = parts["/job:localhost/replica:0/task:0/device:CPU:1"]["node"]
    assert any(n["name"].startswith("_cloop") and n["op"] == "Merge" for n in cpu1)
    assert any(n["op"] == "MatMul" for n in cpu1)
