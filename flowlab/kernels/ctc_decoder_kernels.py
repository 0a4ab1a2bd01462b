"""Kernel of CTCGreedyDecoder (flowlab.ops.ctc_decoder_ops), following TensorFlow's
ctc_decoder_ops.cc: its input checks, first-maximum picks and output layout."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel


def _bad(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _precondition(msg: str) -> errors.FailedPreconditionError:
    return errors.FailedPreconditionError(None, None, msg)


@kernel("CTCGreedyDecoder", devices=CPU)
def ctc_greedy_decoder(ctx: Any, inputs: Any, seq_len: Any) -> list[Any]:
    x, lengths = np.asarray(inputs), np.asarray(seq_len)
    if x.ndim != 3:
        raise _bad("inputs is not a 3-Tensor")
    if lengths.ndim != 1:
        raise _bad("sequence_length is not a vector")
    if x.size == 0:
        raise _bad("inputs must not be empty")
    max_time, batch, num_classes = x.shape
    if lengths.shape[0] != batch:
        raise _precondition(f"len(sequence_length) != batch_size.  len(sequence_length):  "
                   f"{lengths.shape[0]} batch_size: {batch}")
    for b in range(batch):
        if lengths[b] > max_time:
            raise _precondition(f"sequence_length({b}) <= {max_time}")
    blank = ctx.attrs["blank_index"]
    blank = blank + num_classes if blank < 0 else blank
    if not 0 <= blank < num_classes:
        raise _bad(f"blank_index expected to be between {-num_classes} and {num_classes - 1} "
                   f"but was {ctx.attrs['blank_index']}")
    merge = ctx.attrs["merge_repeated"]
    log_prob = np.zeros((batch, 1), x.dtype)
    decoded: list[list[int]] = []
    for b in range(batch):
        seq: list[int] = []
        prev = -1
        for t in range(int(lengths[b])):
            row = x[t, b]
            c = int(np.argmax(row))  # the first maximum, as TensorFlow's RowMax
            log_prob[b, 0] += -row[c]
            if c != blank and not (merge and c == prev):
                seq.append(c)
            prev = c
        decoded.append(seq)
    indices = np.array([[b, t] for b, s in enumerate(decoded) for t in range(len(s))],
                       np.int64).reshape(-1, 2)
    values = np.array([c for s in decoded for c in s], np.int64)
    shape = np.array([batch, max((len(s) for s in decoded), default=0)], np.int64)
    return [indices, values, shape, log_prob]
