"""tf.nn.compute_average_loss, scale_regularization_loss,
batch_norm_with_global_normalization and collapse_repeated: values, dtypes, gradients
and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

RS = np.random.RandomState(17)


def test_loss_scaling(tf1: Any) -> None:
    per = RS.rand(4).astype(np.float32)
    per2 = RS.rand(4, 3).astype(np.float64)
    w = RS.rand(4).astype(np.float32)

    def build(tf: Any) -> Any:
        p, p2 = tf.constant(per), tf.constant(per2)
        a = tf.nn.compute_average_loss(p)
        b = tf.nn.compute_average_loss(p, sample_weight=w, global_batch_size=8)
        c = tf.nn.compute_average_loss(p2, sample_weight=tf.constant(w))
        d = tf.nn.scale_regularization_loss(tf.constant([0.5, 1.5]))
        return [a, b, c, d, tf.gradients(a + b, p)]

    assert_same(tf1, build)
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="Expected a tensor with at least rank 1"):
            tf.nn.compute_average_loss(tf.constant(1.0))


def test_batch_norm_with_global_normalization(tf1: Any) -> None:
    x = RS.randn(2, 3, 4).astype(np.float32)
    m, v = RS.randn(4).astype(np.float32), RS.rand(4).astype(np.float32)
    beta, gamma = RS.randn(4).astype(np.float32), RS.randn(4).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        y1 = tf.nn.batch_norm_with_global_normalization(xt, m, v, beta, gamma, 1e-3, True)
        y2 = tf.nn.batch_norm_with_global_normalization(input=xt, mean=m, variance=v, beta=beta, gamma=gamma,
                                                        variance_epsilon=1e-3, scale_after_normalization=False)
        return [y1, y2, tf.gradients(tf.reduce_sum(y1 * y2), xt)]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_collapse_repeated(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        labels = tf.constant([[1, 1, 2, 2, 3], [4, 4, 4, 0, 0], [5, 6, 6, 5, 5]])
        lens = tf.constant([5, 2, 4])
        p = tf.placeholder(tf.int32, [None, None])
        out = tf.nn.collapse_repeated(labels, lens)
        dyn = tf.nn.collapse_repeated(p, tf.constant([3, 1], tf.int64))
        return [out, dyn], {p: [[7, 7, 8], [9, 9, 9]]}

    assert_same(tf1, build)


def test_ctc_unique_labels(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        y, idx = tf.nn.ctc_unique_labels(tf.constant([[3, 4, 4, 3], [1, 1, 1, 1], [5, 6, 7, 5]]))
        return [y, idx]

    assert_same(tf1, build)
