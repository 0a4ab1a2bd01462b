"""Fused batch normalization: the FusedBatchNormV3 op, its gradient op and
`tf.nn.fused_batch_norm`.

One op normalizes a 4-D (or 5-D) tensor per channel and, in training, returns the
batch statistics the layer needs for its moving averages -- the batch_variance output is
the Bessel-corrected (unbiased) variance, as in TensorFlow, while reserve_space_2 keeps
the biased one the backward op uses.  The gradient is one FusedBatchNormGradV3 op
(dx, dscale, doffset in one pass) rather than the dozen ops of the composed formula.
flowlab also accepts float64 for T and U (TensorFlow's kernels are float16/bfloat16/
float32 with float32 statistics), so that the float64 gradient check can run.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["fused_batch_norm"]

_FORMATS = ("NHWC", "NCHW", "NDHWC", "NCDHW")


def _channel_shape(op: Operation, vectors: range) -> tuple[TensorShape, TensorShape]:
    fmt = op.get_attr("data_format")
    if fmt not in _FORMATS:
        raise ValueError(f"Invalid data format: {fmt}; expected one of {', '.join(_FORMATS)}")
    want = 5 if fmt in ("NDHWC", "NCDHW") else 4
    x = op.inputs[0].shape
    if x.ndims is not None and x.ndims != want:
        raise ValueError(f"Shape must be rank {want} but is rank {x.ndims}")
    x = x.merge_with(TensorShape([None] * want))
    channel = 1 if fmt.startswith("NC") else want - 1
    c = TensorShape([x.dims[channel].value if hasattr(x.dims[channel], "value") else x.dims[channel]])
    for i in vectors:
        s = op.inputs[i].shape
        if s.ndims is not None and s.ndims != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {s.ndims}")
        if s.ndims == 1:
            a, b = c.dims[0], s.dims[0]
            a, b = getattr(a, "value", a), getattr(b, "value", b)
            if a is not None and b is not None and a != b:
                raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
            c = c.merge_with(s)
    return x, c


def _fused_shape(op: Operation) -> list[Any]:
    training = op.get_attr("is_training")
    stats = not training or op.get_attr("exponential_avg_factor") != 1.0
    x, c = _channel_shape(op, range(1, 5 if stats else 3))
    return [x, c, c, c, c, TensorShape(None)]


def _fused_grad_shape(op: Operation) -> list[Any]:
    x, c = _channel_shape(op, range(2, 5))
    x = x.merge_with(op.inputs[1].shape)
    return [x, c, c, TensorShape([0]), TensorShape([0])]


_ATTRS = [
    "T: {float16, float32, float64}", "U: {float32, float64}",
    "epsilon: float = 0.0001", "data_format: string = 'NHWC'",
    "is_training: bool = true",
]
op_def(
    "FusedBatchNormV3",
    inputs=["x: T", "scale: U", "offset: U", "mean: U", "variance: U"],
    outputs=["y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U",
             "reserve_space_2: U", "reserve_space_3: U"],
    attrs=[*_ATTRS, "exponential_avg_factor: float = 1.0"], shape_fn=_fused_shape,
    doc="Per-channel batch normalization; training uses (and returns) the batch statistics.",
)
op_def(
    "FusedBatchNormGradV3",
    inputs=["y_backprop: T", "x: T", "scale: U", "reserve_space_1: U", "reserve_space_2: U",
            "reserve_space_3: U"],
    outputs=["x_backprop: T", "scale_backprop: U", "offset_backprop: U", "reserve_space_4: U",
             "reserve_space_5: U"],
    attrs=_ATTRS, shape_fn=_fused_grad_shape,
    doc="dx, dscale, doffset of FusedBatchNormV3 (training: through the batch statistics).",
)
# TensorFlow has a second-order gradient (_FusedBatchNormGradGradV3); flowlab does not yet.
not_differentiable("FusedBatchNormGradV3")


@gradient("FusedBatchNormV3")
def _fused_batch_norm_grad(op: Operation, grad_y: Any, *unused: Any) -> Any:
    training = op.get_attr("is_training")
    fmt = op.get_attr("data_format")
    x = op.inputs[0]
    if training:
        r1, r2 = op.outputs[3], op.outputs[4]
    else:
        r1, r2 = op.inputs[3], op.inputs[4]
        if fmt in ("NCHW", "NCDHW"):  # as TensorFlow: the inference gradient runs channels-last
            perm = [0, 2, 3, 1] if fmt == "NCHW" else [0, 2, 3, 4, 1]
            x, grad_y = array_ops.transpose(x, perm), array_ops.transpose(grad_y, perm)
            fmt = "NHWC" if fmt == "NCHW" else "NDHWC"
    dx, dscale, doffset, _, _ = apply_op(
        "FusedBatchNormGradV3", y_backprop=grad_y, x=x, scale=op.inputs[1],
        reserve_space_1=r1, reserve_space_2=r2, reserve_space_3=op.outputs[5],
        epsilon=op.get_attr("epsilon"), data_format=fmt,
        is_training=training, name="FusedBatchNormGradV3")
    if fmt != op.get_attr("data_format"):
        dx = array_ops.transpose(dx, [0, 3, 1, 2] if fmt == "NHWC" else [0, 4, 1, 2, 3])
    return [dx, dscale, doffset, None, None]


def fused_batch_norm(
    x: Any, scale: Any, offset: Any = None, mean: Any = None, variance: Any = None,
    epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
    name: str | None = None, exponential_avg_factor: float = 1.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D or 5-D tensor with one FusedBatchNormV3 op.

    Args:
      x: input (float16, float32; flowlab also float64).
      scale, offset: per-channel vectors (offset None means zeros).
      mean, variance: population statistics; required for inference, and in training
        when `exponential_avg_factor` != 1 (the running values they are blended with).
      epsilon: added to the variance; raised to 1.001e-5 if smaller, as in TensorFlow.
      data_format: "NHWC", "NCHW", "NDHWC" or "NCDHW".
      is_training: normalize with the batch statistics (True) or `mean`/`variance`.
      exponential_avg_factor: weight of the batch statistics in the returned running ones.

    Returns:
      (y, batch_mean, batch_variance); batch_variance is the unbiased variance in training.

    Raises:
      ValueError: on missing inference statistics or mismatched shapes.
    """
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    u = scale.dtype.base_dtype
    if offset is None:
        offset = array_ops.zeros_like(scale)
    if mean is None or variance is None:
        if not is_training or exponential_avg_factor != 1.0:
            raise ValueError("Both 'mean' and 'variance' must be a 1D tensor when "
                             "is_training is False or exponential_avg_factor != 1.0.")
        mean = mean if mean is not None else constant([], dtype=u)
        variance = variance if variance is not None else constant([], dtype=u)
    epsilon = max(float(epsilon), 1.001e-5)
    y, m, v, *_ = apply_op(
        "FusedBatchNormV3", x=x, scale=scale, offset=offset, mean=mean, variance=variance,
        epsilon=epsilon, exponential_avg_factor=float(exponential_avg_factor),
        data_format=data_format, is_training=is_training, name=name or "FusedBatchNormV3")
    return y, m, v

