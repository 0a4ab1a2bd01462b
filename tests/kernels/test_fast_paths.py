"""The kernels' fast paths for the usual inputs (session 4, mlp_train step): each
gives exactly what the general path gives, and bad input still takes the general
path and its TensorFlow message."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.kernels.registry import find_kernel
from tests.difftest import assert_same


def _k(op_type):
    return find_kernel(op_type, "CPU").fn


def _ctx(**attrs):
    return types.SimpleNamespace(xp=np, attrs=attrs, forwardable=(), op_type="", name="n")


@settings(max_examples=150, deadline=None)
@given(dims=st.lists(st.integers(0, 4), min_size=0, max_size=4), data=st.data())
def test_reshape_fast_path_equals_the_general_path(dims, data):
    x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
    target = data.draw(st.permutations(dims)) if dims else []
    shape = list(target)
    if shape and data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    reshape = _k("Reshape")
    # The general path is the oracle: a shape given as a list never takes the fast one.
    try:
        want = reshape(_ctx(), x, shape)
    except errors.InvalidArgumentError as e:
        with pytest.raises(errors.InvalidArgumentError) as got_e:
            reshape(_ctx(), x, np.array(shape, np.int32))
        assert got_e.value.message == e.message
        return
    got = reshape(_ctx(), x, np.array(shape, np.int32))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape, message", [
    ([5, -1], "requires a multiple of 5"),
    ([-1, -1], "Only one input size may be -1"),
    ([2, 2], "Input to reshape is a tensor with 6 values, but the requested shape has 4"),
    ([3, -2], "Size 1 must be non-negative, not -2"),
])
def test_reshape_errors_keep_their_message(shape, message):
    with pytest.raises(errors.InvalidArgumentError, match=message):
        _k("Reshape")(_ctx(), np.zeros((2, 3), np.float32), np.array(shape, np.int64))


def test_reshape_with_a_zero_size_and_minus_one_as_tensorflow(tf1):
    assert_same(tf1, lambda tf: tf.reshape(tf.zeros([0, 3]), [-1, 0]).shape.as_list() and
                tf.shape(tf.reshape(tf.zeros([0, 3]), tf.constant([0, -1]))))


def test_relu_grad_is_tensorflows_product_with_the_mask():
    # gradients * (features > 0), as TensorFlow's CPU kernel: NaN for 0 * inf, -0.0 kept.
    k = _k("ReluGrad")
    for dt in (np.float16, np.float32, np.float64):
        g = np.array([1, -2, np.inf, -np.inf, np.nan, -0.0, 3, -4, 5] * 3, dt)
        f = np.array([1, 1, -1, 1, 0, 1, np.nan, -0.0, -np.inf] * 3, dt)
        with np.errstate(invalid="ignore"):
            want = g * (f > 0).astype(dt)
        got = k(_ctx(T=dtypes.as_dtype(dt)), g, f)
        assert got.dtype == dt
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def _relu_grad_program(g, f):
    def build(tf):
        a, b = tf.placeholder(tf.float32, g.shape), tf.placeholder(tf.float32, f.shape)
        return tf.gradients(tf.nn.relu(b), b, grad_ys=a)[0], {a: g, b: f}  # a ReluGrad

    return build


def test_relu_grad_of_finite_values_as_tensorflow(tf1):
    rs = np.random.RandomState(0)
    g, f = rs.randn(6, 50).astype(np.float32), rs.randn(6, 50).astype(np.float32)
    f[0, :5] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    assert_same(tf1, _relu_grad_program(g, f))


def test_relu_grad_with_inf_and_nan_gradients_as_tensorflow(tf1):
    g = np.array([[1, -2, np.inf, -np.inf], [np.nan, -0.0, 3, -4]], np.float32)
    f = np.array([[1, 1, -1, 1], [0, 1, np.nan, -0.0]], np.float32)
    assert_same(tf1, _relu_grad_program(g, f))


@pytest.mark.parametrize("n", [3, 5000])  # the scalar path and the zero-array path
def test_relu_keeps_nan_and_gives_plus_zero(n):
    x = np.resize(np.array([-0.0, 0.0, np.nan, -np.nan, -1, 2, -np.inf, np.inf], np.float32), n)
    got = _k("Relu")(_ctx(), x)
    np.testing.assert_array_equal(got.view(np.int32), np.maximum(x, np.float32(0)).view(np.int32))


def test_reductions_with_scalar_and_vector_axes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for op, fn in (("Sum", np.sum), ("Prod", np.prod), ("Mean", np.mean)):
        k = _k(op)
        for axes in (np.int32(-1), np.array(1, np.int64), np.array([0, 2], np.int32), np.array([], np.int32)):
            got = k(_ctx(keep_dims=False), x, axes)
            want = fn(x, axis=tuple(np.atleast_1d(axes).tolist()), dtype=np.float32)
            np.testing.assert_allclose(got, want, rtol=1e-6)
            assert np.asarray(got).dtype == np.float32
    with pytest.raises(errors.InvalidArgumentError, match="Invalid reduction dimension"):
        _k("Sum")(_ctx(keep_dims=False), x, np.int32(3))
    with pytest.raises(errors.InvalidArgumentError, match="duplicate dimension"):
        _k("Sum")(_ctx(keep_dims=False), x, np.array([1, -2], np.int32))


def test_expand_dims_tile_shape_cast_fast_paths():
    x = np.ones((2, 3), np.float32)
    assert _k("ExpandDims")(_ctx(), x, np.int32(-1)).shape == (2, 3, 1)
    assert _k("ExpandDims")(_ctx(), x, np.int32(0)).shape == (1, 2, 3)
    with pytest.raises(errors.InvalidArgumentError, match="Tried to expand dim index 3"):
        _k("ExpandDims")(_ctx(), x, np.int32(3))
    assert _k("Tile")(_ctx(), x, np.array([2, 1], np.int32)).shape == (4, 3)
    with pytest.raises(errors.InvalidArgumentError, match="length 2 but got length 1"):
        _k("Tile")(_ctx(), x, np.array([2], np.int32))
    s = _k("Shape")(_ctx(out_type=dtypes.int32), x)
    assert s.dtype == np.int32 and s.tolist() == [2, 3]
    c = _k("Cast")(_ctx(SrcT=dtypes.int32, DstT=dtypes.float32), np.int32(7))
    assert type(c) is np.float32 and c == 7
    with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
        _k("FloorDiv")(_ctx(), np.int32(4), np.int32(0))


def test_mean_gradient_chain_as_tensorflow(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, [None, 3])
        loss = tf.reduce_mean(tf.nn.relu(x) * 2.0)
        return [loss, tf.gradients(loss, x)[0]], {x: np.array([[1, -2, 3], [0, 5, -6]], np.float32)}

    assert_same(tf1, build)
