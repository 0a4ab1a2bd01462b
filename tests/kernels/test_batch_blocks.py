"""Memory-bound kernels by blocks of the batch on the intra-op threads
(flowlab.kernels.batch_blocks): Relu, BiasAdd, their gradients, MaxPool and
MaxPoolGrad equal TensorFlow's when their passes are shared out -- ties, NaNs (the
blocked MaxPoolGrad falls back), ragged tilings, NCHW -- floating-point errors stay
silent on the helper threads, and small arrays are not cut."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels import batch_blocks, intra_op
from tests.difftest import assert_same, run_with

SHAPE = (6, 40, 40, 32)  # 307,200 elements: above batch_blocks.MIN_ELEMENTS


@pytest.fixture
def three_threads(monkeypatch):
    """Three intra-op threads for kernels called outside an expensive step; records the
    block counts that reach intra_op.run_blocks."""
    old = intra_op.intra_op_threads()
    intra_op.set_intra_op_threads(3)
    seen = []
    real = intra_op.run_blocks
    monkeypatch.setattr(intra_op, "run_blocks", lambda b, fn: seen.append(b) or real(b, fn))
    yield seen
    intra_op.set_intra_op_threads(old)


def _relu_input(seed, shape=SHAPE):
    # Shifted so that ReLU gives many exact zeros: 2x2 windows with ties.
    return np.maximum(np.random.RandomState(seed).randn(*shape).astype(np.float32) - 0.7, 0)


def _activation_graph(x_val, b_val, dy_val, data_format="NHWC"):
    def build(tf):
        x = tf.placeholder(tf.float32, x_val.shape)
        b = tf.constant(b_val)
        h = tf.nn.relu(tf.nn.bias_add(x * 1.0, b, data_format=data_format))  # x*1.0 dies: in place
        dx, db = tf.gradients(h, [x, b], grad_ys=tf.constant(dy_val))
        return [h, dx, db], {x: x_val}

    return build


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_relu_bias_add_and_gradients_by_blocks_equal_tensorflow(tf1, three_threads, data_format):
    rs = np.random.RandomState(1)
    x = rs.randn(*SHAPE).astype(np.float32)
    b = rs.randn(SHAPE[3] if data_format == "NHWC" else SHAPE[1]).astype(np.float32)
    dy = rs.randn(*SHAPE).astype(np.float32)
    assert_same(tf1, _activation_graph(x, b, dy, data_format), rtol=1e-5, atol=1e-4)
    # BiasAdd, Relu, ReluGrad and BiasAddGrad each cut into 3 blocks
    assert three_threads.count(3) >= 4, three_threads


@pytest.mark.parametrize("shape, padding", [(SHAPE, "SAME"), ((5, 41, 43, 32), "VALID")])
def test_max_pool_and_its_gradient_by_blocks_equal_tensorflow(tf1, three_threads, shape, padding):
    x_val = _relu_input(2, shape)

    def build(tf):
        x = tf.placeholder(tf.float32, shape)
        y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], padding)
        dy = tf.constant(np.random.RandomState(3).randn(*[int(d) for d in y.shape]).astype(np.float32))
        return [y, tf.gradients(y, x, grad_ys=dy)[0]], {x: x_val}

    assert_same(tf1, build)
    assert three_threads.count(3) >= 2, three_threads


def test_max_pool_gradient_with_a_nan_in_one_block_equals_tensorflow(tf1, three_threads):
    x_val = _relu_input(4)
    x_val[5, 7, 9, 3] = np.nan  # the last image: the last block

    def build(tf):
        x = tf.placeholder(tf.float32, SHAPE)
        y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        dy = tf.constant(np.random.RandomState(5).randn(*[int(d) for d in y.shape]).astype(np.float32))
        return [tf.gradients(y, x, grad_ys=dy)[0]], {x: x_val}

    assert_same(tf1, build)


def test_floating_point_errors_are_silent_on_the_helper_threads(three_threads):
    x_val = np.full(SHAPE, 3e38, np.float32)

    def build(tf):
        x = tf.placeholder(tf.float32, SHAPE)
        return [tf.nn.bias_add(x, tf.constant(np.full(SHAPE[3], 3e38, np.float32)))], {x: x_val}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (y,) = run_with(fl, build)
    assert np.isposinf(y).all()
    assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert 3 in three_threads


def test_small_arrays_run_whole(three_threads):
    assert batch_blocks.bounds(np.zeros((6, 8, 8, 32), np.float32)) == [0, 6]
    assert batch_blocks.bounds(np.zeros((1, 600, 600), np.float32)) == [0, 1]
    assert batch_blocks.bounds(np.zeros(SHAPE, np.float32)) == [0, 2, 4, 6]
