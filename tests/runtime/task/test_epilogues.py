"""Conv2D -> BiasAdd -> Relu as one call on the straight-line path
(flowlab.runtime.task.epilogues): the unfused plan's bits, fused only where nothing else
sees the intermediate values, the BiasAdd's own error when the bias does not fit, and
traces that still show the three ops."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.kernels import conv_kernels
from flowlab.runtime.task import straight_line
from tests.difftest import assert_same


@pytest.fixture
def fused_calls(monkeypatch):
    """How the fused calls of plans compiled from now on went: one bool each."""
    seen: list[bool] = []
    real = conv_kernels.conv2d_bias_relu

    def counting(ctx, x, f, bias):
        y, fused = real(ctx, x, f, bias)
        seen.append(fused)
        return y, fused

    monkeypatch.setattr(straight_line, "conv2d_bias_relu", counting)
    return seen


def _layer(batch=4, fmt="NHWC", bias_shape=None, dtype=np.float32):
    """A conv layer and its training step: (graph, train, loss, h, feed)."""
    rng = np.random.default_rng(0)
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(dtype, [None, 12, 12, 3] if fmt == "NHWC" else [None, 3, 12, 12])
        w = fl.Variable(rng.standard_normal((3, 3, 3, 8)).astype(dtype), name="w")
        if bias_shape is None:
            b = fl.Variable(rng.standard_normal(8).astype(dtype), name="b")
            feed_b = {}
        else:
            b = fl.placeholder(dtype, bias_shape, name="b")
            feed_b = {b: rng.standard_normal(8).astype(dtype)}
        h = fl.nn.relu(fl.nn.bias_add(fl.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format=fmt), b,
                                      data_format=fmt))
        loss = fl.reduce_sum(fl.square(fl.nn.max_pool(h, 2, 2, "SAME", data_format=fmt)))
        train = fl.train.GradientDescentOptimizer(1e-3).minimize(loss)
        xs = (batch, 12, 12, 3) if fmt == "NHWC" else (batch, 3, 12, 12)
        feed = {x: rng.standard_normal(xs).astype(dtype), **feed_b}
    return g, train, loss, h, feed


def _train(monkeypatch, forwarding, threads=1, fetch=("loss", "h"), **kw):
    monkeypatch.setenv("FLOWLAB_FORWARDING", "1" if forwarding else "0")
    g, train, loss, h, feed = _layer(**kw)
    names = {"loss": loss, "h": h}
    with g.as_default(), fl.Session(graph=g, config=fl.ConfigProto(intra_op_parallelism_threads=threads)) as s:
        s.run(fl.global_variables_initializer())
        out = [s.run([train] + [names[f] for f in fetch], feed)[1:] for _ in range(3)]
        return out, s.run(fl.global_variables())


def _same_bits(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_bits(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("fetch", [("loss",), ("loss", "h")])
def test_a_conv_layer_runs_as_one_call_with_the_unfused_bits(monkeypatch, fused_calls, threads, fetch):
    fused = _train(monkeypatch, True, threads, fetch)
    assert fused_calls and all(fused_calls)  # every step's layer fused
    unfused = _train(monkeypatch, False, threads, fetch)
    _same_bits(fused, unfused)


def test_the_fused_layer_matches_tensorflow(tf1):
    def build(tf):
        rng = np.random.default_rng(1)
        x = tf.constant(rng.standard_normal((3, 9, 9, 4)).astype(np.float32))
        w = tf.constant(rng.standard_normal((5, 5, 4, 6)).astype(np.float32))
        b = tf.constant(rng.standard_normal(6).astype(np.float32))
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))
        return tf.reduce_sum(y, axis=[1, 2])

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["conv_fetched", "bias_add_fetched", "nchw", "float16"])
def test_no_fusion_where_an_intermediate_is_seen_or_the_layout_differs(monkeypatch, fused_calls, case):
    monkeypatch.setenv("FLOWLAB_FORWARDING", "1")
    kw = {"fmt": "NCHW"} if case == "nchw" else {"dtype": np.float16} if case == "float16" else {}
    g, train, loss, h, feed = _layer(**kw)
    seen = {"conv_fetched": "Conv2D:0", "bias_add_fetched": "BiasAdd:0"}.get(case)
    fetches = [train, loss] + ([g.get_tensor_by_name(seen)] if seen else [])
    with g.as_default(), fl.Session(graph=g) as s:
        s.run(fl.global_variables_initializer())
        s.run(fetches, feed)
    assert fused_calls == []


def test_a_batch_of_one_runs_the_three_kernels_with_the_same_values(monkeypatch, fused_calls):
    fused = _train(monkeypatch, True, batch=1)
    assert fused_calls and not any(fused_calls)  # the fused call declined: the ops ran
    _same_bits(fused, _train(monkeypatch, False, batch=1))


def test_a_bias_of_the_wrong_length_fails_as_the_bias_add_does(monkeypatch, fused_calls):
    messages = []
    for forwarding in (True, False):
        monkeypatch.setenv("FLOWLAB_FORWARDING", "1" if forwarding else "0")
        g, train, loss, h, feed = _layer(bias_shape=[None])
        b = g.get_tensor_by_name("b:0")
        feed[b] = np.ones(5, np.float32)
        with g.as_default(), fl.Session(graph=g) as s:
            s.run(fl.global_variables_initializer())
            with pytest.raises(errors.InvalidArgumentError) as e:
                s.run(h, feed)
        assert e.value.op is not None and e.value.op.name == "BiasAdd"
        messages.append(str(e.value).splitlines()[0])
    assert fused_calls == [False]
    assert messages[0] == messages[1] and "Must provide as many biases" in messages[0]


def test_a_traced_step_shows_the_three_ops(monkeypatch, fused_calls):
    monkeypatch.setenv("FLOWLAB_FORWARDING", "1")
    g, train, loss, h, feed = _layer()
    with g.as_default(), fl.Session(graph=g) as s:
        s.run(fl.global_variables_initializer())
        untraced = s.run(h, feed)
        md = fl.RunMetadata()
        traced = s.run(h, feed, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    ran = {n.node_name for d in md.step_stats.dev_stats for n in d.node_stats}
    assert {"Conv2D", "BiasAdd", "Relu"} <= ran
    assert fused_calls == [True]  # the untraced step only
    _same_bits(untraced, traced)
