"""`tf.nn.ctc_greedy_decoder` beside TensorFlow 1.x (tests/difftest.py): decoded
SparseTensors and negated logit sums, with and without merging repeats, a custom
blank, ties, and the kernel's input checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error

RS = np.random.RandomState(2)
LOGITS = RS.randn(6, 3, 4).astype(np.float32)
LOGITS[1, 0] = LOGITS[0, 0]  # a repeat in sequence 0
LOGITS[2, 1, :] = 1.0  # a tie: the first maximum wins


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("blank", [None, 0, -2])
def test_ctc_greedy_decoder(tf1: Any, merge: bool, blank: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [6, 3, 4])
        (dec,), neg_sum = tf.nn.ctc_greedy_decoder(
            x, tf.constant([6, 4, 0]), merge_repeated=merge, blank_index=blank
        )
        return [dec.indices, dec.values, dec.dense_shape, neg_sum], {x: LOGITS}

    assert_same(tf1, build)


def test_ctc_greedy_decoder_float64(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        (dec,), neg_sum = tf.nn.ctc_greedy_decoder(
            tf.constant(LOGITS.astype(np.float64)), [5, 5, 5]
        )
        return [tf.sparse.to_dense(dec), neg_sum]

    assert_same(tf1, build)


def test_ctc_greedy_decoder_errors(tf1: Any) -> None:
    cases = [([7, 1, 1], LOGITS), ([1, 1], LOGITS), ([1, 1, 1], np.zeros([6, 3, 0], np.float32))]
    for lens, logits in cases:

        def build(tf: Any, lens: list[int] = lens, logits: np.ndarray = logits) -> Any:
            lengths = tf.placeholder(tf.int32, [None])
            x = tf.placeholder(tf.float32, [None, None, None])
            (dec,), _ = tf.nn.ctc_greedy_decoder(x, lengths)
            return dec.values, {lengths: np.array(lens, np.int32), x: logits}

        e, a = assert_same_error(tf1, build)
        assert (
            e.message.splitlines()[-2].strip() == a.message.split(": ", 1)[1].split(" (defined")[0]
        )
    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError) as info:
            tf.nn.ctc_greedy_decoder(tf.zeros([2, 3]), [1, 1])
        names.append(type(info.value).__name__)
    assert names[0] == names[1]
