"""Rearranging SparseTensors against TensorFlow: reorder, reshape (with an inferred
dimension), concat (each axis, unsorted inputs, expand_nonconcat_dim), slice
(boxes past the edge, a negative start), split (uneven), fill_empty_rows and
transpose; static shapes; TensorFlow's errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error
from tests.sparse.helpers import IND, VAL, late, same_message, sp, sp_late

UNSORTED = np.array([[3, 1], [1, 2], [0, 1], [1, 0]], np.int64)
F32 = np.float32


def _static(tf, build):
    with tf.Graph().as_default():
        return build(tf)


def test_reorder(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.reorder(sp(tf, UNSORTED)),
        tf.sparse_reorder(sp_late(tf, UNSORTED)),
        tf.sparse.reorder(sp(tf, [[1, 0, 2], [0, 3, 1], [1, 0, 0]], np.array([1, 2, 3], np.int32), [2, 4, 3])),
        tf.sparse.reorder(sp(tf, np.zeros((0, 2)), np.zeros(0, F32), [2, 2])),
        # out of bounds is not SparseReorder's business
        tf.sparse.reorder(sp_late(tf, [[5, 0], [0, 1]], np.array([1, 2], F32), [2, 2])),
    ])


def test_reorder_keeps_static_shape():
    def build(tf):
        return [tf.sparse.reorder(sp(tf)).shape.as_list(),
                tf.sparse.reorder(tf.sparse_placeholder(tf.float32, [None, 3])).shape.as_list()]
    import tests.conftest as c
    tf1 = c._load_tf()
    assert _static(fl, build) == _static(tf1, build)


@pytest.mark.parametrize("build,words", [
    (lambda tf: tf.sparse.reorder(sp_late(tf, IND, np.ones(3, F32))),
     "Number of elements in indices (4) and values (3) do not match"),
    (lambda tf: tf.sparse.reorder(sp_late(tf, IND, VAL, [4, 3, 1])), "Index rank (2) and shape rank (3) do not match"),
])
def test_reorder_errors(tf1, build, words):
    e_tf, e_fl = assert_same_error(tf1, build)
    same_message(e_tf, e_fl, words)


@pytest.mark.parametrize("shape", [[12], [2, 6], [-1, 2], [3, -1, 2], [2, 2, 3]])
def test_reshape(tf1, shape):
    assert_same(tf1, lambda tf: [tf.sparse.reshape(sp(tf), shape), tf.sparse_reshape(sp_late(tf), shape)])


def test_reshape_empty(tf1):
    assert_same(tf1, lambda tf: tf.sparse.reshape(sp_late(tf, np.zeros((0, 2)), np.zeros(0, F32), [0, 3]), [-1, 3]))


@pytest.mark.parametrize("shape,words", [
    ([-1, -1], "only one output dimension may be -1, not both 0 and 1"),
    ([4, 2], "Input to reshape is a tensor with 12 dense values, but the requested shape has 8. "
             "input_shape=[4,3] output_shape=[4,2]"),
    ([-2, 3], "size 0 must be non-negative, not -2"),
    ([-1, 5], "Input to reshape is a SparseTensor with 12 dense values, but the requested shape requires "
              "a multiple of 5. input_shape=[4,3] output_shape=[1,5]"),
])
def test_reshape_errors(tf1, shape, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.reshape(sp_late(tf), late(tf, shape, np.int64)))
    same_message(e_tf, e_fl, words)


def test_reshape_static_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="Cannot reshape a tensor with 12 elements to shape"):
                tf.sparse.reshape(sp(tf), [5, 2])
            with pytest.raises(ValueError, match="At most one dimension can be inferred"):
                tf.sparse.reshape(sp(tf), [-1, -1])


B_IND = np.array([[0, 0], [2, 1], [3, 0]], np.int64)
B_VAL = np.array([7.0, 8.0, 9.0], F32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(tf1, axis):
    assert_same(tf1, lambda tf: [
        tf.sparse.concat(axis, [sp(tf), sp(tf, B_IND, B_VAL)]),
        tf.sparse_concat(axis, [sp(tf, UNSORTED), sp(tf, B_IND, B_VAL), sp(tf)]),
        tf.sparse_concat(axis, [sp_late(tf), sp_late(tf, B_IND, B_VAL)]),
    ])


def test_concat_expand_nonconcat_dim(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.concat(1, [sp(tf), sp(tf, B_IND, B_VAL, [5, 2])], expand_nonconcat_dim=True),
        tf.sparse_concat(0, [sp(tf), sp(tf, B_IND, B_VAL, [5, 2])], expand_nonconcat_dim=True),
    ])
    for tf in (tf1, fl):  # TF1's alias clashes with the other argument's default False
        with tf.Graph().as_default(), pytest.raises(ValueError, match="Cannot specify both"):
            tf.sparse_concat(0, [sp(tf), sp(tf)], expand_nonconcat_dims=True)


def test_concat_static_shape(tf1):
    def build(tf):
        return [tf.sparse.concat(1, [sp(tf), sp(tf, B_IND, B_VAL)]).shape.as_list(),
                tf.sparse.concat(0, [tf.sparse_placeholder(tf.float32, [None, 3]), sp(tf)]).shape.as_list()]
    assert _static(fl, build) == _static(tf1, build)


@pytest.mark.parametrize("b_shape,axis,words", [
    ([4, 3, 2], 0, "Ranks of all input tensors must match: expected 2 but got 3 at position 1"),
    ([4, 5], 0, "Input shapes must match: expected 3 for dimension 1 but got 5 at position 1"),
    ([4, 3], 3, "Concat dimension must be in range [-2, 2), got 3"),
])
def test_concat_errors(tf1, b_shape, axis, words):
    b_ind = np.zeros((1, len(b_shape)), np.int64)
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.concat(
        axis, [sp_late(tf), sp_late(tf, b_ind, np.ones(1, F32), b_shape)]))
    same_message(e_tf, e_fl, words)


@pytest.mark.parametrize("start,size", [([0, 0], [4, 3]), ([1, 0], [2, 3]), ([1, 1], [10, 10]),
                                        ([-1, 0], [2, 2]), ([5, 0], [1, 1]), ([0, 2], [4, 0])])
def test_slice(tf1, start, size):
    assert_same(tf1, lambda tf: [tf.sparse.slice(sp(tf), start, size),
                                 tf.sparse_slice(sp(tf, UNSORTED), start, size)])


@pytest.mark.parametrize("start,size,words", [
    ([0], [1, 1], "Expected start to be a vector of length 2 but got length 1"),
    ([0, 0], [1], "Expected size to be a vector of length 2 but got length 1"),
    ([0, 0], [-1, 1], "Expected a non-negative size, got -1"),
])
def test_slice_errors(tf1, start, size, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.slice(
        sp_late(tf), late(tf, start, np.int64), late(tf, size, np.int64)))
    same_message(e_tf, e_fl, words)


@pytest.mark.parametrize("axis,num", [(0, 2), (1, 3), (0, 3), (-1, 2), (0, 1)])
def test_split(tf1, axis, num):
    assert_same(tf1, lambda tf: [tf.sparse.split(sp_input=sp(tf), num_split=num, axis=axis),
                                 tf.sparse_split(sp_input=sp(tf, UNSORTED), num_split=num, axis=axis)])
    for tf in (tf1, fl):  # `split_dim` alone: "axis is required" comes first
        with tf.Graph().as_default(), pytest.raises(ValueError, match="axis is required"):
            tf.sparse_split(sp_input=sp(tf), num_split=num, split_dim=axis)


@pytest.mark.parametrize("axis,num,words", [
    (2, 2, "Input axis should be in range [-2, 2), got 2"),
    (1, 4, "Input num_split should be between 1 and the splitting dimension size (3), got 4"),
])
def test_split_errors(tf1, axis, num, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.split(
        sp_input=sp_late(tf), num_split=num, axis=late(tf, axis, np.int64)))
    same_message(e_tf, e_fl, words)


def test_split_needs_keywords(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="Keyword arguments are required for this function."):
                tf.sparse.split(sp(tf), 2, 1)


def test_fill_empty_rows(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.fill_empty_rows(sp(tf), -1.0),
        tf.sparse_fill_empty_rows(sp(tf, UNSORTED), 0.5),
        tf.sparse.fill_empty_rows(sp(tf, [[2, 0, 1], [0, 1, 1]], np.array([4, 5], np.int64), [4, 2, 2]), 9),
        tf.sparse.fill_empty_rows(sp(tf, np.zeros((0, 2)), np.zeros(0, F32), [3, 2]), 1.0),
        tf.sparse.fill_empty_rows(sp(tf, np.zeros((0, 2)), np.zeros(0, F32), [0, 2]), 1.0),
        tf.sparse.fill_empty_rows(sp(tf, [[1], [3]], np.array([1, 2], F32), [5]), 7.0),
    ])


@pytest.mark.parametrize("ind,shape,words", [
    ([[5, 0], [0, 1]], [4, 2], "indices(0, 0) is invalid: 5 >= 4"),
    ([[0, 0], [-1, 1]], [4, 2], "indices(1, 0) is invalid: -1 >= 4"),
    ([[0, 0]], [0, 2], "Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = 1"),
])
def test_fill_empty_rows_errors(tf1, ind, shape, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.fill_empty_rows(
        sp_late(tf, ind, np.ones(len(ind), F32), shape), -1.0))
    same_message(e_tf, e_fl, words)


def test_fill_empty_rows_default_must_be_scalar(tf1):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.fill_empty_rows(sp_late(tf), late(tf, [1.0], F32)))
    same_message(e_tf, e_fl, "default_value must be a scalar, saw: [1]")


@pytest.mark.parametrize("perm", [None, [1, 0], [0, 1]])
def test_transpose(tf1, perm):
    ind3 = np.array([[0, 1, 2], [1, 0, 1], [1, 2, 0]], np.int64)
    assert_same(tf1, lambda tf: [
        tf.sparse.transpose(sp(tf), perm), tf.sparse_transpose(sp_late(tf), perm),
        tf.sparse.transpose(sp(tf, ind3, np.arange(3, dtype=F32), [2, 3, 4]), None if perm is None else [2, 0, 1]),
    ])


def test_transpose_static_shape(tf1):
    def build(tf):
        return tf.sparse.transpose(sp(tf)).shape.as_list()
    assert _static(fl, build) == _static(tf1, build) == [3, 4]
