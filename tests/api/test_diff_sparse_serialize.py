"""`tf.serialize_sparse` / `serialize_many_sparse` / `deserialize_many_sparse` (and
their `tf.io` names) beside TensorFlow 1.x: the serialized bytes are TensorFlow's, each
side deserializes the other's, and the errors agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error, run_with


def _batch(tf: Any) -> Any:
    return tf.SparseTensor([[0, 1], [2, 0], [2, 1]], tf.constant([1.5, -2.0, 4.0]), [3, 2])


def test_serialize_sparse_bytes(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [
            tf.serialize_sparse(_batch(tf)),
            tf.io.serialize_sparse(tf.SparseTensor([[0]], ["ab"], [2])),
            tf.serialize_many_sparse(
                tf.SparseTensor([[0, 1], [2, 0]], tf.constant([1, 2], tf.int64), [3, 2])
            ),
            tf.io.serialize_many_sparse(tf.SparseTensor([[1, 0, 2]], ["x"], [2, 2, 3])),
        ]

    assert_same(tf1, build)


def test_round_trip_both_ways(tf1: Any) -> None:
    def serialized(tf: Any) -> Any:
        return tf.serialize_many_sparse(_batch(tf))

    def strings(tf: Any) -> Any:
        return tf.serialize_many_sparse(tf.SparseTensor([[0, 0], [1, 1]], ["a", "bc"], [2, 4]))

    for make, dtype in ((serialized, "float32"), (strings, "string")):
        from_tf, from_fl = run_with(tf1, make), run_with(fl, make)
        for data in (from_tf, from_fl):

            def build(tf: Any, data: Any = data, dtype: str = dtype) -> Any:
                st = tf.deserialize_many_sparse(tf.constant(data), getattr(tf, dtype), rank=2)
                st2 = tf.io.deserialize_many_sparse(tf.constant(data[::-1]), getattr(tf, dtype))
                return [
                    st.indices,
                    st.values,
                    st.dense_shape,
                    st2.indices,
                    st2.values,
                    st2.dense_shape,
                    tf.constant(str(st.indices.shape.as_list())),
                ]

            assert_same(tf1, build)


def test_errors(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            for fn in (tf.serialize_sparse, tf.serialize_many_sparse):
                with pytest.raises(TypeError) as info:
                    fn(tf.constant([1.0]))
                msgs.append(str(info.value))
    assert msgs[:2] == msgs[2:]
    data = run_with(tf1, lambda tf: tf.serialize_many_sparse(_batch(tf)))

    def wrong_dtype(tf: Any) -> Any:
        return tf.deserialize_many_sparse(tf.constant(data), tf.int32).values

    assert_same_error(tf1, wrong_dtype)

    def rank_one(tf: Any) -> Any:
        p = tf.placeholder(tf.int64, [None])
        st = tf.SparseTensor(tf.constant([[0]], tf.int64), tf.constant([1.0]), p)
        return tf.serialize_many_sparse(st), {p: np.array([3])}

    assert_same_error(tf1, rank_one)
