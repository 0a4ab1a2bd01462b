"""tf.linalg.lu / lu_reconstruct / lu_solve / lu_matrix_inverse and tf.linalg.normalize:
values, dtypes, gradients of the composites and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(14)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_lu_family(tf1: Any, dt: Any) -> None:
    a = RS.randn(4, 4).astype(dt)
    ab = RS.randn(2, 3, 3).astype(dt)
    rhs = RS.randn(4, 2).astype(dt)
    rhs_b = RS.randn(2, 3, 1).astype(dt)

    def build(tf: Any) -> Any:
        lu, p = tf.linalg.lu(tf.constant(a))
        lub, pb = tf.linalg.lu(tf.constant(ab))
        lu64, p64 = tf.linalg.lu(tf.constant(a), output_idx_type=tf.int64)
        lut = tf.constant(np.asarray(RS.randn(4, 4), dt))
        x = tf.linalg.lu_solve(lu, p, rhs)
        return [lu, p, lub, pb, lu64, p64, tf.linalg.lu_reconstruct(lu, p), tf.linalg.lu_reconstruct(lub, pb),
                x, tf.linalg.lu_solve(lub, pb, rhs_b), tf.linalg.lu_matrix_inverse(lu, p),
                tf.linalg.lu_matrix_inverse(lub, pb),
                tf.gradients(tf.reduce_sum(tf.linalg.lu_solve(lut, p, rhs)), lut)]

    RS.seed(2)
    st = RS.get_state()
    tol = 1e-4 if dt == np.float32 else 1e-10
    assert_same(tf1, lambda tf: (RS.set_state(st), build(tf))[1], rtol=tol, atol=tol)


def test_lu_errors(tf1: Any) -> None:
    assert_same_error(tf1, lambda tf: tf.linalg.lu(tf.zeros([2, 3])))
    assert_same_error(tf1, lambda tf: tf.linalg.lu(tf.placeholder_with_default(np.zeros([2, 2], np.float32),
                                                                               [None, None])))


@pytest.mark.parametrize("ord,axis", [("euclidean", None), (1, 0), (2, 1), (np.inf, -1), ("fro", (0, 1))])
def test_normalize(tf1: Any, ord: Any, axis: Any) -> None:
    x = RS.randn(3, 4).astype(np.float32)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        n, norm = tf.linalg.normalize(xt, ord=ord, axis=axis)
        return [n, norm, tf.gradients(tf.reduce_sum(n * n) + tf.reduce_sum(norm), xt)]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)
