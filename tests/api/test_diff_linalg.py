"""`tf.linalg` beside TensorFlow 1.x (tests/difftest.py): products, decompositions,
solves and the small matrix helpers, in float32 and float64, batched where TensorFlow
batches; decompositions are compared through sign-free quantities where the factors
are only defined up to sign."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(7)
M = RS.randn(2, 3, 3)
SPD = np.einsum("bij,bkj->bik", M, M) + 3 * np.eye(3)
RECT = RS.randn(2, 4, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products(tf1: Any, dtype: type) -> None:
    a, b = RECT.astype(dtype), M.astype(dtype)

    def build(tf: Any) -> Any:
        x, y = tf.constant(a), tf.constant(b)
        return [
            tf.linalg.matmul(x, y),
            tf.linalg.matmul(x, x, transpose_a=True),
            tf.linalg.matmul(y, x, transpose_b=True),
            tf.linalg.tensordot(x, y, axes=[[2], [1]]),
            tf.linalg.tensordot(a[0], b[0], 1),
            tf.linalg.einsum("bij,bjk->bik", x, y),
            tf.linalg.einsum("bij->b", x),
            tf.linalg.transpose(x),
            tf.linalg.transpose(x, conjugate=True),
            tf.linalg.trace(y),
            tf.linalg.tensor_diag_part(tf.constant(b[0])),
            tf.linalg.band_part(y, 1, 0),
            tf.linalg.band_part(x, -1, 1),
            tf.linalg.l2_normalize(x, axis=-1),
        ]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decompositions(tf1: Any, dtype: type) -> None:
    spd, m, rect = SPD.astype(dtype), M.astype(dtype), RECT.astype(dtype)

    def build(tf: Any) -> Any:
        s, a, r = tf.constant(spd), tf.constant(m), tf.constant(rect)
        chol = tf.linalg.cholesky(s)
        e, v = tf.linalg.eigh(s)
        q, rr = tf.linalg.qr(r)
        sv, u, w = tf.linalg.svd(r)
        svals = tf.linalg.svd(r, compute_uv=False)
        return [
            chol,
            tf.linalg.det(a),
            tf.linalg.inv(a),
            e,
            tf.abs(v),
            tf.linalg.eigvalsh(s),
            tf.abs(q),
            tf.abs(rr),
            tf.linalg.matmul(q, rr),
            sv,
            svals,
            tf.linalg.matmul(u * sv[:, None, :], w, adjoint_b=True),
        ]

    tol = 1e-4 if dtype == np.float32 else 1e-9
    assert_same(tf1, build, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solves(tf1: Any, dtype: type) -> None:
    a = M.astype(dtype)
    rhs = RS.randn(2, 3, 2).astype(dtype)
    low = np.tril(M) + 3 * np.eye(3)

    def build(tf: Any) -> Any:
        x, b = tf.constant(a), tf.constant(rhs)
        t = tf.constant(low.astype(dtype))
        return [
            tf.linalg.solve(x, b),
            tf.linalg.solve(x, b, adjoint=True),
            tf.linalg.triangular_solve(t, b),
            tf.linalg.triangular_solve(t, b, lower=True, adjoint=True),
            tf.linalg.triangular_solve(tf.linalg.transpose(t), b, lower=False),
        ]

    tol = 1e-4 if dtype == np.float32 else 1e-9
    assert_same(tf1, build, rtol=tol, atol=tol)


def test_global_norm(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        ts = [tf.constant([3.0, 4.0]), tf.constant([[1.0, 2.0], [2.0, 4.0]]), None]
        return [
            tf.linalg.global_norm(ts),
            tf.linalg.global_norm([tf.constant(np.ones(4))]),
        ]

    assert_same(tf1, build)


def test_singular_inverse_is_an_error(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [2, 2])
        return tf.linalg.inv(p), {p: np.zeros([2, 2], np.float32)}

    e, a = assert_same_error(tf1, build)
    assert type(e).__name__ == "InvalidArgumentError"


def test_cholesky_of_non_spd_gives_nan(tf1: Any) -> None:
    """TensorFlow 2.21's kernel fills a failed factorisation with NaN instead of raising.
    It fills the lower triangle only: above the diagonal its output is whatever its
    buffer held (0.0 on most machines, 3.3e151 on one CI machine), so only the lower
    triangle is compared; flowlab's upper triangle is 0, as for a factorisation that
    succeeds."""

    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float64, [2, 2])
        return tf.linalg.band_part(tf.linalg.cholesky(p), -1, 0), {p: np.array([[1.0, 2.0], [2.0, 1.0]])}

    out = assert_same(tf1, build)
    assert np.isnan(out[np.tril_indices(2)]).all()
    g = fl.Graph()
    with g.as_default(), fl.Session(graph=g) as s:
        full = s.run(fl.linalg.cholesky(fl.constant([[1.0, 2.0], [2.0, 1.0]], fl.float64)))
    assert full[0, 1] == 0.0


def test_shape_errors_at_build_time(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError) as info:
                tf.linalg.matmul(tf.zeros([2, 3]), tf.zeros([2, 3]))
            msgs.append(type(info.value).__name__)
            with pytest.raises(ValueError):
                tf.linalg.det(tf.zeros([2, 3]))
    assert msgs[0] == msgs[1]
