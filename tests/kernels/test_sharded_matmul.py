"""The intra-op sharding of large GEMMs (flowlab.kernels.intra_op.sharded_matmul),
by rows, or by columns for a product with few rows: the values of one NumPy call within the rounding of a GEMM (a block of a few rows may
run OpenBLAS's small-matrix kernel, which adds in another order; TensorFlow's results
also depend on its thread count), errors of a block reach the caller, and the MatMul
kernel takes it (with its transposes) on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import flowlab as fl
from flowlab.kernels import intra_op as intra
from flowlab.kernels import math_kernels
from flowlab.kernels.intra_op import SHARD_ROWS, sharded_matmul


@pytest.fixture
def intra_op():
    """Run the test with n intra-op threads and BLAS at one thread (the policy's)."""
    old = intra.intra_op_threads()

    def set_threads(n):
        intra.set_intra_op_threads(n)

    with threadpool_limits(1, user_api="blas"):
        yield set_threads
    intra.set_intra_op_threads(old)


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("shape", [(128, 784, 512), (1000, 300, 70), (33, 4096, 64),
                                   (257, 129, 300), (2 * SHARD_ROWS, 8192, 16), (5000, 25, 32)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_as_one_call(intra_op, threads, shape, dtype):
    m, k, n = shape
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    want = np.matmul(a, b)
    intra_op(threads)
    got = sharded_matmul(a, b)
    assert got.dtype == want.dtype and got.flags.c_contiguous and got.shape == (m, n)
    _assert_gemm_close(got, want, a, b)
    # Transposed operands (MatMul's transpose_a/transpose_b are views).
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    _assert_gemm_close(sharded_matmul(at.T, bt.T), want, a, b)


def _assert_gemm_close(got, want, a, b):
    """Within the forward error bound of a dot product of length k: k * eps * |a| @ |b|."""
    bound = a.shape[1] * np.finfo(a.dtype).eps * (np.abs(a) @ np.abs(b))
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))


def test_small_and_non_float_products_are_one_call(intra_op):
    intra_op(2)
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.testing.assert_array_equal(sharded_matmul(a, a.T), a @ a.T)
    ai = np.ones((4096, 64), np.int32)
    np.testing.assert_array_equal(sharded_matmul(ai, ai.T[:, :64]), ai @ ai.T[:, :64])
    c = (np.ones((256, 256)) * (1 + 1j)).astype(np.complex64)
    np.testing.assert_array_equal(sharded_matmul(c, c), c @ c)


def test_a_blocks_error_reaches_the_caller(intra_op, monkeypatch):
    intra_op(2)
    a = np.ones((256, 256), np.float32)
    real = np.matmul

    def failing(x, y, out=None):
        if out is not None and out.shape != (256, 256):
            raise MemoryError("no room for block")
        return real(x, y, out=out)

    monkeypatch.setattr(intra.np, "matmul", failing)
    with pytest.raises(MemoryError, match="no room for block"):
        sharded_matmul(a, a)


@pytest.mark.parametrize("shape, cut", [((64, 3136, 1024), "columns"), ((128, 512, 512), "columns"),
                                        ((3136, 64, 1024), "rows"), ((1000, 300, 70), "rows")])
def test_few_rows_are_cut_by_columns_many_by_rows(intra_op, monkeypatch, shape, cut):
    intra_op(2)
    m, k, n = shape
    blocks = []
    real = np.matmul
    monkeypatch.setattr(intra.np, "matmul",
                        lambda x, y, out=None: blocks.append(out.shape) or real(x, y, out=out))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    got = sharded_matmul(a, b)
    _assert_gemm_close(got, real(a, b), a, b)
    assert len(blocks) == 2
    assert all(s[0] == m for s in blocks) if cut == "columns" else all(s[1] == n for s in blocks)
    assert sum(s[1] if cut == "columns" else s[0] for s in blocks) == (n if cut == "columns" else m)


def test_matmul_kernel_uses_the_intra_op_threads(intra_op, monkeypatch):
    intra_op(2)
    calls = []
    real = math_kernels.sharded_matmul
    monkeypatch.setattr(math_kernels, "sharded_matmul", lambda a, b: calls.append(a.shape) or real(a, b))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 200)).astype(np.float32)
    w = rng.standard_normal((100, 200)).astype(np.float32)
    g = fl.Graph()
    with g.as_default():
        px, pw = fl.placeholder(fl.float32, [None, 200]), fl.placeholder(fl.float32, [100, 200])
        y = fl.matmul(px, pw, transpose_b=True)
    with fl.Session(graph=g) as sess:
        got = sess.run(y, {px: x, pw: w})
    assert calls == [(300, 200)]
    np.testing.assert_array_equal(got, x @ w.T)


def test_set_intra_op_threads_clamps_and_reports():
    old = intra.intra_op_threads()
    try:
        intra.set_intra_op_threads(0)
        assert intra.intra_op_threads() == 1
        intra.set_intra_op_threads(3)
        assert intra.intra_op_threads() == 3
    finally:
        intra.set_intra_op_threads(old)


def test_a_forked_child_shares_out_with_its_own_threads(intra_op):
    import multiprocessing

    intra_op(2)
    a = np.random.default_rng(1).standard_normal((512, 512)).astype(np.float32)
    sharded_matmul(a, a)  # the parent's pool threads exist
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply(_child_product, (a,))
    _assert_gemm_close(got, a @ a, a, a)


def _child_product(a):
    assert intra._INTRA._pool is None
    return sharded_matmul(a, a)
