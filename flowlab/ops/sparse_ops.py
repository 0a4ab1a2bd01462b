"""`tf.sparse_to_dense`: a dense tensor from the coordinates and values of its nonzero
entries (the SparseToDense op, TensorFlow's declaration and gradient), and the
SparseTensor builders TensorFlow composes from dense ops and SparseToDense:
`sparse_tensor_to_dense`, `sparse_to_indicator`, `sparse_merge`, `sparse_retain`,
`sparse_reset_shape`, `from_dense`, `sparse_expand_dims` and `sparse_eye`.

The indices are a scalar, a vector (one coordinate per value of a 1-D output) or a
[n, rank] matrix; with `validate_indices` they must be in bounds, in row-major order
and unique (TensorFlow's messages name the first that is not); without it, a repeated
index keeps the last value.  The gradient reaches the values (the output gradient
gathered at the indices) and the default value (the rest of it).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, check_ops, math_ops
from flowlab.ops.array_shapes import constant_value_as_shape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity, with_dependencies
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def
from flowlab.ops.slicing import gather, gather_nd, slice
from flowlab.ops.sparse_math_ops import convert_to_sparse_tensor
from flowlab.ops.sparse_structure_ops import sparse_reorder
from flowlab.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = ["sparse_to_dense", "sparse_tensor_to_dense", "sparse_to_indicator", "sparse_merge",
           "sparse_retain", "sparse_reset_shape"]


def _sparse_to_dense_shape(op: Operation) -> list[TensorShape]:
    indices, shape = op.inputs[0].shape, op.inputs[1].shape
    if indices.ndims is not None and indices.ndims > 2:
        raise ValueError(f"Shape must be at most rank 2 but is rank {indices.ndims}")
    if shape.ndims is not None and shape.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {shape.ndims}")
    return [constant_value_as_shape(op.inputs[1])]


op_def("SparseToDense",
       inputs=["sparse_indices: Tindices", "output_shape: Tindices", "sparse_values: T",
               "default_value: T"],
       outputs=["dense: T"],
       attrs=["validate_indices: bool = true", "T: type", "Tindices: {int32, int64}"],
       shape_fn=_sparse_to_dense_shape)


def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any,
                    default_value: Any = 0, validate_indices: bool = True,
                    name: str | None = None) -> Any:
    """A dense tensor of `output_shape`, `sparse_values` at `sparse_indices` and
    `default_value` elsewhere (`tf.sparse_to_dense`).

        >>> sparse_to_dense([[0, 1], [1, 2]], [2, 3], [5, 6])   # [[0, 5, 0], [0, 0, 6]]
    """
    return apply_op("SparseToDense", name=name, sparse_indices=sparse_indices,
                    output_shape=output_shape, sparse_values=sparse_values,
                    default_value=default_value, validate_indices=validate_indices)


@gradient("SparseToDense")
def _sparse_to_dense_grad(op: Operation, grad: Any) -> list[Any]:
    sparse_indices, output_shape, _, _ = op.inputs
    values_grad = gather_nd(grad, sparse_indices)
    default_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(values_grad)
    return [array_ops.zeros_like(sparse_indices), array_ops.zeros_like(output_shape),
            values_grad, default_grad]


# --- SparseTensor composites (TensorFlow's sparse_ops.py, built the same way) ---------------
def sparse_tensor_to_dense(sp_input: Any, default_value: Any = None, validate_indices: bool = True,
                           name: str | None = None) -> Tensor:
    """The dense tensor a SparseTensor stands for (`tf.sparse.to_dense`): SparseToDense,
    so out-of-order or repeated indices are errors while `validate_indices`."""
    sp = convert_to_sparse_tensor(sp_input)
    with sp.graph.as_default():
        if default_value is None:
            default_value = array_ops.zeros([], dtype=sp.dtype)
        return sparse_to_dense(sp.indices, sp.dense_shape, sp.values, default_value=default_value,
                               validate_indices=validate_indices, name=name)


def from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """The SparseTensor of `tensor`'s nonzero entries (`tf.sparse.from_dense`)."""
    t = convert_to_tensor(tensor)
    g = t.graph
    with g.as_default(), g.name_scope(name or "dense_to_sparse"):
        indices = array_ops.where_v2(math_ops.not_equal(t, array_ops.zeros_like(t)))
        values = gather_nd(t, indices)
        shape = array_ops.shape(t, out_type=dtypes.int64)
        return SparseTensor(indices, values, shape)


def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries where the bool vector `to_retain` is true (`tf.sparse.retain`)."""
    sp = convert_to_sparse_tensor(sp_input)
    with sp.graph.as_default():
        to_retain = convert_to_tensor(to_retain)
        to_retain.shape.with_rank(1)
        if sp.values.shape.ndims is not None:
            sp.values.shape[0].assert_is_compatible_with(to_retain.shape[0])
        where_true = array_ops.reshape(array_ops.where_v2(to_retain), [-1])
        return SparseTensor(gather(sp.indices, where_true), gather(sp.values, where_true),
                            identity(sp.dense_shape))


def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """The SparseTensor with dense shape `new_shape` (at least the old one), or the
    tightest shape holding its indices when None (`tf.sparse.reset_shape`)."""
    sp = convert_to_sparse_tensor(sp_input)
    with sp.graph.as_default():
        in_indices, in_values = identity(sp.indices), identity(sp.values)
        in_shape = identity(sp.dense_shape)
        if new_shape is None:
            low = math_ops.reduce_max(in_indices, axis=0)
            out_shape: Any = math_ops.maximum(constant(0, dtype=dtypes.int64),
                                              math_ops.add(low, array_ops.ones_like(in_shape)))
        else:
            out_shape = convert_to_tensor(new_shape)
            out_shape.shape.with_rank(1)
            out_shape = math_ops.cast(out_shape, dtypes.int64)
            if out_shape.shape.ndims is not None:
                out_shape.shape[0].assert_is_compatible_with(in_shape.shape[0])
            const = constant_value(out_shape)
            if const is not None and sp.shape.is_fully_defined():
                old = np.array(sp.shape.as_list())
                if not np.all(old <= const):
                    raise ValueError("Requested new_shape should have dimension sizes >= sp_input.shape."
                                     f"  Found new_shape ({old}), sp_input.shape ({const}).")
                out_shape = const
            else:
                out_shape = with_dependencies(
                    [check_ops.assert_equal(array_ops.shape(in_shape), array_ops.shape(out_shape))],
                    out_shape)
                out_shape = with_dependencies(
                    [check_ops.assert_less_equal(in_shape, out_shape)], out_shape)
        return SparseTensor(in_indices, in_values, out_shape)


def sparse_expand_dims(sp_input: Any, axis: Any = None, name: str | None = None) -> SparseTensor:
    """The SparseTensor with a size-1 dimension inserted at `axis` (`tf.sparse.expand_dims`)."""
    rank: Any = sp_input.dense_shape.shape[0].value
    if rank is None:
        rank = array_ops.shape(sp_input.dense_shape)[0]
    axis = -1 if axis is None else axis
    given = axis if isinstance(axis, numbers.Integral) else None
    g = sp_input.graph
    with g.as_default(), g.name_scope(name or "expand_dims"):
        if isinstance(axis, numbers.Integral):
            axis = convert_to_tensor(axis, name="axis", dtype=dtypes.int32)
        elif not isinstance(axis, Tensor):
            raise TypeError("axis must be an integer value in range [-rank(sp_input) - 1, rank(sp_input)]")
        axis = array_ops.where_v2(axis >= 0, axis, axis + rank + 1)
        column_size = array_ops.shape(sp_input.indices)[0]
        new_index = array_ops.zeros([column_size, 1], dtype=dtypes.int64)
        before = slice(sp_input.indices, [0, 0], [-1, axis])
        after = slice(sp_input.indices, [0, axis], [-1, -1])
        indices = array_ops.concat([before, new_index, after], axis=1)
        shape_before = slice(sp_input.dense_shape, [0], [axis])
        shape_after = slice(sp_input.dense_shape, [axis], [-1])
        new_shape = convert_to_tensor([1], name="new_shape", dtype=dtypes.int64)
        shape = array_ops.concat([shape_before, new_shape, shape_after], axis=0)
        rank_known = sp_input.dense_shape.shape[0].value if sp_input.dense_shape.shape.ndims else None
        if rank_known is not None:  # the static shapes TensorFlow's ConcatV2 shape function finds
            shape.set_shape([rank_known + 1])
            indices.set_shape([sp_input.indices.shape[0].value if sp_input.indices.shape.ndims else None,
                               rank_known + 1])
        out = SparseTensor(indices, sp_input.values, shape)
        if rank_known is not None and given is not None:
            # What TensorFlow's constant_value_as_shape reads from this concat: the new 1.
            dims: list[int | None] = [None] * (rank_known + 1)
            dims[given % (rank_known + 1)] = 1
            out.set_shape(dims)
        return out


def sparse_eye(num_rows: Any, num_columns: Any = None, dtype: Any = dtypes.float32,
               name: str | None = None) -> SparseTensor:
    """The sparse identity matrix (`tf.sparse.eye`)."""
    with get_default_graph().name_scope(name or "eye"):
        rows = _int64(num_rows, "num_rows")
        cols = rows if num_columns is None else _int64(num_columns, "num_columns")
        diag = math_ops.minimum(rows, cols)
        r = math_ops.range(diag, dtype=dtypes.int64)
        return SparseTensor(array_ops.stack([r, r], axis=1), array_ops.ones(diag, dtype=dtype),
                            [rows, cols])


def _int64(value: Any, name: str) -> Tensor:
    if isinstance(value, numbers.Integral):
        return convert_to_tensor(value, name=name, dtype=dtypes.int64)
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be an integer value")
    return value if value.dtype == dtypes.int64 else math_ops.cast(value, dtypes.int64)


def sparse_merge(sp_ids: Any, sp_values: Any, vocab_size: Any, name: str | None = None,
                 already_sorted: bool = False) -> SparseTensor:
    """A SparseTensor whose last dimension is indexed by the ids of `sp_ids` (a list of
    them for several dimensions), with `sp_values`' values (`tf.sparse.merge`)."""
    if isinstance(sp_ids, (SparseTensor, SparseTensorValue)):
        sp_ids = [sp_ids]
        if not isinstance(vocab_size, (Tensor, numbers.Integral)):
            raise TypeError(f"vocab_size has to be a Tensor or Python int. Found {type(vocab_size)}")
        vocab_size = [vocab_size]
    else:
        if not isinstance(sp_ids, (list, tuple)):
            raise TypeError(f"sp_ids has to be a SparseTensor or list thereof. Found {type(sp_ids)}")
        if not isinstance(vocab_size, (list, tuple)):
            raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(vocab_size)}")
        for dim in vocab_size:
            if not isinstance(dim, (Tensor, numbers.Integral)):
                raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(dim)}")
    if len(sp_ids) != len(vocab_size):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    with get_default_graph().name_scope(name or "SparseMerge"):
        sp_ids = [convert_to_sparse_tensor(s) for s in sp_ids]
        sp_values = convert_to_sparse_tensor(sp_values)
        ids = []
        for s in sp_ids:
            v = s.values if s.dtype == dtypes.int64 else math_ops.cast(s.values, dtypes.int64)
            ids.append(array_ops.expand_dims(v, axis=1))
        vocab = [math_ops.cast(x, dtypes.int64) for x in vocab_size]
        new_indices = array_ops.concat([sp_ids[0].indices[:, :-1]] + ids, 1)
        new_shape = array_ops.concat([sp_ids[0].dense_shape[:-1], vocab], 0)
        result = SparseTensor(new_indices, sp_values.values, new_shape)
        if already_sorted:
            return result
        ordered = sparse_reorder(result)
        return SparseTensor(ordered.indices, ordered.values, new_shape)


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """A bool tensor, true at [..., id] for every id stored in a row of `sp_input`
    (`tf.sparse.to_indicator`)."""
    sp = convert_to_sparse_tensor(sp_input)
    g = sp.graph
    with g.as_default(), g.name_scope(name or "SparseToIndicator") as scope:
        num_entries = array_ops.shape(sp.indices)[0]
        new_values = array_ops.fill(array_ops.expand_dims(num_entries, 0), True)
        sp_values = SparseTensor(sp.indices, new_values, sp.dense_shape)
        sp_new = sparse_merge(sp, sp_values, vocab_size, scope)
        return sparse_tensor_to_dense(sp_new, default_value=False, validate_indices=False, name=scope)
