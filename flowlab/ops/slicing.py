"""Indexing ops: Slice, StridedSlice (`x[...]`), gathers, scatters, partitions.

`_slice_helper(tensor, key)` turns Python's indexing syntax (ints, negative ints,
slices with steps, Ellipsis, None / tf.newaxis, scalar int Tensors, boolean masks) into
one StridedSlice op named "strided_slice", as TensorFlow's `Tensor.__getitem__`.

`strided_slice_plan(rank, n, masks)` is the one reading of a sparse StridedSlice spec
(which input dimension each of the n spec entries consumes); the shape function and
the CPU kernel both use it, so static and runtime shapes agree.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape
from flowlab.ops.array_ops import (
    _dims,
    _index,
    _int_list,
    _name_scope,
    _register_folding,
    _shape_arg,
    _shape_str,
    _to_tensor,
    concat,
    ones_like,
    reshape,
    shape,
    squeeze,
    where,
)
from flowlab.ops.builder import apply_op
from flowlab.ops.const_fold import constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.op_def import get_op_def, op_def

__all__ = [
    "slice", "strided_slice", "gather", "gather_nd", "scatter_nd", "dynamic_partition",
    "dynamic_stitch", "boolean_mask",
]

MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


# --- StridedSlice: the spec, read once --------------------------------------------------
def strided_slice_plan(rank: int, n: int, masks: dict[str, int]) -> list[tuple[str, int, int]]:
    """One entry per output-producing or consuming position, in order:
    ("full", -1, dim) for a dimension covered by an (explicit or implicit) ellipsis,
    ("new", i, -1) for a new axis, ("shrink", i, dim) and ("slice", i, dim) for spec
    entry i applied to input dimension dim.  ValueError when the spec does not fit."""
    ell = [i for i in range(n) if masks["ellipsis_mask"] >> i & 1]
    if len(ell) > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    kinds = []
    for i in range(n):
        if masks["ellipsis_mask"] >> i & 1:
            kinds.append("...")
        elif masks["new_axis_mask"] >> i & 1:
            kinds.append("new")
        elif masks["shrink_axis_mask"] >> i & 1:
            kinds.append("shrink")
        else:
            kinds.append("slice")
    if not ell:
        kinds.append("...")
    consuming = sum(1 for k in kinds if k in ("shrink", "slice"))
    cover = builtins.max(rank - consuming, 0)
    plan: list[tuple[str, int, int]] = []
    dim = 0
    for i, k in enumerate(kinds):
        if k == "...":
            for _ in range(cover):
                plan.append(("full", -1, dim))
                dim += 1
        elif k == "new":
            plan.append(("new", i, -1))
        else:
            if dim >= rank:
                raise ValueError(f"Index out of range using input dim {dim}; input has only {rank} dims")
            plan.append((k, i, dim))
            dim += 1
    return plan


def slice_length(d: int | None, b: int | None, e: int | None, s: int | None,
                 begin_masked: bool, end_masked: bool) -> int | None:
    """Length of one sliced dimension (None when not statically known)."""
    if s is None or d is None:
        return None
    if (b is None and not begin_masked) or (e is None and not end_masked):
        return None
    start = None if begin_masked else b
    stop = None if end_masked else e
    return len(range(*builtins.slice(start, stop, s).indices(d)))


def _partial_vector(t: Tensor) -> list[int | None] | None:
    full = _int_list(t)
    if full is not None:
        return full  # type: ignore[return-value]
    if t.op.type == "Pack":
        out: list[int | None] = []
        for x in t.op.inputs:
            v = constant_value(x)
            out.append(None if v is None else int(v))
        return out
    if t.shape.ndims == 1 and t.shape[0].value is not None:
        return [None] * t.shape[0].value
    return None


def _strided_slice_fn(op: Operation) -> list[Any]:
    x = op.inputs[0]
    b, e, s = (_partial_vector(t) for t in op.inputs[1:])
    for t in op.inputs[1:]:
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}")
    d = _dims(x)
    lens = {len(v) for v in (b, e, s) if v is not None}
    if len(lens) > 1:
        raise ValueError("Expected begin, end, and strides to be 1D equal size tensors, "
                         f"but got shapes {[len(v) for v in (b, e, s) if v is not None]}")
    if d is None or not lens:
        return [TensorShape(None)]
    n = lens.pop()
    b = b or [None] * n
    e = e or [None] * n
    s = s or [None] * n
    masks = {m: op.get_attr(m) for m in MASKS}
    out: list[int | None] = []
    for kind, i, dim in strided_slice_plan(len(d), n, masks):
        if kind == "full":
            out.append(d[dim])
        elif kind == "new":
            out.append(1)
        elif kind == "shrink":
            bi = b[i]
            if bi is not None and d[dim] is not None and not -d[dim] <= bi < d[dim]:
                raise ValueError(f"slice index {bi} of dimension {dim} out of bounds.")
        else:
            if s[i] == 0:
                raise ValueError(f"strides[{i}] must be non-zero")
            out.append(slice_length(d[dim], b[i], e[i], s[i], bool(masks["begin_mask"] >> i & 1),
                                    bool(masks["end_mask"] >> i & 1)))
    return [TensorShape(out)]


def _slice_fn(op: Operation) -> list[Any]:
    x, b_t, s_t = op.inputs
    d = _dims(x)
    b, sz = _partial_vector(b_t), _partial_vector(s_t)
    r = len(d) if d is not None else (len(b) if b is not None else (len(sz) if sz is not None else None))
    if r is None:
        return [TensorShape(None)]
    for v, what in ((b, "begin"), (sz, "size")):
        if v is not None and len(v) != r:
            raise ValueError(f"Expected {what} to be a vector of length {r}, got {len(v)}")
    out: list[int | None] = []
    for i in range(r):
        di = d[i] if d is not None else None
        bi = b[i] if b is not None else None
        si = sz[i] if sz is not None else None
        if si is not None and si != -1:
            if si < -1:
                raise ValueError(f"Expected size[{i}] >= -1, but got {si}")
            out.append(si)
        elif si == -1 and bi is not None and di is not None:
            out.append(di - bi)
        else:
            out.append(None)
    return [TensorShape(out)]


def _gather_fn(op: Operation) -> list[Any]:
    p, i = _dims(op.inputs[0]), _dims(op.inputs[1])
    a = constant_value(op.inputs[2])
    bd = op.get_attr("batch_dims")
    if p is None or i is None:
        return [TensorShape(None)]
    if bd < 0:
        bd += len(i)
    if a is None:
        return [TensorShape([None] * (len(p) + len(i) - 1 - bd))]
    a = int(a)
    if not -len(p) <= a < len(p):
        raise ValueError(f"Shape must be at least rank {a + 1} but is rank {len(p)}")
    a %= len(p)
    if bd > len(i) or bd > a:
        raise ValueError(f"batch_dims ({bd}) must be less than or equal to rank(indices) ({len(i)}) "
                         f"and axis ({a})")
    return [TensorShape(p[:a] + i[bd:] + p[a + 1:])]


def _gather_nd_fn(op: Operation) -> list[Any]:
    p, i = _dims(op.inputs[0]), _dims(op.inputs[1])
    if p is None or i is None:
        return [TensorShape(None)]
    if not i:
        raise ValueError("indices must be at least a vector (rank >= 1)")
    k = i[-1]
    if k is None:
        return [TensorShape(None)]
    if k > len(p):
        raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         f"{_shape_str(op.inputs[1].shape)} and params shape: "
                         f"{_shape_str(op.inputs[0].shape)}")
    return [TensorShape(i[:-1] + p[k:])]


def _scatter_nd_fn(op: Operation) -> list[Any]:
    from flowlab.ops.array_ops import constant_value_as_shape

    out = constant_value_as_shape(op.inputs[2])
    i, u = _dims(op.inputs[0]), _dims(op.inputs[1])
    if i is not None and u is not None and i:
        outer = TensorShape(i[:-1])
        if len(u) < len(outer) or not outer.is_compatible_with(TensorShape(u[: len(outer)])):
            k = len(outer)
            raise ValueError(
                f"Dimensions [0,{k}) of indices[shape={_shape_str(TensorShape(i))}] = "
                f"{_shape_str(outer)} must match dimensions [0,{k}) of updates[shape="
                f"{_shape_str(TensorShape(u))}] = {_shape_str(TensorShape(u[:k]))}")
        if out.ndims is not None and i[-1] is not None:
            want = outer.concatenate(out[i[-1]:])
            if not want.is_compatible_with(TensorShape(u)):
                raise ValueError(
                    f"Dimensions [{i[-1]},{out.ndims}) of input[shape={_shape_str(out)}] must "
                    f"match dimensions [{len(outer)},{len(u)}) of updates[shape="
                    f"{_shape_str(TensorShape(u))}]")
    return [out]


def _dynamic_partition_fn(op: Operation) -> list[Any]:
    d, p = _dims(op.inputs[0]), _dims(op.inputs[1])
    n = op.get_attr("num_partitions")
    if d is None or p is None:
        return [TensorShape(None)] * n
    for a, b in zip(d, p):
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    if len(p) > len(d):
        raise ValueError(f"Shape must be at least rank {len(p)} but is rank {len(d)}")
    return [TensorShape([None] + d[len(p):])] * n


def _dynamic_stitch_fn(op: Operation) -> list[Any]:
    n = len(op.inputs) // 2
    idx, data = op.inputs[:n], op.inputs[n:]
    inner = None
    for it, dt in zip(idx, data):
        i, d = _dims(it), _dims(dt)
        if i is None or d is None:
            continue
        if not TensorShape(d[: len(i)]).is_compatible_with(TensorShape(i)):
            raise ValueError(f"Dimensions must be equal: indices {it.shape} is not a prefix of data {dt.shape}")
        s = TensorShape(d[len(i):])
        inner = s if inner is None else inner.merge_with(s)
    values = [constant_value(t) for t in idx]
    first = None
    if all(v is not None for v in values):
        first = builtins.max([int(np.max(v)) for v in values if np.size(v)] or [-1]) + 1
    if inner is None:
        return [TensorShape(None)]
    return [TensorShape([first]).concatenate(inner)]


op_def("Slice", inputs=["input: T", "begin: Index", "size: Index"], outputs=["output: T"],
       attrs=["T: type", "Index: {int32, int64}"], shape_fn=_slice_fn)
op_def("StridedSlice", inputs=["input: T", "begin: Index", "end: Index", "strides: Index"],
       outputs=["output: T"],
       attrs=["T: type", "Index: {int16, int32, int64}"] + [f"{m}: int = 0" for m in MASKS],
       shape_fn=_strided_slice_fn)
op_def("GatherV2", inputs=["params: Tparams", "indices: Tindices", "axis: Taxis"],
       outputs=["output: Tparams"],
       attrs=["batch_dims: int = 0", "Tparams: type", "Tindices: {int16, int32, int64}",
              "Taxis: {int32, int64}"], shape_fn=_gather_fn)
op_def("GatherNd", inputs=["params: Tparams", "indices: Tindices"], outputs=["output: Tparams"],
       attrs=["Tparams: type", "Tindices: {int16, int32, int64}", "bad_indices_policy: string = ''"],
       shape_fn=_gather_nd_fn)
op_def("ScatterNd", inputs=["indices: Tindices", "updates: T", "shape: Tindices"], outputs=["output: T"],
       attrs=["T: type", "Tindices: {int16, int32, int64}", "bad_indices_policy: string = ''"],
       shape_fn=_scatter_nd_fn)
op_def("DynamicPartition", inputs=["data: T", "partitions: int32"],
       outputs=["outputs: num_partitions * T"], attrs=["num_partitions: int >= 1", "T: type"],
       shape_fn=_dynamic_partition_fn)
op_def("DynamicStitch", inputs=["indices: N * int32", "data: N * T"], outputs=["merged: T"],
       attrs=["N: int >= 1", "T: type"], shape_fn=_dynamic_stitch_fn)



def _strided_slice_grad_fn(op: Operation) -> list[Any]:
    from flowlab.ops.array_ops import constant_value_as_shape

    return [constant_value_as_shape(op.inputs[0])]


op_def("StridedSliceGrad", inputs=["shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"],
       outputs=["output: T"],
       attrs=["T: type", "Index: {int32, int64}"] + [f"{m}: int = 0" for m in MASKS],
       shape_fn=_strided_slice_grad_fn, doc="Zeros of `shape` with `dy` at the slice (StridedSlice's gradient).")

_register_folding("StridedSlice", "Slice", "GatherV2")


# --- builders --------------------------------------------------------------------------
def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """`size[i]` elements from `begin[i]` in each dimension (-1: to the end)."""
    b = _index(begin, "begin")
    return apply_op("Slice", input=_to_tensor(input_, "input"), begin=b,
                    size=_index(size, "size", like=b), name=name or "Slice")


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None, name: str | None = None) -> Tensor:
    """The StridedSlice op (what `x[...]` builds); strides default to ones."""
    if strides is None:  # TensorFlow's ones_like(begin), begin as given (`ones_like/tensor`)
        strides = ones_like(begin)
    b = _index(begin, "begin")
    return apply_op(
        "StridedSlice", input=_to_tensor(input_, "input"), begin=b, end=_index(end, "end", like=b),
        strides=_index(strides, "strides", like=b), begin_mask=begin_mask, end_mask=end_mask,
        ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_axis_mask,
        name=name or "StridedSlice",
    )


def _index_error(idx: Any) -> TypeError:
    return TypeError(
        "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar tf.int32/"
        f"tf.int64 tensors are valid indices, got {idx!r}"
    )


def _check_index(idx: Any) -> None:
    if isinstance(idx, Tensor):
        if idx.dtype.base_dtype not in (dtypes.int32, dtypes.int64, dtypes.int16) or idx.shape.ndims == 1:
            raise _index_error(idx)
        return
    if isinstance(idx, np.ndarray) and idx.ndim == 0 and idx.dtype.kind in "iu":
        return
    if isinstance(idx, (bool, np.bool_)) or not isinstance(idx, (int, np.integer, Dimension)):
        raise _index_error(idx)


def _bound(v: Any) -> Any:
    if isinstance(v, Dimension):
        return v.value
    return v


def _slice_helper(tensor: Any, slice_spec: Any, var: Any = None) -> Tensor:
    """`tensor[slice_spec]` as TensorFlow builds it: one StridedSlice named
    "strided_slice" (or a boolean_mask for a boolean key).

    >>> x[1:, ::-1, tf.newaxis, ..., 0]
    """
    if isinstance(slice_spec, (bool, np.bool_)) or (
        isinstance(slice_spec, Tensor) and slice_spec.dtype.base_dtype is dtypes.bool
    ) or (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == np.bool_):
        return boolean_mask(tensor, slice_spec)
    if not isinstance(slice_spec, (list, builtins.tuple)):
        slice_spec = [slice_spec]
    begin: list[Any] = []
    end: list[Any] = []
    strides: list[Any] = []
    masks = dict.fromkeys(MASKS, 0)
    for index, s in enumerate(slice_spec):
        bit = 1 << index
        if isinstance(s, builtins.slice):
            # A missing start/stop is 0 plus its mask bit; a missing step is 1.
            for value, out, default, mask in ((s.start, begin, 0, "begin_mask"),
                                              (s.stop, end, 0, "end_mask"),
                                              (s.step, strides, 1, None)):
                value = _bound(value)
                if value is not None:
                    _check_index(value)
                    out.append(value)
                else:
                    out.append(default)
                    if mask is not None:
                        masks[mask] |= bit
        elif s is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask"] |= bit
        elif s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["new_axis_mask"] |= bit
        else:
            _check_index(s)
            begin.append(s)
            if isinstance(s, Tensor):
                end.append(s + 1)  # TensorFlow's `s + 1`: AddV2 "add" with its Const "add/y"
            else:
                end.append(int(s) + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    with _name_scope(None, "strided_slice") as scope:
        if begin:
            bounds = begin + end + strides
            wide = any(v.dtype.base_dtype is dtypes.int64 if isinstance(v, Tensor)
                       else not -(2**31) <= int(v) < 2**31 for v in bounds)
            dt = dtypes.int64 if wide else dtypes.int32
            packed = [_pack_bounds(v, what, dt) for v, what in ((begin, "stack"), (end, "stack_1"),
                                                                 (strides, "stack_2"))]
        else:
            packed = [constant([], dtype=dtypes.int32, name="Const")] * 3
        x = tensor.value() if not isinstance(tensor, Tensor) and hasattr(tensor, "value") else tensor
        return apply_op("StridedSlice", input=_to_tensor(x, "input"), begin=packed[0], end=packed[1],
                        strides=packed[2], name=scope, **masks)


def _pack_bounds(values: list[Any], name: str, dt: dtypes.DType) -> Tensor:
    """One index vector; int64 when any bound is an int64 Tensor (others are cast)."""
    if not any(isinstance(v, Tensor) for v in values):
        return constant([int(v) for v in values], dtype=dt, name=name)
    elems = []
    for v in values:
        if not isinstance(v, Tensor):
            elems.append(constant(int(v), dtype=dt))
        elif v.dtype.base_dtype is not dt:
            elems.append(apply_op("Cast", x=v, DstT=dt, name="Cast"))
        else:
            elems.append(v)
    return apply_op("Pack", values=elems, axis=0, name=name)


def gather(params: Any, indices: Any, validate_indices: Any = None, name: str | None = None,
           axis: Any = None, batch_dims: int = 0) -> Tensor:
    """Slices of `params` along `axis` at `indices` (GatherV2)."""
    if axis is None:
        axis = batch_dims
    p = params.value() if not isinstance(params, Tensor) and hasattr(params, "value") else params
    # An empty Python list reaches the op as is: GatherV2's Tindices has no default, so
    # it converts as float32 and fails with TensorFlow's TypeError.
    return apply_op("GatherV2", params=_to_tensor(p, "params"), indices=_shape_arg(indices, "indices"),
                    axis=_index(axis, "axis"), batch_dims=batch_dims, name=name or "GatherV2")


def gather_nd(params: Any, indices: Any, name: str | None = None, batch_dims: int = 0) -> Tensor:
    """Slices of `params` at the index tuples in the last dimension of `indices`."""
    if batch_dims:
        raise NotImplementedError("gather_nd with batch_dims != 0 is not supported yet")
    p = params.value() if not isinstance(params, Tensor) and hasattr(params, "value") else params
    return apply_op("GatherNd", params=_to_tensor(p, "params"), indices=_index(indices, "indices"),
                    name=name or "GatherNd")


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of `shape` with `updates` added at `indices` (duplicates sum)."""
    i = _index(indices, "indices")
    return apply_op("ScatterNd", indices=i, updates=_to_tensor(updates, "updates"),
                    shape=_to_tensor(shape, "shape", dtype=i.dtype), name=name or "ScatterNd")


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list[Tensor]:
    """Split `data` into `num_partitions` tensors by the partition of each row."""
    return apply_op("DynamicPartition", data=_to_tensor(data, "data"),
                    partitions=_to_tensor(partitions, "partitions", dtypes.int32),
                    num_partitions=num_partitions, name=name or "DynamicPartition")


def dynamic_stitch(indices: Any, data: Any, name: str | None = None) -> Tensor:
    """Interleave `data` rows into one tensor at `indices` (later entries win)."""
    return apply_op("DynamicStitch", indices=list(indices), data=list(data),
                    name=name or "DynamicStitch")


def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: Any = None) -> Tensor:
    """The elements (or slices) of `tensor` where the K-D boolean `mask` is true, as
    NumPy's `tensor[mask]`; built from Reshape, Where, Squeeze and GatherV2."""
    with _name_scope(name, "boolean_mask"):
        t = _to_tensor(tensor, "tensor")
        m = _to_tensor(mask, "mask")
        ms, ts = m.shape, t.shape
        nd = ms.ndims
        if nd == 0:
            raise ValueError("mask cannot be scalar.")
        if nd is None:
            raise ValueError("Number of mask dimensions must be specified, even if some dimensions"
                             " are None.  E.g. shape=[None] is ok, but shape=None is not.")
        a = 0 if axis is None else axis
        av = constant_value(a) if isinstance(a, Tensor) else a
        a = 0 if av is None else int(av)
        if not ts[a:a + nd].is_compatible_with(ms):
            raise ValueError(f"Shapes {ts[a:a + nd]} and {ms} are incompatible")
        # shape(t) three times, as TensorFlow calls it (three Consts when t's shape is known)
        lead = _leading_size(shape(t), a, nd)
        new_shape = concat([_slice_helper(shape(t), builtins.slice(None, a)), [lead],
                            _slice_helper(shape(t), builtins.slice(a + nd, None))], 0)
        t2 = reshape(t, new_shape)
        first = ts[a:a + nd].num_elements()
        if ts.ndims is not None:
            t2.set_shape(ts[:a].concatenate([first]).concatenate(ts[a + nd:]))
        m2 = reshape(m, [-1])
        idx = squeeze(where(m2), axis=[1])
        return gather(t2, idx, axis=a)


def _leading_size(full: Tensor, a: int, nd: int) -> Any:
    part = _slice_helper(full, builtins.slice(a, a + nd))
    try:
        get_op_def("Prod")
    except KeyError:
        return -1  # without the math family, let Reshape infer it
    return apply_op("Prod", input=part, reduction_indices=[0], keep_dims=False, name="Prod")
