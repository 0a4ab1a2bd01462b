"""Edge cases of the sparse ops against TensorFlow, one build per case: empty
SparseTensors, thresholds on one-sided entries, complex and integer dtypes, every
axis reduced (also to a SparseTensor), boxes past the edges, single-entry softmax,
unsorted operands, string values, zero-width products, empty split slices."""

from __future__ import annotations

import numpy as np
import pytest

from tests.difftest import assert_same

F = np.float32


def S(tf, ind, val, shape):
    return tf.SparseTensor(np.array(ind, np.int64).reshape(-1, len(shape)), np.array(val), np.array(shape, np.int64))


def E(tf, shape, dt=F):
    return S(tf, np.zeros((0, len(shape))), np.zeros(0, dt), shape)


CASES = {
    "add_single_below": lambda tf: tf.sparse.add(S(tf,[[0,0]],F([0.1]),[2,2]), S(tf,[[1,1]],F([0.2]),[2,2]), 0.5),
    "add_empty": lambda tf: tf.sparse.add(E(tf,[2,2]), S(tf,[[1,1]],F([0.2]),[2,2])),
    "add_int": lambda tf: tf.sparse.add(S(tf,[[0,0],[1,1]],np.int32([1,-3]),[2,2]), S(tf,[[1,1]],np.int32([3]),[2,2]), 1),
    "add_c64": lambda tf: tf.sparse.add(S(tf,[[0,0]],np.complex64([1+2j]),[2,2]), S(tf,[[0,0]],np.complex64([-1-2j]),[2,2]), 0.5),
    "rss_all": lambda tf: tf.sparse.reduce_sum_sparse(S(tf,[[0,1],[1,0]],F([1,2]),[2,3])),
    "rss_all_keep": lambda tf: tf.sparse.reduce_sum_sparse(S(tf,[[0,1],[1,0]],F([1,2]),[2,3]), keepdims=True),
    "rs_empty": lambda tf: tf.sparse.reduce_sum(E(tf,[2,3]), 1),
    "rm_empty_all": lambda tf: tf.sparse.reduce_max(E(tf,[2,3])),
    "rs_empty_all": lambda tf: tf.sparse.reduce_sum(E(tf,[2,3])),
    "rms_empty": lambda tf: tf.sparse.reduce_max_sparse(E(tf,[2,3]), 0),
    "slice_partial_neg": lambda tf: tf.sparse.slice(S(tf,[[0,0],[1,1],[1,2]],F([1,2,3]),[2,3]), [-1,1],[3,5]),
    "slice_empty": lambda tf: tf.sparse.slice(E(tf,[2,3]), [0,0],[1,1]),
    "softmax_single": lambda tf: tf.sparse.softmax(S(tf,[[0,0]],F([5]),[1,3])),
    "softmax_empty": lambda tf: tf.sparse.softmax(E(tf,[2,3])),
    "softmax_f64_big": lambda tf: tf.sparse.softmax(S(tf,[[0,0],[0,1],[0,2]],np.float64([1000,1001,-5]),[1,3])),
    "min_unsorted": lambda tf: tf.sparse.minimum(S(tf,[[1,1],[0,0]],F([1,-2]),[2,2]), S(tf,[[0,0],[1,0]],F([3,-1]),[2,2])),
    "max_empty": lambda tf: tf.sparse.maximum(E(tf,[2,2]), S(tf,[[0,0],[1,0]],F([3,-1]),[2,2])),
    "fill_unsorted_row": lambda tf: tf.sparse.fill_empty_rows(S(tf,[[1,2],[1,0],[3,1]],F([1,2,3]),[4,3]), 0.),
    "fill_str": lambda tf: tf.sparse.fill_empty_rows(S(tf,[[1,2]],np.array([b"a"]),[3,3]), b"z"),
    "mm_empty": lambda tf: tf.sparse_tensor_dense_matmul(E(tf,[2,3]), np.ones((3,2),F)),
    "mm_zero_cols": lambda tf: tf.sparse_tensor_dense_matmul(S(tf,[[0,1]],F([2]),[2,3]), np.ones((3,0),F)),
    "mm_f64": lambda tf: tf.sparse_tensor_dense_matmul(S(tf,[[0,1],[0,1]],np.float64([2,3]),[2,3]), np.ones((3,2))),
    "mm_c": lambda tf: tf.sparse_tensor_dense_matmul(S(tf,[[0,1],[1,0]],np.complex64([2+1j,3-1j]),[2,3]), np.ones((2,2),np.complex64)*(1+2j), adjoint_a=True, adjoint_b=True),
    "seg_empty_tail": lambda tf: tf.sparse.segment_mean(np.ones((3,2),F), [0,1], [0,0], num_segments=4),
    "seg_f64_sqrtn": lambda tf: tf.sparse.segment_sqrt_n(np.arange(6.).reshape(3,2), [0,1,2], [0,0,0]),
    "seg_3d": lambda tf: tf.sparse.segment_sum(np.arange(24,dtype=F).reshape(3,2,4), [2,0], [0,1]),
    "split_empty_slices": lambda tf: tf.sparse.split(sp_input=S(tf,[[0,0]],F([1]),[2,4]), num_split=4, axis=1),
    "split_3d": lambda tf: tf.sparse.split(sp_input=S(tf,[[0,0,1],[1,2,0]],F([1,2]),[2,3,2]), num_split=3, axis=1),
    "concat_3": lambda tf: tf.sparse.concat(0, [S(tf,[[0,1]],F([1]),[1,2]), E(tf,[2,2]), S(tf,[[0,0]],F([2]),[3,2])]),
    "reshape_3d": lambda tf: tf.sparse.reshape(S(tf,[[0,1,1],[1,0,2]],F([1,2]),[2,2,3]), [3,4]),
    "reshape_same": lambda tf: tf.sparse.reshape(S(tf,[[1,0],[0,1]],F([1,2]),[2,3]), [2,3]),
    "reorder_dup": lambda tf: tf.sparse.reorder(S(tf,[[1,0],[0,1],[1,0]],F([1,2,3]),[2,3])),
    "rsum_int8": lambda tf: tf.sparse.reduce_sum(S(tf,[[0,0],[0,1]],np.int8([100,100]),[1,2])),
    "cw_div_int": lambda tf: S(tf,[[0,0],[0,1]],np.int64([-7,7]),[1,2]).__div__(np.int64([2,-2])),
    "cw_truediv_int": lambda tf: S(tf,[[0,0],[0,1]],np.int64([-7,7]),[1,2]) / np.int64([2,-2]),
    "cw_mul_bcast3": lambda tf: S(tf,[[0,0,1],[1,1,0]],F([1,2]),[2,2,2]) * np.array([[10],[20]],F),
    "cw_add": lambda tf: tf.sparse.add(S(tf,[[0,0],[1,1]],F([1,2]),[2,2]), np.array([[1,2],[3,4]],F)),
    "to_ind_3d": lambda tf: tf.sparse.to_indicator(S(tf,[[0,0,0],[0,0,1],[1,1,0]],np.int64([2,0,1]),[2,2,2]), 3),
    "eye_rect": lambda tf: tf.sparse.eye(3, 1, dtype=tf.float64),
    "expand_neg": lambda tf: tf.sparse.expand_dims(S(tf,[[0,1],[1,0]],F([1,2]),[2,3]), -2),
    "transpose_3d_perm": lambda tf: tf.sparse.transpose(S(tf,[[0,1,2],[1,0,1]],F([1,2]),[2,3,4]), [1,2,0]),
    "reset_shape_empty": lambda tf: tf.sparse.reset_shape(S(tf,[[0,1],[1,0]],F([1,2]),[5,5])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_case(tf1, name):
    assert_same(tf1, CASES[name])
