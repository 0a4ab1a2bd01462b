"""Names TF1 programs of the corpus use: tf.arg_max/arg_min, `var_list=d.values()`."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


@pytest.mark.parametrize("fn", ["arg_max", "arg_min"])
def test_arg_max_arg_min(tf1, fn):
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 9.0]], np.float32)
    assert_same(tf1, lambda tf: getattr(tf, fn)(x, 1))
    assert_same(tf1, lambda tf: getattr(tf, fn)(x, 0, output_type=tf.int32))
    assert_same(tf1, lambda tf: getattr(tf, fn)(input=x, dimension=tf.constant(1, tf.int64)))
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            t = getattr(tf, fn)(x, 1, name="am")
            assert t.op.type == ("ArgMax" if fn == "arg_max" else "ArgMin") and t.op.name == "am"
            with pytest.raises(TypeError):
                getattr(tf, fn)(x)  # dimension is required


@pytest.mark.parametrize("view", ["values", "dict"])
def test_var_list_views(tf1, view):
    def build(tf):
        v = {"b": tf.Variable(2.0, name="b"), "a": tf.Variable(3.0, name="a")}
        loss = v["a"] * v["b"] * v["b"]
        var_list = v.values() if view == "values" else v
        opt = tf.train.GradientDescentOptimizer(0.1)
        names = [var.op.name for _, var in opt.compute_gradients(loss, var_list=var_list)]
        step = opt.minimize(loss, var_list=var_list)
        with tf.control_dependencies([step]):
            after = [tf.identity(x) for x in v.values()]
        return [tf.constant(names), after]

    assert_same(tf1, build)


def test_generator_var_list_is_refused_as_in_tensorflow(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            w = tf.Variable(1.0)
            with pytest.raises((AttributeError, NotImplementedError, TypeError)):
                tf.train.GradientDescentOptimizer(0.1).compute_gradients(w * w, var_list=(x for x in [w]))
