"""Initializers: the ops they build and the values they give, against NumPy and
TensorFlow (the random ones exactly, with seeds, since flowlab's random kernels
reproduce TensorFlow's Philox streams)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


def same_graph_facts(tf1, build):
    with tf1.Graph().as_default():
        expected = build(tf1)
    with fl.Graph().as_default():
        actual = build(fl)
    assert actual == expected
    return actual


def _run(t):
    with fl.Session() as s:
        return s.run(t)


def test_zeros_ones_constant_values():
    z = _run(fl.zeros_initializer()([2, 3]))
    assert z.dtype == np.float32 and z.shape == (2, 3) and not z.any()
    o = _run(fl.ones_initializer(dtype=fl.int64)([4]))
    np.testing.assert_array_equal(o, np.ones(4, np.int64))
    o = _run(fl.ones_initializer()([2], dtype=fl.int32))
    assert o.dtype == np.int32
    c = _run(fl.constant_initializer([0, 1, 2])([2, 3]))
    np.testing.assert_array_equal(c, np.array([[0, 1, 2], [2, 2, 2]], np.float32))
    b = _run(fl.zeros_initializer()([2], dtype=fl.bool))
    assert b.dtype == np.bool_ and not b.any()


def test_constant_initializer_errors():
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 6, but got 8."):
        fl.constant_initializer(list(range(8)))([2, 3])
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(3, 4\), got \(8,\)"):
        fl.constant_initializer(list(range(8)), verify_shape=True)([3, 4])
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        fl.constant_initializer({"a": 1})


def test_deterministic_initializers_match_tensorflow(tf1):
    def build(tf):
        return [
            tf.zeros_initializer()([2, 3]),
            tf.zeros_initializer()([2], dtype=tf.string),
            tf.ones_initializer()([3], dtype=tf.int32),
            tf.constant_initializer(7)([2, 2], dtype=tf.float64),
            tf.constant_initializer(np.arange(4))([2, 2]),
            tf.constant_initializer([1, 2, 3])([5], dtype=tf.int64),
            tf.zeros_initializer()([0, 3]),
        ]

    assert_same(tf1, build)


def test_initializer_op_names_match_tensorflow(tf1):
    def build(tf):
        tf.set_random_seed(1)
        with tf.variable_scope("s"):
            vs = [
                tf.get_variable("a", [3, 4]),
                tf.get_variable("b", [5], initializer=tf.random_normal_initializer(seed=4)),
                tf.get_variable("c", [2, 2], initializer=tf.truncated_normal_initializer(seed=5)),
                tf.get_variable("d", [2], initializer=tf.random_uniform_initializer(-2, 2, seed=7)),
                tf.get_variable("z", [2], initializer=tf.zeros_initializer()),
                tf.get_variable("o", [2], initializer=tf.ones_initializer()),
                tf.get_variable("big", [40, 40], initializer=tf.zeros_initializer()),
            ]
        return [v.initial_value.op.name for v in vs], [
            f"{op.name}:{op.type}" for op in tf.get_default_graph().get_operations()]

    same_graph_facts(tf1, build)


@pytest.mark.parametrize(
    "make,shape",
    [
        (lambda tf: tf.random_uniform_initializer(seed=3), [3, 4]),
        (lambda tf: tf.random_uniform_initializer(-1.5, 0.5, seed=3, dtype=tf.float64), [5]),
        (lambda tf: tf.random_normal_initializer(mean=1.0, stddev=0.1, seed=2), [2, 3]),
        (lambda tf: tf.truncated_normal_initializer(stddev=0.5, seed=5), [4, 4]),
        (lambda tf: tf.glorot_uniform_initializer(seed=1), [3, 7]),
        (lambda tf: tf.glorot_normal_initializer(seed=1), [3, 3, 2, 5]),
        (lambda tf: tf.variance_scaling_initializer(2.0, "fan_out", "uniform", seed=9), [2, 2, 3, 4]),
        (lambda tf: tf.variance_scaling_initializer(seed=9), [6]),
        (lambda tf: tf.variance_scaling_initializer(mode="fan_avg", distribution="untruncated_normal", seed=9), [4, 2]),
        (lambda tf: tf.variance_scaling_initializer(distribution="normal", seed=9), []),
        (lambda tf: tf.uniform_unit_scaling_initializer(factor=1.5, seed=4), [3, 4]),
        (lambda tf: tf.random_uniform_initializer(0, 10, seed=7), "int32"),
    ],
)
def test_seeded_random_initializers_match_tensorflow(tf1, make, shape):
    def build(tf):
        tf.set_random_seed(11)
        if shape == "int32":
            return tf.get_variable("v", [6], dtype=tf.int32, initializer=make(tf)).value()
        return tf.get_variable("v", shape, initializer=make(tf)).value()

    assert_same(tf1, build, rtol=0, atol=0)


def test_glorot_uniform_limit_and_statistics():
    fl.set_random_seed(0)
    x = _run(fl.glorot_uniform_initializer()([200, 300]))
    limit = math.sqrt(6.0 / 500)
    assert x.dtype == np.float32 and np.abs(x).max() <= limit
    assert abs(x.mean()) < 0.01 * limit * 10 and abs(x.std() - limit / math.sqrt(3)) < 0.01 * limit


def test_variance_scaling_statistics():
    fl.set_random_seed(0)
    x = _run(fl.variance_scaling_initializer(scale=2.0, mode="fan_in")([400, 100]))
    # truncated normal rescaled so that the standard deviation is sqrt(scale / fan_in)
    assert abs(x.std() - math.sqrt(2.0 / 400)) < 0.002
    assert np.abs(x).max() <= 2 * math.sqrt(2.0 / 400) / 0.87962566103423978 + 1e-6


def test_partition_info_sets_the_fans():
    class Info:
        full_shape = [100, 100]

    fl.set_random_seed(0)
    x = _run(fl.glorot_uniform_initializer()([10, 100], partition_info=Info()))
    assert np.abs(x).max() <= math.sqrt(6.0 / 200)


def test_argument_validation():
    with pytest.raises(ValueError, match="Argument `scale` must be a positive float"):
        fl.variance_scaling_initializer(scale=0)
    with pytest.raises(ValueError, match="Argument `mode` should be one of"):
        fl.variance_scaling_initializer(mode="fan")
    with pytest.raises(ValueError, match="Argument `distribution` should be one of"):
        fl.variance_scaling_initializer(distribution="cauchy")
    with pytest.raises(ValueError, match="expected to be floating point"):
        fl.random_normal_initializer(dtype=fl.int32)
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        fl.random_uniform_initializer()([2], dtype=fl.int32)


def test_config_round_trip_and_names():
    init = fl.variance_scaling_initializer(scale=2.0, mode="fan_out", seed=3)
    again = fl.variance_scaling_initializer.from_config(init.get_config())
    assert again.get_config() == init.get_config()
    assert fl.glorot_uniform_initializer is fl.initializers.glorot_uniform
    assert isinstance(fl.initializers.he_normal(), fl.ops.init_ops.VarianceScaling)
    assert fl.initializers.he_uniform().get_config()["scale"] == 2.0
    assert fl.zeros_initializer().get_config() == {"dtype": "float32"}
