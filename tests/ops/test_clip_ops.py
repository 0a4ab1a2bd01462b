"""Norms and clipping (`tf.norm`, `clip_by_norm`, `global_norm`, `clip_by_global_norm`,
`clip_by_average_norm`) against TensorFlow: values, gradients, IndexedSlices, names,
non-finite norms and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

A = np.array([[3.0, -4.0, 0.5], [1.0, 2.0, -2.0]], np.float32)


def test_norms_match_tensorflow(tf1):
    def build(tf):
        x = tf.constant(A)
        return [tf.norm(x), tf.norm(x, axis=1), tf.norm(x, ord=1), tf.norm(x, ord=1, axis=0, keepdims=True),
                tf.norm(x, ord=np.inf, axis=-1), tf.norm(x, ord=3, axis=1), tf.norm(x, ord="fro", axis=[0, 1]),
                tf.norm(x, ord=1, axis=(0, 1)), tf.norm(x, ord=np.inf, axis=[0, 1], keepdims=True),
                tf.norm(tf.constant([1, 2], tf.float64), keep_dims=True), tf.norm(tf.zeros([0, 3]), axis=0)]

    assert_same(tf1, build, rtol=1e-6)


def test_norm_gradients_and_names(tf1):
    def build(tf):
        x = tf.Variable(A)
        ns = [tf.norm(x), tf.norm(x, ord=1, axis=1), tf.norm(x, ord=np.inf), tf.norm(x, ord=1.5, axis=0)]
        return [tf.gradients(n, x)[0] for n in ns]

    assert_same(tf1, build, rtol=1e-5)
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            assert mod.norm(A).name == "norm/Squeeze:0"
            assert mod.norm(A, name="n", keepdims=True).name == "n/Sqrt:0"


@pytest.mark.parametrize("kwargs", [dict(ord=0), dict(ord="nuc"), dict(axis=[0, 0]), dict(axis="x"),
                                    dict(ord=-1, axis=[0, 1])])
def test_norm_argument_errors(tf1, kwargs):
    msgs = []
    for mod in (tf1, fl):
        with mod.Graph().as_default(), pytest.raises(ValueError) as e:
            mod.norm(A, **kwargs)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_clip_by_norm_and_average_norm(tf1):
    def build(tf):
        x = tf.constant(A)
        return [tf.clip_by_norm(x, 2.0), tf.clip_by_norm(x, 100.0), tf.clip_by_norm(x, 1.0, axes=[1]),
                tf.clip_by_norm(tf.zeros([2, 2]), 1.0), tf.clip_by_average_norm(x, 0.5),
                tf.clip_by_norm(tf.constant([3.0, 4.0], tf.float64), 1)]

    assert_same(tf1, build)
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            assert mod.clip_by_norm(A, 1.0).name == "clip_by_norm:0"
            assert mod.clip_by_norm(A, 1.0, name="c").name == "c:0"


def test_clip_by_norm_gradients(tf1):
    def build(tf):
        x = tf.Variable(A)
        return [tf.gradients(tf.reduce_sum(tf.clip_by_norm(x, 2.0) * A), x)[0],
                tf.gradients(tf.reduce_sum(tf.clip_by_norm(x, 2.0, axes=0) * A), x)[0]]

    assert_same(tf1, build, rtol=1e-5)


def test_global_norm_and_clip_by_global_norm(tf1):
    def build(tf):
        a = tf.constant(A)
        b = tf.constant([[1.0], [-2.0]])
        clipped, n = tf.clip_by_global_norm([a, None, b], 2.0)
        same, n2 = tf.clip_by_global_norm([a, b], 100.0)
        bad, n3 = tf.clip_by_global_norm([a, tf.constant([np.inf])], 1.0)
        given, _ = tf.clip_by_global_norm([a], 1.0, use_norm=tf.constant(10.0))
        return [clipped[0], clipped[2], n, same, n2, bad, n3, given, tf.global_norm([a, b]),
                tf.global_norm([tf.constant([3.0, 4.0], tf.float64)])]

    assert_same(tf1, build)
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            (c0, c1), n = mod.clip_by_global_norm([A, A], 1.0)
            assert [c0.name, c1.name, n.name] == ["clip_by_global_norm/clip_by_global_norm/_0:0",
                                                  "clip_by_global_norm/clip_by_global_norm/_1:0",
                                                  "global_norm/global_norm:0"]
            with pytest.raises(TypeError):
                mod.clip_by_global_norm(A, 1.0)
            with pytest.raises(TypeError):
                mod.global_norm(A)


def test_clip_keeps_indexed_slices(tf1):
    def build(tf):
        emb = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2))
        g = tf.gradients(tf.reduce_sum(tf.gather(emb, [1, 4, 1]) * 3.0), emb)[0]
        (c,), n = tf.clip_by_global_norm([g], 2.0)
        d = tf.clip_by_norm(g, 1.0)
        assert type(c).__name__ == type(d).__name__ == "IndexedSlices"
        return [c.values, c.indices, n, d.values, d.indices, tf.convert_to_tensor(c)]

    assert_same(tf1, build)


def test_spectral_norm_matches_tensorflow(tf1):
    # The spectral norm's values and gradients: tests/ops/test_linalg_grad.py covers more.
    def build(tf):
        x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5 - 2)
        return [tf.norm(x, ord=2, axis=[1, 2]), tf.norm(x, ord=2, axis=[0, 2], keepdims=True)]

    assert_same(tf1, build, rtol=1e-5)
