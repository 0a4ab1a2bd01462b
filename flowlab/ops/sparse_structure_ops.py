"""Rearranging SparseTensors, TensorFlow's ops and builders: `sparse_reorder`
(SparseReorder), `sparse_reshape` (SparseReshape), `sparse_concat` (SparseConcat),
`sparse_slice` (SparseSlice), `sparse_split` (SparseSplit), `sparse_fill_empty_rows`
(SparseFillEmptyRows) and the composite `sparse_transpose` (a gather of the index
columns, then SparseReorder, as TensorFlow builds it).

Order contracts kept from TensorFlow: SparseReorder and SparseConcat sort row-major
(stable); SparseSlice and
SparseSplit keep the input order; SparseFillEmptyRows groups by row (input order
within a row) and reports where each input value went (`reverse_index_map`), which
its gradient uses.  Kernels: flowlab.kernels.sparse_structure_kernels; gradients:
flowlab.ops.sparse_grad.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import identity
from flowlab.ops.op_def import op_def
from flowlab.ops.slicing import gather
from flowlab.ops.sparse_math_ops import convert_to_sparse_tensor
from flowlab.ops.sparse_tensor import SparseTensor

__all__ = ["sparse_reorder", "sparse_reshape", "sparse_concat", "sparse_slice", "sparse_split",
           "sparse_fill_empty_rows", "sparse_transpose"]


def _rank_of(op: Operation, indices: int, shape: int) -> int | None:
    ix, sh = op.inputs[indices].shape, op.inputs[shape].shape
    r = ix[1].value if ix.ndims == 2 else None
    return r if r is not None or sh.ndims != 1 else sh[0].value


def _sparse_out(rank: int | None) -> list[TensorShape]:
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _rows(t: Tensor) -> int | None:
    """The static number of rows of a matrix tensor (the stored values' count)."""
    return t.shape[0].value if t.shape.ndims else None


def _first(shape: Tensor) -> int | None:
    """dense_shape[0] when the dense shape is a constant."""
    v = constant_value(shape)
    return int(v[0]) if v is not None and len(v) else None


def _concat_shape(op: Operation) -> list[TensorShape]:
    n = op.get_attr("N")
    rows = [_rows(t) for t in op.inputs[:n]]
    total = None if None in rows else sum(r for r in rows if r is not None)
    rank = _rank_of(op, 0, 2 * n)
    return [TensorShape([total, rank]), TensorShape([total]), TensorShape([rank])]


op_def("SparseReorder", inputs=["input_indices: int64", "input_values: T", "input_shape: int64"],
       outputs=["output_indices: int64", "output_values: T"], attrs=["T: type"],
       shape_fn=lambda op: [op.inputs[0].shape, op.inputs[1].shape])
op_def("SparseReshape", inputs=["input_indices: int64", "input_shape: int64", "new_shape: int64"],
       outputs=["output_indices: int64", "output_shape: int64"],
       shape_fn=lambda op: [TensorShape([_rows(op.inputs[0]),
                                         op.inputs[2].shape[0].value if op.inputs[2].shape.ndims else None]),
                            op.inputs[2].shape])
op_def("SparseConcat", inputs=["indices: N * int64", "values: N * T", "shapes: N * int64"],
       outputs=["output_indices: int64", "output_values: T", "output_shape: int64"],
       attrs=["concat_dim: int", "N: int >= 2", "T: type"],
       shape_fn=lambda op: _concat_shape(op))
op_def("SparseSlice", inputs=["indices: int64", "values: T", "shape: int64", "start: int64", "size: int64"],
       outputs=["output_indices: int64", "output_values: T", "output_shape: int64"],
       attrs=["T: type"], shape_fn=lambda op: _sparse_out(_rank_of(op, 0, 2)))
op_def("SparseSliceGrad",
       inputs=["backprop_val_grad: T", "input_indices: int64", "input_start: int64", "output_indices: int64"],
       outputs=["val_grad: T"],
       attrs=["T: {float32, float64, int32, uint8, int16, int8, complex64, int64, uint16, complex128, "
              "float16, uint32, uint64}"],
       shape_fn=lambda op: [TensorShape([op.inputs[1].shape[0].value if op.inputs[1].shape.ndims else None])])
op_def("SparseSplit", inputs=["split_dim: int64", "indices: int64", "values: T", "shape: int64"],
       outputs=["output_indices: num_split * int64", "output_values: num_split * T",
                "output_shape: num_split * int64"],
       attrs=["num_split: int >= 1", "T: type"],
       shape_fn=lambda op: [s for s in _sparse_out(_rank_of(op, 1, 3)) for _ in range(op.get_attr("num_split"))])
op_def("SparseFillEmptyRows",
       inputs=["indices: int64", "values: T", "dense_shape: int64", "default_value: T"],
       outputs=["output_indices: int64", "output_values: T", "empty_row_indicator: bool",
                "reverse_index_map: int64"],
       attrs=["T: type"],
       shape_fn=lambda op: [TensorShape([None, _rank_of(op, 0, 2)]), TensorShape([None]),
                            TensorShape([_first(op.inputs[2])]), TensorShape([_rows(op.inputs[0])])])
op_def("SparseFillEmptyRowsGrad", inputs=["reverse_index_map: int64", "grad_values: T"],
       outputs=["d_values: T", "d_default_value: T"], attrs=["T: type"],
       shape_fn=lambda op: [op.inputs[0].shape, TensorShape([])])


def _with_static_shape(sp: SparseTensor, indices: Tensor, values: Tensor) -> SparseTensor:
    """A SparseTensor over `sp`'s dense shape: the constant when known (TensorFlow's
    builders do this), else an Identity of it carrying `sp`'s static shape."""
    if sp.shape.is_fully_defined():
        return SparseTensor(indices, values, sp.shape.as_list())
    out = SparseTensor(indices, values, identity(sp.dense_shape))
    out.set_shape(sp.shape)
    return out


def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major order (`tf.sparse.reorder`)."""
    sp = convert_to_sparse_tensor(sp_input)
    ind, val = apply_op("SparseReorder", name=name or "SparseReorder", input_indices=sp.indices,
                        input_values=sp.values, input_shape=sp.dense_shape)
    return _with_static_shape(sp, ind, val)


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """The SparseTensor with a new dense shape (one -1 inferred), entries in the same
    row-major positions (`tf.sparse.reshape`)."""
    sp = convert_to_sparse_tensor(sp_input)
    shape = math_ops.cast(shape, dtypes.int64)
    g = sp.graph
    with g.as_default(), g.name_scope(name or "SparseReshape") as scope:
        ind, out_shape = apply_op("SparseReshape", name=scope, input_indices=sp.indices,
                                  input_shape=sp.dense_shape, new_shape=shape)
        user = constant_value(shape)
        if user is not None and sp.shape.is_fully_defined():
            wanted = [int(d) for d in np.asarray(user).reshape(-1)]
            if sum(d == -1 for d in wanted) > 1:
                raise ValueError(f"At most one dimension can be inferred (-1). Found: {np.asarray(user)}")
            size = int(np.prod(np.array(sp.shape.as_list(), np.int64)))
            known = [d for d in wanted if d != -1]
            if -1 in wanted and 0 not in wanted:
                wanted[wanted.index(-1)] = size // int(np.prod(known))
            if -1 not in wanted:
                if int(np.prod(wanted)) != size:
                    shown = [None if d == -1 else d for d in np.asarray(user).reshape(-1).tolist()]
                    raise ValueError(f"Cannot reshape a tensor with {size} elements to shape {shown} "
                                     f"({int(np.prod(wanted))} elements).")
                out_shape = convert_to_tensor(wanted, dtype=dtypes.int64)
        return SparseTensor(ind, identity(sp.values), out_shape)


def sparse_concat(axis: Any, sp_inputs: Any, name: str | None = None, expand_nonconcat_dim: bool = False,
                  concat_dim: Any = None, expand_nonconcat_dims: Any = None) -> SparseTensor:
    """The SparseTensors `sp_inputs` joined along `axis` (`tf.sparse.concat`); with
    `expand_nonconcat_dim` the other dimensions grow to the largest input's."""
    if expand_nonconcat_dims is not None:  # TF1's default False counts as given: always refused
        raise ValueError("Cannot specify both 'expand_nonconcat_dim' and 'expand_nonconcat_dims'.")
    axis = concat_dim if axis is None else axis
    if not isinstance(sp_inputs, (list, tuple)):
        raise TypeError("Inputs must be a list or tuple.")
    sps = [convert_to_sparse_tensor(s) for s in sp_inputs]
    if len(sps) == 1:
        return sps[0]
    shapes = [s.dense_shape for s in sps]
    if expand_nonconcat_dim:
        max_shape = math_ops.reduce_max(array_ops.concat([array_ops.reshape(s, [1, -1]) for s in shapes], 0), 0)
        shapes = [array_ops.concat([max_shape[:axis], s[-1:] if axis == -1 else s[axis:axis + 1],
                                    [] if axis == -1 else max_shape[axis + 1:]], 0) for s in shapes]
    ind, val, out_shape = apply_op("SparseConcat", name=name or "SparseConcat",
                                   indices=[s.indices for s in sps], values=[s.values for s in sps],
                                   shapes=shapes, concat_dim=axis)
    statics = [s.shape for s in sps]
    if all(s.ndims is not None for s in statics):
        if expand_nonconcat_dim:
            dims_ = [max((s[d].value for s in statics), key=lambda v: -1 if v is None else v)
                     if all(s[d].value is not None for s in statics) else None
                     for d in range(statics[0].ndims or 0)]
        else:
            dims_ = statics[0].as_list()
        along = [s[axis].value for s in statics]
        dims_[axis] = None if None in along else sum(along)
        static = TensorShape(dims_)
    else:
        static = TensorShape(None)
    if all(s.is_fully_defined() for s in statics):
        return SparseTensor(ind, val, static.as_list())
    out = SparseTensor(ind, val, out_shape)
    out.set_shape(static)
    return out


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """The entries inside the box [start, start + size), re-based at `start`
    (`tf.sparse.slice`)."""
    sp = convert_to_sparse_tensor(sp_input)
    g = sp.graph
    with g.as_default():
        start = convert_to_tensor(start, dtype=dtypes.int64)
        size = convert_to_tensor(size, dtype=dtypes.int64)
        with g.name_scope(name or "SparseSlice") as scope:
            out = apply_op("SparseSlice", name=scope, indices=sp.indices, values=sp.values,
                           shape=sp.dense_shape, start=start, size=size)
    return SparseTensor(*out)


class _KeywordRequired:
    def __repr__(self) -> str:
        return "KeywordRequired()"


_KEYWORD_REQUIRED = _KeywordRequired()


def sparse_split(keyword_required: Any = _KEYWORD_REQUIRED, sp_input: Any = None, num_split: Any = None,
                 axis: Any = None, name: str | None = None, split_dim: Any = None) -> list[SparseTensor]:
    """`num_split` SparseTensors along `axis`; the first `size % num_split` get one more
    slot (`tf.sparse.split`, keyword arguments only)."""
    if not isinstance(keyword_required, _KeywordRequired):
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    if axis is None:  # checked before `split_dim` is looked at, as TensorFlow does
        raise ValueError("axis is required")
    sp = convert_to_sparse_tensor(sp_input)
    inds, vals, shapes = apply_op("SparseSplit", name=name or "SparseSplit",
                                  split_dim=convert_to_tensor(axis, dtype=dtypes.int64),
                                  indices=sp.indices, values=sp.values, shape=sp.dense_shape,
                                  num_split=num_split)
    return [SparseTensor(i, v, s) for i, v, s in zip(inds, vals, shapes)]


def sparse_fill_empty_rows(sp_input: Any, default_value: Any, name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """The SparseTensor with `default_value` at [row, 0, ...] of every empty row, and
    the bool vector of which rows were empty (`tf.sparse.fill_empty_rows`)."""
    sp = convert_to_sparse_tensor(sp_input)
    g = sp.graph
    with g.as_default(), g.name_scope(name or "SparseFillEmptyRows"):
        default = convert_to_tensor(default_value, dtype=sp.values.dtype)
        ind, val, empty, _ = apply_op("SparseFillEmptyRows", name="SparseFillEmptyRows",
                                      indices=sp.indices, values=sp.values,
                                      dense_shape=sp.dense_shape, default_value=default)
        return SparseTensor(ind, val, sp.dense_shape), empty


def sparse_transpose(sp_input: Any, perm: Any = None, name: str | None = None) -> SparseTensor:
    """The SparseTensor with its dimensions permuted (reversed when `perm` is None),
    entries reordered (`tf.sparse.transpose`)."""
    g = sp_input.graph
    with g.as_default(), g.name_scope(name or "SparseTranspose"):
        if perm is None:
            if sp_input.shape.ndims is not None:
                rank = sp_input.shape.ndims
                perm = (rank - 1) - np.arange(0, rank, 1)
            else:
                rank_t = array_ops.size(sp_input.dense_shape)
                perm = (rank_t - 1) - math_ops.range(0, rank_t, 1)
        indices = sp_input.indices
        transposed = array_ops.transpose(gather(array_ops.transpose(indices), perm))
        perm_ = constant_value(convert_to_tensor(perm))
        if perm_ is not None and sp_input.shape.is_fully_defined():
            old = sp_input.shape.as_list()
            dense_shape: Any = [old[int(p)] for p in np.asarray(perm_).reshape(-1)]
        else:
            dense_shape = gather(sp_input.dense_shape, perm)
        return sparse_reorder(SparseTensor(transposed, sp_input.values, dense_shape))
