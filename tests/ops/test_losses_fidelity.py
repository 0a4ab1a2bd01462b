"""tf.losses built as TensorFlow builds them: the weighted mean through num_present.

TensorFlow's compute_weighted_loss checks the weights with assert_broadcastable (a
NoOp when the shapes decide it), counts the nonzero broadcast weights (num_present,
broadcast_weights), sums the scalar total again over range(0, rank) and divides with
DivNoNan (`value`).  These tests compare the GraphDefs node for node for every loss
and reduction with static shapes, and the values (dtypes included) for the edge
cases: all-zero weights, weights broadcast over a batch, placeholders with unknown
batch sizes (the run-time check), and the errors for weights that cannot broadcast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(11)
Y = RS.randn(4, 3).astype(np.float32)
P = RS.randn(4, 3).astype(np.float32)
BINARY = (RS.rand(4, 3) > 0.5).astype(np.float32)
ONEHOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
SPARSE = np.array([0, 2, 1, 2], np.int32)
REDUCTIONS = ["NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS"]


def _rows(g: Any) -> dict[str, Any]:
    rows = {}
    for op in g.get_operations():
        ins = [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
        rows[op.name] = (op.type, tuple(ins))
    return rows


def _graph(tf: Any, build: Any) -> dict[str, Any]:
    g = tf.Graph()
    with g.as_default():
        build(tf)
    return _rows(g)


def _same_graph(tf1: Any, build: Any) -> None:
    want, got = _graph(tf1, build), _graph(fl, build)
    diff = [f"{n}: tf {want.get(n)} fl {got.get(n)}" for n in sorted(set(want) | set(got))
            if want.get(n) != got.get(n)]
    assert not diff, f"{len(diff)} differences\n" + "\n".join(diff[:30])


# --- graphs -----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_every_loss_graph_is_tensorflows(tf1: Any, reduction: str) -> None:
    def build(tf: Any) -> None:
        r = getattr(tf.losses.Reduction, reduction)
        labels = tf.placeholder(tf.float32, [4, 3], name="labels")
        preds = tf.placeholder(tf.float32, [4, 3], name="preds")
        w = tf.placeholder(tf.float32, [4, 1], name="w")
        tf.losses.mean_squared_error(labels, preds, reduction=r)
        tf.losses.absolute_difference(labels, preds, weights=w, reduction=r)
        tf.losses.huber_loss(labels, preds, weights=2.0, delta=0.5, reduction=r)
        tf.losses.log_loss(labels, preds, weights=w, reduction=r)
        tf.losses.hinge_loss(labels, preds, reduction=r)
        tf.losses.sigmoid_cross_entropy(labels, preds, weights=w, label_smoothing=0.1, reduction=r)
        tf.losses.softmax_cross_entropy(labels, preds, label_smoothing=0.2, reduction=r)
        tf.losses.sparse_softmax_cross_entropy(tf.constant(SPARSE), preds, weights=w,
                                               reduction=r)
        tf.losses.compute_weighted_loss(preds, weights=np.ones((1, 3), np.float32),
                                        reduction=r, scope="cwl")

    _same_graph(tf1, build)


def test_weight_shapes_graph_is_tensorflows(tf1: Any) -> None:
    """Scalar, [batch, 1], full and Python-list weights; a loss under a name scope."""
    def build(tf: Any) -> None:
        labels = tf.placeholder(tf.float32, [4, 3], name="labels")
        preds = tf.placeholder(tf.float32, [4, 3], name="preds")
        tf.losses.mean_squared_error(labels, preds, weights=0.0)
        tf.losses.mean_squared_error(labels, preds, weights=[[1.0], [0.0], [2.0], [1.0]])
        tf.losses.mean_squared_error(labels, preds, weights=tf.ones([4, 3]))
        tf.losses.mean_squared_error(labels, preds, weights=3)
        with tf.name_scope("outer"):
            tf.losses.mean_squared_error(labels, preds, scope="mine")
        tf.losses.get_total_loss()

    _same_graph(tf1, build)


def test_pairwise_and_cosine_graph_is_tensorflows(tf1: Any) -> None:
    def build(tf: Any) -> None:
        labels = tf.placeholder(tf.float32, [4, 3], name="labels")
        preds = tf.placeholder(tf.float32, [4, 3], name="preds")
        w = tf.placeholder(tf.float32, [4, 1], name="w")
        tf.losses.mean_pairwise_squared_error(labels, preds)
        tf.losses.mean_pairwise_squared_error(labels, preds, weights=w)
        tf.losses.cosine_distance(labels, preds, axis=1)
        tf.losses.cosine_distance(labels, preds, dim=1, weights=w,
                                  reduction=tf.losses.Reduction.MEAN)

    _same_graph(tf1, build)


def test_sparse_squeezes_graph_is_tensorflows(tf1: Any) -> None:
    """Labels [batch, 1] squeezed under `remove_squeezable_dimensions`, weights [batch, 1]
    as `Squeeze`, a scalar weight converted before the check (`Const`, no `Cast/x`)."""
    def build(tf: Any) -> None:
        logits = tf.placeholder(tf.float32, [4, 3], name="logits")
        l1 = tf.placeholder(tf.int32, [4, 1], name="l1")
        w = tf.placeholder(tf.float32, [4, 1], name="w")
        tf.losses.sparse_softmax_cross_entropy(l1, logits, weights=w)
        tf.losses.sparse_softmax_cross_entropy(l1, logits)
        lu = tf.placeholder(tf.int32, [None, 1], name="lu")
        tf.losses.sparse_softmax_cross_entropy(lu, tf.placeholder(tf.float32, [None, 3]),
                                               weights=2.0)

    _same_graph(tf1, build)


def test_sparse_with_unknown_ranks_values(tf1: Any) -> None:
    """Unknown ranks: the squeezes are conds on the run-time ranks."""
    def build(tf: Any) -> Any:
        labels = tf.placeholder(tf.int32, None)
        logits = tf.placeholder(tf.float32, [None, 3])
        w = tf.placeholder(tf.float32, None)
        feed = {labels: SPARSE[:, None], logits: P, w: np.array([[1.0], [0.0], [2.0], [1.0]], np.float32)}
        return [tf.losses.sparse_softmax_cross_entropy(labels, logits),
                tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=w)], feed

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


# --- values -----------------------------------------------------------------------------
WEIGHTS = [0.0, 1.0, 3, np.zeros((4, 3), np.float32), np.zeros((4, 1), np.float32),
           np.array([[0.0], [2.0], [0.0], [1.0]], np.float32),
           np.array([[1.0, 0.0, 2.0]], np.float32), [[0.5], [0.0], [1.5], [0.0]]]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_values_for_edge_case_weights(tf1: Any, reduction: str) -> None:
    def build(tf: Any) -> Any:
        r = getattr(tf.losses.Reduction, reduction)
        out = []
        for w in WEIGHTS:
            out += [tf.losses.mean_squared_error(Y, P, weights=w, reduction=r),
                    tf.losses.hinge_loss(BINARY, P, weights=w, reduction=r),
                    tf.losses.sigmoid_cross_entropy(BINARY, P, weights=w, reduction=r)]
            wrow = w if np.ndim(w) == 0 else np.asarray(w, np.float32)[:, 0]
            out += [tf.losses.softmax_cross_entropy(ONEHOT, P, weights=wrow, reduction=r),
                    tf.losses.sparse_softmax_cross_entropy(SPARSE, P, weights=wrow,
                                                           reduction=r)]
        return out

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unknown_batch_runtime_check_values(tf1: Any, reduction: str) -> None:
    """Placeholders with an unknown batch: the weights are checked at run time."""
    def build(tf: Any) -> Any:
        r = getattr(tf.losses.Reduction, reduction)
        labels = tf.placeholder(tf.float32, [None, 3])
        preds = tf.placeholder(tf.float32, [None, 3])
        w = tf.placeholder(tf.float32, [None, 1])
        wfull = tf.placeholder(tf.float32, None)
        feed = {labels: Y, preds: P, w: np.array([[0.0], [1.0], [2.0], [0.0]], np.float32),
                wfull: np.zeros((4, 3), np.float32)}
        out = [tf.losses.mean_squared_error(labels, preds, weights=w, reduction=r),
               tf.losses.absolute_difference(labels, preds, weights=wfull, reduction=r),
               tf.losses.mean_squared_error(labels, preds, weights=0.0, reduction=r)]
        return out, feed

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


def test_float64_and_float16_losses_keep_their_dtype(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        out = []
        for dt in (np.float64, np.float16):
            y, p = tf.constant(Y.astype(dt)), tf.constant(P.astype(dt))
            out += [tf.losses.compute_weighted_loss(tf.abs(y - p), weights=[[1.0], [0.0], [2.0], [1.0]]),
                    tf.losses.compute_weighted_loss(tf.square(y - p), weights=0.0)]
        return out

    assert_same(tf1, build, rtol=1e-3, atol=1e-3)


def test_pairwise_and_cosine_values(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        labels = tf.placeholder(tf.float32, [None, 3])
        preds = tf.placeholder(tf.float32, [None, 3])
        unit_y = tf.nn.l2_normalize(tf.constant(Y), 1)
        unit_p = tf.nn.l2_normalize(tf.constant(P), 1)
        out = [tf.losses.mean_pairwise_squared_error(labels, preds),
               tf.losses.mean_pairwise_squared_error(Y, P, weights=[[1.0], [0.0], [2.0], [0.5]]),
               tf.losses.mean_pairwise_squared_error(Y, P, weights=0.0),
               tf.losses.mean_pairwise_squared_error(Y[:, :1], P[:, :1])]
        for red in REDUCTIONS:
            r = getattr(tf.losses.Reduction, red)
            out += [tf.losses.cosine_distance(unit_y, unit_p, axis=1, reduction=r),
                    tf.losses.cosine_distance(unit_y, unit_p, axis=1, reduction=r,
                                              weights=[[1.0], [0.0], [2.0], [0.0]])]
        return out, {labels: Y, preds: P}

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_cosine_distance_needs_an_axis(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="You must specify argument `axis`."):
            tf.losses.cosine_distance(Y, P)


# --- errors -----------------------------------------------------------------------------
def test_runtime_error_for_weights_that_cannot_broadcast(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        labels = tf.placeholder(tf.float32, [None, 3])
        preds = tf.placeholder(tf.float32, [None, 3])
        w = tf.placeholder(tf.float32, [None, 1])
        loss = tf.losses.mean_squared_error(labels, preds, weights=w)
        return loss, {labels: Y, preds: P, w: np.ones((2, 1), np.float32)}

    _, err = assert_same_error(tf1, build)
    assert "weights can not be broadcast to values." in str(err)


@pytest.mark.parametrize("weights, match", [
    (np.ones((4,), np.float32), "weights can not be broadcast to values. values.rank=2. weights.rank=1."),
    (np.ones((2, 3), np.float32), "weights can not be broadcast to values. Mismatch at dim 0."),
])
def test_build_time_errors(tf1: Any, weights: Any, match: str) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
            tf.losses.mean_squared_error(Y, P, weights=weights)
