"""sort / argsort, roll, bincount, searchsorted and histogram_fixed_width against
TensorFlow and NumPy: dtypes (float, signed and unsigned ints at their limits), axes,
directions, ties, empty inputs, graph structure and names, gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(2)
X = RS.randint(-5, 5, (3, 4, 5))


def test_sort_and_argsort_match_tensorflow(tf1):
    def build(tf):
        f = tf.constant(X.astype(np.float32))
        i = tf.constant(X.astype(np.int32))
        lim = tf.constant(np.array([3, -2**31, 2**31 - 1, 0], np.int32))
        u = tf.constant(np.array([3, 0, 255, 7], np.uint8))
        outs = []
        for axis in (-1, 0, 1, 2):
            for direction in ("ASCENDING", "DESCENDING"):
                outs += [tf.sort(f, axis=axis, direction=direction), tf.argsort(f, axis=axis, direction=direction),
                         tf.sort(i, axis=axis, direction=direction), tf.argsort(i, axis, direction, stable=True)]
        outs += [tf.sort(lim), tf.argsort(lim), tf.sort(u), tf.sort(u, direction="DESCENDING"), tf.argsort(u),
                 tf.sort(tf.constant([1.0, np.inf, -np.inf, 2.0]), direction="DESCENDING"),
                 tf.sort(tf.zeros([2, 0])), tf.argsort(tf.constant(5.0 * np.ones(4, np.float64)))]
        return outs

    assert_same(tf1, build)


def test_sort_graph_names_and_gradient(tf1):
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default() as g:
            x = mod.constant(X[0].astype(np.float32))
            ys = [mod.sort(x), mod.argsort(x), mod.sort(x, axis=0, direction="DESCENDING", name="s")]
            names.append([[y.name for y in ys], [o.type for o in g.get_operations() if o.type not in ("Const",
                                                                                                    "Shape", "Rank")]])
    assert names[0] == names[1]

    def build(tf):
        v = tf.Variable(X[0].astype(np.float32) + np.arange(5, dtype=np.float32) / 10)
        y = tf.sort(v, axis=0) * np.arange(20, dtype=np.float32).reshape(4, 5)
        return tf.gradients(tf.reduce_sum(y), v)

    assert_same(tf1, build)


def test_sort_errors(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            with pytest.raises(ValueError, match="direction"):
                mod.sort([1.0], direction="UP")
            with pytest.raises(ValueError, match="axis"):
                mod.sort([1.0], axis=mod.placeholder(mod.int32))


def test_roll_matches_tensorflow(tf1):
    def build(tf):
        x = tf.constant(X)
        v = tf.Variable(X[0].astype(np.float64))
        return [tf.roll(x, 1, 0), tf.roll(x, [2, -1], [1, 2]), tf.roll(x, [1, 1], [1, 1]), tf.roll(x, -7, -1),
                tf.roll(x, tf.zeros([0], tf.int32), tf.zeros([0], tf.int32)), tf.roll(tf.zeros([0, 2]), 1, 1),
                tf.gradients(tf.reduce_sum(tf.roll(v, [1, 3], [0, 1]) * X[0]), v)]

    assert_same(tf1, build)
    _, err = assert_same_error(tf1, lambda tf: tf.roll(tf.reshape(tf.range(6), [2, 3]), [1], [2]))
    assert "axis 2 is out of range" in str(err)
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            with pytest.raises(ValueError, match="at least rank 1"):
                mod.roll(mod.constant(3.0), [1], [0])
            with pytest.raises(ValueError, match="must be equal"):
                mod.roll(mod.constant([3.0]), [1, 2], [0])


def test_bincount_matches_tensorflow(tf1):
    def build(tf):
        a = tf.constant([3, 1, 1, 0, 7])
        w = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        return [tf.bincount(a), tf.bincount(a, weights=w), tf.bincount(a, minlength=10), tf.bincount(a, maxlength=3),
                tf.bincount(a, minlength=6, maxlength=3), tf.bincount(tf.constant([[1, 2], [2, 2]])),
                tf.bincount(tf.zeros([0], tf.int32)), tf.bincount(a, dtype=tf.float64),
                tf.bincount(a, weights=tf.constant([1, 2, 3, 4, 5], tf.int64)), tf.math.bincount(a)]

    assert_same(tf1, build)
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default() as g:
            y = mod.bincount(mod.constant([1, 2]), minlength=3)
            names.append([y.name, [o.type for o in g.get_operations() if o.type != "Const"]])
    assert names[0] == names[1]
    assert_same_error(tf1, lambda tf: tf.bincount(tf.placeholder_with_default([-1, 2], [2])))


def test_searchsorted_matches_tensorflow(tf1):
    seq = np.sort(RS.randint(0, 10, (2, 3, 6)), axis=-1).astype(np.float32)
    vals = RS.randint(-1, 11, (2, 3, 4)).astype(np.float32)

    def build(tf):
        s, v = tf.constant(seq), tf.constant(vals)
        return [tf.searchsorted(s, v), tf.searchsorted(s, v, side="right"),
                tf.searchsorted(s[0, 0], v[0, 0], out_type=tf.int64), tf.searchsorted([1, 3, 3, 5], [3, 4, 0, 9])]

    assert_same(tf1, build)
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            names.append([mod.searchsorted([1.0, 2.0], [1.5]).name, mod.searchsorted([1.0], [1.5], "right").name])
    assert names[0] == names[1]
    with fl.Graph().as_default(), pytest.raises(ValueError, match="side"):
        fl.searchsorted([1.0], [1.0], side="middle")


def test_histogram_fixed_width_matches_tensorflow(tf1):
    def build(tf):
        v = tf.constant([-1.0, 0.0, 1.5, 2.0, 5.0, 4.99, 12.0])
        return [tf.histogram_fixed_width(v, [0.0, 5.0], nbins=5), tf.histogram_fixed_width(v, [0.0, 5.0]),
                tf.histogram_fixed_width(tf.constant([1, 2, 9]), [0, 10], nbins=3, dtype=tf.int64),
                tf.histogram_fixed_width(tf.zeros([0]), [0.0, 1.0], nbins=2)]

    assert_same(tf1, build)
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            assert mod.histogram_fixed_width([1.0], [0.0, 1.0], nbins=3).name == "histogram_fixed_width:0"
    assert_same_error(tf1, lambda tf: tf.histogram_fixed_width([1.0], [1.0, 0.0], nbins=3))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=12), st.booleans())
def test_sort_matches_numpy(values, descending):
    with fl.Graph().as_default(), fl.Session() as s:
        direction = "DESCENDING" if descending else "ASCENDING"
        got, idx = s.run([fl.sort(values, direction=direction), fl.argsort(values, direction=direction)])
    want = np.sort(values)[::-1] if descending else np.sort(values)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(values)[idx], want)
    if not descending:
        np.testing.assert_array_equal(idx, np.argsort(values, kind="stable"))
