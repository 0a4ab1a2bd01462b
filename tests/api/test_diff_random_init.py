"""`tf.random` and `tf.initializers` beside TensorFlow 1.x (tests/difftest.py): with a
graph seed, op seeds, or both, flowlab's random ops give TensorFlow's numbers, so the
values themselves are compared, not only their statistics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


@pytest.mark.parametrize("graph_seed", [None, 3])
def test_random_ops(tf1: Any, graph_seed: Any) -> None:
    def build(tf: Any) -> Any:
        if graph_seed is not None:
            tf.random.set_random_seed(graph_seed)
        return [
            tf.random.normal([3, 2], seed=1),
            tf.random.normal([2], mean=2.0, stddev=0.5, dtype=tf.float64, seed=2),
            tf.random.uniform([4], seed=5),
            tf.random.uniform([3], minval=2, maxval=9, dtype=tf.int32, seed=6),
            tf.random.truncated_normal([5], seed=7),
            tf.random.multinomial(tf.log([[0.2, 0.8], [0.5, 0.5]]), 6, seed=8),
            tf.random.multinomial(tf.log([[0.5, 0.5]]), 3, seed=8, output_dtype=tf.int32),
            tf.random.shuffle(tf.range(6), seed=9),
        ]

    assert_same(tf1, build)


def test_graph_seed_alone(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        tf.random.set_random_seed(11)
        a = tf.random.normal([3])
        b = tf.random.uniform([2])
        return [a, b, tf.random.truncated_normal([2]), tf.random.shuffle(tf.range(4))]

    assert_same(tf1, build)


def test_get_seed(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            row = [tf.random.get_seed(None), tf.random.get_seed(4)]
            tf.random.set_random_seed(10)
            tf.constant(1.0)
            row += [tf.random.get_seed(None), tf.random.get_seed(4), tf.random.get_seed(None)]
        out.append(row)
    assert out[0] == out[1]


SAMPLERS = ["log_uniform", "all", "fixed_unigram", "learned_unigram"]


@pytest.mark.parametrize("kind", SAMPLERS)
def test_candidate_samplers(tf1: Any, kind: str) -> None:
    def build(tf: Any) -> Any:
        tf.random.set_random_seed(2)
        true = tf.constant([[1, 4], [0, 7]], tf.int64)
        if kind == "log_uniform":
            r = tf.random.log_uniform_candidate_sampler(true, 2, 5, True, 10, seed=3)
        elif kind == "all":
            r = tf.random.all_candidate_sampler(true, 2, 10, False, seed=3)
        elif kind == "fixed_unigram":
            r = tf.random.fixed_unigram_candidate_sampler(
                true, 2, 4, False, 8, unigrams=[1.0, 2, 3, 4, 5, 6, 7, 8], seed=3
            )
        else:
            r = tf.random.learned_unigram_candidate_sampler(true, 2, 4, True, 10, seed=3)
        return list(r)

    assert_same(tf1, build)


INITS = [
    ("zeros", lambda tf: tf.initializers.zeros()),
    ("ones", lambda tf: tf.initializers.ones()),
    ("constant", lambda tf: tf.initializers.constant([1.0, 2.0, 3.0, 4.0])),
    ("random_normal", lambda tf: tf.initializers.random_normal(0.5, 2.0, seed=4)),
    ("random_uniform", lambda tf: tf.initializers.random_uniform(-2.0, 3.0, seed=4)),
    ("truncated_normal", lambda tf: tf.initializers.truncated_normal(stddev=0.1, seed=4)),
    ("uniform_unit_scaling", lambda tf: tf.initializers.uniform_unit_scaling(1.5, seed=4)),
    (
        "variance_scaling",
        lambda tf: tf.initializers.variance_scaling(2.0, "fan_avg", "uniform", seed=4),
    ),
    ("variance_scaling_normal", lambda tf: tf.initializers.variance_scaling(seed=4)),
    ("glorot_normal", lambda tf: tf.initializers.glorot_normal(seed=4)),
    ("lecun_normal", lambda tf: tf.initializers.lecun_normal(seed=4)),
    ("lecun_uniform", lambda tf: tf.initializers.lecun_uniform(seed=4)),
]


@pytest.mark.parametrize("name,make", INITS, ids=[i[0] for i in INITS])
def test_initializers(tf1: Any, name: str, make: Any) -> None:
    def build(tf: Any) -> Any:
        init = make(tf)
        v = tf.get_variable("v", [2, 2], initializer=init)
        w = tf.get_variable("w", [2, 2], tf.float64, initializer=make(tf))
        return [v, w, init([4], dtype=tf.float32)]

    assert_same(tf1, build)


def test_initializer_ops(tf1: Any) -> None:
    """tf.initializers.global_variables / local_variables / variables as ops to run."""
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2.0, name="b", collections=[tf.GraphKeys.LOCAL_VARIABLES])
            c = tf.Variable(3.0, name="c")
            ops = [
                tf.initializers.global_variables(),
                tf.initializers.local_variables(),
                tf.initializers.variables([c]),
                tf.initializers.variables([]),
            ]
            row: list[Any] = [op.type for op in ops]
            with tf.Session() as s:
                s.run(ops[2])
                row.append(s.run(tf.report_uninitialized_variables()).tolist())
                s.run(ops[1])
                row.append(s.run(tf.report_uninitialized_variables()).tolist())
                s.run(ops[0])
                row.append(s.run([a, b, c]))
        out.append(row)
    assert out[0] == out[1]


def test_initializer_dtype_errors(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises((TypeError, ValueError)) as info:
            tf.initializers.random_normal()([2], dtype=tf.int32)
        msgs.append(type(info.value).__name__)
    assert msgs[0] == msgs[1]


def test_initializer_values_are_reproducible(tf1: Any) -> None:
    """The same op seed in a fresh graph gives the same numbers in both."""
    values = []
    for _ in range(2):
        values.append(assert_same(tf1, lambda tf: tf.initializers.glorot_normal(seed=9)([3])))
    np.testing.assert_array_equal(values[0], values[1])


def test_split_and_fold_in(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [
            tf.random.split([1, 2]),
            tf.random.split(tf.constant([3, 4], tf.int64), 3),
            tf.random.fold_in([1, 2], 7),
            tf.random.fold_in(tf.constant([5, 6], tf.int64), tf.constant(9, tf.int64)),
            tf.random.stateless_uniform([5], [1, 2], minval=None, maxval=None, dtype=tf.uint32),
            tf.random.stateless_uniform([3], [1, 2], minval=None, maxval=None, dtype=tf.uint64),
            tf.random.stateless_uniform([2, 3], [7, 8], minval=None, maxval=None, dtype=tf.int64),
        ]

    assert_same(tf1, build)


def test_stateless_uniform_integer_bounds_errors(tf1: Any) -> None:
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            for kw in (
                {"minval": 0, "maxval": None, "dtype": tf.int32},
                {"minval": 0, "maxval": 5, "dtype": tf.uint32},
            ):
                with pytest.raises(ValueError) as info:
                    tf.random.stateless_uniform([2], [1, 2], **kw)
                msgs.append(str(info.value))
    assert msgs[:2] == msgs[2:]
