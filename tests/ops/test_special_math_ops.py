"""asinh/acosh/atanh, erfc, rint, xlogy/xdivy/xlog1py, divide_no_nan, multiply_no_nan,
reduce_variance and reduce_std against TensorFlow (values, dtypes, zeros where TF gives
them instead of NaN, broadcasting, gradients, names) and their gradient table entries."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(5)
_POS = RS.uniform(0.5, 2.0, (2, 3))

grad_case("Asinh", RS.uniform(-2, 2, (2, 3)))(lambda tf, x: tf.math.asinh(x))
grad_case("Acosh", RS.uniform(1.2, 3, (2, 3)))(lambda tf, x: tf.math.acosh(x))
grad_case("Atanh", RS.uniform(-0.8, 0.8, (2, 3)))(lambda tf, x: tf.math.atanh(x))
grad_case("Erfc", RS.uniform(-2, 2, (2, 3)))(lambda tf, x: tf.math.erfc(x))
# No zeros here: TensorFlow's gradient is 0 there by convention, which finite differences
# do not see (the differential test below covers the zeros).
grad_case("Xlogy", np.array([[0.3, 1.5, -2.0]]), _POS)(lambda tf, x, y: tf.math.xlogy(x, y))
grad_case("Xdivy", np.array([[0.3, 1.5, -2.0]]), _POS)(lambda tf, x, y: tf.math.xdivy(x, y))
grad_case("Xlog1py", np.array([[-0.4], [1.5]]), _POS)(lambda tf, x, y: tf.math.xlog1py(x, y))
grad_case("DivNoNan", RS.uniform(-1, 1, (2, 3)), np.array([0.6, 1.5, -2.0]))(
    lambda tf, x, y: tf.math.divide_no_nan(x, y))
grad_case("MulNoNan", RS.uniform(-1, 1, (2, 3)), np.array([[0.7], [-1.1]]))(
    lambda tf, x, y: tf.math.multiply_no_nan(x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_tensorflow(tf1, dtype):
    def build(tf):
        x = tf.constant(np.array([-2.5, -1.0, -0.5, 0.0, 0.5, 1.5, 2.5], dtype))
        y = tf.constant(np.array([0.0, 2.0, 0.0, 0.0, 3.0, -1.0, np.inf], dtype))
        return [tf.math.asinh(x), tf.math.acosh(x + 3), tf.math.atanh(x / 3), tf.math.erfc(x), tf.math.rint(x),
                tf.math.xlogy(x, tf.abs(y)), tf.math.xdivy(x, y), tf.math.xlog1py(x, y), tf.math.divide_no_nan(x, y),
                tf.math.multiply_no_nan(x * np.inf, y), tf.math.reduce_variance(x), tf.math.reduce_std(x),
                tf.math.asinh(tf.constant(np.array(0.5, dtype)))]

    assert_same(tf1, build, rtol=1e-6)


def test_broadcasting_reductions_and_gradients(tf1):
    def build(tf):
        x = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
        y = tf.Variable(np.array([[0.0], [2.0]], np.float32))
        outs = [tf.math.xlogy(x, y + 1), tf.math.divide_no_nan(x, y), tf.math.multiply_no_nan(x, y),
                tf.math.reduce_variance(x, axis=1, keepdims=True), tf.math.reduce_std(x, axis=0),
                tf.math.xdivy(x, y + 0.5), tf.math.asinh(x) * tf.math.erfc(x)]
        return [outs, [tf.gradients(tf.reduce_sum(o), [x, y]) for o in outs[:3] + outs[5:6]],
                tf.gradients(tf.reduce_sum(outs[3]) + tf.reduce_sum(outs[4]) + tf.reduce_sum(outs[6]), x)]

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


def test_names(tf1):
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            a = mod.constant([1.0])
            names.append([mod.math.divide_no_nan(a, a).name, mod.math.multiply_no_nan(a, a).name,
                          mod.math.xlogy(a, a).name, mod.math.asinh(a).name, mod.math.reduce_std(a).name,
                          mod.math.reduce_variance(a, name="v").name, mod.div_no_nan(a, a, name="d").name])
    assert names[0] == names[1]


def test_integer_variance_is_refused(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default(), pytest.raises(TypeError, match="Input must be either real or complex"):
            mod.math.reduce_variance(mod.constant([1, 2]))


def test_math_namespace_has_nn_members():
    for n in ("softplus", "softsign", "l2_normalize", "in_top_k", "top_k", "invert_permutation",
              "segment_sum", "unsorted_segment_mean", "xlogy", "reduce_std"):
        assert hasattr(fl.math, n), n
