"""`tf.nn.embedding_lookup`: rows of an embedding table, or of a table split into
shards, by id.

Built as TensorFlow builds it (embedding_ops.py): one table is a `Gather` colocated with
the table followed by an `Identity` (so the result carries no colocation constraint);
several shards (a list, or a `PartitionedVariable`'s shards) are a `DynamicPartition` of the ids by shard ("mod": id % n, "div":
contiguous ranges), one gather per shard and a `DynamicStitch` back into id order
(TensorFlow uses ParallelDynamicStitch, which flowlab does not have: the values are
the same).  The gradient with respect to a table is an IndexedSlices (the Gather's),
so optimizers update only the looked-up rows.  `max_norm` clips each looked-up
embedding with `clip_by_norm`.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, slicing
from flowlab.ops.builder import convert_to_tensor, graph_of
from flowlab.ops.clip_ops import clip_by_norm
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.indexed_slices import convert_to_tensor_or_indexed_slices
from flowlab.ops.partitioned_variables import PartitionedVariable

__all__ = ["embedding_lookup"]


def _clip(params: Tensor, ids: Tensor, max_norm: Any) -> Tensor:
    if max_norm is None:
        return params
    ids_rank, params_rank = ids.shape.ndims, params.shape.ndims
    if ids_rank is not None and params_rank is not None:
        axes: Any = list(range(ids_rank, params_rank))
    else:
        axes = math_ops.range(array_ops.rank(ids), array_ops.rank(params))
    return clip_by_norm(params, max_norm, axes=axes)


def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm: Any = None) -> Tensor:
    """`params[ids]` for one table, or for a list of shards split by `partition_strategy`."""
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    if isinstance(params, PartitionedVariable):
        params = list(params)  # its shards: one Gather each, on the shard's device
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    g = graph_of(params + [ids])
    with g.as_default(), g.name_scope(name or "embedding_lookup") as scope:
        n = len(params)
        params = [convert_to_tensor_or_indexed_slices(p) for p in params]
        ids = convert_to_tensor(ids, name="ids")
        if n == 1:
            with g.colocate_with(params[0].op):
                result = _clip(slicing.gather(params[0], ids, name=scope), ids, max_norm)
            with g.colocate_with(None, ignore_existing=True):
                return identity(result)
        return _sharded(g, params, ids, partition_strategy, scope, max_norm)


def _sharded(g: Any, params: list[Tensor], ids: Tensor, strategy: str, scope: str, max_norm: Any) -> Tensor:
    n = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = math_ops.range(array_ops.size(flat_ids))
    if strategy == "mod":
        assignments = flat_ids % n
        new_ids = flat_ids // n
    elif strategy == "div":
        sizes = [p.shape[0].value if p.shape.ndims else None for p in params]
        if all(s is not None for s in sizes) and sum(sizes):  # type: ignore[arg-type]
            total: Any = constant(sum(sizes), flat_ids.dtype)  # type: ignore[arg-type]
        else:
            dims = []
            for p in params:
                with g.colocate_with(p.op):
                    dims.append(array_ops.shape(p, out_type=flat_ids.dtype)[0])
            total = math_ops.add_n(dims)
        per = total // n
        extras = total % n
        assignments = math_ops.maximum(flat_ids // (per + 1), (flat_ids - extras) // per)
        new_ids = array_ops.where(assignments < extras, flat_ids % (per + 1), (flat_ids - extras) % per)
    else:
        raise ValueError(f"Unrecognized partition strategy: {strategy}.Must be one of either `mod` or `div`.")  # TF: no space
    assignments = math_ops.cast(assignments, dtypes.int32)
    gather_ids = slicing.dynamic_partition(new_ids, assignments, n)
    pindices = slicing.dynamic_partition(original_indices, assignments, n)
    parts = []
    for p in range(n):
        # As TensorFlow: the device scope is dropped, the Gather goes where its shard is,
        # so only the gathered rows cross devices.
        with g.device(None), g.colocate_with(params[p].op):
            parts.append(slicing.gather(params[p], gather_ids[p]))
    ret = slicing.dynamic_stitch(pindices, parts, name=scope)
    element = params[0].shape[1:]
    for p in params[1:]:
        element = element.merge_with(p.shape[1:])
    if element.is_fully_defined():
        element_d: Any = element.as_list()
    else:
        with g.colocate_with(params[0].op):
            element_d = array_ops.shape(params[0])[1:]
    ret = array_ops.reshape(ret, array_ops.concat([array_ops.shape(ids), element_d], 0))
    ret.set_shape(ids.shape.concatenate(TensorShape(element)))
    return _clip(ret, ids, max_norm)
