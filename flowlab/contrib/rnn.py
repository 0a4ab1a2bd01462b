"""`tf.contrib.rnn` as TensorFlow 1.15 had it, for the names that are flowlab's
`tf.nn.rnn_cell` cells and RNN functions, plus `stack_bidirectional_rnn` and
`stack_bidirectional_dynamic_rnn` (flowlab.nn.bidirectional_rnn)."""

from __future__ import annotations

from flowlab.nn.bidirectional_rnn import (
    stack_bidirectional_dynamic_rnn,
    stack_bidirectional_rnn,
    static_bidirectional_rnn,
)
from flowlab.nn.rnn import static_rnn
from flowlab.nn.rnn_cell import (
    BasicLSTMCell,
    BasicRNNCell,
    DropoutWrapper,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    ResidualWrapper,
    RNNCell,
)

__all__ = [
    "BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell", "LSTMStateTuple",
    "MultiRNNCell", "ResidualWrapper", "RNNCell", "static_rnn", "static_bidirectional_rnn",
    "stack_bidirectional_rnn", "stack_bidirectional_dynamic_rnn",
]
