"""`tf.metrics` counters beside TensorFlow 1.x: each metric is built in a fresh graph,
its local variables initialised, `update_op` run over two batches and the value read,
so the streaming state (not only one batch's result) is compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import flowlab as fl

LABELS = [np.array([1, 0, 1, 1, 0, 0]), np.array([0, 1, 1, 0, 1, 0])]
PREDS = [np.array([0.9, 0.2, 0.4, 0.7, 0.6, 0.1]), np.array([0.3, 0.8, 0.55, 0.45, 0.2, 0.05])]
WEIGHTS = np.array([1.0, 2.0, 0.5, 1.0, 0.0, 1.5])
THRESHOLDS = [0.25, 0.5, 0.75]


def _stream(tf: Any, make: Callable[[Any, Any, Any], Any], weighted: bool) -> list[Any]:
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.bool, [6])
        preds = tf.placeholder(tf.float32, [6])
        w = tf.constant(WEIGHTS, tf.float32) if weighted else None
        value, update = make(tf, labels, preds, w) if weighted else make(tf, labels, preds, None)
        out: list[Any] = [sorted(v.op.name for v in tf.local_variables())]
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            out.append(s.run(value))
            for lab, pr in zip(LABELS, PREDS):
                out.append(s.run(update, {labels: lab.astype(bool), preds: pr.astype(np.float32)}))
            out.append(s.run(value))
        return out


def _check(tf1: Any, make: Callable[[Any, Any, Any], Any]) -> None:
    for weighted in (False, True):
        e, a = _stream(tf1, make, weighted), _stream(fl, make, weighted)
        assert a[0] == e[0]
        for x, y in zip(e[1:], a[1:]):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype, (x.dtype, y.dtype)
            np.testing.assert_allclose(y, x, rtol=1e-6, equal_nan=True)


COUNTS = [
    ("false_negatives", lambda tf, y, p, w: tf.metrics.false_negatives(y, p > 0.5, w)),
    ("false_positives", lambda tf, y, p, w: tf.metrics.false_positives(y, p > 0.5, w)),
    ("true_negatives", lambda tf, y, p, w: tf.metrics.true_negatives(y, p > 0.5, w)),
    ("recall", lambda tf, y, p, w: tf.metrics.recall(y, p > 0.5, w)),
    (
        "false_negatives_at_thresholds",
        lambda tf, y, p, w: tf.metrics.false_negatives_at_thresholds(y, p, THRESHOLDS, w),
    ),
    (
        "false_positives_at_thresholds",
        lambda tf, y, p, w: tf.metrics.false_positives_at_thresholds(y, p, THRESHOLDS, w),
    ),
    (
        "true_negatives_at_thresholds",
        lambda tf, y, p, w: tf.metrics.true_negatives_at_thresholds(y, p, THRESHOLDS, w),
    ),
    (
        "true_positives_at_thresholds",
        lambda tf, y, p, w: tf.metrics.true_positives_at_thresholds(y, p, THRESHOLDS, w),
    ),
    (
        "precision_at_thresholds",
        lambda tf, y, p, w: tf.metrics.precision_at_thresholds(y, p, THRESHOLDS, w),
    ),
    (
        "recall_at_thresholds",
        lambda tf, y, p, w: tf.metrics.recall_at_thresholds(y, p, THRESHOLDS, w),
    ),
]


@pytest.mark.parametrize("name,make", COUNTS, ids=[c[0] for c in COUNTS])
def test_streaming_counts(tf1: Any, name: str, make: Callable[[Any, Any, Any], Any]) -> None:
    _check(tf1, make)


TOPK_LABELS = [np.array([[2], [0], [3]], np.int64), np.array([[1], [1], [0]], np.int64)]
TOPK_PREDS = [
    np.array([[0.1, 0.2, 0.6, 0.1], [0.3, 0.4, 0.2, 0.1], [0.25, 0.25, 0.1, 0.4]], np.float32),
    np.array([[0.5, 0.2, 0.2, 0.1], [0.1, 0.7, 0.1, 0.1], [0.2, 0.3, 0.4, 0.1]], np.float32),
]


def _topk_stream(tf: Any, k: int, which: str) -> list[Any]:
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int64, [3, 1])
        preds = tf.placeholder(tf.float32, [3, 4])
        if which == "sparse_precision_at_k":
            value, update = tf.metrics.sparse_precision_at_k(labels, preds, k)
        else:
            _, idx = tf.nn.top_k(preds, k)
            value, update = tf.metrics.precision_at_top_k(labels, tf.cast(idx, tf.int64), k)
        out: list[Any] = []
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            for lab, pr in zip(TOPK_LABELS, TOPK_PREDS):
                out.append(s.run(update, {labels: lab, preds: pr}))
            out.append(s.run(value))
        return out


@pytest.mark.parametrize("which", ["sparse_precision_at_k", "precision_at_top_k"])
@pytest.mark.parametrize("k", [1, 2])
def test_precision_at_k(tf1: Any, which: str, k: int) -> None:
    e, a = _topk_stream(tf1, k, which), _topk_stream(fl, k, which)
    for x, y in zip(e, a):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_allclose(y, x, rtol=1e-6, equal_nan=True)


def test_metric_shape_mismatch(tf1: Any) -> None:
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError) as info:
            tf.metrics.false_negatives(tf.zeros([3], tf.bool), tf.zeros([4], tf.bool))
        names.append(type(info.value).__name__)
    assert names[0] == names[1]


def test_predictions_outside_unit_interval(tf1: Any) -> None:
    """Predictions must lie in [0, 1]: with constants TensorFlow's check fails while the
    graph is built; with a placeholder, when the update runs."""

    def run(tf: Any, fed: bool) -> list[str]:
        out = []
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, [2]) if fed else tf.constant([1.5, 0.2])
            try:
                _, up = tf.metrics.recall_at_thresholds(tf.constant([True, False]), p, [0.5])
                with tf.Session() as s:
                    s.run(tf.local_variables_initializer())
                    s.run(up, {p: np.array([1.5, 0.2], np.float32)} if fed else None)
            except tf.errors.OpError as e:
                out += [type(e).__name__, e.message.splitlines()[0]]
        return out

    for fed in (False, True):
        assert run(fl, fed) == run(tf1, fed)


def test_weights_shape_mismatch(tf1: Any) -> None:
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError) as info:
            tf.metrics.false_positives_at_thresholds(
                tf.constant([True, False]),
                tf.constant([0.2, 0.9]),
                [0.5],
                weights=tf.constant([1.0, 2.0, 3.0]),
            )
        names.append(type(info.value).__name__)
    assert names[0] == names[1]
