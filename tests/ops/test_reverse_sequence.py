"""ReverseSequence: values against NumPy and TensorFlow, shapes, errors, gradient."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.ops.gradients_impl import gradients
from tests.difftest import assert_same, assert_same_error
from tests.ops.gradient_check import grad_case

RNG = np.random.default_rng(3)


def _np_reverse_sequence(x: np.ndarray, lens: Any, seq: int, batch: int) -> np.ndarray:
    out = x.copy()
    for b, n in enumerate(lens):
        src = [slice(None)] * x.ndim
        src[batch] = b
        src[seq] = slice(0, n)
        dst = list(src)
        rev = np.flip(x[tuple(src)], axis=seq - (1 if batch < seq else 0))
        out[tuple(dst)] = rev
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(0, 5), st.integers(1, 3), st.booleans(), st.data())
def test_matches_numpy(b: int, t: int, f: int, batch_first: bool, data: Any) -> None:
    x = RNG.standard_normal((b, t, f) if batch_first else (t, b, f)).astype(np.float32)
    lens = data.draw(st.lists(st.integers(0, t), min_size=b, max_size=b))
    seq, batch = (1, 0) if batch_first else (0, 1)
    with fl.Graph().as_default(), fl.Session() as s:
        got = s.run(fl.reverse_sequence(x, np.array(lens, np.int64), seq_axis=seq, batch_axis=batch))
    np.testing.assert_array_equal(got, _np_reverse_sequence(x, lens, seq, batch))
    assert got.dtype == np.float32


def test_against_tf(tf1: Any) -> None:
    x = np.arange(4 * 8).reshape(4, 8).astype(np.int32)
    assert_same(tf1, lambda tf: tf.reverse_sequence(x, [7, 2, 3, 5], seq_axis=1, batch_axis=0))
    y = RNG.standard_normal((3, 2, 4, 2))
    assert_same(tf1, lambda tf: tf.reverse_sequence(y, tf.constant([1, 4], tf.int64), seq_dim=2, batch_dim=1))
    assert_same(tf1, lambda tf: tf.reverse_sequence(np.array([[True, False]] * 2), [2, 0], 1))
    assert_same(tf1, lambda tf: tf.reverse_sequence(np.zeros((0, 3), np.float32), np.zeros(0, np.int32), 1, 0))

    xv = RNG.standard_normal((3, 5, 2)).astype(np.float32)

    def fed(tf: Any) -> Any:
        p = tf.placeholder(tf.float32, [None, 5, 2])
        lens = tf.placeholder(tf.int32, [None])
        r = tf.reverse_sequence(p, lens, 1, 0)
        assert r.shape.as_list() == [None, 5, 2]
        return r, {p: xv, lens: np.array([5, 0, 3], np.int32)}

    assert_same(tf1, fed)


def test_op_and_attrs(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            r = tf.reverse_sequence(tf.zeros([2, 5, 3]), [1, 2], 1, 0)
            assert (r.op.name, r.op.type) == ("ReverseSequence", "ReverseSequence")
            assert r.op.get_attr("seq_dim") == 1 and r.op.get_attr("batch_dim") == 0
            assert r.op.get_attr("Tlen") == tf.int32 and r.shape.as_list() == [2, 5, 3]
            p = tf.placeholder(tf.float32, [None, 4])
            assert tf.reverse_sequence(p, tf.zeros([6], tf.int64), 1).shape.as_list() == [6, 4]


@pytest.mark.parametrize("x_shape, lens, seq, batch, msg", [
    ([2, 3], [1, 2, 3], 1, 0, "Dimensions must be equal, but are 2 and 3"),
    ([2, 3], [1, 2], 2, 0, "seq_dim must be < input rank: 2 vs. 2"),
    ([2, 3], [[1, 2]], 1, 0, "Shape must be rank 1 but is rank 2"),
    ([2, 3], [1, 2], 1, -2, "batch_dim must be >=0, got -2"),
])
def test_build_errors(tf1: Any, x_shape: Any, lens: Any, seq: int, batch: int, msg: str) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError, match=msg):
            tf.reverse_sequence(tf.zeros(x_shape), lens, seq, batch)
    with pytest.raises(ValueError, match="ReverseSequence"):
        fl.reverse_sequence(fl.zeros(x_shape), lens, seq, batch)


@pytest.mark.parametrize("lens, msg", [([1, 4], r"seq_lens\(1\) > input.dims\(1\)"), ([-1, 2], r"seq_lens\(0\) < 0")])
def test_runtime_errors(tf1: Any, lens: Any, msg: str) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.int32, [None])
        return tf.reverse_sequence(tf.reshape(tf.range(6), [2, 3]), p, 1, 0), {p: np.array(lens, np.int32)}

    te, fe = assert_same_error(tf1, build)
    assert te.message and fe.message
    with pytest.raises(fl.errors.InvalidArgumentError, match=msg):
        with fl.Graph().as_default():
            build_out = build(fl)
            with fl.Session() as s:
                s.run(*build_out)


def test_negative_seq_dim_fails_at_run_time(tf1: Any) -> None:
    te, fe = assert_same_error(tf1, lambda tf: tf.reverse_sequence(tf.reshape(tf.range(6), [2, 3]), [1, 2], -1, 0))
    assert "Invalid seq_dim -1" in fe.message and "Invalid seq_dim -1" in te.message


def test_float_lengths_rejected() -> None:
    with pytest.raises(TypeError, match="ReverseSequence"):
        fl.reverse_sequence(fl.zeros([2, 3]), [1.0, 2.0], 1)


def test_gradient_against_tf(tf1: Any) -> None:
    x = RNG.standard_normal((2, 4, 3))
    wv = RNG.standard_normal((2, 4, 3))

    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.float64, [2, 4, 3])
        r = tf.reverse_sequence(p, [3, 1], 1, 0)
        w = tf.constant(wv)
        grad = (gradients if tf is fl else tf.gradients)(tf.reduce_sum(r * w), p)[0]
        return grad, {p: x}

    assert_same(tf1, build)


@grad_case("ReverseSequence", RNG.standard_normal((2, 4, 3)))
def _(tf: Any, x: Any) -> Any:
    return tf.reverse_sequence(x, [3, 1], seq_axis=1, batch_axis=0)


@grad_case("ReverseSequence", RNG.standard_normal((5, 3)))
def _(tf: Any, x: Any) -> Any:  # noqa: F811
    return tf.reverse_sequence(x, tf.constant([5, 0, 2], tf.int64), seq_axis=0, batch_axis=1)
