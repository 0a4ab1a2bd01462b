"""Graph-construction errors of the sparse builders against TensorFlow's: the same
error class and message start (shape functions, dtype checks, Python checks)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl

IND = np.array([[0, 1], [1, 0]], np.int64)
VAL = np.array([1.0, 2.0], np.float32)

BUILDS = {
    "mm_inner": lambda tf, s: tf.sparse_tensor_dense_matmul(s, np.ones((4,2),np.float32)),
    "mm_rank": lambda tf, s: tf.sparse_tensor_dense_matmul(s, np.ones((3,),np.float32)),
    "mm_dtype": lambda tf, s: tf.sparse_tensor_dense_matmul(s, np.ones((3,2),np.float64)),
    "add_dtype": lambda tf, s: tf.sparse.add(s, tf.SparseTensor(IND, np.array([1,2],np.int32), [2,3])),
    "add_shape": lambda tf, s: tf.sparse.add(s, tf.SparseTensor(IND, VAL, [2,4])),
    "softmax_int": lambda tf, s: tf.sparse.softmax(tf.SparseTensor(IND, np.array([1,2],np.int32), [2,3])),
    "rsum_str": lambda tf, s: tf.sparse.reduce_sum(tf.SparseTensor(IND, np.array([b"a",b"b"]), [2,3])),
    "seg_rank": lambda tf, s: tf.sparse.segment_sum(np.ones((3,2),np.float32), [[0,1]], [0,0]),
    "mul_dtype": lambda tf, s: s * np.ones(3, np.int32),
    "concat_one": lambda tf, s: tf.sparse.concat(0, s),
    "retain_rank": lambda tf, s: tf.sparse.retain(s, [[True, False]]),
    "retain_len": lambda tf, s: tf.sparse.retain(s, [True, False, True]),
    "reshape_bad": lambda tf, s: tf.sparse.reshape(s, [4, 2]),
}


def _error(tf, build):
    with tf.Graph().as_default():
        try:
            build(tf, tf.SparseTensor(IND, VAL, [2, 3]))
        except Exception as e:  # noqa: BLE001 - compared below
            return type(e).__name__, str(e)
    return "ok", ""


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_build_errors_are_tensorflows(tf1, name):
    (k_tf, m_tf), (k_fl, m_fl) = _error(tf1, BUILDS[name]), _error(fl, BUILDS[name])
    assert k_fl == k_tf
    # TensorFlow's type lists also name its quantized types, which flowlab has not.
    head = m_tf.split(" for '")[0].split(" (")[0].split(" allowed values:")[0]
    assert m_fl.startswith(head), (m_fl, m_tf)
