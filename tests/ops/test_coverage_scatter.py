"""tf.tensor_scatter_nd_* (and TF1's tensor_scatter_* names): values, dtypes,
gradients and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(2)


_SCATTERS = {"tensor_scatter_nd_update": lambda tf: tf.tensor_scatter_nd_update,
             "tensor_scatter_nd_add": lambda tf: tf.tensor_scatter_nd_add,
             "tensor_scatter_nd_sub": lambda tf: tf.tensor_scatter_nd_sub,
             "tensor_scatter_nd_max": lambda tf: tf.tensor_scatter_nd_max,
             "tensor_scatter_nd_min": lambda tf: tf.tensor_scatter_nd_min}


@pytest.mark.parametrize("name", list(_SCATTERS))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_tensor_scatter_values(tf1: Any, name: str, dtype: Any) -> None:
    t = (RS.randn(4, 3) * 5).astype(dtype)
    u = (RS.randn(2, 3) * 5).astype(dtype)
    u3 = (RS.randn(3) * 5).astype(dtype)

    def build(tf: Any) -> Any:
        fn = _SCATTERS[name](tf)
        return [fn(tf.constant(t), [[3], [0]], u), fn(t, tf.constant([[1, 2], [0, 0], [3, 1]], tf.int64), u3),
                fn(t, np.zeros([0, 1], np.int32), np.zeros([0, 3], dtype))]

    assert_same(tf1, build)


def test_repeated_indices_add_and_max(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        t = tf.zeros([3], tf.float32)
        i = [[0], [0], [2], [0]]
        u = [1.0, 5.0, -2.0, 3.0]
        return [tf.tensor_scatter_nd_add(t, i, u), tf.tensor_scatter_nd_max(t, i, u),
                tf.tensor_scatter_nd_min(t, i, u), tf.tensor_scatter_nd_sub(t, i, u)]

    assert_same(tf1, build)


def test_tf1_names(tf1: Any) -> None:
    t = RS.randn(5).astype(np.float32)

    def build(tf: Any) -> Any:
        return [tf.tensor_scatter_update(t, [[1]], [7.0]), tf.tensor_scatter_add(t, [[1], [4]], [7.0, 1.0]),
                tf.tensor_scatter_sub(t, [[2]], [7.0])]

    assert_same(tf1, build)


@pytest.mark.parametrize("name", list(_SCATTERS))
def test_gradients(tf1: Any, name: str) -> None:
    t = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    u = np.array([[3.0, 0.0], [2.0, 9.0]], np.float32)  # ties and both orders for max/min

    def build(tf: Any) -> Any:
        x, y = tf.constant(t), tf.constant(u)
        z = _SCATTERS[name](tf)(x, [[1], [2]], y)
        w = tf.constant(RS.randn(3, 2).astype(np.float32))
        return tf.gradients(tf.reduce_sum(z * w), [x, y])

    RS.seed(9)
    state = RS.get_state()
    assert_same(tf1, lambda tf: (RS.set_state(state), build(tf))[1])


def test_errors(tf1: Any) -> None:
    err = assert_same_error(tf1, lambda tf: tf.tensor_scatter_nd_update(tf.constant([1.0, 2.0]), [[5]], [1.0]))
    assert "indices[0] = [5] does not index into shape [2]" in str(err[0])
    assert "indices[0] = [5] does not index into shape [2]" in str(err[1])
    e = assert_same_error(tf1, lambda tf: tf.tensor_scatter_nd_add(tf.constant([1.0, 2.0, 3.0]), [[1]], [1.0, 2.0]))
    want = "Dimensions [0,1) of indices[shape=[1,1]] = [1] must match dimensions [0,1) of updates[shape=[2]] = [2]"
    assert str(e[0]).startswith(want) and str(e[1]).startswith(want)
