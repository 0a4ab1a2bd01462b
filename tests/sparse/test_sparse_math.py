"""SparseTensor arithmetic against TensorFlow: sparse-dense matmul (every adjoint
pairing, int32 indices, a sparse right operand), the sum and max reductions (dense
and `_sparse` outputs, keepdims, negative and repeated axes, unsorted input),
sparse + sparse with a threshold, sparse + dense, softmax (sorted output order),
maximum/minimum, `sp * dense`, `dense * sp`, `sp / dense` with broadcasting; and
TensorFlow's errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error
from tests.sparse.helpers import IND, SHAPE, VAL, late, same_message, sp, sp_late

B = np.arange(6, dtype=np.float32).reshape(3, 2) - 2.0


@pytest.mark.parametrize("adj_a,adj_b", [(False, False), (True, False), (False, True), (True, True)])
def test_sparse_dense_matmul(tf1, adj_a, adj_b):
    def build(tf):
        a = sp(tf) if not adj_a else tf.sparse.transpose(sp(tf))
        b = (np.ones((2, 3)) * [1, 2, 3]).astype(np.float32) if adj_b else B
        return tf.sparse_tensor_dense_matmul(a, b, adjoint_a=adj_a, adjoint_b=adj_b)
    assert_same(tf1, build)


def test_sparse_dense_matmul_names_and_types(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.matmul(sp(tf, val=VAL.astype(np.float64)), B.astype(np.float64)),
        tf.sparse.sparse_dense_matmul(sp_late(tf), late(tf, B)),
        tf.sparse_tensor_dense_matmul(sp(tf, val=VAL.astype(np.int32)), B.astype(np.int32)),
        # a dense left and a sparse right operand: TensorFlow's transposed product
        tf.sparse_tensor_dense_matmul(np.ones((2, 4), np.float32), sp(tf)),
    ])


def _static(tf, build):
    with tf.Graph().as_default():
        return build(tf)


def test_matmul_static_shape(tf1):
    import flowlab as fl

    def build(tf):
        return [tf.sparse_tensor_dense_matmul(sp(tf), B).shape.as_list(),
                tf.sparse_tensor_dense_matmul(sp_late(tf), B).shape.as_list(),
                tf.sparse_tensor_dense_matmul(sp(tf), B.T, adjoint_b=True).shape.as_list(),
                tf.sparse_tensor_dense_matmul(sp(tf), np.ones((4, 5), np.float32), adjoint_a=True).shape.as_list()]
    assert _static(fl, build) == _static(tf1, build)


@pytest.mark.parametrize("ind,shape,b,adj_a,words", [
    ([[0, 0], [5, 1]], [2, 3], np.ones((3, 2)), False, "m (5) from index[1,0] out of bounds (>=2)"),
    ([[0, 0], [1, 7]], [2, 3], np.ones((3, 2)), False, "k (7) from index[1,1] out of bounds (>=3)"),
    ([[0, -1], [1, 1]], [2, 3], np.ones((3, 2)), False, "k (-1) from index[0,1] out of bounds (>=3)"),
    ([[5, 7]], [2, 3], np.ones((3, 2)), False, "k (7) from index[0,1] out of bounds (>=3)"),
    ([[0, 5]], [2, 3], np.ones((2, 2)), True, "m (5) from index[0,1] out of bounds (>=3)"),
    ([[0, 0], [1, 1]], [2, 3], np.ones((4, 2)), False,
     "Cannot multiply A and B because inner dimension does not match: 3 vs. 4.  Did you forget a "
     "transpose?  Dimensions of A: [2, 3).  Dimensions of B: [4,2]"),
    ([[0, 0], [1, 1]], [2, 3], np.ones((3,)), False, "Tensor 'b' is not a matrix"),
    ([[0, 0, 0]], [2, 3, 1], np.ones((3, 2)), False, "Tensor 'a_shape' must have 2 elements"),
])
def test_matmul_errors(tf1, ind, shape, b, adj_a, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse_tensor_dense_matmul(
        sp_late(tf, ind, np.ones(len(ind), np.float32), shape), late(tf, b, np.float32), adjoint_a=adj_a))
    same_message(e_tf, e_fl, words)


def test_matmul_value_count_error(tf1):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse_tensor_dense_matmul(tf.SparseTensor(
        late(tf, IND), late(tf, [1.0, 2.0], np.float32), late(tf, SHAPE)), late(tf, B)))
    same_message(e_tf, e_fl, "Number of rows of a_indices does not match number of entries in a_values")


UNSORTED = np.array([[3, 1], [1, 2], [0, 1], [1, 0]], np.int64)
UVAL = np.array([0.5, 3.0, 1.5, -2.0], np.float32)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 1], [1, 1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_sum_and_max(tf1, axis, keepdims):
    assert_same(tf1, lambda tf: [
        tf.sparse_reduce_sum(sp(tf), axis, keepdims=keepdims),
        tf.sparse.reduce_max(sp(tf), axis, keepdims=keepdims),
        tf.sparse_reduce_sum(sp(tf, UNSORTED, UVAL), axis, keepdims=keepdims),
        tf.sparse_reduce_max(sp(tf, UNSORTED, UVAL), axis, keepdims=keepdims),
        tf.sparse.reduce_sum_sparse(sp(tf, UNSORTED, UVAL), axis, keepdims=keepdims),
        tf.sparse_reduce_max_sparse(sp(tf), axis, keepdims=keepdims),
    ])


def test_reduce_3d_ints_and_old_arguments(tf1):
    ind = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 0], [1, 0, 2]], np.int64)
    val = np.array([4, -3, 7, 2], np.int32)
    assert_same(tf1, lambda tf: [
        tf.sparse_reduce_sum(sp(tf, ind, val, [2, 2, 3]), reduction_axes=[0, 2], keep_dims=True),
        tf.sparse_reduce_max(sp(tf, ind, val, [2, 2, 3]), 1),
        tf.sparse_reduce_sum_sparse(sp(tf, ind, val, [2, 2, 3]), [1]),
        tf.sparse_reduce_sum(sp_late(tf, ind, val, [2, 2, 3]), -2),
    ])


def test_reduce_static_shape(tf1):
    import flowlab as fl

    def build(tf):
        return [tf.sparse_reduce_sum(sp(tf), 1, keepdims=k).shape.as_list() for k in (False, True)] + [
            tf.sparse_reduce_sum(sp_late(tf), 1).shape.ndims]
    assert _static(fl, build) == _static(tf1, build)


@pytest.mark.parametrize("axes,words", [
    ([2], "Invalid reduction dimension 2, for input with 2 dimensions."),
    ([-3], "Invalid reduction dimension -3, for input with 2 dimensions."),
])
def test_reduce_errors(tf1, axes, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse_reduce_sum(
        sp_late(tf), late(tf, axes, np.int32)))
    same_message(e_tf, e_fl, words)


def test_reduce_out_of_bounds_index(tf1):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse_reduce_sum(
        sp_late(tf, [[5, 1], [0, 1]], np.ones(2, np.float32), [2, 3]), 1))
    same_message(e_tf, e_fl, "Obtained a write index of 5 which is outside of bounds of [0, 2)")


B_IND = np.array([[0, 1], [1, 1], [3, 1], [3, 2]], np.int64)
B_VAL = np.array([-1.5, 4.0, -0.25, 2.0], np.float32)


@pytest.mark.parametrize("threshold", [0, 0.3, 1.0])
def test_sparse_add(tf1, threshold):
    assert_same(tf1, lambda tf: [
        tf.sparse.add(sp(tf), sp(tf, B_IND, B_VAL), threshold),
        tf.sparse_add(sp(tf), sp(tf, B_IND, B_VAL), thresh=threshold),
        tf.sparse_add(sp_late(tf), sp_late(tf, B_IND, B_VAL), threshold),
    ])


def test_sparse_add_dense_and_unsorted(tf1):
    dense = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert_same(tf1, lambda tf: [
        tf.sparse.add(sp(tf), dense), tf.sparse.add(dense, sp(tf)),
        # an unsorted operand: TensorFlow's one-pass merge, reproduced
        tf.sparse_add(sp(tf, UNSORTED, UVAL), sp(tf, B_IND, B_VAL)),
        tf.sparse_add(tf.SparseTensorValue(IND, VAL, SHAPE), sp(tf, B_IND, B_VAL)),
    ])


@pytest.mark.parametrize("build,words", [
    (lambda tf: tf.sparse_add(sp_late(tf), sp_late(tf, B_IND, B_VAL, [4, 4])),
     "Operands' shapes do not match: got 3 and 4 for dimension 1"),
    (lambda tf: tf.sparse_add(sp_late(tf), sp_late(tf, [[0, 1, 0]], np.ones(1, np.float32), [4, 3, 1])),
     "Input indices must have the same dimension, got 2 and 3"),
    (lambda tf: tf.sparse.add(sp_late(tf), late(tf, np.ones((4, 4)), np.float32)),
     "Dimension 1 does not equal (no broadcasting is supported): sparse side 3 vs dense side 4"),
    (lambda tf: tf.sparse.add(sp_late(tf), late(tf, np.ones(3), np.float32)),
     "Two operands have different ranks; received: 2 and 1"),
    (lambda tf: tf.sparse.add(sp_late(tf, [[0, 7]], np.ones(1, np.float32), [4, 3]), late(tf, np.ones((4, 3)), np.float32)),
     "Sparse tensor has an invalid index on dimension 1: a_indices(0,1) = 7, dense tensor shape: 4 3"),
])
def test_sparse_add_errors(tf1, build, words):
    e_tf, e_fl = assert_same_error(tf1, build)
    same_message(e_tf, e_fl, words)


def test_sparse_add_needs_a_sparse_operand(tf1):
    for tf in (tf1, __import__("flowlab")):
        with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
            tf.sparse.add(tf.constant([1.0]), tf.constant([2.0]))


def test_softmax(tf1):
    ind3 = np.array([[0, 0, 0], [0, 0, 2], [1, 1, 1], [1, 1, 2], [1, 0, 0]], np.int64)
    assert_same(tf1, lambda tf: [
        tf.sparse.softmax(sp(tf)),
        tf.sparse_softmax(sp(tf, UNSORTED, UVAL)),  # values come back in sorted order
        tf.sparse.softmax(sp(tf, ind3, np.array([1, 2, 3, -1, 0.5]), [2, 2, 3])),
    ])


def test_softmax_rank_error(tf1):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.softmax(sp_late(tf, [[0], [2]], [1.0, 2.0], [3])))
    same_message(e_tf, e_fl, "Input should have rank >= 2, but received shape: 3")


def test_maximum_minimum(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.maximum(sp(tf), sp(tf, B_IND, B_VAL)),
        tf.sparse_minimum(sp(tf), sp(tf, B_IND, B_VAL)),
        tf.sparse_maximum(sp(tf, UNSORTED, UVAL), sp(tf, B_IND, B_VAL)),
        tf.sparse.minimum(sp(tf, val=VAL.astype(np.int64)), sp(tf, B_IND, B_VAL.astype(np.int64))),
    ])


@pytest.mark.parametrize("build,words", [
    (lambda tf: tf.sparse.maximum(sp_late(tf), sp_late(tf, B_IND, B_VAL, [4, 4])),
     "Operands' shapes do not match: got 3 and 4 for dimension 1"),
    (lambda tf: tf.sparse.maximum(sp_late(tf, [[0, 7]], np.ones(1, np.float32), [4, 3]), sp_late(tf)),
     "Sparse index tuple indices[0, :] = [0, 7] is out of bounds"),
])
def test_maximum_errors(tf1, build, words):
    e_tf, e_fl = assert_same_error(tf1, build)
    same_message(e_tf, e_fl, words)


@pytest.mark.parametrize("dense", [np.arange(1, 13, dtype=np.float32).reshape(4, 3), np.float32(2.5),
                                   np.array([1, 2, 4], np.float32), np.array([[2], [3], [4], [5]], np.float32)])
def test_cwise_operators(tf1, dense):
    def build(tf):
        a = sp(tf)
        return [a * dense, a / dense, tf.constant(dense) * a, a * tf.constant(dense), a.__div__(dense)]
    assert_same(tf1, build)


def test_cwise_integer_truediv_and_div(tf1):
    def build(tf):
        a = sp(tf, val=np.array([7, -7, 9, 4], np.int32))
        return [a / np.int32(2), a.__div__(np.array([2, -3, 4], np.int32)), a * np.int32(3)]
    assert_same(tf1, build)


@pytest.mark.parametrize("dense,words", [
    (np.ones((3, 3)), "SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible "
                      "shapes: [4,3] vs. [3,3]"),
    (np.ones((2, 4, 3)), "SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible "
                         "shapes: [4,3] vs. [2,4,3]"),
])
def test_cwise_errors(tf1, dense, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: sp_late(tf) * late(tf, dense, np.float32))
    same_message(e_tf, e_fl, words)


def test_cwise_div_by_zero_and_bounds(tf1):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: sp_late(tf).__div__(late(tf, np.zeros((4, 3)), np.float32)))
    same_message(e_tf, e_fl, "SparseDenseCwiseDiv cannot divide by zero")
    e_tf, e_fl = assert_same_error(tf1, lambda tf: sp_late(tf, [[0, 7]], np.ones(1, np.float32), [4, 3]) * late(
        tf, np.ones((4, 3)), np.float32))
    same_message(e_tf, e_fl, "Provided indices are out-of-bounds w.r.t. dense side with broadcasted shape")
