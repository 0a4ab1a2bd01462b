"""tf.linalg.tridiagonal_matmul and tridiagonal_solve (compact, sequence and matrix
formats): values, dtypes and gradients, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same

RS = np.random.RandomState(20)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_tridiagonal(tf1: Any, dt: Any) -> None:
    m = 5
    diags = RS.randn(2, 3, m).astype(dt)
    diags[:, 1, :] += 4.0  # well conditioned
    rhs = RS.randn(2, m, 3).astype(dt)
    rhs_v = RS.randn(2, m).astype(dt)
    full = np.zeros((2, m, m), dt)
    for b in range(2):
        full[b] += np.diag(diags[b, 1]) + np.diag(diags[b, 0, :-1], 1) + np.diag(diags[b, 2, 1:], -1)

    def build(tf: Any) -> Any:
        d, r = tf.constant(diags), tf.constant(rhs)
        y = tf.linalg.tridiagonal_matmul(d, r)
        y2 = tf.linalg.tridiagonal_matmul((d[:, 0], d[:, 1], d[:, 2]), r, diagonals_format="sequence")
        y3 = tf.linalg.tridiagonal_matmul(tf.constant(full), r, diagonals_format="matrix")
        x = tf.linalg.tridiagonal_solve(d, r)
        xv = tf.linalg.tridiagonal_solve(d, tf.constant(rhs_v))
        x2 = tf.linalg.tridiagonal_solve(tf.constant(full), r, diagonals_format="matrix")
        xt = tf.linalg.tridiagonal_solve(d, tf.constant(np.swapaxes(rhs, -1, -2)), transpose_rhs=True)
        g = tf.gradients(tf.reduce_sum(y * y) + tf.reduce_sum(x * x), [d, r])
        return [y, y2, y3, x, xv, x2, xt, g]

    tol = 1e-4 if dt == np.float32 else 1e-10
    assert_same(tf1, build, rtol=tol, atol=tol)
