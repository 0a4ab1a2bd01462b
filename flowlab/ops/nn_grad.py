"""Gradient functions of the nn ops, and TensorFlow's fused backward ops.

The activations' gradients are single ops, as in TensorFlow (ReluGrad, Relu6Grad,
EluGrad, SeluGrad, LeakyReluGrad, SoftplusGrad, SoftsignGrad, BiasAddGrad): one pass
over the data instead of a compare, a select and a zeros tensor, which matters for
training speed.  They are declared here with their CPU/GPU kernels (written over
`ctx.xp`) and their own gradients (second derivatives).  The cross entropies
differentiate through the `backprop` output their kernel already computed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, nn_ops, slicing
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__: list[str] = []


def _same2(op: Operation) -> list[Any]:
    return [op.inputs[0].shape.merge_with(op.inputs[1].shape)]


# --- fused activation gradients -----------------------------------------------------
_REAL = "T: {float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64}"
_FLOAT = "T: {float16, float32, float64}"
_GRAD_OPS = {
    # name: (second input, attrs)
    "ReluGrad": ("features", [_REAL]),
    "Relu6Grad": ("features", [_REAL]),
    "EluGrad": ("outputs", [_FLOAT]),
    "SeluGrad": ("outputs", [_FLOAT]),
    "LeakyReluGrad": ("features", ["alpha: float = 0.2", "T: {float16, float32, float64} = float32"]),
    "SoftplusGrad": ("features", [_FLOAT]),
    "SoftsignGrad": ("features", [_FLOAT]),
}
for _name, (_second, _attrs) in _GRAD_OPS.items():
    op_def(_name, inputs=["gradients: T", f"{_second}: T"], outputs=["backprops: T"],
           attrs=_attrs, shape_fn=_same2)




def _fused(name: str, g: Any, second: Tensor, **attrs: Any) -> Tensor:
    return apply_op(name, name=name, gradients=g, **{_GRAD_OPS[name][0]: second}, **attrs)


@gradient("Relu")
def _relu_grad(op: Operation, grad: Any) -> Any:
    return [_fused("ReluGrad", grad, op.outputs[0])]


@gradient("Relu6")
def _relu6_grad(op: Operation, grad: Any) -> Any:
    return [_fused("Relu6Grad", grad, op.outputs[0])]


@gradient("Elu")
def _elu_grad(op: Operation, grad: Any) -> Any:
    return [_fused("EluGrad", grad, op.outputs[0])]


@gradient("Selu")
def _selu_grad(op: Operation, grad: Any) -> Any:
    return [_fused("SeluGrad", grad, op.outputs[0])]


@gradient("LeakyRelu")
def _leaky_relu_grad(op: Operation, grad: Any) -> Any:
    return [_fused("LeakyReluGrad", grad, op.inputs[0], alpha=op.get_attr("alpha"))]


@gradient("Softplus")
def _softplus_grad(op: Operation, grad: Any) -> Any:
    return [_fused("SoftplusGrad", grad, op.inputs[0])]


@gradient("Softsign")
def _softsign_grad(op: Operation, grad: Any) -> Any:
    return [_fused("SoftsignGrad", grad, op.inputs[0])]


# Second derivatives.  The piecewise-linear ones pass the gradient through the same mask.
@gradient("ReluGrad")
def _relu_grad_grad(op: Operation, grad: Any) -> Any:
    return [_fused("ReluGrad", grad, op.inputs[1]), array_ops.zeros_like(op.inputs[1])]


@gradient("Relu6Grad")
def _relu6_grad_grad(op: Operation, grad: Any) -> Any:
    return [_fused("Relu6Grad", grad, op.inputs[1]), array_ops.zeros_like(op.inputs[1])]


@gradient("LeakyReluGrad")
def _leaky_relu_grad_grad(op: Operation, grad: Any) -> Any:
    x = op.inputs[1]
    return [_fused("LeakyReluGrad", grad, x, alpha=op.get_attr("alpha")), array_ops.zeros_like(x)]


def _below_zero_grad(op: Operation, grad: Any, name: str) -> Any:
    y = op.inputs[1]
    zero = array_ops.zeros_like(y)
    return [_fused(name, grad, y), array_ops.where_v2(math_ops.less(y, zero), grad * op.inputs[0], zero)]


gradient("EluGrad")(lambda op, grad: _below_zero_grad(op, grad, "EluGrad"))
gradient("SeluGrad")(lambda op, grad: _below_zero_grad(op, grad, "SeluGrad"))


@gradient("SoftplusGrad")
def _softplus_grad_grad(op: Operation, grad: Any) -> Any:
    dy, x = op.inputs
    with grad.graph.control_dependencies([grad]):
        ddy = _fused("SoftplusGrad", grad, x)
        two = np.asarray(2, x.dtype.as_numpy_dtype)
        d2x = grad * dy / (math_ops.exp(-x) + two + math_ops.exp(x))
    return [ddy, d2x]


@gradient("SoftsignGrad")
def _softsign_grad_grad(op: Operation, grad: Any) -> Any:
    dy, x = op.inputs
    one = np.asarray(1, x.dtype.as_numpy_dtype)
    minus_two = np.asarray(-2, x.dtype.as_numpy_dtype)
    d = one + math_ops.abs(x)
    return [_fused("SoftsignGrad", grad, x), grad * dy * minus_two * math_ops.sign(x) / (d * d * d)]


# --- softmax ------------------------------------------------------------------------
@gradient("Softmax")
def _softmax_grad(op: Operation, grad: Any) -> Any:
    softmax = op.outputs[0]
    sum_channels = math_ops.reduce_sum(grad * softmax, -1, keepdims=True)
    return [(grad - sum_channels) * softmax]


@gradient("LogSoftmax")
def _log_softmax_grad(op: Operation, grad: Any) -> Any:
    softmax = math_ops.exp(op.outputs[0])
    return [grad - math_ops.reduce_sum(grad, -1, keepdims=True) * softmax]


# --- bias -----------------------------------------------------------------------------
def _bias_add_grad_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is None:
        return [TensorShape([None])]
    if s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    nchw = op.get_attr("data_format") == "NCHW"
    return [TensorShape([s.as_list()[1 if nchw else -1]])]


op_def("BiasAddGrad", inputs=["out_backprop: T"], outputs=["output: T"],
       attrs=["T: numeric", "data_format: string = 'NHWC'"], shape_fn=_bias_add_grad_shape,
       doc="The gradient of BiasAdd's bias: out_backprop summed over all but the channel axis.")


@gradient("BiasAdd")
def _bias_add_grad(op: Operation, grad: Any) -> Any:
    fmt = op.get_attr("data_format")
    return [grad, apply_op("BiasAddGrad", out_backprop=grad, data_format=fmt, name="BiasAddGrad")]


@gradient("BiasAddGrad")
def _bias_add_grad_grad(op: Operation, grad: Any) -> Any:
    """The channel vector broadcast back to out_backprop's shape."""
    x = op.inputs[0]
    nchw = op.get_attr("data_format") == "NCHW"
    shape = array_ops.shape(x)
    rank = array_ops.rank(x)
    ones = array_ops.ones_like(shape)
    if nchw:
        bshape = array_ops.concat([ones[:1], array_ops.reshape(array_ops.size(grad), [1]), ones[2:]], 0)
    else:
        bshape = array_ops.concat([ones[:-1], array_ops.reshape(array_ops.size(grad), [1])], 0)
    del rank
    expanded = array_ops.reshape(grad, bshape)
    return [array_ops.tile(expanded, math_ops.floordiv(shape, bshape))]


# --- losses -----------------------------------------------------------------------------
@gradient("L2Loss")
def _l2_loss_grad(op: Operation, grad: Any) -> Any:
    return [op.inputs[0] * grad]


def _broadcast_mul(vec: Any, mat: Any) -> Any:
    """vec[:, None] * mat."""
    return array_ops.expand_dims(vec, -1) * mat


def _is_zero(g: Any) -> bool:
    if g is None:
        return True
    if isinstance(g, Tensor) and g.op.type in ("ZerosLike", "Zeros"):
        return True
    v = constant_value(g) if isinstance(g, Tensor) else None
    return v is not None and not np.any(v)


def _grad_grad_term(logits: Tensor, grad_grad: Any) -> Any:
    softmax = nn_ops.softmax(logits)
    inner = math_ops.matmul(array_ops.expand_dims(grad_grad, 1), array_ops.expand_dims(softmax, 2))
    return (grad_grad - array_ops.squeeze(inner, axis=1)) * softmax


@gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op: Operation, grad_loss: Any, grad_grad: Any) -> Any:
    logits = op.inputs[0]
    grad = _broadcast_mul(grad_loss, op.outputs[1])
    if not _is_zero(grad_grad):
        grad = grad + _grad_grad_term(logits, grad_grad)
    return [grad, _broadcast_mul(grad_loss, -nn_ops.log_softmax(logits))]


@gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent_grad(op: Operation, grad_loss: Any, grad_grad: Any) -> Any:
    grad = _broadcast_mul(grad_loss, op.outputs[1])
    if not _is_zero(grad_grad):
        grad = grad + _grad_grad_term(op.inputs[0], grad_grad)
    return [grad, None]


# --- top k ---------------------------------------------------------------------------------
@gradient("TopKV2")
def _top_k_grad(op: Operation, grad: Any, _: Any) -> Any:
    """Scatter the values' gradient to the positions the indices name."""
    x, indices = op.inputs[0], op.outputs[1]
    in_shape = array_ops.shape(x)
    ind = math_ops.cast(indices, dtypes.int32)
    ind_shape = array_ops.shape(ind)
    k = slicing.strided_slice(ind_shape, [-1], [0], shrink_axis_mask=1)
    n = slicing.strided_slice(in_shape, [-1], [0], shrink_axis_mask=1)
    ind_2d = array_ops.reshape(ind, array_ops.stack([-1, k]))
    outer = slicing.strided_slice(array_ops.shape(ind_2d), [0], [1], shrink_axis_mask=1)
    offsets = array_ops.expand_dims(math_ops.range(0, outer * n, n), -1)
    flat = array_ops.reshape(ind_2d + offsets, [-1])
    dense = slicing.scatter_nd(array_ops.expand_dims(flat, -1), array_ops.reshape(grad, [-1]),
                               array_ops.reshape(math_ops.reduce_prod(in_shape), [1]))
    return [array_ops.reshape(dense, in_shape), None]
