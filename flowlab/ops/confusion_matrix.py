"""`tf.confusion_matrix` / `tf.math.confusion_matrix`: counts of (label, prediction) pairs.

The matrix is a ScatterNd of ones (or the weights) at the stacked [label, prediction]
indices, built as TensorFlow builds it: both sides cast to int64 and checked
non-negative (and below `num_classes` when given) by Asserts the result depends on.
`tf.metrics.mean_iou` accumulates it in a local variable.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, check_ops, math_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.core_ops import with_dependencies
from flowlab.ops.losses import remove_squeezable_dimensions
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.slicing import scatter_nd

__all__ = ["confusion_matrix"]


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, dtype: Any = dtypes.int32,
                     name: str | None = None, weights: Any = None) -> Tensor:
    """The [num_classes, num_classes] matrix whose (i, j) entry counts label i predicted j.

        tf.confusion_matrix([1, 2, 4], [2, 2, 4])   # 5x5, ones at (1, 2), (2, 2), (4, 4)
    """
    with _name_scope(name, "confusion_matrix", [predictions, labels]):
        labels, predictions = remove_squeezable_dimensions(
            convert_to_tensor(labels, name="labels"), convert_to_tensor(predictions, name="predictions"))
        predictions = math_ops.cast(predictions, dtypes.int64)
        labels = math_ops.cast(labels, dtypes.int64)
        labels = with_dependencies(
            [check_ops.assert_non_negative(labels, message="`labels` contains negative values")], labels)
        predictions = with_dependencies(
            [check_ops.assert_non_negative(predictions, message="`predictions` contains negative values")],
            predictions)
        if num_classes is None:
            num_classes = math_ops.maximum(math_ops.reduce_max(predictions), math_ops.reduce_max(labels)) + 1
        else:
            n64 = math_ops.cast(num_classes, dtypes.int64)
            labels = with_dependencies(
                [check_ops.assert_less(labels, n64, message="`labels` out of bound")], labels)
            predictions = with_dependencies(
                [check_ops.assert_less(predictions, n64, message="`predictions` out of bound")], predictions)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            predictions.shape.assert_is_compatible_with(weights.shape)
            weights = math_ops.cast(weights, dtype)
        shape = array_ops.stack([num_classes, num_classes])
        indices = array_ops.stack([labels, predictions], axis=1)
        values = array_ops.ones_like(predictions, dtype) if weights is None else weights
        return scatter_nd(indices=indices, updates=values, shape=math_ops.cast(shape, dtypes.int64))
