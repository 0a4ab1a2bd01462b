"""SparseToDense (`tf.sparse_to_dense`) against TensorFlow: values for every index
form, TensorFlow's checks and messages in its order, the gradient (also in the
finite-difference table)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error
from tests.ops.gradient_check import grad_case

grad_case("SparseToDense", np.array([0.3, -0.8, 1.1]), np.array(0.25))(
    lambda tf, v, d: tf.sparse_to_dense([[0, 1], [1, 0], [1, 2]], [2, 3], v, d))


@pytest.mark.parametrize("case", [
    ([[0, 1], [1, 2]], [2, 3], [5, 6], 0, True),
    ([[0, 1], [1, 2]], [2, 3], 7.5, -1.0, True),
    ([1, 3], [5], [4, 9], -1, True),
    (2, [5], 7, 0, True),
    ([[0, 1], [0, 1]], [2, 3], [5, 6], 0, False),
    ([[1, 2], [0, 1]], [2, 3], [5, 6], 0, False),
    (np.zeros((0, 2), np.int64), np.array([2, 2], np.int64), np.zeros(0, np.float32), 1.5, True),
])
def test_sparse_to_dense(tf1, case):
    idx, shape, values, default, validate = case
    assert_same(tf1, lambda tf: tf.sparse_to_dense(idx, shape, values, default,
                                                   validate_indices=validate))


@pytest.mark.parametrize("case,message", [
    (([[1, 2], [0, 1]], [2, 3], [5, 6], 0, True),
     "indices[1] = [0,1] is out of order. Many sparse ops require sorted indices.\n"
     "    Use `tf.sparse.reorder` to create a correctly ordered copy."),
    (([[0, 1], [0, 1]], [2, 3], [5, 6], 0, True), "indices[1] = [0,1] is repeated"),
    (([[0, 1], [3, 1]], [2, 3], [5, 6], 0, True),
     "indices[1] = [3,1] is out of bounds: need 0 <= index < [2,3]"),
    (([[0, 1], [3, 1]], [2, 3], [5, 6], 0, False),
     "Indices are not valid (out of bounds).  Shape: [2,3]"),
    (([[-1, 1], [1, 1]], [2, 3], [5, 6], 0, True),
     "indices[0] = [-1,1] is out of bounds: need 0 <= index < [2,3]"),
    (([[0, 1], [1, 1]], [2, 3], [5, 6, 7], 0, True),
     "sparse_values has incorrect shape [3], should be [] or [2]"),
    (([[0, 1, 0], [1, 1, 0]], [2, 3], [5, 6], 0, True),
     "output_shape has incorrect number of elements: 2 should be: 3"),
    (([[0, 1], [1, 1]], [2, 3], [5, 6], [1, 2], True), "default_value should be a scalar."),
    (([[[0, 1]]], [2, 3], [5], 0, True),
     "sparse_indices should be a scalar, vector, or matrix, got shape [1,1,2]"),
])
def test_sparse_to_dense_errors(tf1, case, message):
    idx, shape, values, default, validate = case
    e_tf, e_fl = assert_same_error(tf1, lambda tf: tf.sparse_to_dense(
        tf.placeholder_with_default(np.array(idx), None), shape, values, default,
        validate_indices=validate))
    assert message in e_tf.message and message in e_fl.message


def test_sparse_to_dense_gradient(tf1):
    def build(tf):
        v = tf.Variable([1.0, 2.0, 3.0])
        d = tf.Variable(0.5)
        y = tf.sparse_to_dense([[0, 1], [1, 0], [1, 2]], [2, 3], v, d)
        return tf.gradients(tf.reduce_sum(y * [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), [v, d])

    assert_same(tf1, build)
