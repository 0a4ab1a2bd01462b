"""Shared data and helpers of the wave-5 issue 3 programs (test_hidden_issue3_wave5*.py):
a 12x5 data set with class and regression targets, fixed initial weights of a 5-8-3
net, a small image batch, and the usual build / train / fetch steps of a TF1 script."""

from __future__ import annotations

import numpy as np

RS = np.random.RandomState(2025)
X = RS.randn(12, 5).astype(np.float32)
W_TRUE = RS.randn(5, 3).astype(np.float32)
Y = (X @ W_TRUE).argmax(axis=1).astype(np.int32)
Y_REG = (X @ W_TRUE[:, :1] + 0.1 * RS.randn(12, 1)).astype(np.float32)
W1 = (RS.randn(5, 8) * 0.3).astype(np.float32)
W2 = (RS.randn(8, 3) * 0.3).astype(np.float32)
IMG = RS.randn(3, 9, 9, 2).astype(np.float32)


def mlp(tf, x=None, act=None):
    """A 5-8-3 net from fixed initial values; returns (logits, [w1, b1, w2, b2])."""
    x = tf.constant(X) if x is None else x
    w1, b1 = tf.Variable(W1, name="w1"), tf.Variable(tf.zeros([8]), name="b1")
    w2, b2 = tf.Variable(W2, name="w2"), tf.Variable(tf.zeros([3]), name="b2")
    h = (act or tf.nn.relu)(tf.matmul(x, w1) + b1)
    return tf.matmul(h, w2) + b2, [w1, b1, w2, b2]


def xent(tf, logits, labels=None):
    labels = tf.constant(Y) if labels is None else labels
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def loop(tf, train, fetches, steps, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        trace = []
        for _ in range(steps):
            s.run(train, feed)
            trace.append(s.run(fetches, feed))
        return trace
