"""Names TensorFlow exports in several namespaces for the same function or class
(tf.io queues and match_filenames_once, tf.train.piecewise_constant_decay,
tf.nn.depthwise_conv2d_backprop_*), tf.TensorSpec and tf.data's cardinality
constants: run beside TensorFlow."""

from __future__ import annotations

from typing import Any

import numpy as np

import flowlab as fl
from tests.difftest import assert_same

RS = np.random.RandomState(3)


def test_io_queues(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        q = tf.io.PaddingFIFOQueue(4, [tf.int32], shapes=[[None]])
        first_in = q.enqueue([[1, 2, 3]])
        with tf.control_dependencies([first_in]):
            second_in = q.enqueue([[4]])
        with tf.control_dependencies([second_in]):
            batch = q.dequeue_many(2)
        r = tf.io.RandomShuffleQueue(5, 0, [tf.float32], seed=3, shapes=[[]])
        p = tf.io.PriorityQueue(3, [tf.string], shapes=[[]])
        with tf.control_dependencies([p.enqueue((tf.constant(2, tf.int64), "b")),
                                      p.enqueue((tf.constant(1, tf.int64), "a"))]):
            first = p.dequeue()
        return [batch, first, tf.constant([isinstance(r, tf.io.QueueBase), isinstance(q, tf.io.QueueBase)])]

    assert_same(tf1, build)


def test_io_match_filenames_once(tf1: Any, tmp_path: Any) -> None:
    for n in ("a.txt", "b.txt", "c.csv"):
        (tmp_path / n).write_text("x")

    def run(tf: Any) -> Any:
        with tf.Graph().as_default():
            files = tf.io.match_filenames_once(str(tmp_path / "*.txt"))
            with tf.Session() as s:
                s.run(tf.local_variables_initializer())
                return sorted(s.run(files).tolist())

    assert run(tf1) == run(fl)


def test_piecewise_constant_decay(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        step = tf.constant(7, tf.int64)
        return [tf.train.piecewise_constant_decay(step, [5, 10], [1.0, 0.5, 0.1]),
                tf.train.piecewise_constant_decay(tf.constant(12, tf.int64), [5, 10], [1.0, 0.5, 0.1])]

    assert_same(tf1, build)


def test_depthwise_backprop_names(tf1: Any) -> None:
    x = RS.randn(1, 5, 5, 2).astype(np.float32)
    w = RS.randn(3, 3, 2, 2).astype(np.float32)
    g = RS.randn(1, 3, 3, 4).astype(np.float32)

    def build(tf: Any) -> Any:
        return [tf.nn.depthwise_conv2d_backprop_input([1, 5, 5, 2], w, g, [1, 1, 1, 1], "VALID"),
                tf.nn.depthwise_conv2d_backprop_filter(x, [3, 3, 2, 2], g, [1, 1, 1, 1], "VALID")]

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_tensor_spec_and_cardinality(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            s = tf.TensorSpec([None, 3], tf.float32, name="x")
            out.append([repr(s), str(s.shape), s.dtype.name, s.name, s == tf.TensorSpec([None, 3], tf.float32, name="x"),
                        s == tf.TensorSpec([None, 3], tf.int32), tf.data.INFINITE_CARDINALITY,
                        tf.data.UNKNOWN_CARDINALITY])
    assert out[0] == out[1]
