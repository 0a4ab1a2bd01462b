"""`tf.tensor_scatter_nd_update/add/sub/max/min` (and TF1's `tensor_scatter_update/add/sub`):
a copy of `tensor` with `updates` written or combined at the index tuples `indices`.

The ops are TensorFlow's TensorScatterUpdate/Add/Sub/Max/Min: `indices` is
[..., k] with k <= rank(tensor), `updates` is indices.shape[:-1] + tensor.shape[k:], the
output has the tensor's shape; repeated indices combine in order (update: the last one
wins).  The gradients are TensorFlow's (array_grad.py): the tensor's gradient with the
overwritten slots zeroed (update), passed through (add, sub), or split between ties
(max, min).  Kernels: flowlab.kernels.tensor_scatter_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.array_ops import _dims, _index, _shape_str, _to_tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_max", "tensor_scatter_nd_min", "tensor_scatter_update",
           "tensor_scatter_add", "tensor_scatter_sub"]


def _shape(op: Operation) -> list[Any]:
    t, i, u = _dims(op.inputs[0]), _dims(op.inputs[1]), _dims(op.inputs[2])
    if i is not None and u is not None and i:
        outer = TensorShape(i[:-1])
        k = len(outer)
        if len(u) < k or not outer.is_compatible_with(TensorShape(u[:k])):
            raise ValueError(
                f"Dimensions [0,{k}) of indices[shape={_shape_str(TensorShape(i))}] = "
                f"{_shape_str(outer)} must match dimensions [0,{k}) of updates[shape="
                f"{_shape_str(TensorShape(u))}] = {_shape_str(TensorShape(u[:k]))}")
        if t is not None and i[-1] is not None:
            if i[-1] > len(t):
                raise ValueError(f"Index innermost dimension length must be <= tensor rank; saw: "
                                 f"{i[-1]} vs. {len(t)}")
            want = outer.concatenate(TensorShape(t[i[-1]:]))
            if not want.is_compatible_with(TensorShape(u)):
                raise ValueError(
                    f"Dimensions [{i[-1]},{len(t)}) of input[shape={_shape_str(TensorShape(t))}] must "
                    f"match dimensions [{k},{len(u)}) of updates[shape={_shape_str(TensorShape(u))}]")
    return [op.inputs[0].shape]


for _t in ("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax",
           "TensorScatterMin"):
    op_def(_t, inputs=["tensor: T", "indices: Tindices", "updates: T"], outputs=["output: T"],
           attrs=["T: type", "Tindices: {int16, int32, int64, uint16}", "bad_indices_policy: string = ''"],
           shape_fn=_shape)


def _build(op_type: str, tensor: Any, indices: Any, updates: Any, name: str | None) -> Tensor:
    t = _to_tensor(tensor, "tensor")
    return apply_op(op_type, tensor=t, indices=_index(indices, "indices"),
                    updates=_to_tensor(updates, "updates", dtype=t.dtype.base_dtype), name=name or op_type)


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`tensor` with the slices at `indices` replaced by `updates`.

    >>> tf.tensor_scatter_nd_update([1, 2, 3, 4], [[1], [3]], [9, 8])   # [1, 9, 3, 8]
    """
    return _build("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`tensor` with `updates` added at `indices` (repeated indices add up)."""
    return _build("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`tensor` with `updates` subtracted at `indices`."""
    return _build("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`tensor` with the elementwise maximum of it and `updates` at `indices`."""
    return _build("TensorScatterMax", tensor, indices, updates, name)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """`tensor` with the elementwise minimum of it and `updates` at `indices`."""
    return _build("TensorScatterMin", tensor, indices, updates, name)


# TensorFlow 1.x exports the same functions under these names too.
tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


@gradient("TensorScatterUpdate")
def _update_grad(op: Operation, grad: Tensor) -> list[Any]:
    indices, updates = op.inputs[1], op.inputs[2]
    tensor_grad = tensor_scatter_nd_update(grad, indices, array_ops.zeros_like(updates))
    return [tensor_grad, None, slicing.gather_nd(grad, indices)]


@gradient("TensorScatterAdd")
def _add_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [grad, None, slicing.gather_nd(grad, op.inputs[1])]


@gradient("TensorScatterSub")
def _sub_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [grad, None, math_ops.negative(slicing.gather_nd(grad, op.inputs[1]))]


def _min_or_max_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, indices, y = op.inputs
    z = op.outputs[0]
    x_ind = math_ops.cast(math_ops.equal(x, z), grad.dtype)
    y_out = slicing.gather_nd(z, indices)
    y_ind = math_ops.cast(math_ops.equal(y, y_out), grad.dtype)
    ys_ind = slicing.scatter_nd(indices, y_ind, array_ops.shape(x, out_type=indices.dtype))
    ind = x_ind + ys_ind  # every element is >= 1
    x_grad = (grad * x_ind) / ind
    y_grad = slicing.gather_nd(grad / ind, indices) * y_ind
    return [x_grad, None, y_grad]


gradient("TensorScatterMax")(_min_or_max_grad)
gradient("TensorScatterMin")(_min_or_max_grad)
