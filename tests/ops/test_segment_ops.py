"""Segment reductions: values against NumPy and TensorFlow, empty segments, dtypes,
build- and run-time errors, and the gradient table entries."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from tests.difftest import assert_same, assert_same_error
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(11)


def _r(*shape):
    return RS.uniform(-1, 1, shape)


# Distinct values so that max/min have one winner per segment, and no empty segment
# (its lowest-float fill would overflow the finite differences).
_DISTINCT = np.array([[0.3, -0.7], [0.9, 0.1], [-0.4, 0.5], [0.2, -0.9]])

grad_case("SegmentSum", _r(4, 2))(lambda tf, x: tf.math.segment_sum(x, [0, 0, 2, 3]))
grad_case("SegmentMean", _r(4, 2))(lambda tf, x: tf.math.segment_mean(x, [0, 0, 0, 2]))
grad_case("SegmentMax", _DISTINCT)(lambda tf, x: tf.math.segment_max(x, [0, 0, 1, 1]))
grad_case("SegmentMin", _DISTINCT)(lambda tf, x: tf.math.segment_min(x, [0, 1, 1, 3]))
grad_case("UnsortedSegmentSum", _r(2, 3, 2))(
    lambda tf, x: tf.math.unsorted_segment_sum(x, [[2, -1, 0], [0, 2, 4]], 5))
grad_case("UnsortedSegmentMax", _DISTINCT)(lambda tf, x: tf.math.unsorted_segment_max(x, [1, -1, 1, 0], 2))
grad_case("UnsortedSegmentMin", _DISTINCT)(lambda tf, x: tf.math.unsorted_segment_min(x, [1, 0, 1, 1], 2))
grad_case("UnsortedSegmentProd", np.array([[0.5, 0.0], [2.0, 1.5], [-1.5, 0.0], [0.7, 0.0]]))(
    lambda tf, x: tf.math.unsorted_segment_prod(x, [0, 1, 0, 0], 2))


def _static(tf1, build):
    """`build(tf)` returns plain Python values (names, shapes): equal under both."""
    out = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            out.append(build(mod))
    assert out[0] == out[1]
    return out[1]


def _run(t):
    with fl.Session() as s:
        return s.run(t)


def test_sorted_values_and_empty_segments():
    data = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)
    ids = [0, 0, 2, 2]
    got = _run([fl.math.segment_sum(data, ids), fl.math.segment_mean(data, ids),
                fl.math.segment_max(data, ids), fl.math.segment_min(data, ids)])
    np.testing.assert_array_equal(got[0], [[4, 6], [0, 0], [12, 14]])
    np.testing.assert_array_equal(got[1], [[2, 3], [0, 0], [6, 7]])
    np.testing.assert_array_equal(got[2], [[3, 4], [0, 0], [7, 8]])
    np.testing.assert_array_equal(got[3], [[1, 2], [0, 0], [5, 6]])
    assert all(g.dtype == np.float32 for g in got)


def test_unsorted_values_drop_negative_ids():
    got = _run(fl.math.unsorted_segment_sum(np.arange(6, dtype=np.int64), [3, -1, 0, 3, -5, 0], 4))
    np.testing.assert_array_equal(got, [2 + 5, 0, 0, 0 + 3])
    assert got.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_matches_tensorflow(tf1, dtype):
    data = (np.arange(12).reshape(6, 2) % 5 - 2).astype(dtype)

    def build(tf):
        ids = tf.constant([0, 0, 1, 3, 3, 3])
        uids = tf.constant([2, -1, 0, 2, 4, 0], tf.int64)
        return [tf.math.segment_sum(data, ids), tf.math.segment_mean(data, ids), tf.math.segment_max(data, ids),
                tf.math.segment_min(data, ids), tf.math.unsorted_segment_sum(data, uids, 5),
                tf.math.unsorted_segment_max(data, uids, 5), tf.math.unsorted_segment_min(data, uids, 5),
                tf.math.unsorted_segment_prod(data, uids, tf.constant(5, tf.int64))]

    assert_same(tf1, build)


def test_composite_means_match_tensorflow(tf1):
    def build(tf):
        data = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        ids = [[0, 0, 2], [1, -1, 2]]
        m = tf.math.unsorted_segment_mean(data, ids, 4)
        s = tf.math.unsorted_segment_sqrt_n(data, ids, 4)
        return [m, s]

    assert_same(tf1, build)
    assert _static(tf1, lambda tf: [t.name for t in build(tf)]) == ["UnsortedSegmentMean/truediv:0",
                                                                   "UnsortedSegmentSqrtN/truediv:0"]


def test_static_shapes_match_tensorflow(tf1):
    def build(tf):
        p = tf.placeholder(tf.int32)
        a = tf.math.segment_sum(tf.ones([3, 2]), [0, 0, 1])
        b = tf.math.unsorted_segment_sum(tf.ones([3, 2]), p, 5)
        c = tf.math.unsorted_segment_sum(tf.ones([3, 2]), [0, 0, 1], p)
        d = tf.math.unsorted_segment_sum(tf.ones([2, 3, 2]), [[0, 0, 1], [1, 1, 1]], 7)
        return [str(a.shape), str(b.shape), str(c.shape), str(d.shape), a.op.type, a.name, d.name]

    _static(tf1, build)


def test_gradients_match_tensorflow(tf1):
    def build(tf):
        x = tf.Variable(np.array([[1.0, 5.0], [3.0, 3.0], [3.0, -1.0], [0.5, 2.0]], np.float32))
        ys = [tf.math.segment_sum(x, [0, 0, 1, 1]), tf.math.segment_mean(x, [0, 1, 1, 1]),
              tf.math.segment_max(x, [0, 0, 1, 1]), tf.math.segment_min(x, [0, 0, 0, 2]),
              tf.math.unsorted_segment_sum(x, [1, -1, 1, 0], 3), tf.math.unsorted_segment_max(x, [1, 1, 1, 0], 2),
              tf.math.unsorted_segment_min(x, [0, 0, -1, 0], 2), tf.math.unsorted_segment_prod(x, [1, 0, 1, 1], 2),
              tf.math.unsorted_segment_mean(x, [1, 0, 1, 1], 3)]
        return [tf.gradients(tf.reduce_sum(y * 1.5), x)[0] for y in ys]

    assert_same(tf1, build)


@pytest.mark.parametrize("case", ["not_increasing", "negative", "size", "too_big"])
def test_runtime_errors_match_tensorflow(tf1, case):
    def build(tf):
        data = tf.constant([1.0, 2.0, 3.0])
        if case == "not_increasing":
            return tf.math.segment_sum(data, [0, 2, 1])
        if case == "negative":
            return tf.math.segment_max(data, [-1, 0, 1])
        if case == "size":
            return tf.math.segment_sum(data, tf.placeholder_with_default([0, 1], [None]))
        return tf.math.unsorted_segment_sum(data, [0, 5, 1], 3)

    tf_err, fl_err = assert_same_error(tf1, build)
    want = {"not_increasing": "segment ids are not increasing",
            "negative": "Segment id -1 out of range [0, 2), possibly because 'segment_ids' input is not sorted.",
            "size": "segment_ids should be the same size as dimension 0 of input.",
            "too_big": "segment_ids[1] = 5 is out of range [0, 3)"}[case]
    assert want in tf_err.message and want in fl_err.message
    assert isinstance(fl_err, errors.InvalidArgumentError)


@pytest.mark.parametrize("case", ["rank", "dims", "num_rank"])
def test_build_errors(case):
    with pytest.raises(ValueError) as e:
        if case == "rank":
            fl.math.segment_sum(fl.ones([3, 2]), [[0, 0, 1]])
        elif case == "dims":
            fl.math.unsorted_segment_sum(fl.ones([3, 2]), [0, 0], 3)
        else:
            fl.math.unsorted_segment_sum(fl.ones([3, 2]), [0, 0, 1], [3])
    msg = {"rank": "Shape must be rank 1 but is rank 2", "dims": "Dimensions must be equal, but are 3 and 2",
           "num_rank": "Shape must be rank 0 but is rank 1"}[case]
    assert msg in str(e.value) and "Segment" in str(e.value)


def test_empty_inputs():
    got = _run([fl.math.segment_sum(fl.zeros([0, 2]), fl.zeros([0], fl.int32)),
                fl.math.unsorted_segment_max(fl.zeros([0, 2]), fl.zeros([0], fl.int32), 2)])
    assert got[0].shape == (0, 2)
    np.testing.assert_array_equal(got[1], np.full((2, 2), np.finfo(np.float32).min, np.float32))
