"""tf.losses against TensorFlow: values, dtypes, names, reductions, collections, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops import losses as fl_losses
from tests.difftest import assert_same

RS = np.random.RandomState(5)
Y = RS.randn(4, 3).astype(np.float32)
P = RS.randn(4, 3).astype(np.float32)
ONEHOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
SPARSE = np.array([0, 2, 1, 2], np.int32)
BINARY = (RS.rand(4, 3) > 0.5).astype(np.float32)


def L(tf: Any) -> Any:
    return fl_losses if tf is fl else tf.losses


WEIGHTS = [1.0, 0.0, 2.5, np.array([[1.0], [0.0], [2.0], [0.5]], np.float32),
           np.array([[0.0, 1.0, 2.0]], np.float32), np.zeros((4, 3), np.float32)]
REDUCTIONS = ["NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_tensorflow(tf1: Any, reduction: str) -> None:
    def build(tf: Any) -> Any:
        lo = L(tf)
        r = getattr(lo.Reduction, reduction)
        probs = tf.sigmoid(tf.constant(P))
        out = []
        for w in WEIGHTS:
            kw = dict(weights=w, reduction=r)
            out += [lo.mean_squared_error(Y, P, **kw), lo.absolute_difference(Y, P, **kw),
                    lo.huber_loss(Y, P, delta=0.7, **kw), lo.log_loss(BINARY, probs, **kw),
                    lo.hinge_loss(BINARY, P, **kw)]
        return out

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


def test_classification_losses_match_tensorflow(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        lo = L(tf)
        out = []
        for smoothing in (0.0, 0.2):
            for w in (WEIGHTS[0], WEIGHTS[1], WEIGHTS[3]):
                wcol = w if np.ndim(w) == 0 else w[:, 0]
                out += [
                    lo.softmax_cross_entropy(ONEHOT, P, weights=wcol, label_smoothing=smoothing),
                    lo.sparse_softmax_cross_entropy(SPARSE, P, weights=wcol),
                    lo.sparse_softmax_cross_entropy(SPARSE[:, None], P, weights=w),
                    lo.sigmoid_cross_entropy(BINARY, P, weights=w, label_smoothing=smoothing)]
        return out

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)


def test_names_collection_and_total_loss(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        lo = L(tf)
        a = lo.mean_squared_error(Y, P)
        b = lo.softmax_cross_entropy(ONEHOT, P, scope="xent")
        c = lo.sigmoid_cross_entropy(BINARY, P, loss_collection=None)
        tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(0.25))
        total = lo.get_total_loss()
        no_reg = lo.get_total_loss(add_regularization_losses=False, name="plain")
        names = [t.name for t in (a, b, c, total, no_reg)] + [t.name for t in lo.get_losses()]
        return [a, b, c, total, no_reg, lo.get_regularization_loss(), tf.constant(names)]

    assert_same(tf1, build, rtol=1e-6)


def test_float64_inputs_keep_dtype(tf1: Any) -> None:
    assert_same(tf1, lambda tf: [
        L(tf).softmax_cross_entropy(ONEHOT, P.astype(np.float64)),
        L(tf).sigmoid_cross_entropy(BINARY, P.astype(np.float64), weights=[[1.0, 0.0, 1.0]]),
        L(tf).mean_squared_error(Y.astype(np.float64), P.astype(np.float64)),
    ])


def test_placeholder_weights_and_gradient(tf1: Any) -> None:
    from flowlab.ops.gradients_impl import gradients

    def build(tf: Any) -> Any:
        w = tf.placeholder(tf.float32, [4, 1])
        p = tf.constant(P)
        loss = L(tf).mean_squared_error(Y, p, weights=w)
        g = (tf.gradients if tf is not fl else gradients)(loss, p)[0]
        return [loss, g], {w: np.array([[1.0], [0.0], [0.0], [3.0]], np.float32)}

    assert_same(tf1, build)


def test_errors() -> None:
    with pytest.raises(ValueError, match="`labels` must not be None"):
        fl_losses.mean_squared_error(None, P)
    with pytest.raises(ValueError, match="`predictions` must not be None"):
        fl_losses.mean_squared_error(Y, None)
    with pytest.raises(ValueError, match="incompatible"):
        fl_losses.mean_squared_error(Y, P[:, :2])
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        fl_losses.mean_squared_error(Y, P, weights=np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        fl_losses.mean_squared_error(Y, P, reduction="bogus")
    with pytest.raises(ValueError, match="`onehot_labels` must not be None"):
        fl_losses.softmax_cross_entropy(None, P)


def test_reduction_names() -> None:
    assert fl_losses.Reduction.SUM_OVER_NONZERO_WEIGHTS == fl_losses.Reduction.SUM_BY_NONZERO_WEIGHTS
    assert len(fl_losses.Reduction.all()) == 5
