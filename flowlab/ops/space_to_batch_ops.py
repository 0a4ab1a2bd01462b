"""SpaceToBatchND / BatchToSpaceND and `with_space_to_batch`: how TensorFlow 1.x runs
a dilated (atrous) window op as a plain one.

SpaceToBatchND pads the M spatial dimensions of [batch, s1..sM, rest] and moves each
block_shape[i]-th element into its own batch entry: [batch * prod(block), s1'/b1, ...].
A VALID window op on that is a dilated window op on the original (neighbouring
elements of a block entry were `rate` apart); BatchToSpaceND interleaves the result
back and crops the padding.  Both ops are linear and each is the other's gradient.

`with_space_to_batch(input, dilation_rate, padding, op, filter_shape)` builds that
sandwich as TensorFlow does for depthwise_conv2d, separable_conv2d, atrous_conv2d and
nn.convolution with a rate > 1: the paddings that make each padded spatial size a
multiple of the rate ("required_space_to_batch_paddings"), the ops named inside the
caller's scope.  Spatial sizes must be known when the graph is built (flowlab computes
the paddings as constants; TensorFlow folds them the same way when the shapes are
static).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import constant_op
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["space_to_batch_nd", "batch_to_space_nd", "with_space_to_batch",
           "required_space_to_batch_paddings"]


def _static(op: Operation, i: int, what: str) -> np.ndarray | None:
    v = constant_value(op.inputs[i])
    return None if v is None else np.asarray(v, dtype=np.int64)


def _check_block(block: np.ndarray | None, pads: np.ndarray | None, what: str, rank: int | None) -> None:
    if block is not None:
        if block.ndim != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {block.ndim}")
        if (block < 1).any():
            raise ValueError(f"block_shape must be positive, got {block.tolist()}")
    if pads is not None:
        if pads.ndim != 2 or pads.shape[1] != 2:
            raise ValueError(f"{what} must be a matrix of shape [M, 2], got {list(pads.shape)}")
        if (pads < 0).any():
            raise ValueError(f"{what} must be non-negative, got {pads.tolist()}")
        if block is not None and pads.shape[0] != block.shape[0]:
            raise ValueError(f"Dimensions must be equal, but are {block.shape[0]} and {pads.shape[0]}")
    m = block.shape[0] if block is not None else None
    if rank is not None and m is not None and rank < 1 + m:
        raise ValueError(f"Shape must be at least rank {1 + m} but is rank {rank}")


def _space_to_batch_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    block, pads = _static(op, 1, "block_shape"), _static(op, 2, "paddings")
    _check_block(block, pads, "paddings", s.ndims)
    if s.ndims is None or block is None or pads is None:
        return [None if s.ndims is None else [None] * s.ndims]
    dims = s.as_list()
    m = len(block)
    out = list(dims)
    out[0] = None if dims[0] is None else dims[0] * int(block.prod())
    for i in range(m):
        d = dims[1 + i]
        if d is None:
            out[1 + i] = None
            continue
        padded = d + int(pads[i, 0] + pads[i, 1])
        if padded % int(block[i]):
            raise ValueError(f"padded_shape[{i}]={padded} is not divisible by block_shape[{i}]={int(block[i])}")
        out[1 + i] = padded // int(block[i])
    return [out]


def _batch_to_space_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    block, crops = _static(op, 1, "block_shape"), _static(op, 2, "crops")
    _check_block(block, crops, "crops", s.ndims)
    if s.ndims is None or block is None or crops is None:
        return [None if s.ndims is None else [None] * s.ndims]
    dims = s.as_list()
    prod = int(block.prod())
    out = list(dims)
    if dims[0] is not None:
        if dims[0] % prod:
            raise ValueError(f"Dimension size must be evenly divisible by {prod} but is {dims[0]}")
        out[0] = dims[0] // prod
    for i in range(len(block)):
        d = dims[1 + i]
        if d is not None:
            size = d * int(block[i]) - int(crops[i, 0] + crops[i, 1])
            if size < 0:
                raise ValueError(f"Negative dimension size caused by cropping {crops[i].tolist()} from "
                                 f"{d * int(block[i])}")
            out[1 + i] = size
    return [out]


op_def("SpaceToBatchND", inputs=["input: T", "block_shape: Tblock_shape", "paddings: Tpaddings"],
       outputs=["output: T"],
       attrs=["T: type", "Tblock_shape: {int32, int64} = int32", "Tpaddings: {int32, int64} = int32"],
       shape_fn=_space_to_batch_shape, doc="Zero-pad the spatial dims, then move blocks into the batch.")
op_def("BatchToSpaceND", inputs=["input: T", "block_shape: Tblock_shape", "crops: Tcrops"],
       outputs=["output: T"],
       attrs=["T: type", "Tblock_shape: {int32, int64} = int32", "Tcrops: {int32, int64} = int32"],
       shape_fn=_batch_to_space_shape, doc="Move batch blocks back into the spatial dims, then crop.")


@gradient("SpaceToBatchND")
def _space_to_batch_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [apply_op("BatchToSpaceND", input=grad, block_shape=op.inputs[1], crops=op.inputs[2],
                     name="BatchToSpaceND"), None, None]


@gradient("BatchToSpaceND")
def _batch_to_space_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [apply_op("SpaceToBatchND", input=grad, block_shape=op.inputs[1], paddings=op.inputs[2],
                     name="SpaceToBatchND"), None, None]


def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.space_to_batch_nd`."""
    return apply_op("SpaceToBatchND", input=input, block_shape=block_shape, paddings=paddings,
                    name=name or "SpaceToBatchND")


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.batch_to_space_nd`."""
    return apply_op("BatchToSpaceND", input=input, block_shape=block_shape, crops=crops,
                    name=name or "BatchToSpaceND")


def with_space_to_batch(input: Any, dilation_rate: Any, padding: str, op: Callable[..., Tensor],
                        filter_shape: Any = None, spatial_dims: Any = None) -> Tensor:
    """`op(converted_input, num_spatial_dims, "VALID")` run on SpaceToBatchND(input) and
    turned back with BatchToSpaceND: `op` with `dilation_rate`, as TensorFlow builds it.
    With every rate 1 it is just `op(input, num_spatial_dims, padding)`."""
    input = convert_to_tensor(input, name="input")
    rate = np.asarray(dilation_rate, dtype=np.int64).reshape(-1)
    m = rate.shape[0]
    dims = list(range(1, m + 1)) if spatial_dims is None else list(spatial_dims)
    if dims != list(range(1, m + 1)):
        raise NotImplementedError("with_space_to_batch: only the spatial dimensions 1..M (NHWC-like) are supported")
    if (rate < 1).any():
        raise ValueError(f"`dilation_rate` must be positive. Received: dilation_rate={rate}")
    if (rate == 1).all():
        return op(input, m, padding)
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("`filter_shape` must be specified for `padding='SAME'`. "
                             f"Received: filter_shape={filter_shape} and padding={padding}")
        fs = np.asarray(filter_shape, dtype=np.int64).reshape(-1)[:m]
        extra = (fs - 1) * rate
        start = extra // 2
        base = np.stack([start, extra - start], axis=1)
    elif padding == "VALID":
        base = np.zeros((m, 2), dtype=np.int64)
    else:
        raise ValueError(f"`padding` must be one of 'SAME' or 'VALID'. Received: padding={padding}")
    shape = input.shape
    if shape.ndims is None or any(shape.as_list()[d] is None for d in dims):
        raise NotImplementedError("with_space_to_batch needs the spatial sizes when the graph is built")
    constant_op.constant(base.astype(np.int32), name="stack")  # in TensorFlow's graph, folded below
    in_shape = np.asarray([shape.as_list()[d] for d in dims], dtype=np.int64)
    full = in_shape + base[:, 0] + base[:, 1]
    pad_extra = (rate - full % rate) % rate
    paddings = np.stack([base[:, 0], base[:, 1] + pad_extra], axis=1).astype(np.int32)
    crops = np.stack([np.zeros_like(pad_extra), pad_extra], axis=1).astype(np.int32)
    with input.graph.name_scope("required_space_to_batch_paddings"):
        constant_op.constant(in_shape.astype(np.int32), name="input_shape")
        constant_op.constant(paddings, name="paddings")
        constant_op.constant(crops, name="crops")
    block = rate.astype(np.int32)
    # The builder converts the arrays inside the op's scope ("SpaceToBatchND/paddings").
    y = op(space_to_batch_nd(input, block, paddings), m, "VALID")
    return batch_to_space_nd(y, block, crops)


def required_space_to_batch_paddings(input_shape: Any, block_shape: Any, base_paddings: Any = None,
                                     name: str | None = None) -> tuple[Tensor, Tensor]:
    """(paddings, crops) making `input_shape` (plus `base_paddings`) divisible by
    `block_shape`, for space_to_batch_nd / batch_to_space_nd
    (`tf.required_space_to_batch_paddings`); computed in NumPy when every input is
    known while the graph is built, as graph ops otherwise."""
    from flowlab.graph import dtypes
    from flowlab.graph.graph import get_default_graph
    from flowlab.ops import array_ops

    with get_default_graph().name_scope(name or "required_space_to_batch_paddings"):
        input_shape = convert_to_tensor(input_shape, dtype=dtypes.int32, name="input_shape")
        block_shape = convert_to_tensor(block_shape, dtype=dtypes.int32, name="block_shape")
        if not block_shape.shape.is_fully_defined():
            raise ValueError(f"Shape {block_shape.shape} is not fully defined")
        block_shape.shape.assert_has_rank(1)
        num_block_dims = block_shape.shape.as_list()[0]
        if num_block_dims == 0:
            return (array_ops.zeros([0, 2], dtypes.int32), array_ops.zeros([0, 2], dtypes.int32))
        input_shape.shape.assert_is_compatible_with([num_block_dims])
        if base_paddings is not None:
            base_paddings = convert_to_tensor(base_paddings, dtype=dtypes.int32,
                                              name="base_paddings")
            base_paddings.shape.assert_is_compatible_with([num_block_dims, 2])
        else:
            base_paddings = array_ops.zeros([num_block_dims, 2], dtypes.int32)
        consts = [constant_value(t) for t in (block_shape, input_shape, base_paddings)]
        if all(c is not None for c in consts):
            block_shape, input_shape, base_paddings = (np.asarray(c) for c in consts)
        pad_start = base_paddings[:, 0]
        orig_pad_end = base_paddings[:, 1]
        full_input_shape = input_shape + pad_start + orig_pad_end
        pad_end_extra = (block_shape - full_input_shape % block_shape) % block_shape
        pad_end = orig_pad_end + pad_end_extra
        paddings = array_ops.stack([[pad_start[i], pad_end[i]] for i in range(num_block_dims)],
                                   name="paddings")
        crops = array_ops.stack([[0, pad_end_extra[i]] for i in range(num_block_dims)],
                                name="crops")
        return paddings, crops
