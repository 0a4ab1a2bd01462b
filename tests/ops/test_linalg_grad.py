"""Gradients of the linear-algebra, einsum, roll and diagonal ops: gradient-table entries
(finite differences in float64) and gradients of composites against TensorFlow's.

Cholesky and SelfAdjointEigV2 read one triangle, so their cases build a symmetric
input; Qr, Svd and eig outputs are defined up to a sign per column, so their cases
differentiate sign-invariant functions of them (squares, singular values)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(11)
_SQ = RS.randn(3, 3) + 3 * np.eye(3)
_B = RS.randn(3, 2)


def _spd(tf, x):
    return tf.matmul(x, x, transpose_b=True) + 3 * tf.eye(3, dtype=x.dtype)


def _sym(tf, x):
    return (x + tf.linalg.matrix_transpose(x)) / 2


grad_case("MatrixInverse", _SQ)(lambda tf, x: tf.matrix_inverse(x))
grad_case("MatrixInverse", RS.randn(2, 2, 2) + 2 * np.eye(2))(lambda tf, x: tf.matrix_inverse(x, adjoint=True))
grad_case("MatrixDeterminant", RS.randn(2, 3, 3))(lambda tf, x: tf.matrix_determinant(x))
grad_case("LogMatrixDeterminant", _SQ)(lambda tf, x: tf.linalg.slogdet(x)[1])
grad_case("Cholesky", RS.randn(3, 3))(lambda tf, x: tf.cholesky(_spd(tf, x)))
grad_case("MatrixSolve", _SQ, _B)(lambda tf, a, b: tf.matrix_solve(a, b))
grad_case("MatrixSolve", _SQ, _B)(lambda tf, a, b: tf.matrix_solve(a, b, adjoint=True))
grad_case("MatrixTriangularSolve", _SQ, _B)(lambda tf, a, b: tf.matrix_triangular_solve(a, b))
grad_case("MatrixTriangularSolve", _SQ, RS.randn(2, 3, 2))(
    lambda tf, a, b: tf.matrix_triangular_solve(a, b, lower=False, adjoint=True))
grad_case("Qr", RS.randn(4, 3))(lambda tf, x: tf.square(tf.qr(x)[0]))
grad_case("Qr", RS.randn(3, 3))(lambda tf, x: tf.square(tf.qr(x).r))
grad_case("Qr", RS.randn(2, 4))(lambda tf, x: tf.concat([tf.square(tf.qr(x).q), tf.square(tf.qr(x).r)], 1))
grad_case("Svd", RS.randn(3, 3))(lambda tf, x: tf.svd(x, compute_uv=False))
grad_case("Svd", RS.randn(4, 3))(lambda tf, x: tf.square(tf.svd(x)[1]))
grad_case("Svd", RS.randn(2, 3))(lambda tf, x: tf.square(tf.svd(x)[2]))
grad_case("Svd", RS.randn(3, 4))(lambda tf, x: tf.norm(x, ord=2, axis=[0, 1]))
grad_case("SelfAdjointEigV2", RS.randn(3, 3))(lambda tf, x: tf.self_adjoint_eig(_sym(tf, x))[0])
grad_case("SelfAdjointEigV2", RS.randn(3, 3))(lambda tf, x: tf.square(tf.self_adjoint_eig(_sym(tf, x))[1]))
grad_case("SelfAdjointEigV2", RS.randn(3, 3))(lambda tf, x: tf.self_adjoint_eigvals(_sym(tf, x)))
grad_case("Cross", RS.randn(2, 3), RS.randn(2, 3))(lambda tf, a, b: tf.cross(a, b))
grad_case("MatrixBandPart", RS.randn(3, 4))(lambda tf, x: tf.matrix_band_part(x, 1, 0))
grad_case("MatrixDiagV3", RS.randn(2, 3))(lambda tf, x: tf.matrix_diag(x))
grad_case("MatrixDiagV3", RS.randn(2, 3))(lambda tf, x: tf.linalg.diag(x, k=(0, 1), num_cols=5))
grad_case("MatrixDiagPartV3", RS.randn(3, 4))(lambda tf, x: tf.matrix_diag_part(x))
grad_case("MatrixDiagPartV3", RS.randn(2, 3, 4))(lambda tf, x: tf.linalg.diag_part(x, k=(-1, 1), padding_value=5))
grad_case("MatrixSetDiagV3", RS.randn(3, 3), RS.randn(3))(lambda tf, x, d: tf.matrix_set_diag(x, d))
grad_case("Diag", RS.randn(2, 2))(lambda tf, x: tf.diag(x))
grad_case("DiagPart", RS.randn(3, 3))(lambda tf, x: tf.diag_part(x))
grad_case("Einsum", RS.randn(2, 3), RS.randn(3, 4))(lambda tf, a, b: tf.einsum("ij,jk->ik", a, b))
grad_case("Einsum", RS.randn(2, 3), RS.randn(4, 3))(lambda tf, a, b: tf.einsum("ij,kj->i", a, b))
grad_case("Einsum", RS.randn(2, 3, 4))(lambda tf, a: tf.einsum("bij->jb", a))
grad_case("Einsum", RS.randn(2, 2, 3), RS.randn(1, 3, 2))(lambda tf, a, b: tf.einsum("...ij,...jk->...ik", a, b))
grad_case("Einsum", RS.randn(3, 3))(lambda tf, a: tf.einsum("ii->i", a))
grad_case("Einsum", RS.randn(2, 3, 2), RS.randn(3))(lambda tf, a, b: tf.einsum("iji,j->i", a, b))
grad_case("Roll", RS.randn(3, 4))(lambda tf, x: tf.roll(x, [1, -2], [0, 1]))


def test_composite_gradients_match_tensorflow(tf1):
    a0 = RS.randn(3, 3).astype(np.float32)

    def build(tf):
        x = tf.Variable(a0)
        spd = tf.matmul(x, x, transpose_b=True) + 2 * tf.eye(3)
        sym = x + tf.transpose(x)
        terms = [tf.linalg.logdet(spd), tf.reduce_sum(tf.matrix_inverse(spd)), tf.matrix_determinant(x),
                 tf.reduce_sum(tf.self_adjoint_eigvals(sym)), tf.reduce_sum(tf.svd(x, compute_uv=False)),
                 tf.norm(x, ord=2, axis=[0, 1]), tf.trace(tf.matmul(x, x)),
                 tf.reduce_sum(tf.matrix_solve(spd, x)), tf.reduce_sum(tf.cholesky(spd) * a0),
                 tf.reduce_sum(tf.einsum("ij,jk->ik", x, x) * a0), tf.reduce_sum(tf.matrix_band_part(x, 0, 1) * a0),
                 tf.reduce_sum(tf.matrix_diag_part(x) * [1.0, 2.0, 3.0]), tf.reduce_sum(tf.roll(x, 1, 0) * a0),
                 tf.reduce_sum(tf.linalg.lstsq(spd, x))]
        return [terms, [tf.gradients(t, x)[0] for t in terms]]

    assert_same(tf1, build, rtol=2e-4, atol=2e-4)


def test_svd_and_qr_gradients_match_tensorflow(tf1):
    a0 = RS.randn(4, 3).astype(np.float64)

    def build(tf):
        x = tf.constant(a0)
        s, u, v = tf.svd(x)
        q, r = tf.qr(x)
        wide = tf.transpose(x)
        qw, rw = tf.qr(wide)
        ys = [tf.reduce_sum(s * [1.0, 2.0, 3.0]), tf.reduce_sum(tf.square(u) * a0), tf.reduce_sum(tf.square(v)[:, :2]),
              tf.reduce_sum(tf.square(q) * a0), tf.reduce_sum(tf.square(r)), tf.reduce_sum(tf.square(rw) * a0.T)]
        return [tf.gradients(y, x)[0] for y in ys] + [tf.gradients(tf.reduce_sum(tf.square(qw)), x)[0]]

    assert_same(tf1, build, rtol=1e-6, atol=1e-8)


def test_full_matrices_svd_gradient_is_refused_like_tensorflow():
    with fl.Graph().as_default():
        x = fl.constant(np.ones((5, 2)))
        s, u, v = fl.svd(x, full_matrices=True)
        with pytest.raises(NotImplementedError, match="abs\\(m - n\\) > 1"):
            fl.gradients(fl.reduce_sum(u), x)


def test_unused_outputs_get_zero_gradients():
    with fl.Graph().as_default():
        x = fl.constant(np.array([[2.0, 1.0], [1.0, 3.0]]))
        e, v = fl.self_adjoint_eig(x)
        g = fl.gradients(fl.reduce_sum(e), x)[0]
        with fl.Session() as s:
            np.testing.assert_allclose(s.run(g), [[1.0, 0.0], [0.0, 1.0]], atol=1e-12)
