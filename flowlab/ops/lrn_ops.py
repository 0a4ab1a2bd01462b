"""Local response normalization (`tf.nn.lrn`, `tf.nn.local_response_normalization`).

LRN divides each element of a 4-D input by a power of the sum of squares over its
neighbouring channels: sqr_sum[..., d] = sum(x[..., d - r : d + r + 1] ** 2) and
output = x / (bias + alpha * sqr_sum) ** beta (TensorFlow's alpha is not divided by
the window size).  LRNGrad is its gradient op, as in TensorFlow's nn_grad; LRNGrad
itself has no gradient in TensorFlow.  Kernels: flowlab.kernels.lrn_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["lrn", "local_response_normalization"]

_ATTRS = ["depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0", "beta: float = 0.5",
          "T: {float16, float32} = float32"]


def _rank4_shape(index: int) -> Any:
    def fn(op: Operation) -> list[Any]:
        shape = op.inputs[index].shape
        for t in op.inputs:
            r = t.shape.ndims
            if r is not None and r != 4:
                raise ValueError(f"Shape must be rank 4 but is rank {r}")
        return [shape if shape.ndims is not None else [None] * 4]
    return fn


op_def("LRN", inputs=["input: T"], outputs=["output: T"], attrs=_ATTRS, shape_fn=_rank4_shape(0),
       doc="Local response normalization over the last (depth) dimension.")
op_def("LRNGrad", inputs=["input_grads: T", "input_image: T", "output_image: T"], outputs=["output: T"],
       attrs=_ATTRS, shape_fn=_rank4_shape(1), doc="Gradient of LRN.")
not_differentiable("LRNGrad")


def _lrn_attrs(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in ("depth_radius", "bias", "alpha", "beta")}


@gradient("LRN")
def _lrn_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [apply_op("LRNGrad", input_grads=grad, input_image=op.inputs[0], output_image=op.outputs[0],
                     name="LRNGrad", **_lrn_attrs(op))]


def local_response_normalization(input: Any, depth_radius: int = 5, bias: float = 1.0,  # noqa: A002
                                 alpha: float = 1.0, beta: float = 0.5, name: str | None = None) -> Tensor:
    """`tf.nn.lrn`: x / (bias + alpha * sum of squares over 2*depth_radius+1 channels) ** beta."""
    return apply_op("LRN", input=input, depth_radius=depth_radius, bias=bias, alpha=alpha, beta=beta,
                    name=name or "LRN")


lrn = local_response_normalization
