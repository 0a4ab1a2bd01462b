"""ReverseSequence: reverse the first seq_lengths[b] entries of each batch row.

`tf.reverse_sequence(input, seq_lengths, seq_axis, batch_axis)` (TensorFlow 1.x also
accepts `seq_dim` / `batch_dim`).  It is a permutation, so its gradient is the same
reversal of the incoming gradient.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["reverse_sequence"]


def _reverse_sequence_shape(op: Operation) -> list[Any]:
    x, lens = op.inputs[0].shape, op.inputs[1].shape
    if lens.ndims is not None and lens.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {lens.ndims}")
    if x.ndims is None:
        return [x]
    seq_dim, batch_dim = op.get_attr("seq_dim"), op.get_attr("batch_dim")
    if batch_dim < 0:
        raise ValueError(f"batch_dim must be >=0, got {batch_dim}")
    if seq_dim < 0:
        return [x]  # TensorFlow accepts it here and fails at run time ("Invalid seq_dim")
    if seq_dim == batch_dim:
        raise ValueError(f"seq_dim and batch_dim must not be the same: {seq_dim}")
    if not 0 <= seq_dim < x.ndims:
        raise ValueError(f"seq_dim must be < input rank: {seq_dim} vs. {x.ndims}")
    if not 0 <= batch_dim < x.ndims:
        raise ValueError(f"batch_dim must be < input rank: {batch_dim} vs. {x.ndims}")
    dims = list(x.as_list())
    b = dims[batch_dim]
    n = lens.as_list()[0] if lens.ndims == 1 else None
    if b is not None and n is not None and b != n:
        raise ValueError(f"Dimensions must be equal, but are {b} and {n}")
    if b is None:
        dims[batch_dim] = n
    return [TensorShape(dims)]


op_def(
    "ReverseSequence", inputs=["input: T", "seq_lengths: Tlen"], outputs=["output: T"],
    attrs=["seq_dim: int", "batch_dim: int = 0", "T: type", "Tlen: {int32, int64} = int32"],
    shape_fn=_reverse_sequence_shape,
    doc="Reverses the first seq_lengths[b] slices along seq_dim of each batch entry b.",
)


@gradient("ReverseSequence")
def _reverse_sequence_grad(op: Operation, grad: Any) -> Any:
    return [
        reverse_sequence(grad, op.inputs[1], seq_axis=op.get_attr("seq_dim"),
                         batch_axis=op.get_attr("batch_dim")),
        None,
    ]


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,  # noqa: A002
                     batch_axis: int | None = None, name: str | None = None,
                     seq_dim: int | None = None, batch_dim: int | None = None) -> Tensor:
    """Reverses variable-length slices (`tf.reverse_sequence`).

    Args:
      input: The tensor to reverse.
      seq_lengths: 1-D int32/int64, one length per entry along `batch_axis`.
      seq_axis: The partially reversed dimension (TF 1.x alias `seq_dim`).
      batch_axis: The batch dimension, default 0 (TF 1.x alias `batch_dim`).

    Returns:
      A tensor of `input`'s shape and dtype.

    Raises:
      ValueError: on bad static shapes or axes; InvalidArgumentError at run time when
        a length is negative or exceeds the sequence dimension.
    """
    if seq_axis is None:
        seq_axis = seq_dim
    elif seq_dim is not None and seq_dim != seq_axis:
        raise ValueError("Cannot specify both 'seq_axis' and 'seq_dim'")
    if batch_axis is None:
        batch_axis = batch_dim
    elif batch_dim is not None and batch_dim != batch_axis:
        raise ValueError("Cannot specify both 'batch_axis' and 'batch_dim'")
    if seq_axis is None:
        raise TypeError("reverse_sequence() missing required argument 'seq_axis'")
    attrs: dict[str, Any] = {"seq_dim": int(seq_axis)}
    if batch_axis is not None:
        attrs["batch_dim"] = int(batch_axis)
    return apply_op("ReverseSequence", input=input, seq_lengths=seq_lengths,
                    name=name or "ReverseSequence", **attrs)
