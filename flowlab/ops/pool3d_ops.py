"""3-D pooling (`tf.nn.max_pool3d`, `tf.nn.avg_pool3d`) and its gradient ops, as
TensorFlow declares them: MaxPool3D / AvgPool3D over [n, d, h, w, c] (NDHWC; NCDHW is
declared but, as on TensorFlow's CPU, not computed), MaxPool3DGrad, AvgPool3DGrad and
MaxPool3DGradGrad.  TensorFlow's 3-D max-pool gradient sends a window's gradient to
every element equal to the maximum (ties included), unlike the 2-D one; its gradient
(MaxPool3DGradGrad) reads the first maximum only.  Kernels:
flowlab.kernels.pool3d_kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_value
from flowlab.ops.conv3d_ops import _rank5, _spatial
from flowlab.ops.conv_ops import output_size
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["max_pool3d", "avg_pool3d"]


def _check(op: Operation) -> tuple[str, str]:
    padding = op.get_attr("padding")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Attr 'padding' of '{op.type}' Op passed string '{padding}' not in: \"SAME\", \"VALID\".")
    fmt = op.get_attr("data_format")
    if fmt not in ("NDHWC", "NCDHW"):
        raise ValueError(f"Attr 'data_format' of '{op.type}' Op passed string '{fmt}' not in: \"NDHWC\", \"NCDHW\".")
    for attr in ("ksize", "strides"):
        if len(op.get_attr(attr)) != 5:
            raise ValueError(f"{attr} must be a 5-vector, got {len(op.get_attr(attr))} values")
    return padding, fmt


def _pool3d_shape(op: Operation) -> list[Any]:
    padding, fmt = _check(op)
    x = _rank5(op.inputs[0].shape)
    k = _spatial(op.get_attr("ksize"), fmt)
    s = _spatial(op.get_attr("strides"), fmt)
    sizes = _spatial(x, fmt)
    out = [output_size(sizes[i], k[i], s[i], 1, padding)[0] for i in range(3)]
    n, c = (x[0], x[1]) if fmt == "NCDHW" else (x[0], x[4])
    return [[n, c, *out] if fmt == "NCDHW" else [n, *out, c]]


def _first_shape(op: Operation) -> list[Any]:
    _check(op)
    return [_rank5(op.inputs[0].shape)]


_WINDOW = ["ksize: list(int)", "strides: list(int)", "padding: string", "data_format: string = 'NDHWC'"]
op_def("MaxPool3D", inputs=["input: T"], outputs=["output: T"], attrs=_WINDOW + ["T: {float16, float32}"],
       shape_fn=_pool3d_shape, doc="3-D max pooling.")
op_def("AvgPool3D", inputs=["input: T"], outputs=["output: T"], attrs=_WINDOW + ["T: {float16, float32, float64}"],
       shape_fn=_pool3d_shape, doc="3-D average pooling (padding not counted).")
op_def("MaxPool3DGrad", inputs=["orig_input: TInput", "orig_output: TInput", "grad: T"], outputs=["output: T"],
       attrs=_WINDOW + ["T: {float16, float32} = float32", "TInput: {float16, float32} = float32"],
       shape_fn=_first_shape, doc="Gradient of MaxPool3D: to every maximum of each window.")
op_def("AvgPool3DGrad", inputs=["orig_input_shape: int32", "grad: T"], outputs=["output: T"],
       attrs=_WINDOW + ["T: {float16, float32, float64}"],
       shape_fn=lambda op: _avg_grad_shape(op),
       doc="Gradient of AvgPool3D.")
op_def("MaxPool3DGradGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"], outputs=["output: T"],
       attrs=_WINDOW + ["T: {float32, float64, int32, int64, uint8, int16, int8, uint16, float16}"],
       shape_fn=lambda op: (_check(op), [_rank5(op.inputs[1].shape)])[1],
       doc="Gradient of MaxPool3DGrad: grad (input-shaped) read at each window's first maximum.")


def _avg_grad_shape(op: Operation) -> list[Any]:
    _check(op)
    v = constant_value(op.inputs[0])
    return [[None] * 5 if v is None else [int(d) for d in np.asarray(v).reshape(-1)]]


def _attrs(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in ("ksize", "strides", "padding", "data_format")}


@gradient("MaxPool3D")
def _max_pool3d_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [apply_op("MaxPool3DGrad", orig_input=op.inputs[0], orig_output=op.outputs[0], grad=grad,
                     name="MaxPool3DGrad", **_attrs(op))]


@gradient("AvgPool3D")
def _avg_pool3d_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [apply_op("AvgPool3DGrad", orig_input_shape=array_ops.shape(op.inputs[0]), grad=grad,
                     name="AvgPool3DGrad", **_attrs(op))]


@gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [None, apply_op("AvgPool3D", input=grad, name="AvgPool3D", **_attrs(op))]


@gradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [array_ops.zeros_like(x), array_ops.zeros_like(y),
            apply_op("MaxPool3DGradGrad", orig_input=x, orig_output=y, grad=grad, name="MaxPool3DGradGrad",
                     **_attrs(op))]


@gradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [array_ops.zeros_like(x), array_ops.zeros_like(y),
            apply_op("MaxPool3DGrad", orig_input=x, orig_output=y, grad=grad, name="MaxPool3DGrad", **_attrs(op))]


def _five(v: Any, name: str, data_format: str) -> list[int]:
    vals = [int(x) for x in np.asarray(v).reshape(-1)]
    if len(vals) == 1:
        vals = vals * 3
    if len(vals) == 3:
        return [1, 1, *vals] if data_format.startswith("NC") else [1, *vals, 1]
    if len(vals) == 5:
        return vals
    raise ValueError(f"{name} should be of length 1, 3 or 5. Received: {name}={v} of length {len(vals)}")


def _pool(op_type: str, input: Any, ksize: Any, strides: Any, padding: str, data_format: str,  # noqa: A002
          name: str | None) -> Tensor:
    return apply_op(op_type, input=input, ksize=_five(ksize, "ksize", data_format),
                    strides=_five(strides, "strides", data_format), padding=padding, data_format=data_format,
                    name=name or op_type)


def max_pool3d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NDHWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """`tf.nn.max_pool3d` over [n, d, h, w, c]."""
    return _pool("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NDHWC",  # noqa: A002
               name: str | None = None) -> Tensor:
    """`tf.nn.avg_pool3d` over [n, d, h, w, c] (padding elements not counted)."""
    return _pool("AvgPool3D", input, ksize, strides, padding, data_format, name)
