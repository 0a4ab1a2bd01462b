"""Array ops: shapes, reshaping, joining and splitting, padding, selection.

Declares the array op family (TensorFlow's op type, argument and attr names) and
builds the Python API on it (`tf.reshape`, `tf.concat`, `tf.zeros`, `tf.where`, ...).
Around it: shape functions and constant evaluation in `flowlab.ops.array_shapes`,
conversion of Python values holding Tensors or Dimensions in `flowlab.ops.autopacking`,
and the indexing ops (Slice, StridedSlice / `x[...]`, gathers, scatters, dynamic
partition/stitch, `boolean_mask`) in `flowlab.ops.slicing`, re-exported from here.

Static knowledge: shape functions use `constant_value` and `constant_value_as_shape`
so that `tf.reshape(x, [tf.shape(x)[0], -1])` gets a good static shape, and the ops
whose value TensorFlow folds while building (Shape, Size, Rank, Pack, ConcatV2,
StridedSlice of a known value, ...) register constant evaluators that run their own
CPU kernel on the known inputs.  Builders follow TensorFlow's: small known zeros and
ones are Consts, `tf.shape` of a fully known shape is a Const, `tf.concat` of one value
is an Identity.
"""
from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.array_shapes import (  # noqa: F401  (re-exported for slicing)
    _FOLD_LIMIT,
    _broadcast_to_fn,
    _concat_fn,
    _dims,
    _expand_dims_fn,
    _fill_fn,
    _fold,
    _int_list,
    _mirror_pad_grad_fn,
    _one_hot_fn,
    _pack_fn,
    _pad_fn,
    _register_folding,
    _reshape_fn,
    _reverse_fn,
    _same_shape,
    _same_shape_n,
    _select_fn,
    _select_v2_fn,
    _shape_fn,
    _shape_n_fn,
    _shape_str,
    _split_fn,
    _split_v_fn,
    _squeeze_fn,
    _tile_fn,
    _transpose_fn,
    _unpack_fn,
    _where_fn,
    constant_value_as_shape,
)
from flowlab.ops.autopacking import _has_tensor, _index, _to_tensor
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_evaluator
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "shape", "shape_n", "size", "rank", "reshape", "transpose", "concat", "stack", "unstack",
    "split", "expand_dims", "squeeze", "tile", "pad", "fill", "zeros", "ones", "zeros_like",
    "ones_like", "one_hot", "where", "where_v2", "reverse", "reverse_v2", "newaxis",
    "invert_permutation", "broadcast_to", "unique", "sequence_mask",
]

newaxis = None

_INDEX = "{int32, int64}"


def _name_scope(name: str | None, default: str) -> Iterator[str]:
    return get_default_graph().name_scope(name or default)  # type: ignore[return-value]


op_def("Shape", inputs=["input: T"], outputs=["output: out_type"],
       attrs=["T: type", f"out_type: {_INDEX} = int32"], shape_fn=_shape_fn)
op_def("ShapeN", inputs=["input: N * T"], outputs=["output: N * out_type"],
       attrs=["N: int >= 1", "T: type", f"out_type: {_INDEX} = int32"], shape_fn=_shape_n_fn)
op_def("Size", inputs=["input: T"], outputs=["output: out_type"],
       attrs=["T: type", f"out_type: {_INDEX} = int32"], shape_fn=lambda op: [TensorShape([])])
op_def("Rank", inputs=["input: T"], outputs=["output: int32"], attrs=["T: type"],
       shape_fn=lambda op: [TensorShape([])])
op_def("Reshape", inputs=["tensor: T", "shape: Tshape"], outputs=["output: T"],
       attrs=["T: type", f"Tshape: {_INDEX} = int32"], shape_fn=_reshape_fn)
op_def("Transpose", inputs=["x: T", "perm: Tperm"], outputs=["y: T"],
       attrs=["T: type", f"Tperm: {_INDEX} = int32"], shape_fn=_transpose_fn)
op_def("ConcatV2", inputs=["values: N * T", "axis: Tidx"], outputs=["output: T"],
       attrs=["N: int >= 2", "T: type", f"Tidx: {_INDEX} = int32"], shape_fn=_concat_fn)
op_def("Pack", inputs=["values: N * T"], outputs=["output: T"],
       attrs=["N: int >= 1", "T: type", "axis: int = 0"], shape_fn=_pack_fn)
op_def("Unpack", inputs=["value: T"], outputs=["output: num * T"],
       attrs=["num: int >= 0", "T: type", "axis: int = 0"], shape_fn=_unpack_fn)
op_def("Split", inputs=["split_dim: int32", "value: T"], outputs=["output: num_split * T"],
       attrs=["num_split: int >= 1", "T: type"], shape_fn=_split_fn)
op_def("SplitV", inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
       outputs=["output: num_split * T"],
       attrs=["num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = int64"],
       shape_fn=_split_v_fn)
op_def("Fill", inputs=["dims: index_type", "value: T"], outputs=["output: T"],
       attrs=["T: type", f"index_type: {_INDEX} = int32"], shape_fn=_fill_fn)
op_def("ZerosLike", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"], shape_fn=_same_shape)
op_def("OnesLike", inputs=["x: T"], outputs=["y: T"], attrs=["T: number_or_bool"],
       shape_fn=_same_shape)
op_def("ExpandDims", inputs=["input: T", "dim: Tdim"], outputs=["output: T"],
       attrs=["T: type", f"Tdim: {_INDEX} = int32"], shape_fn=_expand_dims_fn)
op_def("Squeeze", inputs=["input: T"], outputs=["output: T"],
       attrs=["T: type", "squeeze_dims: list(int) = []"], shape_fn=_squeeze_fn)
op_def("Tile", inputs=["input: T", "multiples: Tmultiples"], outputs=["output: T"],
       attrs=["T: type", f"Tmultiples: {_INDEX} = int32"], shape_fn=_tile_fn)
op_def("Pad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
       attrs=["T: type", f"Tpaddings: {_INDEX} = int32"], shape_fn=_pad_fn)
op_def("PadV2", inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
       outputs=["output: T"], attrs=["T: type", f"Tpaddings: {_INDEX} = int32"], shape_fn=_pad_fn)
op_def("MirrorPad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
       attrs=["T: type", f"Tpaddings: {_INDEX} = int32", "mode: string"], shape_fn=_pad_fn)
op_def("Where", inputs=["input: T"], outputs=["index: int64"], attrs=["T: number_or_bool = bool"],
       shape_fn=_where_fn)
op_def("Select", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
       attrs=["T: type"], shape_fn=_select_fn)
op_def("SelectV2", inputs=["condition: bool", "t: T", "e: T"], outputs=["output: T"],
       attrs=["T: type"], shape_fn=_select_v2_fn)
op_def("OneHot", inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
       outputs=["output: T"],
       attrs=["axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = int64"],
       shape_fn=_one_hot_fn)
op_def("ReverseV2", inputs=["tensor: T", "axis: Tidx"], outputs=["output: T"],
       attrs=[f"Tidx: {_INDEX} = int32", "T: type"], shape_fn=_reverse_fn)


# Helpers of the gradient functions (Transpose, ConcatV2, MirrorPad) and broadcasting.
op_def("Unique", inputs=["x: T"], outputs=["y: T", "idx: out_idx"],
       attrs=["T: type", f"out_idx: {_INDEX} = int32"],
       shape_fn=lambda op: [TensorShape([None]), op.inputs[0].shape.with_rank(1)])
op_def("InvertPermutation", inputs=["x: T"], outputs=["y: T"], attrs=[f"T: {_INDEX} = int32"],
       shape_fn=_same_shape)
op_def("ConcatOffset", inputs=["concat_dim: int32", "shape: N * shape_type"],
       outputs=["offset: N * shape_type"], attrs=["N: int >= 2", f"shape_type: {_INDEX} = int32"],
       shape_fn=_same_shape_n)
op_def("MirrorPadGrad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
       attrs=["T: type", f"Tpaddings: {_INDEX} = int32", "mode: string"], shape_fn=_mirror_pad_grad_fn)
op_def("BroadcastTo", inputs=["input: T", "shape: Tidx"], outputs=["output: T"],
       attrs=["T: type", f"Tidx: {_INDEX} = int32"], shape_fn=_broadcast_to_fn)

for _t in ("Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike", "Where", "OneHot",
           "InvertPermutation", "ConcatOffset", "Unique"):
    not_differentiable(_t)

_register_folding("InvertPermutation", "ConcatOffset", "BroadcastTo", "Pack", "Unpack", "ConcatV2", "Reshape", "ExpandDims", "Squeeze", "Transpose",
                  "ZerosLike", "OnesLike", "Tile", "ReverseV2", "Split", "SplitV")


@constant_evaluator("Shape")
def _shape_value(op: Operation) -> Any:
    s = op.inputs[0].shape
    return np.array(s.as_list(), op.get_attr("out_type").as_numpy_dtype) if s.is_fully_defined() else None


@constant_evaluator("ShapeN")
def _shape_n_value(op: Operation) -> Any:
    dt = op.get_attr("out_type").as_numpy_dtype
    return [np.array(x.shape.as_list(), dt) if x.shape.is_fully_defined() else None for x in op.inputs]


@constant_evaluator("Size")
def _size_value(op: Operation) -> Any:
    n = op.inputs[0].shape.num_elements()
    return None if n is None else np.array(n, op.get_attr("out_type").as_numpy_dtype)


@constant_evaluator("Rank")
def _rank_value(op: Operation) -> Any:
    r = op.inputs[0].shape.ndims
    return None if r is None else np.array(r, np.int32)


@constant_evaluator("Fill")
def _fill_value(op: Operation) -> Any:
    d = _int_list(op.inputs[0])
    if d is None or np.prod(d, dtype=np.int64) > _FOLD_LIMIT:
        return None
    return _fold(op)


# --- builders -------------------------------------------------------------------------
def _out_type(out_type: Any) -> dtypes.DType:
    return dtypes.as_dtype(out_type).base_dtype


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The shape of `input` as a 1-D int tensor (a Const when statically known).

    >>> tf.shape(tf.zeros([2, 3]))   # [2, 3]
    """
    with _name_scope(name, "Shape") as scope:
        x = _to_tensor(input, "Const")  # converted inside the scope, as TF: `Shape/Const`
        ot = _out_type(out_type)
        if x.shape.is_fully_defined():
            return constant(x.shape.as_list(), dtype=ot, name=scope)
        return apply_op("Shape", input=x, out_type=ot, name=scope)


def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The shapes of several tensors (one ShapeN op)."""
    xs = [_to_tensor(x, "input") for x in input]
    return apply_op("ShapeN", input=xs, out_type=_out_type(out_type), name=name or "ShapeN")


def _shape_arg(value: Any, name: str) -> Any:
    """`_index(value)`, but an empty Python list reaches `apply_op` as is: TensorFlow
    converts it as float32 first, then as the index type (`Reshape/shape_1`)."""
    if isinstance(value, (list, builtins.tuple)) and not value:
        return value
    return _index(value, name)


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The number of elements of `input`."""
    x = _to_tensor(input, "input")
    ot = _out_type(out_type)
    n = x.shape.num_elements()
    if n is not None:
        return constant(n, dtype=ot, name=name or "Size")
    return apply_op("Size", input=x, out_type=ot, name=name or "Size")


def rank(input: Any, name: str | None = None) -> Tensor:
    """The number of dimensions of `input` (int32 scalar)."""
    x = _to_tensor(input, "input")
    if x.shape.ndims is not None:
        return constant(x.shape.ndims, dtype=dtypes.int32, name=name or "Rank")
    return apply_op("Rank", input=x, name=name or "Rank")


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tensor` with a new shape; one dimension may be -1 (inferred).

    >>> tf.reshape(x, [tf.shape(x)[0], -1])
    """
    return apply_op("Reshape", tensor=_to_tensor(tensor, "tensor"), shape=_shape_arg(shape, "shape"),
                    name=name or "Reshape")


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """Permute dimensions; `perm` defaults to reversing them."""
    with _name_scope(name, "transpose") as scope:
        x = _to_tensor(a, "a")
        if perm is None:
            r = x.shape.ndims
            if r is not None:
                perm = constant(np.arange(r - 1, -1, -1, dtype=np.int32), name="perm")
            else:
                rk = apply_op("Rank", input=x, name="Rank")
                sub = apply_op("Sub", x=rk, y=1, name="sub")
                perm = apply_op("Range", start=sub, limit=-1, delta=-1, name="Range")
        out = apply_op("Transpose", x=x, perm=_shape_arg(perm, "perm"), name=scope)
        if conjugate and x.dtype.is_complex:
            out = apply_op("Conj", input=out, name="Conj")
        return out


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """Join tensors along `axis` (negative counts from the end)."""
    if not isinstance(values, (list, builtins.tuple)):
        values = [values]
    if len(values) == 1:
        with _name_scope(name, "concat"):
            a = _to_tensor(axis, "concat_dim", dtype=dtypes.int32)
            if a.shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {a.shape.ndims} for concat axis")
            from flowlab.ops.core_ops import identity

            return identity(values[0], name=name or "concat")
    return apply_op("ConcatV2", values=list(values), axis=_index(axis, "axis"), name=name or "concat")


def stack(values: Any, axis: int = 0, name: str = "stack") -> Tensor:
    """Stack rank-R tensors into one rank-(R+1) tensor (a Const for Python values)."""
    if axis == 0:
        try:  # TensorFlow converts the whole list first: autopacking names `stack/1`
            return convert_to_tensor(values, name=name)
        except (TypeError, ValueError, NotImplementedError):
            pass
    first = _to_tensor(values[0], name)
    if first.shape.ndims is not None:
        r = first.shape.ndims + 1
        if not -r <= axis < r:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-r}, {r})")
    return apply_op("Pack", values=list(values), axis=axis, name=name)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    """Split a rank-R tensor into `num` rank-(R-1) tensors along `axis`."""
    x = _to_tensor(value, "value")
    if num is None:
        d = _dims(x)
        if d is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
        if not -len(d) <= axis < len(d):
            raise ValueError(f"Argument `axis` = {axis} not in range [{-len(d)}, {len(d)})")
        num = d[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
    return apply_op("Unpack", value=x, num=num, axis=axis, name=name or "unstack")


def split(value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None,
          name: str = "split") -> list[Tensor]:
    """Split along `axis` into `num_or_size_splits` equal parts (an int) or parts of the
    given sizes (a list; one may be -1)."""
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        return apply_op("Split", split_dim=_to_tensor(axis, "split_dim", dtypes.int32),
                        value=_to_tensor(value, "value"), num_split=int(num_or_size_splits),
                        name=name or "split")
    sizes = _index(num_or_size_splits, "size_splits")
    if sizes.shape.ndims == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to "
                         f"split. Argument provided: {num_or_size_splits}")
    if num is None:
        s = sizes.shape
        if s.ndims != 1 or s[0].value is None:
            raise ValueError(f"Cannot infer argument `num` from shape {s}")
        num = s[0].value
    return apply_op("SplitV", value=_to_tensor(value, "value"), size_splits=sizes,
                    split_dim=_to_tensor(axis, "split_dim", dtypes.int32), num_split=num,
                    name=name or "split")


def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """Insert a dimension of size 1 at `axis`."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return apply_op("ExpandDims", input=_to_tensor(input, "input"), dim=_index(axis, "dim"),
                    name=name or "ExpandDims")


def squeeze(input: Any, axis: Any = None, name: str | None = None, squeeze_dims: Any = None) -> Tensor:
    """Remove dimensions of size 1 (all of them, or those in `axis`)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'squeeze_dims' and 'axis'")
        axis = squeeze_dims
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    return apply_op("Squeeze", input=_to_tensor(input, "input"), squeeze_dims=list(axis or []),
                    name=name or "Squeeze")


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """Repeat `input` `multiples[i]` times along each dimension i."""
    return apply_op("Tile", input=_to_tensor(input, "input"), multiples=_shape_arg(multiples, "multiples"),
                    name=name or "Tile")


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None,
        constant_values: Any = 0) -> Tensor:
    """Pad with a constant (Pad/PadV2) or by mirroring (MirrorPad: REFLECT, SYMMETRIC)."""
    m = mode.upper()
    x = _to_tensor(tensor, "input")
    p = _index(paddings, "paddings")
    if m == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0):
            return apply_op("Pad", input=x, paddings=p, name=name or "Pad")
        return apply_op("PadV2", input=x, paddings=p, constant_values=constant_values,
                        name=name or "PadV2")
    if m in ("REFLECT", "SYMMETRIC"):
        return apply_op("MirrorPad", input=x, paddings=p, mode=m, name=name or "MirrorPad")
    raise ValueError(f"Value of argument `mode` expected to be one of \"CONSTANT\", \"REFLECT\", or "
                     f"\"SYMMETRIC\". Received `mode` = {mode}")


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape `dims` filled with the scalar `value`."""
    return apply_op("Fill", dims=_shape_arg(dims, "dims"), value=_to_tensor(value, "value"),
                    name=name or "Fill")


def _filled(shape: Any, value: Any, dtype: Any, name: str | None, default: str) -> Tensor:
    dt = dtypes.as_dtype(dtype).base_dtype
    with _name_scope(name, default) as scope:
        if not isinstance(shape, Tensor) and not _has_tensor(shape):
            try:
                dims = as_shape(shape)
                if dims.is_fully_defined() and not isinstance(shape, (int, np.integer)) \
                        and np.prod(dims.as_list(), dtype=np.int64) < 1000:
                    arr = np.full(dims.as_list(), value, dtype=dt.as_numpy_dtype
                                  if dt is not dtypes.string else object)
                    arr.flags.writeable = False
                    # A scope name ("zeros/") names the Const itself, as TensorFlow does.
                    return apply_op("Const", value=arr, dtype=dt, name=scope)
                shape_t = constant(dims.as_list(), dtype=dtypes.int64 if any(
                    d >= 2**31 for d in dims.as_list()) else dtypes.int32, name="shape_as_tensor")
            except (TypeError, ValueError):
                shape_t = _to_tensor(shape, "shape", dtypes.int32)
        else:
            shape_t = _index(shape, "packed")  # TensorFlow autopacks [n, 3] as "packed"
        if shape_t.shape.ndims in (0, None):  # as TensorFlow: make sure it is a vector
            shape_t = reshape(shape_t, [-1])
        return apply_op("Fill", dims=shape_t, value=constant(value, dtype=dt), name=scope)


def _zero(dt: dtypes.DType) -> Any:
    return False if dt is dtypes.bool else b"" if dt is dtypes.string else 0


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of zeros: a Const when small and known, else Fill."""
    dt = dtypes.as_dtype(dtype).base_dtype
    return _filled(shape, _zero(dt), dt, name, "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ones: a Const when small and known, else Fill."""
    dt = dtypes.as_dtype(dtype).base_dtype
    return _filled(shape, True if dt is dtypes.bool else 1, dt, name, "ones")


def _like_input(tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor) and hasattr(tensor, "value") and hasattr(tensor, "_as_graph_element"):
        return tensor.value()  # a Variable: its current value
    return _to_tensor(tensor, "tensor")


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True) -> Tensor:
    """Zeros with the shape of `tensor` (a Const when its shape is known)."""
    with _name_scope(name, "zeros_like") as scope:
        x = _like_input(tensor)
        dt = x.dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if optimize and x.shape.is_fully_defined():
            return zeros(x.shape.as_list(), dt, name=scope)
        if dt is not x.dtype.base_dtype:
            return zeros(shape(x), dt, name=scope)
        return apply_op("ZerosLike", x=x, name=scope)


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True) -> Tensor:
    """Ones with the shape of `tensor` (Fill of its shape)."""
    with _name_scope(name, "ones_like") as scope:
        x = _like_input(tensor)
        dt = x.dtype.base_dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if optimize and x.shape.is_fully_defined():
            with _name_scope(None, "Shape"):  # TensorFlow's `ones_like/Shape/shape_as_tensor`
                s = constant(x.shape.as_list(), dtype=dtypes.int32, name="shape_as_tensor")
        else:
            s = shape(x) if optimize else apply_op("Shape", input=x, name="Shape")
        out = ones(s, dt, name=scope)
        out.set_shape(x.shape)
        return out


def one_hot(indices: Any, depth: Any, on_value: Any = None, off_value: Any = None, axis: Any = None,
            dtype: Any = None, name: str | None = None) -> Tensor:
    """One-hot vectors of length `depth` along `axis` (default last); dtype from
    `on_value`/`off_value`, else `dtype`, else float32."""
    with _name_scope(name, "one_hot") as scope:
        dt = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
        on = None if on_value is None else _to_tensor(on_value, "on_value", hint=dt)
        off = None if off_value is None else _to_tensor(off_value, "off_value", hint=dt)
        if on is not None or off is not None:
            if dt is not None:
                for t, what in ((on, "on_value"), (off, "off_value")):
                    if t is not None and t.dtype.base_dtype is not dt:
                        raise TypeError(
                            f"dtype {t.dtype.base_dtype.name} of {what} does not match dtype "
                            f"parameter {dt.name}"
                        )
            else:
                dt = (on if on is not None else off).dtype.base_dtype  # type: ignore[union-attr]
        elif dt is None:
            dt = dtypes.float32
        if on is None:
            on = constant(True if dt is dtypes.bool else 1, dtype=dt, name="on_value")
        if off is None:
            off = constant(_zero(dt), dtype=dt, name="off_value")
        if on.dtype.base_dtype is not off.dtype.base_dtype:
            raise TypeError(
                f"dtype {on.dtype.base_dtype.name} of on_value does not match dtype "
                f"{off.dtype.base_dtype.name} of off_value"
            )
        return apply_op("OneHot", indices=_to_tensor(indices, "indices"),
                        depth=_to_tensor(depth, "depth", dtypes.int32), on_value=on, off_value=off,
                        axis=-1 if axis is None else axis, name=scope)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """TF1 `tf.where`: coordinates of true elements (int64 [n, rank]) with one argument;
    with three, elements of `x` where `condition` else `y` (Select: `condition` has the
    shape of `x` or is a vector matching its first dimension)."""
    if x is None and y is None:
        with _name_scope(name, "Where") as scope:
            c = _to_tensor(condition, "condition", hint=dtypes.bool)
            return apply_op("Where", input=c, name=scope)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("Select", condition=condition, t=x, e=y, name=name or "Select")


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`tf.where` of TF2: SelectV2, which broadcasts `condition`, `x` and `y`."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("SelectV2", condition=condition, t=x, e=y, name=name or "SelectV2")


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """Reverse the given dimensions (ReverseV2)."""
    return apply_op("ReverseV2", tensor=_to_tensor(tensor, "tensor"), axis=_shape_arg(axis, "axis"),
                    name=name or "ReverseV2")


reverse_v2 = reverse


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """The inverse permutation: `y[x[i]] = i`."""
    return apply_op("InvertPermutation", x=_index(x, "x"), name=name or "InvertPermutation")


def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The distinct values of the 1-D `x` in order of first appearance, and for each
    element of `x` the index of its value in them: `y[idx[i]] == x[i]`."""
    return apply_op("Unique", x=_to_tensor(x, "x"), out_idx=dtypes.as_dtype(out_idx), name=name or "Unique")


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool,
                  name: str | None = None) -> Tensor:
    """`mask[..., j] = j < lengths[...]` for j in [0, maxlen) (default: max of lengths).

    >>> tf.sequence_mask([1, 3], 4)   # [[T, F, F, F], [T, T, T, F]]
    """
    with _name_scope(name, "SequenceMask"):
        lens = _to_tensor(lengths, "lengths")
        if maxlen is None:
            r = lens.shape.ndims
            axes = (list(builtins.range(r)) if r is not None
                    else apply_op("Range", start=0, limit=apply_op("Rank", input=lens, name="Rank"),
                                  delta=1, name="range"))
            m = apply_op("Max", input=lens, reduction_indices=_index(axes, "Const"), keep_dims=False,
                         name="Max")
            m = apply_op("Maximum", x=constant(0, dtype=m.dtype), y=m, name="Maximum")
        else:
            m = _to_tensor(maxlen, "maxlen")
        if m.shape.ndims not in (None, 0):
            raise ValueError("Argument `maxlen` must be scalar for sequence_mask, received `maxlen` = "
                             f"{m} with shape '{m.shape}' instead")
        row = apply_op("Range", start=constant(0, dtype=m.dtype), limit=m, delta=constant(1, dtype=m.dtype),
                       name="Range")
        matrix = apply_op("Cast", x=expand_dims(lens, -1), DstT=m.dtype, name="Cast")
        result = apply_op("Less", x=row, y=matrix, name="Less")
        dt = dtypes.as_dtype(dtype).base_dtype if dtype is not None else dtypes.bool
        if dt is dtypes.bool:
            return result
        return apply_op("Cast", x=result, DstT=dt, name="Cast_1")


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """`input` broadcast to `shape` (NumPy's rules)."""
    return apply_op("BroadcastTo", input=_to_tensor(input, "input"), shape=_shape_arg(shape, "shape"),
                    name=name or "BroadcastTo")

from flowlab.ops.slicing import *  # noqa: E402,F401,F403
from flowlab.ops.slicing import __all__ as _slicing_all  # noqa: E402
from flowlab.ops.slicing import _slice_helper, strided_slice_plan  # noqa: E402,F401

__all__ += _slicing_all
