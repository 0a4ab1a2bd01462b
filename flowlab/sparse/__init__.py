"""`tf.sparse`: TensorFlow 2.21's `tf.compat.v1.sparse` names over flowlab's sparse
builders (flowlab.ops.sparse_*).  Not built: SparseConditionalAccumulator, bincount,
cross and cross_hashed.
"""

from __future__ import annotations

from flowlab.ops.sparse_mask_ops import sparse_mask as mask
from flowlab.ops.sparse_math_ops import sparse_add as add
from flowlab.ops.sparse_math_ops import sparse_maximum as maximum
from flowlab.ops.sparse_math_ops import sparse_minimum as minimum
from flowlab.ops.sparse_math_ops import sparse_reduce_max as reduce_max
from flowlab.ops.sparse_math_ops import sparse_reduce_max_sparse as reduce_max_sparse
from flowlab.ops.sparse_math_ops import sparse_reduce_sum as reduce_sum
from flowlab.ops.sparse_math_ops import sparse_reduce_sum_sparse as reduce_sum_sparse
from flowlab.ops.sparse_math_ops import sparse_softmax as softmax
from flowlab.ops.sparse_math_ops import sparse_tensor_dense_matmul as matmul
from flowlab.ops.sparse_math_ops import sparse_tensor_dense_matmul as sparse_dense_matmul
from flowlab.ops.sparse_ops import from_dense
from flowlab.ops.sparse_ops import sparse_expand_dims as expand_dims
from flowlab.ops.sparse_ops import sparse_eye as eye
from flowlab.ops.sparse_ops import sparse_merge as merge
from flowlab.ops.sparse_ops import sparse_reset_shape as reset_shape
from flowlab.ops.sparse_ops import sparse_retain as retain
from flowlab.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from flowlab.ops.sparse_ops import sparse_to_indicator as to_indicator
from flowlab.ops.sparse_segment_ops import sparse_segment_mean as segment_mean
from flowlab.ops.sparse_segment_ops import sparse_segment_sqrt_n as segment_sqrt_n
from flowlab.ops.sparse_segment_ops import sparse_segment_sum as segment_sum
from flowlab.ops.sparse_structure_ops import sparse_concat as concat
from flowlab.ops.sparse_structure_ops import sparse_fill_empty_rows as fill_empty_rows
from flowlab.ops.sparse_structure_ops import sparse_reorder as reorder
from flowlab.ops.sparse_structure_ops import sparse_reshape as reshape
from flowlab.ops.sparse_structure_ops import sparse_slice as slice  # noqa: A004 - TF's name
from flowlab.ops.sparse_structure_ops import sparse_split as split
from flowlab.ops.sparse_structure_ops import sparse_transpose as transpose
from flowlab.ops.sparse_tensor import SparseTensor
from flowlab.ops.sparse_tensor import sparse_placeholder as placeholder

__all__ = [
    "SparseTensor", "add", "concat", "expand_dims", "eye", "fill_empty_rows", "from_dense", "mask",
    "matmul", "maximum", "merge", "minimum", "placeholder", "reduce_max", "reduce_max_sparse",
    "reduce_sum", "reduce_sum_sparse", "reorder", "reset_shape", "reshape", "retain", "segment_mean",
    "segment_sqrt_n", "segment_sum", "slice", "softmax", "sparse_dense_matmul", "split", "to_dense",
    "to_indicator", "transpose",
]
