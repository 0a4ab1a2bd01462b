"""Buffer forwarding on the straight-line path (flowlab.runtime.task.forwarding and the
registry's `can_forward`): an elementwise kernel writes into an input that dies at it,
values never change, and no value anyone can still see is ever overwritten."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.kernels import math_kernels, nn_kernels, registry
from flowlab.runtime.config import ConfigProto, GraphOptions, OptimizerOptions
from flowlab.runtime.task import forwarding

NO_OPTIMIZATION = ConfigProto(
    graph_options=GraphOptions(optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0)))


def _recording(monkeypatch):
    """Replace the kernels' `can_forward` by one that records its answers.  It is
    called exactly as the original (directly by the kernel, on the kernel's own
    parameter), so it counts the same references."""
    seen: Counter = Counter()

    def can_forward(x):
        ok = (type(x) is np.ndarray and x.base is None and x.ndim > 0 and x.flags.writeable
              and sys.getrefcount(x) <= registry._ALONE)
        seen[ok] += 1
        return ok

    monkeypatch.setattr(math_kernels, "can_forward", can_forward)
    monkeypatch.setattr(nn_kernels, "can_forward", can_forward)
    return seen


def _forwarding_nodes(sess, fetches, feed_dict):
    """{op name: forwardable positions} of the straight-line function of the step."""
    plan = sess._plan_of(fetches, feed_dict)
    ns = plan.straight_line.__globals__
    return {v.name: v.forwardable for k, v in ns.items() if k.startswith("c") and getattr(v, "forwardable", ())}


def _layer():
    x = fl.placeholder(fl.float32, [None, 4], name="x")
    w = fl.placeholder(fl.float32, [4, 3], name="w")
    b = fl.placeholder(fl.float32, [3], name="b")
    h = fl.nn.relu(fl.matmul(x, w) + b)
    rng = np.random.default_rng(1)
    feed = {x: rng.standard_normal((5, 4)).astype(np.float32),
            w: rng.standard_normal((4, 3)).astype(np.float32),
            b: rng.standard_normal(3).astype(np.float32)}
    want = np.maximum(feed[x] @ feed[w] + feed[b], 0)
    return h, feed, want


def test_the_bias_add_and_the_relu_write_into_their_dying_input(monkeypatch):
    seen = _recording(monkeypatch)
    h, feed, want = _layer()
    copies = {k: v.copy() for k, v in feed.items()}
    with fl.Session() as sess:
        assert _forwarding_nodes(sess, h, feed) == {"add": (0,), "Relu": (0,)}
        np.testing.assert_allclose(sess.run(h, feed), want, rtol=1e-6)
    assert seen == {True: 2}
    for k, v in feed.items():  # the fed arrays are the user's: never written
        np.testing.assert_array_equal(v, copies[k])


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("FLOWLAB_FORWARDING", "0")
    assert not forwarding.enabled()
    seen = _recording(monkeypatch)
    h, feed, want = _layer()
    with fl.Session() as sess:
        assert _forwarding_nodes(sess, h, feed) == {}
        np.testing.assert_allclose(sess.run(h, feed), want, rtol=1e-6)
    assert seen == {}


def test_a_fetched_intermediate_is_not_forwarded(monkeypatch):
    seen = _recording(monkeypatch)
    x = fl.placeholder(fl.float32, [2, 3])
    a = x * 2.0
    b = fl.nn.relu(a)
    xv = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    with fl.Session() as sess:
        assert "Relu" not in _forwarding_nodes(sess, [a, b], {x: xv})
        av, bv = sess.run([a, b], {x: xv})
    np.testing.assert_array_equal(av, xv * 2)
    np.testing.assert_array_equal(bv, np.maximum(xv * 2, 0))
    assert seen[True] <= 1  # only the Mul may write into its own dying input (x*2 is fed: no)


def test_an_identity_of_a_value_read_later_is_not_overwritten(monkeypatch):
    seen = _recording(monkeypatch)
    x = fl.placeholder(fl.float32, [2, 2])
    y = fl.matmul(x, x)
    i = fl.identity(y)
    z = fl.nn.relu(i)  # the Identity's value dies here: statically forwardable ...
    with fl.control_dependencies([z]):
        w = y * 3.0  # ... but its input, the same array, is still read here
    xv = np.array([[1, -2], [3, -4]], np.float32)
    y_ref = xv @ xv
    with fl.Session(config=NO_OPTIMIZATION) as sess:  # keeps the Identity
        assert _forwarding_nodes(sess, [z, w], {x: xv})["Relu"] == (0,)
        zv, wv = sess.run([z, w], {x: xv})
    np.testing.assert_array_equal(zv, np.maximum(y_ref, 0))
    np.testing.assert_array_equal(wv, y_ref * 3)
    assert seen[False] >= 1


def test_a_view_of_the_input_still_read_later_is_not_overwritten(monkeypatch):
    seen = _recording(monkeypatch)
    x = fl.placeholder(fl.float32, [2, 3])
    y = x + 1.0
    r = fl.reshape(y, [3, 2])  # a view of y's buffer
    z = fl.nn.relu(y)  # y's last reader ...
    with fl.control_dependencies([z]):
        w = r * 2.0  # ... but the view is read after it
    xv = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    with fl.Session() as sess:
        zv, wv = sess.run([z, w], {x: xv})
    np.testing.assert_array_equal(zv, np.maximum(xv + 1, 0))
    np.testing.assert_array_equal(wv, (xv + 1).reshape(3, 2) * 2)
    assert seen[False] >= 1


def test_variables_constants_and_a_value_passed_twice_are_not_overwritten(monkeypatch):
    _recording(monkeypatch)
    v = fl.Variable(np.array([1.0, -2.0, 3.0], np.float32))
    c = fl.constant(np.array([0.5, 0.5, 0.5], np.float32))
    x = fl.placeholder(fl.float32, [3])
    s = x * 1.0
    out = [fl.nn.relu(v + 0.0) + v, c + x, s + s]
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        for _ in range(2):
            a, b, d = sess.run(out, {x: xv})
            np.testing.assert_array_equal(a, np.maximum([1, -2, 3], 0) + np.array([1, -2, 3]))
            np.testing.assert_array_equal(b, np.array([1.5, 2.5, 3.5], np.float32))
            np.testing.assert_array_equal(d, xv * 2)
        np.testing.assert_array_equal(sess.run(v), [1.0, -2.0, 3.0])
        np.testing.assert_array_equal(sess.run(c), [0.5, 0.5, 0.5])


def test_the_dataflow_executor_and_traced_steps_never_forward(monkeypatch):
    seen = _recording(monkeypatch)
    h, feed, want = _layer()
    opts = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)
    with fl.Session() as sess:
        np.testing.assert_allclose(sess.run(h, feed, options=opts, run_metadata=fl.RunMetadata()), want,
                                   rtol=1e-6)
    assert seen == {}


# --- random elementwise chains ------------------------------------------------------
_OPS = ["add", "sub", "mul", "relu", "identity", "bias", "twice", "view"]


def _chain_program(spec):
    """Build the chain `spec` = [(op, i, j), ...] over two [3,4] placeholders and a [4]
    bias; returns (placeholders, feed, nodes, numpy reference values)."""
    rng = np.random.default_rng(len(spec))
    x = fl.placeholder(fl.float32, [3, 4])
    y = fl.placeholder(fl.float32, [3, 4])
    b = fl.placeholder(fl.float32, [4])
    feed = {x: rng.standard_normal((3, 4)).astype(np.float32),
            y: rng.standard_normal((3, 4)).astype(np.float32),
            b: rng.standard_normal(4).astype(np.float32)}
    nodes, ref = [x, y], [feed[x], feed[y]]
    for op, i, j in spec:
        a, c = nodes[i % len(nodes)], nodes[j % len(nodes)]
        ra, rc = ref[i % len(ref)], ref[j % len(ref)]
        if op == "add":
            t, r = a + c, ra + rc
        elif op == "sub":
            t, r = a - c, ra - rc
        elif op == "mul":
            t, r = a * c, ra * rc
        elif op == "relu":
            t, r = fl.nn.relu(a), np.maximum(ra, np.float32(0))
        elif op == "identity":
            t, r = fl.identity(a), ra
        elif op == "bias":
            t, r = fl.nn.bias_add(a, b), ra + feed[b]
        elif op == "twice":
            t, r = a + a, ra + ra
        else:
            t, r = fl.reshape(fl.reshape(a, [4, 3]), [3, 4]), ra
        nodes.append(t)
        ref.append(r)
    return feed, nodes, ref


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spec=st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 20), st.integers(0, 20)), min_size=1,
                  max_size=12),
    fetch_bits=st.integers(0, 2**14 - 1),
)
def test_random_chains_equal_numpy_with_and_without_forwarding(monkeypatch, spec, fetch_bits):
    results = []
    for env in ("1", "0"):
        monkeypatch.setenv("FLOWLAB_FORWARDING", env)
        g = fl.Graph()
        with g.as_default():
            feed, nodes, ref = _chain_program(spec)
            # Fetch the last node and a random subset of the others (fetched values
            # must come back intact even when a later op could have reused them).
            picked = [k for k in range(2, len(nodes)) if fetch_bits >> k & 1] + [len(nodes) - 1]
            copies = {k: v.copy() for k, v in feed.items()}
            with fl.Session(graph=g) as sess:
                got = sess.run([nodes[k] for k in picked], feed)
            for k, v in feed.items():
                np.testing.assert_array_equal(v, copies[k])
        for k, v in zip(picked, got):
            np.testing.assert_array_equal(v, ref[k])
        results.append(got)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_fits():
    a = np.zeros((3, 4), np.float32)
    assert registry.fits(np.zeros(4, np.float32), a)
    assert registry.fits(np.zeros((1, 4), np.float32), a)
    assert registry.fits(np.float32(1), a)
    assert not registry.fits(np.zeros((2, 3, 4), np.float32), a)
    assert not registry.fits(np.zeros(4, np.float64), a)
    assert not registry.fits(np.zeros(3, np.float32), a)


@pytest.mark.parametrize("holder", ["alias", "view", "readonly", "list"])
def test_can_forward_refuses_a_value_held_elsewhere(holder):
    ns: dict = {}

    def kernel(ctx, x):
        return registry.can_forward(x)

    body = {
        "alias": "    s0 = np.ones(3)\n    s1 = s0\n    return k(None, s0)\n",
        "view": "    s0 = np.ones(3)[:2]\n    return k(None, s0)\n",
        "readonly": "    s0 = np.ones(3)\n    s0.flags.writeable = False\n    return k(None, s0)\n",
        "list": "    s0 = np.ones(3)\n    keep = [s0]\n    return k(None, s0)\n",
    }[holder]
    exec("def alone():\n    s0 = np.ones(3)\n    return k(None, s0)\ndef held():\n" + body, {"np": np, "k": kernel}, ns)
    assert ns["alone"]() is True
    assert ns["held"]() is False


def _xent_program():
    x = fl.placeholder(fl.float32, [None, 4])
    y = fl.placeholder(fl.int32, [None])
    w = fl.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    logits = fl.matmul(x, w) * 2.0  # dies at the cross entropy
    loss = fl.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
    grad = fl.gradients(fl.reduce_mean(loss), w)[0]  # reads the backprop output
    feed = {x: np.array([[1, 2, 3, 4], [-4, 0, 9, 1], [0, 0, 0, 0]], np.float32),
            y: np.array([2, 0, 1], np.int32)}
    return [loss, grad], feed


def test_the_sparse_cross_entropy_computes_in_its_dying_logits(monkeypatch):
    seen = _recording(monkeypatch)
    results = []
    for env in ("1", "0"):
        monkeypatch.setenv("FLOWLAB_FORWARDING", env)
        g = fl.Graph()
        with g.as_default():
            fetches, feed = _xent_program()
            with fl.Session(graph=g) as sess:
                sess.run(fl.global_variables_initializer())
                if env == "1":
                    assert (_forwarding_nodes(sess, fetches, feed)
                            ["SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"] == (0,))
                results.append(sess.run(fetches, feed))
    assert seen[True] >= 1
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.tf
def test_the_forwarded_cross_entropy_equals_tensorflow(tf1):
    from tests.difftest import assert_same

    def build(tf):
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.placeholder(tf.int32, [None])
        w = tf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        logits = tf.nn.relu(tf.matmul(x, w) + 0.5)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        grad = tf.gradients(tf.reduce_mean(loss), w)[0]
        feed = {x: np.array([[1, 2, 3, 4], [-4, 0, 9, 1], [0, 0, 0, 0]], np.float32),
                y: np.array([2, 0, 1], np.int32)}
        return [loss, grad], feed

    assert_same(tf1, build)


def _adam_program(seed):
    rng = np.random.default_rng(seed)
    x = fl.placeholder(fl.float32, [None, 5])
    w = fl.Variable(rng.standard_normal((5, 3)).astype(np.float32))
    b = fl.Variable(rng.standard_normal(3).astype(np.float32))
    loss = fl.reduce_sum(fl.square(fl.matmul(x, w) + b))
    train = fl.train.AdamOptimizer(0.1).minimize(loss)
    feed = {x: rng.standard_normal((4, 5)).astype(np.float32)}
    return [w, b], train, feed


def test_adam_computes_its_denominator_in_the_dying_gradient(monkeypatch):
    """ApplyAdam's gradient (a MatMul's output) dies at the update: the dense kernel
    writing new arrays uses its buffer as scratch, with values bit for bit those of the
    unforwarded path, over several steps (so the slots, too)."""
    from flowlab.kernels import training_kernels

    calls = Counter()
    real = training_kernels._adam_into_grad

    def counting(*args):
        calls["into_grad"] += 1
        return real(*args)

    monkeypatch.setattr(training_kernels, "_adam_into_grad", counting)
    results = []
    for env in ("1", "0"):
        monkeypatch.setenv("FLOWLAB_FORWARDING", env)
        g = fl.Graph()
        with g.as_default():
            variables, train, feed = _adam_program(3)
            with fl.Session(graph=g) as sess:
                sess.run(fl.global_variables_initializer())
                if env == "1":
                    nodes = _forwarding_nodes(sess, train, feed)
                    assert nodes["Adam/update_Variable/ApplyAdam"] == (9,)
                for _ in range(4):
                    # Fetching the variables keeps their updates in the step (not
                    # deferred: flowlab.runtime.task.deferred_updates), so the logged path runs.
                    sess.run([train] + variables, feed)
                results.append(sess.run(variables))
    assert calls["into_grad"] >= 4  # the weight's update, every step with forwarding on
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
