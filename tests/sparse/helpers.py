"""Shared builders for the sparse differential tests: SparseTensors from NumPy data
built the same way under TensorFlow and flowlab, and a runtime-only variant
(placeholder_with_default parts) so kernel checks run instead of shape functions."""

from __future__ import annotations

from typing import Any

import numpy as np

IND = np.array([[0, 1], [1, 0], [1, 2], [3, 1]], np.int64)
VAL = np.array([1.5, -2.0, 3.0, 0.5], np.float32)
SHAPE = np.array([4, 3], np.int64)


def sp(tf: Any, ind: Any = IND, val: Any = VAL, shape: Any = SHAPE) -> Any:
    """A SparseTensor of constants."""
    return tf.SparseTensor(np.asarray(ind, np.int64), np.asarray(val), np.asarray(shape, np.int64))


def sp_late(tf: Any, ind: Any = IND, val: Any = VAL, shape: Any = SHAPE) -> Any:
    """A SparseTensor whose parts are only known when the step runs."""
    def p(x: Any) -> Any:
        return tf.placeholder_with_default(np.asarray(x), None)
    return tf.SparseTensor(p(np.asarray(ind, np.int64)), p(np.asarray(val)), p(np.asarray(shape, np.int64)))


def late(tf: Any, x: Any, dtype: Any = None) -> Any:
    return tf.placeholder_with_default(np.asarray(x, dtype), None)


def same_message(e_tf: BaseException, e_fl: BaseException, words: str) -> None:
    """Both messages hold `words` (TensorFlow's adds its node and stack around it)."""
    m_tf = getattr(e_tf, "message", str(e_tf))
    m_fl = getattr(e_fl, "message", str(e_fl))
    assert words in m_tf, (words, m_tf)
    assert words in m_fl, (words, m_fl)
