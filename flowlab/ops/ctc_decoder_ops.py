"""`tf.nn.ctc_greedy_decoder`: best-path decoding of CTC logits.

CTCGreedyDecoder takes `inputs` [max_time, batch, num_classes] and `sequence_length`
[batch]; for each sequence it picks the first maximal class at each step within its
length, drops blanks (class `blank_index`, by default the last) and, when
`merge_repeated`, a class equal to the previous step's pick.  Outputs: the decoded
classes as a SparseTensor [batch, longest decoding] (int64) and, per sequence, the
negated sum of the chosen logits [batch, 1].  Not differentiable.
Kernel: flowlab.kernels.ctc_decoder_kernels.  (The label helpers are flowlab.ops.ctc_ops.)
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["ctc_greedy_decoder"]


def _greedy_shape(op: Operation) -> list[TensorShape]:
    x, lengths = op.inputs[0].shape, op.inputs[1].shape
    if x.ndims is not None and x.ndims != 3:
        raise ValueError(f"Shape must be rank 3 but is rank {x.ndims} for '{{{{node {op.name}}}}}"
                         f" = CTCGreedyDecoder'")
    if lengths.ndims is not None and lengths.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {lengths.ndims} for "
                         f"'{{{{node {op.name}}}}} = CTCGreedyDecoder'")
    batch = None if x.ndims is None else x.as_list()[1]
    if batch is None and lengths.ndims == 1:
        batch = lengths.as_list()[0]
    return [TensorShape([None, 2]), TensorShape([None]), TensorShape([2]),
            TensorShape([batch, 1])]


op_def("CTCGreedyDecoder", inputs=["inputs: T", "sequence_length: int32"],
       outputs=["decoded_indices: int64", "decoded_values: int64", "decoded_shape: int64",
                "log_probability: T"],
       attrs=["merge_repeated: bool = false", "blank_index: int = -1",
              "T: {float32, float64} = float32"],
       shape_fn=_greedy_shape, doc="Greedy (best path) decoding of CTC logits.")
not_differentiable("CTCGreedyDecoder")


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True,
                       blank_index: int | None = None) -> tuple[list[Any], Any]:
    """([decoded SparseTensor], neg_sum_logits [batch, 1]) for time-major `inputs`.

        (decoded,), neg_sum = tf.nn.ctc_greedy_decoder(logits, lengths)
    """
    from flowlab.ops.sparse_tensor import SparseTensor

    ix, val, shape, log_prob = apply_op(
        "CTCGreedyDecoder", inputs=inputs, sequence_length=sequence_length,
        merge_repeated=merge_repeated, blank_index=-1 if blank_index is None else blank_index,
        name="CTCGreedyDecoder")
    return [SparseTensor(ix, val, shape)], log_prob
