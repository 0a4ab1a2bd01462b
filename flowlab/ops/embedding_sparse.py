"""`tf.nn.embedding_lookup_sparse` and `tf.nn.safe_embedding_lookup_sparse`: one
combined embedding per row of a SparseTensor of ids, built as TensorFlow 2.21 builds
them (embedding_ops.py).

Without weights, one table and no `max_norm`, the rows are combined straight from
the table by SparseSegmentSum/Mean/SqrtN with `sparse_gradient` (TensorFlow's fast
path: the table's gradient is an IndexedSlices over the unique looked-up rows).
Otherwise the distinct ids are looked up once (`embedding_lookup`), gathered back,
scaled by the weights and combined by `segment_sum` ("mean" divides by the weight
sum, "sqrtn" by the root of the squared weights' sum, both with DivNoNan).  Row ids
are the SparseTensor's first index column, so rows must be sorted (TensorFlow's
contract too).  `safe_embedding_lookup_sparse` flattens leading dimensions, drops
negative ids (and non-positive weights unless "sum"), fills empty rows with
`default_id` or zeros, and restores the shape.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import convert_to_tensor, graph_of
from flowlab.ops.embedding_ops import embedding_lookup
from flowlab.ops.partitioned_variables import PartitionedVariable
from flowlab.ops.segment_ops import segment_sum
from flowlab.ops.slicing import gather, slice
from flowlab.ops.sparse_ops import sparse_retain
from flowlab.ops.sparse_segment_ops import (
    sparse_segment_mean,
    sparse_segment_sqrt_n,
    sparse_segment_sum,
)
from flowlab.ops.sparse_structure_ops import sparse_fill_empty_rows, sparse_reshape
from flowlab.ops.sparse_tensor import SparseTensor
from flowlab.ops.special_math_ops import div_no_nan

__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

_SEGMENT = {"sum": sparse_segment_sum, "mean": sparse_segment_mean, "sqrtn": sparse_segment_sqrt_n}


def _tables(params: Any) -> list[Any]:
    if isinstance(params, PartitionedVariable):  # its shards
        return list(params)
    return list(params) if isinstance(params, (list, tuple)) else [params]


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any, partition_strategy: str = "mod",
                            name: str | None = None, combiner: str | None = None, max_norm: Any = None,
                            allow_fast_lookup: bool = False) -> Any:
    """The embeddings of each row's ids combined ("sum", "mean" -- the default --,
    "sqrtn"), weighted by `sp_weights` when given.

        >>> embedding_lookup_sparse(table, sp_ids, None, combiner="sum")   # [rows, dim]
    """
    combiner = "mean" if combiner is None else combiner
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    params = _tables(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    ignore_weights = sp_weights is None
    if not ignore_weights:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(f"sp_weights must be either None or SparseTensor,got {type(sp_weights)}")
        sp_ids.values.shape.assert_is_compatible_with(sp_weights.values.shape)
        sp_ids.indices.shape.assert_is_compatible_with(sp_weights.indices.shape)
        sp_ids.dense_shape.shape.assert_is_compatible_with(sp_weights.dense_shape.shape)
    g = graph_of(params + [sp_ids.values])
    with g.as_default(), g.name_scope(name or "embedding_lookup_sparse") as scope:
        segment_ids = convert_to_tensor(sp_ids.indices[:, 0], name="segment_ids")
        ids = sp_ids.values
        if len(params) == 1:
            params = [convert_to_tensor(params[0], name="params")]
        if len(params) == 1 and max_norm is None and (allow_fast_lookup or ignore_weights):
            idx, embeddings, sparse_grad = ids, params[0], not allow_fast_lookup
        else:
            ids, idx = array_ops.unique(ids)
            embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                          max_norm=max_norm)
            sparse_grad = False
        if ignore_weights:
            if segment_ids.dtype not in (dtypes.int32, dtypes.int64):
                segment_ids = math_ops.cast(segment_ids, dtypes.int32)
            return _SEGMENT[combiner](embeddings, idx, segment_ids, name=scope,
                                      sparse_gradient=sparse_grad)
        return _weighted(embeddings, idx, segment_ids, sp_weights, combiner, scope)


def _weighted(embeddings: Any, idx: Any, segment_ids: Any, sp_weights: SparseTensor, combiner: str,
              scope: str) -> Any:
    if segment_ids.dtype != dtypes.int32:
        segment_ids = math_ops.cast(segment_ids, dtypes.int32)
    weights = sp_weights.values
    embeddings = gather(embeddings, idx)
    original = embeddings.dtype
    if embeddings.dtype == dtypes.float16:
        embeddings = math_ops.cast(embeddings, dtypes.float32)
    if weights.dtype != embeddings.dtype:
        weights = math_ops.cast(weights, embeddings.dtype)
    ones_shape = array_ops.expand_dims(array_ops.rank(embeddings) - 1, 0)
    weights_shape = array_ops.shape(weights)
    ones = array_ops.ones(ones_shape, dtype=weights_shape.dtype)
    orig_shape = weights.shape
    weights = array_ops.reshape(weights, array_ops.concat([weights_shape, ones], 0))
    if embeddings.shape.ndims is not None:
        weights.set_shape(orig_shape.concatenate([1] * (embeddings.shape.ndims - 1)))
    embeddings = embeddings * weights
    if combiner == "sum":
        embeddings = segment_sum(embeddings, segment_ids, name=scope)
    elif combiner == "mean":
        embeddings = segment_sum(embeddings, segment_ids)
        embeddings = div_no_nan(embeddings, segment_sum(weights, segment_ids), name=scope)
    else:
        embeddings = segment_sum(embeddings, segment_ids)
        total = math_ops.sqrt(segment_sum(math_ops.pow(weights, 2), segment_ids))
        embeddings = div_no_nan(embeddings, total, name=scope)
    return embeddings if embeddings.dtype == original else math_ops.cast(embeddings, original)


def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any, sparse_weights: Any = None,
                                 combiner: str = "mean", default_id: Any = None, name: str | None = None,
                                 partition_strategy: str = "div", max_norm: Any = None,
                                 allow_fast_lookup: bool = False) -> Any:
    """`embedding_lookup_sparse` over any rank of ids, robust to invalid ids (< 0),
    non-positive weights (dropped unless "sum") and empty rows (`default_id`'s
    embedding, or zeros)."""
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    tables = _tables(embedding_weights)
    if len(tables) < 1:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    g = graph_of(tables + [sparse_ids.values])
    with g.as_default():
        tables = [convert_to_tensor(w, dtype=dtype) for w in tables]
        with g.name_scope(name or "embedding_lookup") as scope:
            original_shape = sparse_ids.dense_shape
            rank_dim = original_shape.shape[0].value
            rank: Any = array_ops.size(original_shape) if rank_dim is None else rank_dim
            sparse_ids = sparse_reshape(sparse_ids, [
                math_ops.reduce_prod(slice(original_shape, [0], [rank - 1])),
                gather(original_shape, rank - 1)])
            if sparse_weights is not None:
                sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values,
                                              sparse_ids.dense_shape)
            sparse_ids, sparse_weights = _prune_invalid_ids(sparse_ids, sparse_weights)
            if combiner != "sum":
                sparse_ids, sparse_weights = _prune_invalid_weights(sparse_ids, sparse_weights)
            sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
            if sparse_weights is not None:
                sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
            result = embedding_lookup_sparse(
                tables, sparse_ids, sparse_weights, combiner=combiner,
                partition_strategy=partition_strategy, name=None if default_id is None else scope,
                max_norm=max_norm, allow_fast_lookup=allow_fast_lookup)
            if default_id is None:
                is_row_empty = array_ops.tile(array_ops.reshape(is_row_empty, [-1, 1]),
                                              array_ops.stack([1, array_ops.shape(result)[1]]))
                result = array_ops.where(is_row_empty, array_ops.zeros_like(result), result, name=scope)
            final = array_ops.reshape(result, array_ops.concat([
                slice(math_ops.cast(original_shape, dtypes.int32), [0], [rank - 1]),
                slice(array_ops.shape(result), [1], [-1])], 0))
            lead = TensorShape(None) if rank_dim is None else TensorShape([None] * (rank_dim - 1))
            final.set_shape(lead.concatenate(result.shape[1:]))
            return final


def _prune_invalid_ids(sparse_ids: SparseTensor, sparse_weights: Any) -> tuple[SparseTensor, Any]:
    valid = math_ops.greater_equal(sparse_ids.values, 0)
    if sparse_weights is not None:
        valid = math_ops.logical_and(valid, array_ops.ones_like(sparse_weights.values, dtype=dtypes.bool))
    sparse_ids = sparse_retain(sparse_ids, valid)
    if sparse_weights is not None:
        sparse_weights = sparse_retain(sparse_weights, valid)
    return sparse_ids, sparse_weights


def _prune_invalid_weights(sparse_ids: SparseTensor, sparse_weights: Any) -> tuple[SparseTensor, Any]:
    if sparse_weights is not None:
        valid = math_ops.greater(sparse_weights.values, 0)
        sparse_ids = sparse_retain(sparse_ids, valid)
        sparse_weights = sparse_retain(sparse_weights, valid)
    return sparse_ids, sparse_weights
