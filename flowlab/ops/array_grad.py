"""Gradient functions of the array ops.

Each function has TensorFlow's signature, `fn(op, *output_grads) -> one entry per
input` (None where no gradient flows), and builds the same computation as TensorFlow's
`array_grad.py`, so that `tf.gradients` through reshapes, slices, gathers, concats,
pads and partitions gives TensorFlow's numbers.  The autodiff walk
(`flowlab.ops.gradients_impl`) calls them inside a `gradients/<op>_grad` name scope.

Sparse gradients: GatherV2 along axis 0 and GatherNd with one index column return an
`IndexedSlices` (values, indices, dense_shape) as TensorFlow does; the functions that
cannot use one (Reshape, Tile, Concat, ...) turn it into a dense tensor with a segment
sum first.  `IndexedSlices` is imported lazily: it lives in the autodiff layer.

Helpers that TensorFlow takes from its math family (UnsortedSegmentSum,
BroadcastGradientArgs) are used when declared; otherwise the same values come from ops
of the array family (ScatterNd sums duplicate indices; reduction axes from a
comparison of shapes).  The graph-plumbing core ops (Identity, PlaceholderWithDefault,
Const, Placeholder, NoOp) are registered here too, as TensorFlow does.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops import control_flow_context as cfc
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.math_grad import reduce_gradient_args
from flowlab.ops.op_def import get_op_def

__all__: list[str] = []

# TensorFlow declares Const not differentiable; Placeholder and NoOp have no inputs (no
# gradient in TensorFlow either), but every op must be declared.
for _t in ("Const", "Placeholder", "NoOp"):
    not_differentiable(_t)


# --- helpers ---------------------------------------------------------------------------
def _declared(op_type: str) -> bool:
    try:
        get_op_def(op_type)
    except KeyError:
        return False
    return True


def _is_sparse(g: Any) -> bool:
    return g is not None and not isinstance(g, Tensor) and hasattr(g, "indices") and hasattr(g, "values")


def _indexed_slices(values: Tensor, indices: Tensor, dense_shape: Tensor) -> Any:
    """An IndexedSlices, or its dense value while the autodiff layer lacks the class."""
    try:
        from flowlab.ops.indexed_slices import IndexedSlices
    except ImportError:
        return _segment_sum(values, indices, dense_shape[0])
    return IndexedSlices(values, indices, dense_shape)


def _segment_sum(data: Tensor, ids: Tensor, num: Any) -> Tensor:
    """`unsorted_segment_sum(data, ids, num)` for 1-D `ids` (rows of `data`)."""
    if _declared("UnsortedSegmentSum"):
        return apply_op("UnsortedSegmentSum", data=data, segment_ids=ids,
                        num_segments=num, name="UnsortedSegmentSum")
    it = ids.dtype.base_dtype
    if it not in (dtypes.int32, dtypes.int64):
        ids, it = math_ops.cast(ids, dtypes.int32), dtypes.int32
    num = math_ops.cast(num, it) if isinstance(num, Tensor) else num
    tail = slicing.slice(array_ops.shape(data, out_type=it), [1], [-1])
    out_shape = array_ops.concat([array_ops.reshape(num, [1]), tail], 0)
    return slicing.scatter_nd(array_ops.expand_dims(ids, -1), data, out_shape)


def _dense(g: Any) -> Any:
    """A dense Tensor for a gradient that may be an IndexedSlices (no warning)."""
    if not _is_sparse(g):
        return g
    if g.dense_shape is None:
        raise ValueError(f"Cannot convert an IndexedSlices without dense_shape to a Tensor: {g}")
    dense = _segment_sum(g.values, g.indices, g.dense_shape[0])
    return array_ops.reshape(dense, g.dense_shape)


def _or_zeros(op: Operation, grads: Any) -> list[Tensor]:
    """Output gradients with the unconnected ones (None) replaced by zeros."""
    return [array_ops.zeros_like(op.outputs[i]) if g is None else _dense(g)
            for i, g in enumerate(grads)]


def _reduction_axes(x_shape: Tensor, out_shape: Tensor) -> Tensor:
    """Axes of `out_shape` along which a value of `x_shape` was broadcast."""
    if _declared("BroadcastGradientArgs"):
        return apply_op("BroadcastGradientArgs", s0=x_shape, s1=out_shape,
                        name="BroadcastGradientArgs")[0]
    lead = math_ops.subtract(array_ops.size(out_shape), array_ops.size(x_shape))
    ones = array_ops.fill(array_ops.reshape(lead, [1]), math_ops.cast(1, x_shape.dtype))
    padded = array_ops.concat([ones, x_shape], 0)
    differ = array_ops.where(math_ops.not_equal(padded, out_shape))
    return math_ops.cast(array_ops.reshape(differ, [-1]), dtypes.int32)


def _sum_to_shape(g: Tensor, x_shape: Tensor, out_shape: Tensor) -> Tensor:
    axes = _reduction_axes(x_shape, out_shape)
    return array_ops.reshape(math_ops.reduce_sum(g, axis=axes, keepdims=True), x_shape)


def _reshape_to_input(op: Operation, grad: Any) -> Tensor:
    return array_ops.reshape(_dense(grad), array_ops.shape(op.inputs[0]))


# --- pass-through ----------------------------------------------------------------------
@gradient("Identity")
def _identity_grad(op: Operation, grad: Any) -> Any:
    return [grad]


@gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op: Operation, grad: Any) -> Any:
    return [grad]


# --- shapes ----------------------------------------------------------------------------
@gradient("Reshape")
def _reshape_grad(op: Operation, grad: Any) -> Any:
    # As TensorFlow's _ReshapeGrad: a known rank with exactly one unknown dimension
    # (and no 0) reshapes to the static shape with -1 there, not to a Shape op's value.
    dims = op.inputs[0].shape.as_list() if op.inputs[0].shape.ndims is not None else None
    if dims is not None and dims.count(None) == 1 and 0 not in dims:
        return [array_ops.reshape(_dense(grad), [-1 if d is None else d for d in dims]), None]
    return [_reshape_to_input(op, grad), None]


@gradient("ExpandDims")
def _expand_dims_grad(op: Operation, grad: Any) -> Any:
    return [_reshape_to_input(op, grad), None]


@gradient("Squeeze")
def _squeeze_grad(op: Operation, grad: Any) -> Any:
    return [_reshape_to_input(op, grad)]


@gradient("Transpose")
def _transpose_grad(op: Operation, grad: Any) -> Any:
    inverse = apply_op("InvertPermutation", x=op.inputs[1], name="InvertPermutation")
    return [apply_op("Transpose", x=_dense(grad), perm=inverse, name="transpose"), None]


@gradient("ReverseV2")
def _reverse_grad(op: Operation, grad: Any) -> Any:
    return [apply_op("ReverseV2", tensor=_dense(grad), axis=op.inputs[1], name="ReverseV2"), None]


@gradient("BroadcastTo")
def _broadcast_to_grad(op: Operation, grad: Any) -> Any:
    x, target = op.inputs
    x_shape = array_ops.shape(x, out_type=target.dtype)
    return [_sum_to_shape(_dense(grad), x_shape, target), None]


@gradient("Fill")
def _fill_grad(op: Operation, grad: Any) -> Any:
    return [None, math_ops.reduce_sum(_dense(grad))]


@gradient("Tile")
def _tile_grad(op: Operation, grad: Any) -> Any:
    # Interleave multiples and the input's shape ([m0, d0, m1, d1, ...]), view the
    # gradient so, and sum over the multiples' positions.
    x, multiples = op.inputs
    x_shape = array_ops.shape(x, out_type=multiples.dtype)
    split_shape = array_ops.reshape(array_ops.transpose(array_ops.stack([multiples, x_shape])), [-1])
    axes = math_ops.range(0, array_ops.size(split_shape), 2)
    g = math_ops.reduce_sum(array_ops.reshape(_dense(grad), split_shape), axes)
    g.set_shape(x.shape)
    return [g, None]


# --- joining and splitting ---------------------------------------------------------------
@gradient("Pack")
def _pack_grad(op: Operation, grad: Any) -> Any:
    return array_ops.unstack(_dense(grad), num=op.get_attr("N"), axis=op.get_attr("axis"))


@gradient("Unpack")
def _unpack_grad(op: Operation, *grads: Any) -> Any:
    return [array_ops.stack(_or_zeros(op, grads), axis=op.get_attr("axis"))]


@gradient("Split")
def _split_grad(op: Operation, *grads: Any) -> Any:
    return [None, array_ops.concat(_or_zeros(op, grads), op.inputs[0])]


@gradient("SplitV")
def _split_v_grad(op: Operation, *grads: Any) -> Any:
    return [array_ops.concat(_or_zeros(op, grads), op.inputs[2]), None, None]


def _input_shapes(values: list[Tensor]) -> list[Tensor]:
    # TensorFlow's _ExtractInputShapes: Shape per input while they fold to constants,
    # one ShapeN of all of them from the first that does not.
    shapes = []
    for x in values:
        s = array_ops.shape(x)
        if s.op.type != "Const":
            return array_ops.shape_n(values)
        shapes.append(s)
    return shapes


@gradient("ConcatV2")
def _concat_grad(op: Operation, grad: Any) -> Any:
    values, axis = list(op.inputs[:-1]), op.inputs[-1]
    if _is_sparse(grad):
        return [*_concat_sparse_grad(values, axis, grad), None]
    if axis.op.type == "Const" and cfc.output_context(grad.op) is not cfc.output_context(axis.op):
        # A constant axis from another context (the forward loop): cloned here.
        axis = constant(constant_value(axis), dtype=axis.dtype.base_dtype)
    axis = math_ops.floormod(axis, array_ops.rank(values[0]), name="mod")  # TensorFlow's `axis % rank`
    sizes = _input_shapes(values)
    if len(sizes) > 16:
        # One Split instead of many Slices: the sizes along the concatenation axis.
        along = array_ops.squeeze(slicing.slice(array_ops.stack(sizes, axis=1), array_ops.stack([axis, 0]), [1, -1]))
        parts = array_ops.split(grad, along, axis)
    else:
        offsets = apply_op("ConcatOffset", concat_dim=axis, shape=sizes, name="ConcatOffset")
        parts = [slicing.slice(grad, begin, size) for begin, size in zip(offsets, sizes)]
    return [*parts, None]


def _concat_sparse_grad(values: list[Tensor], axis: Tensor, grad: Any) -> list[Any]:
    """IndexedSlices for each input: its rows (axis 0) or its columns of every row."""
    static = constant_value(axis)
    if static is None:
        raise ValueError("Can only compute IndexedSlices gradient with statically-known concat_dim")
    static = int(static)
    if static < 0:
        rank = values[0].shape.ndims
        if rank is None:
            raise ValueError("Can only compute IndexedSlices gradient with negative concat_dim "
                             "when first value rank is statically-known.")
        static %= rank
    sizes = [array_ops.shape(x) for x in values]
    out: list[Any] = []
    if static > 0:
        # Every input keeps all the rows; its values are a window of grad.values.
        rank_t = array_ops.shape(sizes[0])
        mask = array_ops.concat([array_ops.zeros([static], dtype=dtypes.int32), [1],
                                 array_ops.zeros(math_ops.subtract(rank_t, static + 1), dtype=dtypes.int32)], 0)
        begin: Any = array_ops.zeros(rank_t, dtype=dtypes.int32)
        for size in sizes:
            window = array_ops.concat([[-1], slicing.slice(size, [1], [-1])], 0)
            out.append(_indexed_slices(slicing.slice(grad.values, begin, window), grad.indices, size))
            begin = math_ops.add(begin, math_ops.multiply(size, mask))
        return out
    it = grad.indices.dtype.base_dtype
    start: Any = array_ops.zeros([], dtype=it)
    for size in sizes:
        end = math_ops.add(start, math_ops.cast(size[0], it))
        inside = math_ops.logical_and(math_ops.greater_equal(grad.indices, start),
                                      math_ops.less(grad.indices, end))
        select = array_ops.squeeze(array_ops.where(inside), axis=[1])
        rows = math_ops.subtract(slicing.gather(grad.indices, select), start)
        out.append(_indexed_slices(slicing.gather(grad.values, select), rows, size))
        start = end
    return out


# --- padding -----------------------------------------------------------------------------
def _pad_grad(op: Operation, grad: Any) -> Any:
    x, paddings = op.inputs[0], op.inputs[1]
    before = slicing.slice(paddings, [0, 0], array_ops.stack([array_ops.rank(x), 1]))
    begin = array_ops.reshape(before, [-1])
    x_grad = slicing.slice(_dense(grad), begin, array_ops.shape(x, out_type=begin.dtype))
    return [x_grad] + [None] * (len(op.inputs) - 1)


gradient("Pad")(_pad_grad)
gradient("PadV2")(_pad_grad)  # TensorFlow gives constant_values no gradient


@gradient("MirrorPad")
def _mirror_pad_grad(op: Operation, grad: Any) -> Any:
    return [apply_op("MirrorPadGrad", input=_dense(grad), paddings=op.inputs[1],
                     mode=op.get_attr("mode"), name="MirrorPadGrad"), None]


@gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op: Operation, grad: Any) -> Any:
    return [apply_op("MirrorPad", input=_dense(grad), paddings=op.inputs[1],
                     mode=op.get_attr("mode"), name="MirrorPad"), None]


# --- slicing -----------------------------------------------------------------------------
@gradient("Slice")
def _slice_grad(op: Operation, grad: Any) -> Any:
    x, begin = op.inputs[0], op.inputs[1]
    it = begin.dtype.base_dtype
    out_size = array_ops.shape(op.outputs[0], out_type=it)
    col = array_ops.stack([array_ops.rank(x), 1])
    before = array_ops.reshape(begin, col)
    after = array_ops.reshape(
        math_ops.subtract(math_ops.subtract(array_ops.shape(x, out_type=it), out_size), begin), col)
    paddings = array_ops.concat([before, after], 1)
    return [array_ops.pad(_dense(grad), paddings), None, None]


def _masks(op: Operation) -> dict[str, int]:
    return {m: op.get_attr(m) for m in slicing.MASKS}


def _index32(t: Tensor) -> Tensor:
    # StridedSlice takes int16 bounds; its gradient op does not.
    return math_ops.cast(t, dtypes.int32) if t.dtype.base_dtype is dtypes.int16 else t


@gradient("StridedSlice")
def _strided_slice_grad(op: Operation, grad: Any) -> Any:
    begin, end, strides = (_index32(t) for t in op.inputs[1:])
    x_shape = array_ops.shape(op.inputs[0], out_type=begin.dtype)
    dx = apply_op("StridedSliceGrad", shape=x_shape, begin=begin, end=end, strides=strides,
                  dy=_dense(grad), name="StridedSliceGrad", **_masks(op))
    return [dx, None, None, None]


@gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op: Operation, grad: Any) -> Any:
    begin, end, strides = op.inputs[1:4]
    dy = apply_op("StridedSlice", input=_dense(grad), begin=begin, end=end, strides=strides,
                  name="StridedSlice", **_masks(op))
    return [None, None, None, None, dy]


# --- gathers and scatters ------------------------------------------------------------------
def _batch_indices(params_shape: Tensor, indices: Tensor, batch_dims: int) -> Tensor:
    """`indices` into the rows of params with its first `batch_dims` dims flattened."""
    it = indices.dtype.base_dtype
    shape = math_ops.cast(params_shape, it)
    out = indices
    stride: Any = array_ops.ones([], dtype=it)
    for dim in range(batch_dims, 0, -1):
        size = shape[dim - 1]
        stride = math_ops.multiply(stride, shape[dim])
        offsets = math_ops.multiply(
            math_ops.range(array_ops.zeros([], dtype=it), size, array_ops.ones([], dtype=it)), stride)
        view = array_ops.concat([
            array_ops.ones([dim - 1], dtype=dtypes.int32), array_ops.reshape(math_ops.cast(size, dtypes.int32), [1]),
            array_ops.fill(array_ops.reshape(math_ops.subtract(array_ops.rank(indices), dim), [1]), 1),
        ], 0)
        out = math_ops.add(out, array_ops.reshape(offsets, view))
    return out


def _batch_gather_grad(params_shape: Tensor, values: Tensor, indices: Tensor, batch_dims: int,
                       rows: Tensor) -> Tensor:
    n = array_ops.expand_dims(array_ops.size(indices), 0)
    if batch_dims:
        values_shape = array_ops.shape(values)
        outer = values_shape[:batch_dims]
        inner = values_shape[batch_dims + 1:]
        rows = math_ops.multiply(rows, math_ops.reduce_prod(outer, [0]))
        indices = _batch_indices(params_shape, indices, batch_dims)
        flat_shape = array_ops.concat([[-1], inner], 0)
        values = array_ops.reshape(values, flat_shape)
    g = _segment_sum(values, array_ops.reshape(indices, n), rows)
    if batch_dims:
        g = array_ops.reshape(g, array_ops.concat([outer, flat_shape], 0))
    return g


@gradient("GatherV2")
def _gather_grad(op: Operation, grad: Any) -> Any:
    params, indices, axis = op.inputs
    with op.graph.colocate_with(params.op):
        params_shape = array_ops.shape(params)
    batch_dims = op.get_attr("batch_dims")
    if batch_dims < 0:
        if indices.shape.ndims is None:
            raise ValueError("Currently, it is unsupported to take the gradient of tf.gather when "
                             "batch_dims < 0 and the rank of the indices is unknown. Please pass a "
                             "positive batch_dims or use tf.ensure_shape to update the shape of "
                             "indices when calling tf.gather.")
        batch_dims += indices.shape.ndims
    axis_static = constant_value(axis)
    if axis_static is not None:
        axis_static = int(axis_static)
        if params.shape.ndims is not None:
            axis_static %= max(params.shape.ndims, 1)
        elif axis_static < 0:
            axis_static = None
    grad = _dense(grad)
    n = array_ops.expand_dims(array_ops.size(indices), 0)
    if axis_static == 0 and batch_dims == 0:
        values_shape = array_ops.concat([n, params_shape[1:]], 0)
        values = array_ops.reshape(grad, values_shape)
        return [_indexed_slices(values, array_ops.reshape(indices, n), params_shape), None, None]
    # Move the gathered axis in front of the non-batch dimensions, sum rows, move it back.
    if axis_static is None:
        axis_t = math_ops.floormod(math_ops.cast(axis, dtypes.int32), array_ops.rank(params))
    else:
        axis_t = array_ops.reshape(axis_static, [])
    ax1 = array_ops.reshape(axis_t, [1])
    outer_shape = slicing.slice(params_shape, [0], ax1)
    inner_shape = slicing.slice(params_shape, math_ops.add(ax1, 1), [-1])
    values_shape = array_ops.concat([outer_shape, [-1], inner_shape], 0)
    values_dims = array_ops.size(values_shape)
    axis_dims = array_ops.size(outer_shape)
    batch_axes = math_ops.range(batch_dims)
    between = math_ops.range(batch_dims, axis_dims)
    inner_axes = math_ops.range(math_ops.add(axis_dims, 1), values_dims)
    values = array_ops.reshape(grad, values_shape)
    perm = array_ops.concat([batch_axes, array_ops.reshape(axis_dims, [1]), between, inner_axes], 0)
    moved = array_ops.transpose(values, perm)
    rows = params_shape[axis_t]
    moved_shape = slicing.gather(params_shape, perm)
    g = _batch_gather_grad(moved_shape, moved, indices, batch_dims, rows)
    back = array_ops.concat([batch_axes, math_ops.add(between, 1), [batch_dims], inner_axes], 0)
    return [array_ops.transpose(g, back), None, None]


@gradient("GatherNd")
def _gather_nd_grad(op: Operation, grad: Any) -> Any:
    params, indices = op.inputs
    params_shape = array_ops.shape(params, out_type=indices.dtype)
    grad = _dense(grad)
    if indices.shape.ndims == 2 and indices.shape[-1].value == 1:
        return [_indexed_slices(grad, array_ops.squeeze(indices, axis=-1), params_shape), None]
    return [slicing.scatter_nd(indices, grad, params_shape), None]


@gradient("ScatterNd")
def _scatter_nd_grad(op: Operation, grad: Any) -> Any:
    return [None, slicing.gather_nd(_dense(grad), op.inputs[0]), None]


@gradient("DynamicPartition")
def _dynamic_partition_grad(op: Operation, *grads: Any) -> Any:
    data, partitions = op.inputs
    prefix = array_ops.shape(partitions)
    original = array_ops.reshape(math_ops.range(math_ops.reduce_prod(prefix)), prefix)
    parts = slicing.dynamic_partition(original, partitions, op.get_attr("num_partitions"))
    stitched = slicing.dynamic_stitch(parts, _or_zeros(op, grads))
    return [array_ops.reshape(stitched, array_ops.shape(data)), None]


@gradient("DynamicStitch")
def _dynamic_stitch_grad(op: Operation, grad: Any) -> Any:
    # Each data element receives the gradient of the position it was written to
    # (also where a later index overwrote it, as TensorFlow).
    n = len(op.inputs) // 2
    grad = _dense(grad)
    return [None] * n + [slicing.gather(grad, op.inputs[i]) for i in range(n)]


# --- selection ---------------------------------------------------------------------------
@gradient("Select")
def _select_grad(op: Operation, grad: Any) -> Any:
    c, x = op.inputs[0], op.inputs[1]
    grad = _dense(grad)
    zeros = array_ops.zeros_like(x)
    return [None, apply_op("Select", condition=c, t=grad, e=zeros, name="Select"),
            apply_op("Select", condition=c, t=zeros, e=grad, name="Select")]


@gradient("SelectV2")
def _select_v2_grad(op: Operation, grad: Any) -> Any:
    # TensorFlow 2.21's _SelectGradV2: each branch summed back over the axes it was
    # broadcast along, decided statically where the shapes allow (no
    # BroadcastGradientArgs then, as a scalar branch of dropout's where_v2).
    c, x, y = op.inputs
    z = op.outputs[0]
    grad = _dense(grad)
    zeros = array_ops.zeros([], dtype=grad.dtype.base_dtype)
    gx = apply_op("SelectV2", condition=c, t=grad, e=zeros, name="SelectV2")
    gy = apply_op("SelectV2", condition=c, t=zeros, e=grad, name="SelectV2")
    gx, _ = reduce_gradient_args(x, z, gx, None)
    gy, _ = reduce_gradient_args(y, z, gy, None)
    return [None, gx, gy]
