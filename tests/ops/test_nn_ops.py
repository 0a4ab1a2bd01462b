"""The nn ops with kernels: activations, softmax, BiasAdd, L2Loss, InTopKV2 and
TopKV2 -- values against NumPy references and against TensorFlow, dtypes, edge cases
(empty tensors, +-1000 logits, nan/inf), build-time and runtime errors.  The cross entropies are tested in test_nn_xent.py, the composites
(flowlab.ops.nn_impl) in test_nn_impl.py."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowlab as fl
from flowlab.ops.gradient_registry import get_gradient_function
from tests.difftest import assert_same, assert_same_error
from tests.ops.nn_testing import FLOATS, feed, np_softmax, run

EDGES = [np.nan, -np.inf, np.inf, -1000.0, -20.0, -14.0, -1.0, -1e-8, -0.0, 0.0, 1e-8, 0.5, 1.0, 6.0, 7.0, 14.0, 20.0, 1000.0]


# --- activations --------------------------------------------------------------------
def _selu(x):
    return np.where(x < 0, 1.7580993408473768599 * (np.exp(np.minimum(x, 0)) - 1), 1.0507009873554805 * x)


NUMPY_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "elu": lambda x: np.where(x < 0, np.expm1(np.minimum(x, 0)), x),
    "selu": _selu,
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "softplus": lambda x: np.logaddexp(0, x),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


@pytest.mark.parametrize("name", sorted(NUMPY_ACTIVATIONS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_activation_values_against_numpy(name, dtype):
    x = np.array(EDGES, dtype)
    out = run(getattr(fl.nn, name)(fl.constant(x)))
    assert out.dtype == dtype and out.shape == x.shape
    with np.errstate(all="ignore"):
        want = NUMPY_ACTIVATIONS[name](x.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
def test_activations_against_tensorflow(tf1, dtype):
    names = sorted(NUMPY_ACTIVATIONS)

    def build(tf):
        p, fd = feed(tf, EDGES, dtype)
        return {name: getattr(tf.nn, name)(p) for name in names}, fd

    # Exact for the piecewise-linear ones; exp and log1p may differ by an ulp (Eigen's).
    out = assert_same(tf1, build, rtol=1e-6, atol=1e-30)
    tf_out = __import__("tests.difftest", fromlist=["run_with"]).run_with(tf1, build)
    for name in ("relu", "relu6", "leaky_relu"):
        np.testing.assert_array_equal(out[name], tf_out[name])


def test_relu_other_dtypes(tf1):
    types = [np.int8, np.int32, np.int64, np.uint8, np.float16]

    def build(tf):
        fetches, fd = [], {}
        for dtype in types:
            p, f = feed(tf, np.array([-3, 0, 4, 6, 9, 100]).astype(dtype))
            fetches += [tf.nn.relu(p), tf.nn.relu6(p)]
            fd.update(f)
        return fetches, fd

    assert_same(tf1, build, rtol=0, atol=0)


def test_activation_op_types_and_default_names():
    x = fl.placeholder(fl.float32, [None, 3])
    for fn, op_type in [
        (fl.nn.relu, "Relu"), (fl.nn.relu6, "Relu6"), (fl.nn.elu, "Elu"), (fl.nn.selu, "Selu"),
        (fl.nn.leaky_relu, "LeakyRelu"), (fl.nn.softplus, "Softplus"), (fl.nn.softsign, "Softsign"),
        (fl.nn.softmax, "Softmax"), (fl.nn.log_softmax, "LogSoftmax"), (fl.nn.l2_loss, "L2Loss"),
    ]:
        y = fn(x)
        assert (y.op.type, y.op.name) == (op_type, op_type)
        assert fn(x, name="act").op.name.startswith("act")
    assert fl.nn.relu(x).shape.as_list() == [None, 3]
    assert fl.nn.l2_loss(x).shape.as_list() == []


def test_leaky_relu_alpha_attr_and_select_semantics(tf1):
    y = fl.nn.leaky_relu(fl.placeholder(fl.float64), alpha=0.3)
    assert y.op.get_attr("alpha") == float(np.float32(0.3))  # a 32-bit float attr, as in TF

    def build(tf):
        p, fd = feed(tf, [np.nan, -np.inf, -1.0, -0.0, 2.0], np.float64)
        return [tf.nn.leaky_relu(p), tf.nn.leaky_relu(p, alpha=2.0), tf.nn.leaky_relu(p, alpha=-0.5)], fd

    out = assert_same(tf1, build, rtol=0, atol=0)
    assert out[1][2] == -2.0  # alpha > 1: a select, not max(x, alpha * x)


def test_leaky_relu_casts_integers_to_float32(tf1):
    assert_same(tf1, lambda tf: tf.nn.leaky_relu(tf.constant([-5, 0, 3])))


def test_softplus_thresholds_match_tensorflow(tf1):
    # TensorFlow switches to x (or exp(x)) past log(eps) + 2: 13.94 for float32.
    xs = np.concatenate([np.linspace(-40, 40, 161), [13.9, 13.95, 36.0, 37.0, 80.0]])

    def build(tf):
        a, fa = feed(tf, xs, np.float32)
        b, fb = feed(tf, xs, np.float64)
        return [tf.nn.softplus(a), tf.nn.softplus(b)], {**fa, **fb}

    assert_same(tf1, build, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", ["elu", "selu", "softplus", "softsign", "softmax", "l2_loss"])
def test_float_only_activations_reject_integers(name):
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        getattr(fl.nn, name)(fl.constant([1, 2]))


def test_relu_rejects_bool():
    with pytest.raises(TypeError, match="'features' has DataType bool"):
        fl.nn.relu(fl.constant([True]))


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(st.sampled_from(FLOATS), hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
                  elements=st.floats(-50, 50, width=32)))
def test_relu_softplus_softmax_property(x):
    fl.reset_default_graph()
    t = fl.constant(x)
    relu, softplus, sm = run([fl.nn.relu(t), fl.nn.softplus(t), fl.nn.softmax(t)])
    assert relu.dtype == softplus.dtype == sm.dtype == x.dtype
    np.testing.assert_array_equal(relu, np.maximum(x, 0))
    assert np.all(softplus >= relu) and np.all(softplus - relu <= np.log(2) + 1e-6)
    if x.size:
        np.testing.assert_allclose(sm.sum(axis=-1), 1, rtol=1e-5)


# --- softmax ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_large_logits_are_stable(tf1, dtype):
    logits = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0], [1.0, 2.0, 3.0]], dtype)

    def build(tf):
        p, fd = feed(tf, logits)
        return [tf.nn.softmax(p), tf.nn.log_softmax(p)], fd

    sm, lsm = assert_same(tf1, build)
    np.testing.assert_allclose(sm, np_softmax(logits.astype(np.float64)), rtol=1e-6)
    assert lsm[0].tolist() == [0.0, -2000.0, -1000.0]
    assert not np.isnan(sm).any() and not np.isnan(lsm).any()


def test_softmax_nan_and_inf_rows(tf1):
    def build(tf):
        p, fd = feed(tf, [[np.nan, 1, 2], [np.inf, 1, 2], [-np.inf] * 3, [-np.inf, 0, 0]], np.float32)
        return [tf.nn.softmax(p), tf.nn.log_softmax(p)], fd

    assert_same(tf1, build)


def test_softmax_along_other_axes(tf1):
    x = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32) * 10
    axes = [0, 1, -2, -3, 2, -1]

    def build(tf):
        p, fd = feed(tf, x)
        return [[tf.nn.softmax(p, axis=axis), tf.nn.log_softmax(p, axis)] for axis in axes], fd

    out = assert_same(tf1, build)
    for axis, (sm, _) in zip(axes, out):
        np.testing.assert_allclose(sm, np_softmax(x, axis), rtol=1e-5)


def test_softmax_dim_keyword_and_static_shape(tf1):
    assert_same(tf1, lambda tf: tf.nn.softmax(tf.constant([[1.0, 2.0], [3.0, 5.0]]), dim=0))
    y = fl.nn.softmax(fl.placeholder(fl.float32, [None, 2, 5]), dim=1)
    assert y.shape.as_list() == [None, 2, 5]
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        fl.nn.softmax(fl.constant([1.0]), axis=0, dim=0)


def test_softmax_axis_out_of_range(tf1):
    tf_err, fl_err = assert_same_error(tf1, lambda tf: tf.nn.softmax(tf.zeros([2, 3]), axis=2))
    assert "`dim` must be in the range [-2, 2) where 2 is the number of dimensions" in str(fl_err)


@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (0,)])
def test_softmax_empty(tf1, shape):
    def build(tf):
        p, fd = feed(tf, np.zeros(shape, np.float32))
        return [tf.nn.softmax(p), tf.nn.log_softmax(p)], fd

    assert_same(tf1, build)


def test_softmax_scalar_errors(tf1):
    with pytest.raises(ValueError, match=r"Shape must be at least rank 1 but is rank 0 for 'Softmax'"):
        fl.nn.softmax(fl.constant(1.0))

    def build(tf):
        p, fd = feed(tf, 1.0, np.float32, shape=None)
        return tf.nn.log_softmax(p), fd

    _, err = assert_same_error(tf1, build)
    assert "logits must have >= 1 dimension, got []" in str(err)


def test_softmax_float16():
    out = run(fl.nn.softmax(fl.constant([1.0, 2.0, 3.0], fl.float16)))
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, [0.09, 0.2446, 0.665], rtol=2e-3)


# --- BiasAdd ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex64])
def test_bias_add_nhwc(tf1, dtype):
    v = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    b = np.array([1, -2, 3, 10], dtype)

    def build(tf):
        p, fd = feed(tf, v)
        return tf.nn.bias_add(p, b), fd

    out = assert_same(tf1, build, rtol=0, atol=0)
    np.testing.assert_array_equal(out, v + b)


@pytest.mark.parametrize("fmt", ["NCHW", "NCW", "NCDHW"])
def test_bias_add_nchw(tf1, fmt):
    v = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    b = np.array([100.0, 200.0, 300.0], np.float32)

    def build(tf):
        p, fd = feed(tf, v)
        return [tf.nn.bias_add(p, b, data_format=fmt), tf.nn.bias_add(p[:, :, 0], b, data_format=fmt)], fd

    out, _ = assert_same(tf1, build, rtol=0, atol=0)
    np.testing.assert_array_equal(out, v + b[:, None, None])


@pytest.mark.parametrize("shape", [(64, 28, 28, 32), (3, 7, 11, 5), (300, 3000), (0, 4, 4, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_add_gradient_sums_channels_closely(tf1, shape, dtype):
    # Channels-last BiasAddGrad folds rows into wide ones before summing (long inner
    # loops): its sums must stay within float rounding of the exact ones -- closer
    # than row-by-row accumulation, whose error grows with the row count -- and
    # agree with TensorFlow, with rows left over and with none at all.
    g = np.random.RandomState(4).standard_normal(shape).astype(dtype) + 1.0

    def build(tf):
        v = tf.placeholder(dtype, [None] + list(shape[1:]))
        b = tf.zeros([shape[-1]], dtype)
        return tf.gradients(tf.nn.bias_add(v, b), b, g)[0], {v: np.zeros(shape, dtype)}

    # TensorFlow's own float32 sums of 50176 rows are ~5e-6 (relative) off the exact ones.
    out = assert_same(tf1, build, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    exact = g.astype(np.float64).reshape(-1, shape[-1]).sum(axis=0)
    assert out.dtype == dtype and out.shape == (shape[-1],)
    # Row-by-row float32 accumulation errs by ~7e-6 there; each folded accumulator adds
    # at most a few hundred rows.
    np.testing.assert_allclose(out, exact, rtol=2e-6 if dtype == np.float32 else 1e-12)


def test_bias_add_names_and_static_shape():
    y = fl.nn.bias_add(fl.placeholder(fl.float32, [None, None]), fl.constant([1.0, 2.0]))
    assert (y.op.type, y.op.name, y.op.get_attr("data_format")) == ("BiasAdd", "BiasAdd", "NHWC")
    assert y.shape.as_list() == [None, 2]
    z = fl.nn.bias_add(fl.placeholder(fl.float32, [None, None, 7]), [1.0, 2.0, 3.0], data_format="NCHW")
    assert z.shape.as_list() == [None, 3, 7] and z.op.get_attr("data_format") == "NCHW"
    assert fl.nn.bias_add(y, [1.0, 2.0], name="out").op.name == "out"


@pytest.mark.parametrize(
    "value, bias, fmt, message",
    [
        ([2, 3], [3, 1], None, r"Shape must be rank 1 but is rank 2 for 'BiasAdd' \(op: 'BiasAdd'\)"),
        ([2, 3], [4], None, "Dimensions must be equal, but are 3 and 4 for 'BiasAdd'"),
        ([3], [3], None, "Shape must be at least rank 2 but is rank 1 for 'BiasAdd'"),
        ([2, 3], [3], "NCHW", "Shape must be at least rank 3 but is rank 2 for 'BiasAdd'"),
        ([2, 3, 4], [4], "NCHW", "Dimensions must be equal, but are 3 and 4"),
    ],
)
def test_bias_add_build_errors(tf1, value, bias, fmt, message):
    with pytest.raises(ValueError, match=message):
        fl.nn.bias_add(fl.zeros(value), fl.zeros(bias), data_format=fmt)
    with pytest.raises(ValueError):
        tf1.nn.bias_add(tf1.zeros(value), tf1.zeros(bias), data_format=fmt)


def test_bias_add_argument_errors():
    with pytest.raises(ValueError, match="`data_format` must be of the form `N...C` or `NC...`"):
        fl.nn.bias_add(fl.zeros([2, 3]), fl.zeros([3]), data_format="XYZ")
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        fl.nn.bias_add(fl.zeros([2, 3]), fl.constant([1, 2, 3]))


@pytest.mark.parametrize(
    "value, bias, message",
    [
        (np.zeros([2, 3]), np.zeros([4]), r"Must provide as many biases as the last dimension of the input "
                                          r"tensor: \[4\] vs. \[2,3\]"),
        (np.zeros([3]), np.zeros([3]), r"Input tensor must be at least 2D: \[3\]"),
        (np.zeros([2, 3]), np.zeros([3, 1]), r"Biases must be 1D: \[3,1\]"),
    ],
)
def test_bias_add_runtime_errors(tf1, value, bias, message):
    def build(tf):
        v, fv = feed(tf, value, np.float32, shape=None)
        b, fb = feed(tf, bias, np.float32, shape=None)
        return tf.nn.bias_add(v, b), {**fv, **fb}

    _, err = assert_same_error(tf1, build)
    assert isinstance(err, fl.errors.InvalidArgumentError)
    assert err.message and re.search(message, str(err))


# --- L2Loss -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [np.float16])
def test_l2_loss(tf1, dtype):
    xs = [np.asarray(np.random.RandomState(1).randn(*shape) * 3).astype(dtype)
          for shape in [(), (0,), (3,), (2, 3, 4)]]

    def build(tf):
        fetches, fd = [], {}
        for x in xs:
            p, f = feed(tf, x)
            fetches.append(tf.nn.l2_loss(p))
            fd.update(f)
        return fetches, fd

    out = assert_same(tf1, build, rtol=2e-3 if dtype == np.float16 else 1e-6)
    for x, y in zip(xs, out):
        assert y.shape == () and y.dtype == dtype
        np.testing.assert_allclose(y, np.sum(x.astype(np.float64) ** 2) / 2, rtol=3e-3)


def test_l2_loss_overflows_in_float16_like_tensorflow(tf1):
    assert_same(tf1, lambda tf: tf.nn.l2_loss(tf.constant([300.0, 400.0], tf.float16)))
    assert run(fl.nn.l2_loss(fl.constant([3.0, 4.0]))) == np.float32(12.5)


# --- InTopKV2 -----------------------------------------------------------------------
def test_in_top_k_values(tf1):
    preds = np.array([[0.1, 0.5, 0.5, 0.2], [np.nan, 1, 2, 3], [np.inf, 1, 2, 3], [1, 1, 1, 1],
                      [1, np.nan, 2, 3], [4, 3, 2, 1]], np.float32)

    def build(tf):
        p, fp = feed(tf, preds)
        t32, ft = feed(tf, [2, 0, 0, 3, 3, 1], np.int32)
        t64 = tf.constant([1, 3, 1, 3, 3, -1], tf.int64)
        return [tf.nn.in_top_k(p, t32, 1), tf.nn.in_top_k(p, t32, 2), tf.nn.in_top_k(p, t64, 2),
                tf.nn.in_top_k(p, t32, 0), tf.nn.in_top_k(p, t32, 9), tf.nn.in_top_k(p, t32, -1)], {**fp, **ft}

    out = assert_same(tf1, build)
    assert out[0].tolist() == [True, False, False, True, False, False]
    assert out[1].tolist() == [True, False, False, True, False, True]


def test_in_top_k_build(tf1):
    y = fl.nn.in_top_k(fl.placeholder(fl.float32, [None, 3]), fl.placeholder(fl.int32, [None]), 1)
    assert (y.op.type, y.op.name, y.dtype, y.shape.as_list()) == ("InTopKV2", "in_top_k/InTopKV2", fl.bool, [None])
    assert get_gradient_function("InTopKV2") is None
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1 for 'in_top_k_1/InTopKV2'"):
        fl.nn.in_top_k(fl.zeros([3]), [1], 1)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        fl.nn.in_top_k(fl.zeros([2, 3]), [1, 2, 2], 1)
    with pytest.raises(TypeError, match="'predictions' .*float64"):
        fl.nn.in_top_k(fl.zeros([2, 3], fl.float64), [1, 2], 1)


@pytest.mark.parametrize(
    "pshape, tshape, message",
    [
        ((3,), (1,), "predictions must be 2-dimensional"),
        ((2, 3), (2, 1), "targets must be 1-dimensional"),
        ((2, 3), (3,), "First dimension of predictions 2 must match length of targets 3"),
    ],
)
def test_in_top_k_runtime_errors(tf1, pshape, tshape, message):
    def build(tf):
        p, fp = feed(tf, np.zeros(pshape, np.float32), shape=None)
        t, ft = feed(tf, np.zeros(tshape, np.int32), shape=None)
        return tf.nn.in_top_k(p, t, 1), {**fp, **ft}

    _, err = assert_same_error(tf1, build)
    assert message in str(err)


# --- TopKV2 -------------------------------------------------------------------------
def test_top_k_values(tf1):
    x = np.array([[3.0, 1.0, 3.0, 2.0], [-1, 1, 5, 1], [-0.0, 0.0, -np.inf, np.inf]], np.float32)

    def build(tf):
        p, fd = feed(tf, x, shape=[None, None])
        return [tf.nn.top_k(p, 3), tf.nn.top_k(tf.cast(p, tf.float64), 4), tf.nn.top_k(p, 0),
                tf.nn.top_k(x[0], 2, index_type=tf.int64), tf.nn.top_k(np.array([[5, 1, 5, 200]], np.uint8), 2),
                tf.nn.top_k(np.array([7, -3, 7, -128], np.int8), 4), tf.nn.top_k(np.zeros((0, 3)), 2)], fd

    out = assert_same(tf1, build, rtol=0, atol=0)
    assert out[0][1].tolist() == [[0, 2, 3], [2, 1, 3], [3, 0, 1]]  # ties: lower index first


def test_top_k_build():
    r = fl.nn.top_k(fl.placeholder(fl.float32, [None, 5]), 2)
    values, indices = r
    assert (r.values.op.type, r.values.op.name) == ("TopKV2", "TopKV2") and values is r.values
    assert values.shape.as_list() == [None, 2] and indices.dtype == fl.int32
    assert fl.nn.top_k(fl.zeros([2, 5]), fl.placeholder(fl.int32, [])).values.shape.as_list() == [2, None]
    with pytest.raises(ValueError, match="input must have last dimension >= k = 3 but is 2 for 'TopKV2"):
        fl.nn.top_k(fl.constant([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        fl.nn.top_k(fl.constant(1.0), 1)
    with pytest.raises(ValueError, match="given by scalar input 1, must be non-negative but is -1"):
        fl.nn.top_k(fl.constant([1.0, 2.0]), -1)


@pytest.mark.parametrize(
    "x, k, message",
    [([1.0, 2.0], 3, "input must have at least k columns. Had 2, needed 3"),
     ([1.0, 2.0], -1, "Need k >= 0, got -1"),
     (1.0, 1, r"input must be >= 1-D, got shape []")],
)
def test_top_k_runtime_errors(tf1, x, k, message):
    def build(tf):
        p, fp = feed(tf, x, np.float32, shape=None)
        q, fq = feed(tf, k, np.int32, shape=None)
        return tf.nn.top_k(p, q), {**fp, **fq}

    _, err = assert_same_error(tf1, build)
    assert message in str(err)


# --- the namespace ------------------------------------------------------------------
def test_nn_namespace_reexports_math_activations(tf1):
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    assert_same(tf1, lambda tf: [tf.nn.sigmoid(x), tf.nn.tanh(x)])
