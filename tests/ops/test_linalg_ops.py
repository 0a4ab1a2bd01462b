"""The linear-algebra ops against TensorFlow and NumPy: values and dtypes over batches,
the decompositions (up to TensorFlow's own sign conventions where LAPACK and Eigen
differ), the diagonal/band family with every `k` and `align`, composites (trace,
logdet, lstsq, matvec, adjoint), default names, build-time shape errors and runtime
errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(3)
SPD = np.einsum("bij,bkj->bik", *(2 * [RS.randn(2, 3, 3)])) + 3 * np.eye(3)
GEN = RS.randn(2, 3, 3) + 2 * np.eye(3)
RHS = RS.randn(2, 3, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_square_ops_match_tensorflow(tf1, dtype):
    def build(tf):
        a, s, b = (tf.constant(v.astype(dtype)) for v in (GEN, SPD, RHS))
        sign, logabs = tf.linalg.slogdet(a)
        return [tf.matrix_inverse(a), tf.matrix_inverse(a, adjoint=True), tf.matrix_determinant(a), sign, logabs,
                tf.cholesky(s), tf.matrix_solve(a, b), tf.matrix_solve(a, b, adjoint=True),
                tf.matrix_triangular_solve(a, b), tf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
                tf.matrix_triangular_solve(a[0], b), tf.self_adjoint_eigvals(s), tf.svd(a, compute_uv=False),
                tf.linalg.logdet(s), tf.trace(a), tf.linalg.lstsq(a, b), tf.linalg.lstsq(tf.transpose(b, [0, 2, 1]),
                                                                                     b[:, :2, :]),
                tf.linalg.lstsq(b, a[:, :, :1], l2_regularizer=0.5), tf.linalg.cholesky_solve(tf.cholesky(s), b),
                tf.linalg.matvec(a, b[..., 0]), tf.linalg.adjoint(b), tf.linalg.matrix_transpose(b),
                tf.norm(a, ord=2, axis=[-2, -1]), tf.linalg.norm(a, axis=[-2, -1])]

    assert_same(tf1, build, rtol=2e-5 if dtype == np.float32 else 1e-10, atol=1e-5 if dtype == np.float32 else 1e-10)


def test_decompositions_match_tensorflow(tf1):
    tall = RS.randn(2, 4, 3)

    def build(tf):
        a, t, s = tf.constant(GEN), tf.constant(tall), tf.constant(SPD)
        q, r = tf.qr(t)
        qf, rf = tf.qr(t, full_matrices=True)
        sv, u, v = tf.svd(t)
        svf, uf, vf = tf.svd(tf.transpose(t, [0, 2, 1]), full_matrices=True)
        e, ev = tf.self_adjoint_eig(s)
        # Column signs are a convention: compare sign-invariant quantities.
        return [tf.abs(q), tf.abs(r), tf.abs(rf), tf.shape(qf), sv, tf.abs(u), tf.abs(v), svf, tf.shape(uf),
                tf.shape(vf), e, tf.abs(ev), tf.matmul(q, r), tf.matmul(u * sv[:, None, :], v, adjoint_b=True),
                tf.abs(tf.qr(a)[1])]

    assert_same(tf1, build, rtol=1e-10, atol=1e-10)


def test_complex_inverse_determinant_and_solve(tf1):
    a = (GEN + 1j * RS.randn(2, 3, 3)).astype(np.complex128)

    def build(tf):
        m = tf.constant(a)
        return [tf.matrix_inverse(m), tf.matrix_determinant(m), tf.matrix_solve(m, tf.cast(RHS, tf.complex128)),
                tf.linalg.slogdet(m)[1], tf.linalg.adjoint(m)]

    assert_same(tf1, build, rtol=1e-10, atol=1e-10)


def test_diagonal_family_matches_tensorflow(tf1):
    m = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)

    def build(tf):
        x = tf.constant(m)
        outs = [tf.matrix_diag(tf.constant([[1.0, 2.0], [3.0, 4.0]])), tf.matrix_diag_part(x),
                tf.matrix_set_diag(x, tf.ones([2, 3])), tf.matrix_band_part(x, 1, 0), tf.matrix_band_part(x, -1, 1),
                tf.matrix_band_part(x, 0, 0), tf.diag([1, 2, 3]), tf.diag_part(tf.reshape(tf.range(16), [2, 2, 2, 2])),
                tf.linalg.tensor_diag(tf.constant([[1.0, 2.0]])), tf.trace(tf.constant(m.astype(np.int32)))]
        for align in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
            outs += [tf.linalg.diag_part(x, k=(-1, 2), padding_value=9, align=align),
                     tf.linalg.diag(tf.constant(m[:, :2, :3]), k=(-1, 0), align=align),
                     tf.linalg.diag(tf.constant(m[:, :2, :3]), k=(0, 1), num_rows=3, num_cols=5, align=align),
                     tf.linalg.set_diag(x, tf.constant(m[:, :2, :3] + 100), k=(0, 1), align=align)]
        outs += [tf.linalg.diag([1.0, 2.0], k=2), tf.linalg.diag([1.0, 2.0], k=-1, num_cols=4),
                 tf.linalg.diag_part(x, k=1), tf.linalg.diag_part(x, k=-2, padding_value=-1),
                 tf.linalg.set_diag(x, tf.constant(m[:, 0, :2] * 0), k=-1)]
        return outs

    assert_same(tf1, build)


def test_cross_and_eye_match_tensorflow(tf1):
    a0, b0 = RS.randn(2, 2, 4, 3).astype(np.float32)

    def build(tf):
        a, b = tf.constant(a0), tf.constant(b0)
        return [tf.cross(a, b), tf.linalg.cross(tf.constant([1, 0, 0]), tf.constant([0, 1, 0])),
                tf.linalg.eye(2, batch_shape=[3])]

    assert_same(tf1, build, rtol=1e-6)


def test_empty_and_batched_shapes(tf1):
    def build(tf):
        z = tf.zeros([0, 2, 2])
        e = tf.zeros([3, 0, 0])
        return [tf.matrix_inverse(z), tf.matrix_determinant(e), tf.cholesky(z), tf.svd(z, compute_uv=False),
                tf.matrix_diag_part(tf.zeros([2, 0, 3])), tf.matrix_band_part(z, 0, -1)]

    assert_same(tf1, build)


def test_static_shapes_match_tensorflow(tf1):
    shapes = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            a = mod.placeholder(mod.float32, [None, 4, 3])
            s = mod.placeholder(mod.float32, [5, None, 3])
            q, r = mod.qr(a)
            sv, u, v = mod.svd(a, full_matrices=True)
            outs = [q, r, sv, u, v, mod.svd(a, compute_uv=False), mod.matrix_inverse(s), mod.matrix_determinant(s),
                    mod.self_adjoint_eig(s)[1], mod.matrix_solve(s, s), mod.matrix_triangular_solve(s[0], a[..., :3, :]),
                    mod.matrix_diag_part(a), mod.linalg.diag_part(a, k=(-1, 1)), mod.matrix_diag(a),
                    mod.linalg.diag(a[0], k=(-3, 0)), mod.trace(a), mod.cross(a, a), mod.linalg.logdet(s)]
            shapes.append([t.shape.as_list() for t in outs])
    assert shapes[0] == shapes[1]


def test_default_names_match_tensorflow(tf1):
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            m = mod.constant(SPD[0].astype(np.float32))
            v = mod.constant([1.0, 2.0, 3.0])
            outs = [mod.matrix_inverse(m), mod.matrix_determinant(m), mod.cholesky(m), mod.matrix_solve(m, m),
                    mod.matrix_triangular_solve(m, m), mod.qr(m)[0], mod.svd(m)[1], mod.self_adjoint_eig(m)[0],
                    mod.matrix_band_part(m, 0, -1), mod.matrix_diag(v), mod.matrix_diag_part(m),
                    mod.matrix_set_diag(m, v), mod.trace(m), mod.cross(v, v), mod.linalg.logdet(m),
                    mod.linalg.slogdet(m)[1], mod.linalg.lstsq(m, m), mod.linalg.matvec(m, v), mod.diag(v),
                    mod.diag_part(m), mod.linalg.cholesky_solve(m, m), mod.linalg.inv(m, name="my_inv"),
                    mod.linalg.adjoint(m)]
            names.append([t.name for t in outs])
    assert names[0] == names[1]


@pytest.mark.parametrize("build", [
    lambda tf: tf.matrix_inverse(tf.zeros([2, 3])),
    lambda tf: tf.cholesky(tf.zeros([3])),
    lambda tf: tf.matrix_solve(tf.zeros([3, 3]), tf.zeros([4, 1])),
    lambda tf: tf.cross(tf.zeros([2, 4]), tf.zeros([2, 4])),
    lambda tf: tf.matrix_determinant(tf.zeros([2, 2, 3])),
    lambda tf: tf.linalg.diag(tf.zeros([4, 3]), k=(-2, 0)),
], ids=["inverse-not-square", "cholesky-rank-1", "solve-rows", "cross-not-3", "det-not-square", "diag-count"])
def test_build_time_shape_errors(tf1, build):
    for mod in (tf1, fl):
        with mod.Graph().as_default(), pytest.raises(ValueError):
            build(mod)


def test_runtime_errors_match_tensorflow(tf1):
    z = np.zeros((2, 2), np.float32)
    _, err = assert_same_error(tf1, lambda tf: tf.matrix_inverse(z))
    assert "Input is not invertible" in str(err)
    _, err = assert_same_error(tf1, lambda tf: tf.matrix_solve(z, z))
    assert "not invertible" in str(err)
    assert_same_error(tf1, lambda tf: tf.matrix_inverse(tf.placeholder_with_default(np.ones((2, 3), np.float32),
                                                                                    None)))
    assert_same_error(tf1, lambda tf: tf.matrix_band_part(np.ones((2, 2), np.float32), 3, 0))


def test_singular_conventions_match_tensorflow(tf1):
    z = np.zeros((2, 2), np.float32)

    def build(tf):
        return [tf.matrix_determinant(z), tf.linalg.slogdet(z), tf.matrix_triangular_solve(z, np.ones((2, 2),
                                                                                              np.float32))]

    assert_same(tf1, build)
    with fl.Graph().as_default(), fl.Session() as s:
        chol = s.run(fl.cholesky(-np.eye(2)))
    assert np.isnan(chol[np.tril_indices(2)]).all()


def test_namespaces():
    for n in ("inv", "det", "slogdet", "logdet", "cholesky", "cholesky_solve", "solve", "triangular_solve", "qr",
              "svd", "eigh", "eigvalsh", "band_part", "diag", "diag_part", "set_diag", "tensor_diag", "trace",
              "cross", "norm", "lstsq", "matvec", "adjoint", "matrix_transpose", "einsum", "eye", "matmul"):
        assert hasattr(fl.linalg, n), n
    for n in ("matrix_inverse", "matrix_determinant", "cholesky", "matrix_solve", "matrix_triangular_solve", "qr",
              "svd", "self_adjoint_eig", "matrix_band_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag",
              "trace", "cross", "einsum", "diag", "diag_part", "matrix_transpose", "matrix_solve_ls"):
        assert hasattr(fl, n), n


def test_pinv_and_matrix_rank_match_tensorflow(tf1):
    low_rank = (RS.randn(2, 4, 2) @ RS.randn(2, 2, 3)).astype(np.float64)

    def build(tf):
        a = tf.constant(low_rank)
        v = tf.Variable(GEN[0])
        return [tf.linalg.pinv(a), tf.linalg.pinv(tf.constant(GEN.astype(np.float32))), tf.linalg.matrix_rank(a),
                tf.linalg.matrix_rank(tf.constant(GEN)), tf.linalg.matrix_rank(a, tol=0.5),
                tf.gradients(tf.reduce_sum(tf.linalg.pinv(v) * GEN[1]), v)]

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)
    names = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            a = mod.constant(GEN[0])
            names.append([mod.linalg.pinv(a).name, mod.linalg.matrix_rank(a).name])
    assert names[0] == names[1]


def test_lstsq_robust_path_matches_tensorflow(tf1):
    deficient = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]], np.float32)
    rhs = np.array([[1.0], [2.0], [3.1]], np.float32)

    def build(tf):
        return [tf.linalg.lstsq(deficient, rhs, fast=False), tf.matrix_solve_ls(deficient.T, rhs[:2], fast=False),
                tf.linalg.lstsq(tf.constant(GEN), tf.constant(RHS), fast=False),
                tf.linalg.lstsq(deficient, rhs, l2_regularizer=0.5, fast=False)]

    assert_same(tf1, build, rtol=1e-5, atol=1e-6)
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            assert mod.linalg.lstsq(deficient, rhs, fast=False).name == "MatrixSolveLs:0"


def test_lstsq_with_unknown_shape_uses_a_cond(tf1):
    def build(tf):
        a = tf.placeholder(tf.float64, [None, None])
        b = tf.placeholder(tf.float64, [None, 1])
        x = tf.linalg.lstsq(a, b, l2_regularizer=0.1)
        return [x, tf.gradients(tf.reduce_sum(x), a)], {a: RHS[0], b: RHS[0, :, :1]}

    # Cholesky of the Gram matrix: Eigen and LAPACK round differently (~3e-10 here).
    assert_same(tf1, build, rtol=1e-8, atol=1e-8)

    def build_wide(tf):
        a = tf.placeholder(tf.float64, [None, None])
        return tf.linalg.lstsq(a, tf.constant(RHS[0, :2, :1])), {a: RHS[0].T}

    assert_same(tf1, build_wide, rtol=1e-8, atol=1e-8)
