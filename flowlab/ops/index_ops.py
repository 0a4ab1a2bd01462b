"""Index arithmetic: `tf.unravel_index` (the UnravelIndex op: flat indices to
coordinates in a shape), and two of TensorFlow's composites, `tf.batch_gather` (a
gather per leading batch entry, through flat indices) and `tf.repeat` (each element
repeated along an axis, through sequence_mask + boolean_mask), built with TensorFlow's
graphs so that values, shapes and gradients match.  Kernel: flowlab.kernels.index_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.array_ops import _INDEX, _name_scope, _to_tensor
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["unravel_index", "batch_gather", "repeat"]


def _unravel_shape(op: Operation) -> list[Any]:
    i, d = op.inputs[0].shape, op.inputs[1].shape
    if d.ndims is not None and d.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {d.ndims}")
    if i.ndims is not None and i.ndims > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {i.ndims}")
    n = d.dims[0] if d.ndims else None
    n = getattr(n, "value", n)
    if i.ndims == 0:
        return [TensorShape([n])]
    if i.ndims == 1:
        return [TensorShape([n, getattr(i.dims[0], "value", i.dims[0])])]
    return [TensorShape(None)]


op_def("UnravelIndex", inputs=["indices: Tidx", "dims: Tidx"], outputs=["output: Tidx"],
       attrs=[f"Tidx: {_INDEX} = int32"], shape_fn=_unravel_shape)
not_differentiable("UnravelIndex")


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """The coordinates in an array of shape `dims` of the flat (row-major) `indices`:
    [len(dims)] for a scalar index, [len(dims), n] for n of them.

    >>> tf.unravel_index([5, 7], [3, 4])   # [[1, 1], [1, 3]]
    """
    i = _to_tensor(indices, "indices")
    return apply_op("UnravelIndex", indices=i, dims=_to_tensor(dims, "dims", dtype=i.dtype.base_dtype),
                    name=name or "UnravelIndex")


def batch_gather(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """`result[b..., i...] = params[b..., indices[b..., i...]]` over the leading
    rank(indices) - 1 batch dimensions (TensorFlow 1.x's `tf.batch_gather`)."""
    with _name_scope(name, "BatchGather"):
        params = convert_to_tensor(params, name="params")
        indices = convert_to_tensor(indices, name="indices")
        batch_dims = indices.shape.ndims - 1
        if batch_dims == 0:
            return slicing.gather(params, indices)
        indices_shape = array_ops.shape(indices)
        params_shape = array_ops.shape(params)
        batch_indices = indices
        idt = indices.dtype.base_dtype
        accum = array_ops.ones((), dtype=idt)
        casted = math_ops.cast(params_shape, idt)
        for dim in range(batch_dims, 0, -1):
            dim_value = casted[dim - 1]
            accum = accum * casted[dim]
            dim_indices = math_ops.range(array_ops.zeros((), dtype=idt), dim_value, array_ops.ones((), dtype=idt))
            dim_indices = dim_indices * accum
            dim_shape = array_ops.stack([1] * (dim - 1) + [dim_value] + [1] * (indices.shape.ndims - dim), axis=0)
            batch_indices = batch_indices + array_ops.reshape(dim_indices, dim_shape)
        flat_indices = array_ops.reshape(batch_indices, [-1])
        outer_shape = params_shape[batch_dims + 1:]
        flat_inner = math_ops.reduce_prod(params_shape[:batch_dims + 1], [0], False)
        flat_params = array_ops.reshape(params, array_ops.concat([[flat_inner], outer_shape], axis=0))
        flat_result = slicing.gather(flat_params, flat_indices)
        result = array_ops.reshape(flat_result, array_ops.concat([indices_shape, outer_shape], axis=0))
        final = indices.shape[:batch_dims].merge_with(params.shape[:batch_dims])
        final = final.concatenate(indices.shape[batch_dims:]).concatenate(params.shape[batch_dims + 1:])
        result.set_shape(final)
        return result


def _tile_one_dimension(data: Tensor, axis: int, multiple: Any) -> Tensor:
    if data.shape.ndims is not None:
        multiples = [1] * data.shape.ndims
        multiples[axis] = multiple
    else:
        ones = array_ops.ones_like(array_ops.shape(data))
        multiples = array_ops.concat([ones[:axis], [multiple], ones[axis + 1:]], axis=0)
    return array_ops.tile(data, multiples)


def _repeat_with_axis(data: Tensor, repeats: Tensor, axis: int) -> Tensor:
    data_shape = array_ops.shape(data, out_type=repeats.dtype)
    ndims = data.shape.ndims
    if axis < 0:
        axis += ndims
    if not 0 <= axis < ndims:
        raise ValueError(f"axis={axis - ndims if axis < 0 else axis} out of bounds: expected "
                         f"{-ndims}<=axis<{ndims}")
    if repeats.shape.num_elements() == 1:
        repeats = array_ops.reshape(repeats, [])
        expanded = array_ops.expand_dims(data, axis + 1)
        tiled = _tile_one_dimension(expanded, axis + 1, repeats)
        result_shape = array_ops.concat([data_shape[:axis], [repeats * data_shape[axis]], data_shape[axis + 1:]],
                                        axis=0)
        return array_ops.reshape(tiled, result_shape)
    repeats = array_ops.broadcast_to(repeats, [data_shape[axis]])
    repeats_original = repeats
    max_repeat = math_ops.maximum(array_ops.zeros((), repeats.dtype), math_ops.reduce_max(repeats))
    mask = array_ops.sequence_mask(repeats, max_repeat)
    expanded = array_ops.expand_dims(data, axis + 1)
    tiled = _tile_one_dimension(expanded, axis + 1, max_repeat)
    masked = slicing.boolean_mask(tiled, mask, axis=axis)
    if axis == 0:
        return masked
    size = math_ops.reduce_sum(repeats_original)
    result_shape = array_ops.concat([data_shape[:axis], [size], data_shape[axis + 1:]], axis=0)
    return array_ops.reshape(masked, result_shape)


def repeat(input: Any, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Each element of `input` (flattened when `axis` is None) repeated along `axis`.

    >>> tf.repeat([[1, 2], [3, 4]], repeats=[2, 3], axis=0)   # [[1 2] [1 2] [3 4] [3 4] [3 4]]
    """
    with _name_scope(name, "Repeat"):
        data = convert_to_tensor(input, name="input")
        reps = math_ops.cast(convert_to_tensor(repeats, name="repeats"), dtypes.int32)
        if axis is None:
            data = array_ops.reshape(data, [-1])
            axis = 0
        return _repeat_with_axis(data, reps, axis)
