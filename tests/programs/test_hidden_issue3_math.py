"""Issue 3 programs over the math and linear-algebra ops: gradients of composite
expressions built from variables (logdet, Cholesky likelihoods, solves, einsum
attention, spectral and nuclear norms, lgamma likelihoods, sorting) and short training
loops through them.  Each runs under TensorFlow and under flowlab; values and dtypes
agree."""

from __future__ import annotations

import numpy as np

from tests.programs.hidden_support import same_results

RS = np.random.RandomState(42)
M0 = (RS.randn(4, 4) * 0.5).astype(np.float32)
X = RS.randn(16, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.1 * RS.randn(16, 1)).astype(np.float32)
Q0, K0, V0 = (RS.randn(2, 5, 4).astype(np.float32) for _ in range(3))
COUNTS = RS.poisson(3.0, (6,)).astype(np.float32)


def _run(tf, fetches, steps=None, train=None):
    """Fetch once, or run `train` `steps` times and fetch after each (in a separate run:
    within one run TensorFlow does not order a variable's read against its update)."""
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        if steps is None:
            return s.run(fetches)
        trace = []
        for _ in range(steps):
            s.run(train)
            trace.append(s.run(fetches))
        return trace


def test_logdet_of_spd_from_variables(tf1):
    def prog(tf):
        w = tf.Variable(M0, name="w")
        spd = tf.matmul(w, w, transpose_b=True) + 0.5 * tf.eye(4)
        ld = tf.linalg.logdet(spd)
        sign, slog = tf.linalg.slogdet(spd)
        det = tf.matrix_determinant(spd)
        loss = -ld + 0.1 * tf.trace(spd)
        g = tf.gradients([loss, slog, tf.log(det)], w)
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        return [_run(tf, [ld, sign, slog, det, loss, g]), _run(tf, [loss, ld], steps=5, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_least_squares_through_matrix_solve_with_adam(tf1):
    def prog(tf):
        x, y = tf.constant(X), tf.constant(Y)
        log_lam = tf.Variable(0.0, name="log_lam")
        shift = tf.Variable(tf.zeros([3, 1]), name="shift")
        gram = tf.matmul(x, x, transpose_a=True) + tf.exp(log_lam) * tf.eye(3)
        w = tf.matrix_solve(gram, tf.matmul(x, y - tf.matmul(x, shift), transpose_a=True)) + shift
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y)) + 0.01 * tf.reduce_sum(tf.square(shift))
        grads = tf.gradients(loss, [log_lam, shift])
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        return [_run(tf, [loss, grads]), _run(tf, [loss, log_lam, w], steps=20, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_einsum_attention_scores_softmax_and_gradients(tf1):
    def prog(tf):
        q = tf.Variable(Q0, name="q")
        k = tf.Variable(K0, name="k")
        v = tf.constant(V0)
        scores = tf.einsum("bqd,bkd->bqk", q, k) / np.sqrt(4.0).astype(np.float32)
        attn = tf.nn.softmax(scores, axis=-1)
        out = tf.einsum("bqk,bkd->bqd", attn, v)
        loss = tf.reduce_sum(tf.square(out)) + tf.reduce_sum(tf.einsum("bqd,bqd->b", q, q))
        gq, gk = tf.gradients(loss, [q, k])
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        return [_run(tf, [scores, attn, out, gq, gk]), _run(tf, loss, steps=6, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_gaussian_likelihood_through_cholesky_and_triangular_solve(tf1):
    def prog(tf):
        raw = tf.Variable(np.eye(3, dtype=np.float32) + 0.1 * M0[:3, :3], name="raw")
        mu = tf.Variable(tf.zeros([3]), name="mu")
        scale_tril = tf.matrix_band_part(raw, -1, 0)
        cov = tf.matmul(scale_tril, scale_tril, transpose_b=True) + 0.1 * tf.eye(3)
        chol = tf.cholesky(cov)
        diff = tf.transpose(tf.constant(X) - mu)
        z = tf.matrix_triangular_solve(chol, diff, lower=True)
        nll = 0.5 * tf.reduce_sum(tf.square(z)) + 16.0 * tf.reduce_sum(tf.log(tf.matrix_diag_part(chol)))
        g = tf.gradients(nll, [raw, mu])
        train = tf.train.AdamOptimizer(0.05).minimize(nll)
        return [_run(tf, [nll, g]), _run(tf, nll, steps=10, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-4)


def test_spectral_and_nuclear_norm_regularizers(tf1):
    def prog(tf):
        w = tf.Variable(M0[:, :3], name="w")
        spectral = tf.norm(w, ord=2, axis=[0, 1])
        nuclear = tf.reduce_sum(tf.svd(w, compute_uv=False))
        s, u, v = tf.svd(w)
        recon = tf.matmul(u * s, v, transpose_b=True)
        eig = tf.self_adjoint_eigvals(tf.matmul(w, w, transpose_a=True))
        loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(X[:4, :]), w, transpose_b=True))) * 0.01 \
            + spectral + 0.5 * nuclear
        g = tf.gradients([spectral, nuclear, tf.reduce_max(eig)], w)
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        return [_run(tf, [spectral, nuclear, recon, eig, g]), _run(tf, [loss, spectral], steps=5, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_poisson_and_gamma_likelihoods_with_lgamma(tf1):
    def prog(tf):
        k = tf.constant(COUNTS)
        log_rate = tf.Variable(tf.zeros([6]), name="log_rate")
        log_shape = tf.Variable(0.5, name="log_shape")
        rate = tf.exp(log_rate)
        shape = tf.exp(log_shape)
        poisson = tf.reduce_sum(rate - k * log_rate + tf.lgamma(k + 1.0))
        gamma_nll = tf.reduce_sum(tf.lgamma(shape) - shape * tf.log(rate) - (shape - 1) * tf.log(k + 1.0)
                                  + rate * (k + 1.0))
        cdf = tf.igamma(shape, k + 1.0)
        g = tf.gradients([poisson, gamma_nll, tf.reduce_sum(cdf), tf.reduce_sum(tf.digamma(rate + 1.0))],
                         [log_rate, log_shape])
        train = tf.train.AdagradOptimizer(0.2).minimize(poisson + gamma_nll)
        return [_run(tf, [poisson, gamma_nll, cdf, g]), _run(tf, [poisson, gamma_nll], steps=8, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_trimmed_loss_through_sort_and_qr(tf1):
    def prog(tf):
        w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
        resid = tf.squeeze(tf.matmul(tf.constant(X), w) - tf.constant(Y), 1)
        trimmed = tf.reduce_mean(tf.sort(tf.square(resid))[:12])
        q, r = tf.qr(tf.constant(X))
        w_ls = tf.matrix_triangular_solve(r, tf.matmul(q, tf.constant(Y), transpose_a=True), lower=False)
        ranks = tf.argsort(resid, direction="DESCENDING")
        rolled = tf.reduce_sum(tf.roll(resid, 3, 0) * resid)
        g = tf.gradients([trimmed, rolled], w)
        train = tf.train.RMSPropOptimizer(0.05).minimize(trimmed)
        return [_run(tf, [trimmed, tf.abs(w_ls), ranks, g]), _run(tf, trimmed, steps=10, train=train)]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)
