"""Helpers shared by the nn op tests: fed placeholders, raw ops, NumPy references."""

from __future__ import annotations

import numpy as np

import flowlab as fl
from flowlab.ops.builder import apply_op

FLOATS = [np.float32, np.float64]


def feed(tf, value, dtype=None, shape="same"):
    """A placeholder fed with `value` (TensorFlow constant-folds constants otherwise)."""
    value = np.asarray(value, dtype=dtype)
    p = tf.placeholder(value.dtype, shape=value.shape if shape == "same" else shape)
    return p, {p: value}


def run(fetches, feed_dict=None):
    with fl.Session() as s:
        return s.run(fetches, feed_dict)


def raw(tf, op_type, **kwargs):
    """A raw op: `tf.raw_ops.X` in TensorFlow, `apply_op("X")` in flowlab."""
    if tf is fl:
        return apply_op(op_type, **kwargs)
    return getattr(tf.raw_ops, op_type)(**kwargs)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_xent(labels, logits, axis=-1):
    m = logits.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=axis, keepdims=True)) + m
    return -(labels * (logits - lse)).sum(axis=axis)
