"""SparseTensor builders TensorFlow composes from other ops, against TensorFlow:
to_dense (and its order/bounds errors), retain, reset_shape, from_dense,
expand_dims, eye, merge, to_indicator, sparse_mask; the sparse segment reductions
(with num_segments, int64 ids) and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error
from tests.sparse.helpers import IND, VAL, late, same_message, sp, sp_late

F32 = np.float32
UNSORTED = np.array([[3, 1], [1, 2], [0, 1], [1, 0]], np.int64)


def test_to_dense(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.to_dense(sp(tf)), tf.sparse_tensor_to_dense(sp(tf), default_value=-1.0),
        tf.sparse.to_dense(sp(tf, UNSORTED), validate_indices=False),
        tf.sparse.to_dense(tf.SparseTensorValue(IND, VAL, [4, 3])),
        tf.sparse.to_dense(sp(tf, val=np.array([b"a", b"b", b"c", b"d"])), default_value=b"-"),
    ])


@pytest.mark.parametrize("ind,words", [
    (UNSORTED, "indices[1] = [1,2] is out of order. Many sparse ops require sorted indices."),
    ([[0, 1], [0, 1], [1, 0], [2, 2]], "indices[1] = [0,1] is repeated"),
    ([[0, 1], [1, 0], [1, 2], [7, 1]], "indices[3] = [7,1] is out of bounds: need 0 <= index < [4,3]"),
])
def test_to_dense_errors(tf1, ind, words):
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.to_dense(sp_late(tf, ind)))
    same_message(e_tf, e_fl, words)


def test_to_dense_needs_a_sparse_tensor(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(TypeError, match="Input must be a SparseTensor."):
            tf.sparse.to_dense(tf.constant([1.0]))


def test_retain_reset_shape_from_dense(tf1):
    assert_same(tf1, lambda tf: [
        tf.sparse.retain(sp(tf), [True, False, True, False]),
        tf.sparse_retain(sp_late(tf), late(tf, [False, False, False, True])),
        tf.sparse.reset_shape(sp(tf)), tf.sparse_reset_shape(sp(tf), [5, 7]),
        tf.sparse.reset_shape(sp_late(tf), late(tf, [6, 3], np.int64)),
        tf.sparse.from_dense(np.array([[0, 1.5], [0, 0], [-2, 0]], F32)),
        tf.sparse.from_dense(np.array([b"", b"x", b"y"])),
    ])


def test_reset_shape_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="Requested new_shape should have"):
            tf.sparse.reset_shape(sp(tf), [2, 2])
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse.reset_shape(sp_late(tf), late(tf, [2, 3], np.int64)))
    assert "Condition x <= y did not hold" in e_fl.message and "Condition x <= y did not hold" in e_tf.message


@pytest.mark.parametrize("axis", [0, 1, -1, 2, -3])
def test_expand_dims(tf1, axis):
    assert_same(tf1, lambda tf: [tf.sparse.expand_dims(sp(tf), axis), tf.sparse.expand_dims(sp(tf, UNSORTED), axis)])


def test_eye(tf1):
    assert_same(tf1, lambda tf: [tf.sparse.eye(3), tf.sparse.eye(2, 4, dtype=tf.int32),
                                 tf.sparse.eye(tf.constant(3, tf.int64), 2)])


def test_merge_and_to_indicator(tf1):
    ids_ind = np.array([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]], np.int64)
    ids = np.array([3, 1, 4, 0, 5, 1], np.int64)
    weights = np.array([0.5, 1.5, 2.0, 3.0, 4.0, 5.0], F32)
    assert_same(tf1, lambda tf: [
        tf.sparse.merge(sp(tf, ids_ind, ids, [3, 3]), sp(tf, ids_ind, weights, [3, 3]), 6),
        tf.sparse_merge(sp(tf, ids_ind, ids.astype(np.int32), [3, 3]), sp(tf, ids_ind, weights, [3, 3]), 6,
                        already_sorted=True),
        tf.sparse_merge([sp(tf, ids_ind, ids, [3, 3]), sp(tf, ids_ind, ids[::-1].copy(), [3, 3])],
                        sp(tf, ids_ind, weights, [3, 3]), [6, 6]),
        tf.sparse.to_indicator(sp(tf, ids_ind, ids, [3, 3]), 6),
        tf.sparse_to_indicator(sp(tf, ids_ind, ids.astype(np.int32), [3, 3]), 7),
    ])


def test_merge_argument_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(TypeError, match="vocab_size has to be a Tensor or Python int"):
                tf.sparse.merge(sp(tf), sp(tf), 3.5)
            with pytest.raises(ValueError, match="sp_ids and vocab_size have to have equal lengths."):
                tf.sparse.merge([sp(tf), sp(tf)], sp(tf), [3])


def test_sparse_mask(tf1):
    def build(tf):
        a = tf.IndexedSlices(tf.constant(np.arange(8, dtype=F32).reshape(4, 2)), tf.constant([12, 26, 37, 45]),
                             tf.constant([50, 2]))
        m = tf.sparse_mask(a, [12, 45])
        m2 = tf.sparse.mask(a, tf.constant([26]))
        return [m.values, m.indices, m.dense_shape, m2.values, m2.indices]
    assert_same(tf1, build)


DATA = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], F32)


@pytest.mark.parametrize("fn", ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"])
def test_sparse_segment(tf1, fn):
    def build(tf):
        f = getattr(tf, fn)
        g = getattr(tf.sparse, fn.replace("sparse_", ""))
        return [f(DATA, [0, 2, 1, 1], [0, 0, 2, 2]), g(DATA, [3, 0], [1, 1]),
                f(DATA, np.array([0, 2, 3], np.int64), np.array([0, 1, 1], np.int64)),
                f(DATA, [0, 2], [0, 3], num_segments=5), f(DATA[:, 0], [1, 1, 2], [0, 1, 1]),
                f(DATA.astype(np.float64), tf.constant([], tf.int32), tf.constant([], tf.int32)),
                f(DATA, [1], [0], num_segments=np.int64(2))]
    assert_same(tf1, build)


def test_sparse_segment_sum_ints(tf1):
    assert_same(tf1, lambda tf: tf.sparse.segment_sum(DATA.astype(np.int32), [0, 3, 3], [0, 0, 1]))


@pytest.mark.parametrize("ind,seg,num,words", [
    ([0, 2, 1], [1, 0, 2], None, "segment ids are not increasing"),
    ([0, 5, 1], [0, 0, 2], None, "Bad: indices[1] == 5 out of range [0, 4)"),
    ([0, 2], [0, 0, 2], None, "segment_ids and indices should have same size."),
    ([0, 2, 1], [-1, 0, 2], None,
     "Segment id -1 out of range [0, 3), possibly because 'segment_ids' input is not sorted."),
    ([0, 1], [0, 3], 2, "segment ids must be < num_segments"),
    ([[0, 1]], [0, 0], None, "indices should be a vector."),
])
def test_sparse_segment_errors(tf1, ind, seg, num, words):
    def build(tf):
        kw = {} if num is None else {"num_segments": num}
        return tf.sparse_segment_sum(DATA, late(tf, ind, np.int32), late(tf, seg, np.int32), **kw)
    e_tf, e_fl = assert_same_error(tf1, build)
    same_message(e_tf, e_fl, words)
