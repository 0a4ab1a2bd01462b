"""`tf.edit_distance` and `tf.fingerprint` beside TensorFlow 1.x (tests/difftest.py):
distances per cell (normalized or not, cells on one side only), row fingerprints of
numbers and strings, and the errors of both."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error


def _pair(tf: Any) -> tuple[Any, Any]:
    hyp = tf.SparseTensor(
        [[0, 0, 0], [1, 0, 0], [1, 0, 1], [1, 1, 0]], ["a", "b", "c", "a"], [2, 2, 2]
    )
    truth = tf.SparseTensor(
        [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 0, 2]],
        ["a", "b", "c", "b", "x"],
        [2, 3, 3],
    )
    return hyp, truth


def test_edit_distance(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        hyp, truth = _pair(tf)
        ints = tf.SparseTensor([[0, 0], [0, 1], [0, 2]], tf.constant([1, 2, 3], tf.int64), [1, 3])
        ref = tf.SparseTensor([[0, 0], [0, 1]], tf.constant([1, 3], tf.int64), [1, 2])
        return [
            tf.edit_distance(hyp, truth),
            tf.edit_distance(hyp, truth, normalize=False),
            tf.edit_distance(truth, hyp),
            tf.edit_distance(ints, ref),
            tf.edit_distance(ref, ints, normalize=False),
        ]

    assert_same(tf1, build)


def test_edit_distance_fed(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        h = tf.sparse_placeholder(tf.int32)
        t = tf.sparse_placeholder(tf.int32)
        feed = {
            h: tf.SparseTensorValue(
                np.array([[0, 0], [1, 0], [1, 1]]), np.array([4, 5, 6], np.int32), np.array([2, 2])
            ),
            t: tf.SparseTensorValue(
                np.array([[0, 0], [0, 1], [1, 0]]), np.array([4, 4, 6], np.int32), np.array([2, 2])
            ),
        }
        return tf.edit_distance(h, t), feed

    assert_same(tf1, build)


def test_edit_distance_errors(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            hyp, truth = _pair(tf)
            for args in ((tf.constant([1]), truth), (hyp, tf.constant([1]))):
                with pytest.raises(TypeError) as info:
                    tf.edit_distance(*args)
                msgs.append(str(info.value))
    assert msgs[:2] == msgs[2:]

    def mismatched(tf: Any) -> Any:
        h = tf.sparse_placeholder(tf.int32)
        feed = {
            h: tf.SparseTensorValue(
                np.array([[0, 0, 0]]), np.array([1], np.int32), np.array([1, 1, 1])
            )
        }
        t = tf.SparseTensor([[0, 0]], tf.constant([1]), [1, 1])
        return tf.edit_distance(h, t), feed

    assert_same_error(tf1, mismatched)


def test_fingerprint(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [
            tf.fingerprint(tf.constant([[1, 2], [3, 4]])),
            tf.fingerprint(tf.constant([1.5, 2.0], tf.float64)),
            tf.fingerprint(tf.zeros([3, 2, 2], tf.uint8)),
            tf.fingerprint(tf.constant([True, False])),
            tf.fingerprint(tf.constant(["ab", "c", ""])),
            tf.fingerprint(tf.constant([["ab", "c"], ["d", ""]])),
            tf.fingerprint(tf.zeros([0, 3])),
        ]

    assert_same(tf1, build)


def test_fingerprint_errors(tf1: Any) -> None:
    def bad_method(tf: Any) -> Any:
        return tf.fingerprint(tf.constant([1, 2]), method="md5")

    assert_same_error(tf1, bad_method)
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError) as info:
            tf.fingerprint(tf.constant(3))
        names.append(type(info.value).__name__)
    assert names[0] == names[1]
