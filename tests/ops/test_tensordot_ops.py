"""tensordot, eye and meshgrid against TensorFlow: values, dtypes, static shapes,
names, gradients and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10.0
B = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0


def test_tensordot_matches_tensorflow(tf1):
    def build(tf):
        a, b = tf.Variable(A), tf.Variable(B)
        outs = [tf.tensordot(a, b, 1), tf.tensordot(a, b, [[1, 2], [1, 0]]), tf.tensordot(a, b, 0),
                tf.tensordot(a, b, (1, 1)), tf.tensordot(b, b, [[-1], [1]]),
                tf.tensordot(tf.placeholder_with_default(A, [None, 3, None]), b, [[2], [0]])]
        return [outs, tf.gradients(tf.add_n([tf.reduce_sum(o) for o in outs]), [a, b])]

    assert_same(tf1, build, rtol=1e-5)


def test_tensordot_names_shapes_and_errors(tf1):
    seen = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            t = [mod.tensordot(A, B, 1), mod.tensordot(A, B, [[1, 2], [1, 0]]), mod.tensordot(A, B, 0, name="td")]
            seen.append([(x.name, x.shape.as_list()) for x in t])
            for bad in (-1, 4, [[1], [0, 1]], [1, 2, 3]):
                with pytest.raises(ValueError):
                    mod.tensordot(A, B, bad)
    assert seen[0] == seen[1]


def test_eye_and_meshgrid_match_tensorflow(tf1):
    def build(tf):
        x, y = tf.constant([1, 2, 3]), tf.constant([10.0, 20.0])
        return [tf.eye(3), tf.eye(2, 4, dtype=tf.int32), tf.eye(2, batch_shape=[2]), tf.eye(3, 2, batch_shape=[1, 2]),
                tf.meshgrid(x, x * 2), tf.meshgrid(y, y * 2, indexing="ij"),
                tf.meshgrid(x, x, x)]

    assert_same(tf1, build)
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            names.append([mod.eye(2).name, mod.eye(2, 3).name, mod.eye(2, batch_shape=[3]).name,
                          [t.name for t in mod.meshgrid([1, 2], [3])], mod.eye(2).shape.as_list()])
    assert names[0] == names[1]


def test_tensordot_limits_raise_naming_the_input():
    # flowlab's tensordot needs static ranks and Python axes (TensorFlow also takes
    # tensors of unknown rank and a Tensor `axes`, through dynamic shapes).
    with fl.Graph().as_default():
        a = fl.placeholder(fl.float32, name="a")
        b = fl.placeholder(fl.float32, [3, 3], name="b")
        with pytest.raises(NotImplementedError, match="static rank of a:0"):
            fl.tensordot(a, b, 1)
        with pytest.raises(NotImplementedError, match="known rank, and a:0 has none"):
            fl.tensordot(a, b, [[0], [0]])
        with pytest.raises(NotImplementedError, match="Tensor `axes` is not supported"):
            fl.tensordot(b, b, fl.constant(1))
