"""Ops whose output is their input's data, checked or reinterpreted: `tf.ensure_shape`
(EnsureShape: the static shape merged with the expected one at build time, checked
again at run time), `tf.bitcast` (Bitcast: the same bytes as another dtype, adding or
dropping the innermost dimension when the element sizes differ) and `tf.identity_n`
(IdentityN, declared in custom_gradient.py, several tensors at once).

EnsureShape's gradient is the gradient; Bitcast is not differentiable (TensorFlow's
registrations).  Kernels: flowlab.kernels.tensor_view_kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["ensure_shape", "bitcast", "identity_n"]


def _ensure_shape_fn(op: Operation) -> list[Any]:
    want = TensorShape(op.get_attr("shape"))
    have = op.inputs[0].shape
    try:
        return [have.merge_with(want)]
    except ValueError:
        raise ValueError(f"Shapes are {want} and {have}: the input's static shape does not match "
                         "the expected shape") from None


def _size(dt: dtypes.DType) -> int:
    return int(np.dtype(dt.as_numpy_dtype).itemsize)


def _bitcast_fn(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    src, dst = _size(op.get_attr("T")), _size(op.get_attr("type"))
    if s.ndims is None:
        return [TensorShape(None)]
    if src == dst:
        return [s]
    if src > dst:
        return [s.concatenate([src // dst])]
    if s.ndims == 0:
        raise ValueError(f"Cannot bitcast from {src} to {dst} due to shape. Shape must be at least rank 1")
    last = s.dims[-1]
    last = getattr(last, "value", last)
    if last is not None and last != dst // src:
        raise ValueError(f"Cannot bitcast from {src} to {dst} due to shape. {last} does not match {dst // src}")
    return [s[:-1]]


op_def("EnsureShape", inputs=["input: T"], outputs=["output: T"], attrs=["shape: shape", "T: type"],
       shape_fn=_ensure_shape_fn)
_NUMS = "{float16, float32, float64, int64, int32, uint8, uint16, uint32, uint64, int8, int16, complex64, complex128}"
op_def("Bitcast", inputs=["input: T"], outputs=["output: type"], attrs=[f"T: {_NUMS}", f"type: {_NUMS}"],
       shape_fn=_bitcast_fn)
not_differentiable("Bitcast")


@gradient("EnsureShape")
def _ensure_shape_grad(op: Operation, grad: Tensor) -> Any:
    return [grad]


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """`x`, whose shape must be compatible with `shape` (None entries match anything):
    a ValueError now when the static shapes disagree, an InvalidArgumentError at run time.

    >>> tf.ensure_shape(tf.placeholder(tf.float32, [None, 3]), [8, 3]).shape   # (8, 3)
    """
    t = convert_to_tensor(x, name="x")
    return apply_op("EnsureShape", input=t, shape=TensorShape(shape), name=name or "EnsureShape")


def bitcast(input: Any, type: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The bytes of `input` read as `type` (no copy of values, no rounding).

    >>> tf.bitcast(tf.constant(1.0), tf.int32)   # 1065353216
    """
    t = convert_to_tensor(input, name="input")
    return apply_op("Bitcast", input=t, type=dtypes.as_dtype(type), name=name or "Bitcast")


def identity_n(input: Any, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """Each tensor of the list `input`, unchanged (one IdentityN op)."""
    ts = [convert_to_tensor(x) for x in input]
    return apply_op("IdentityN", input=ts, name=name or "IdentityN")
