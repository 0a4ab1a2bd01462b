"""The intra-op threads: one pool per process that large kernels share out their
work on, as TensorFlow's Eigen pool is shared by its kernels.

`set_intra_op_threads` (set by flowlab.runtime.thread_policy from ConfigProto's
`intra_op_parallelism_threads`) sizes it; `run_blocks` runs a kernel's blocks on it,
taken from one queue; `sharded_matmul` cuts the rows (or, for a product with few rows,
the columns) of a 2-D GEMM into blocks, each a one-thread BLAS call.  A thread that
loses its core to another process delays only the block it holds, where OpenBLAS's own
threads, which split a GEMM statically and spin while they wait for each other, stall
the whole product (docs/notes/training-performance.md).  Convolutions
(flowlab.kernels.conv_blocks) and memory-bound passes (flowlab.kernels.batch_blocks)
use the same pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

# Below this many multiply-adds a GEMM runs whole: a block costs ~10 us of Python and
# thread hand-over, 1-2% of a 4M-FMA GEMM (~0.1 ms on one core).
SHARD_MIN_WORK = 1 << 22
# Row blocks are multiples of this (OpenBLAS's SkylakeX sgemm/dgemm kernels compute 16
# or 8 rows at a time) and at least this long.
SHARD_ROWS = 16


class _IntraOp:
    """The process's intra-op threads (TensorFlow has one intra-op pool per process
    too): the calling thread plus `threads - 1` helpers, started on first use."""

    def __init__(self) -> None:
        self.threads = 1
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def set_threads(self, n: int) -> None:
        n = max(1, int(n))
        if n == self.threads:  # every step's scope sets it: no lock when nothing changes
            return
        with self._lock:
            if n == self.threads:
                return
            old, self._pool, self.threads = self._pool, None, n
        if old is not None:
            old.shutdown(wait=False)

    def pool(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads - 1, "flowlab-intra-op")
                pool = self._pool
        return pool


_INTRA = _IntraOp()
# A forked child has none of the parent's pool threads: it starts its own on first use.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: setattr(_INTRA, "_pool", None))


def set_intra_op_threads(n: int) -> None:
    """How many threads (the caller included) share one large GEMM; 1: none."""
    _INTRA.set_threads(n)


def intra_op_threads() -> int:
    """The current intra-op thread count (see `set_intra_op_threads`)."""
    return _INTRA.threads


def row_blocks(m: int, work: int) -> list[int]:
    """Bounds of the row (or column) blocks that the intra-op threads share for `m`
    rows of `work` multiply-adds in all: [0, m] (one block) when sharding would not pay."""
    threads = _INTRA.threads
    if threads < 2 or work < SHARD_MIN_WORK or m < 2 * SHARD_ROWS:
        return [0, m]
    # One block per thread: mlp_train's step, interleaved A/B at load ~3, 15 rounds x 10
    # steps twice each: 7.8 / 7.4 ms against 8.4 / 8.2 with two blocks per thread (each
    # block repacks B), and no worse beside a --load neighbour (15.5 / 23.0 vs 19.8 / 22.9).
    step = -(-m // min(threads, m // SHARD_ROWS))
    step += -step % SHARD_ROWS
    return list(range(0, m, step)) + [m]


def run_blocks(blocks: int, fn: Callable[[int], None]) -> None:
    """`fn(i)` for i in range(blocks), the blocks taken from one queue by this thread
    and the intra-op helpers; returns when all are done, raising the first error."""
    if blocks == 1 or _INTRA.threads < 2:
        for i in range(blocks):
            fn(i)
        return
    unclaimed = iter(range(blocks))  # next() of a range iterator is atomic under the GIL
    lock = threading.Lock()
    finished = threading.Event()
    state: list[Any] = [0, None]  # blocks done, first error
    # A helper that starts late (its thread had no core) runs `work` after this call
    # returned and finds nothing to do; until then the pool's queue holds `work`.  It
    # reaches `fn` through this box, emptied on return, so that the arrays `fn` holds
    # are not kept alive meanwhile (an in-place variable update checks that nothing
    # else holds its variable's array: flowlab.kernels.in_place_updates.alone).
    box = [fn]

    def work() -> None:
        for i in unclaimed:
            try:
                box[0](i)
            except BaseException as e:  # noqa: BLE001 -- handed to the caller below
                state[1] = state[1] or e
            with lock:
                state[0] += 1
                if state[0] == blocks:
                    finished.set()

    pool = _INTRA.pool()
    for _ in range(min(_INTRA.threads, blocks) - 1):
        pool.submit(work)
    work()
    # Wait only for blocks a helper holds: a helper that starts after the queue is
    # empty (its thread had no core) finds nothing and is not waited for.
    finished.wait()
    box.clear()
    if state[1] is not None:
        raise state[1]


def sharded_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)` of two NumPy matrices, its row or column blocks computed by
    the intra-op threads.  The values are one call's up to the GEMM's rounding: a block of a few
    rows may take OpenBLAS's small-matrix kernel, which adds in another order (as
    TensorFlow's results depend on its thread count).

    >>> sharded_matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    array([[3., 3.],
           [3., 3.]], dtype=float32)
    """
    m, k = a.shape
    n = b.shape[1]
    # A product with at least as many columns as rows is cut by columns: each thread
    # then packs only its part of b, where row blocks would each pack all of it.
    # Two threads, AMD EPYC (AVX2), medians of 31: [64,3136] @ [3136,1024] 4.32 ms by
    # rows, 3.30 by columns (one thread 5.34); [128,512] @ [512,512] 0.64 / 0.47;
    # [1024,256] @ [256,1024] 3.82 / 3.85.
    by_columns = n >= m
    bounds = row_blocks(n if by_columns else m, m * k * n)
    if len(bounds) == 2 or a.dtype != b.dtype or a.dtype.kind != "f":
        return np.matmul(a, b)
    out = np.empty((m, n), a.dtype)

    def block(i: int) -> None:
        lo, hi = bounds[i], bounds[i + 1]
        if by_columns:
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
        else:
            np.matmul(a[lo:hi], b, out=out[lo:hi])

    run_blocks(len(bounds) - 1, block)
    return out


def sharded_matmul_tn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a.T @ b` of two NumPy matrices with many rows (a filter gradient: columns^T @
    out_backprop), the sum over the rows split into blocks whose products the intra-op
    threads compute and this thread adds in block order."""
    m, k = a.shape
    n = b.shape[1]
    bounds = row_blocks(m, m * k * n)
    if len(bounds) == 2 or a.dtype != b.dtype or a.dtype.kind != "f":
        return np.matmul(a.T, b)
    parts: list[Any] = [None] * (len(bounds) - 1)

    def block(i: int) -> None:
        lo, hi = bounds[i], bounds[i + 1]
        parts[i] = np.matmul(a[lo:hi].T, b[lo:hi])

    run_blocks(len(parts), block)
    out = parts[0]
    for p in parts[1:]:
        out += p
    return out
