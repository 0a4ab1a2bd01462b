"""SparseMatMul's gradient against central differences (tests/ops/gradient_check.py).

SparseMatMul is float32 only, so the float64 placeholders are cast around it; the
product is bilinear, so wide steps are exact up to float32 rounding.  The cases run in
tests/ops/test_gradients.py, which loads every module that registers one."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(11)


def _smm(tf: Any, a: Any, b: Any, **kw: Any) -> Any:
    f32 = tf.float32
    return tf.cast(tf.sparse_matmul(tf.cast(a, f32), tf.cast(b, f32), **kw), tf.float64)


@grad_case("SparseMatMul", RS.randn(2, 3), RS.randn(3, 4), eps=1e-2, rtol=1e-3, atol=1e-3)
def _plain(tf: Any, a: Any, b: Any) -> Any:
    return _smm(tf, a, b, a_is_sparse=True)


@grad_case("SparseMatMul", RS.randn(3, 2), RS.randn(4, 3), eps=1e-2, rtol=1e-3, atol=1e-3)
def _transposed(tf: Any, a: Any, b: Any) -> Any:
    return _smm(tf, a, b, transpose_a=True, transpose_b=True, b_is_sparse=True)
