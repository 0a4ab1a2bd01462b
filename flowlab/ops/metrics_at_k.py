"""Streaming metrics of the top k predictions: recall_at_k, precision_at_k and their
`_at_top_k` forms (already-chosen class indices), and average_precision_at_k.

State: two float64 scalars per metric in LOCAL_VARIABLES / METRIC_VARIABLES, named as
TensorFlow names them (`recall_at_5/true_positive_at_5`,
`recall_at_5/false_negative_at_5`).  Per example, true positives are the size of the
set intersection of the top-k indices and the labels, false negatives the labels not
predicted, false positives the predictions not labelled (TensorFlow's set ops:
flowlab.ops.set_ops), optionally weighted per example.  average_precision_at_k keeps
`max` (examples, or their weights) and `total` (summed average precisions), also float64.

Labels are dense int tensors, [batch] or [batch, labels]; flowlab does not take
SparseTensor labels nor `class_id` here (both need TensorFlow's sparse set ops) and
says so with a NotImplementedError.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, math_ops, state_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.cond import cond
from flowlab.ops.metrics_impl import _add_to, metric_variable
from flowlab.ops.nn_ops import _name_scope, top_k
from flowlab.ops.set_ops import set_difference, set_intersection, set_size
from flowlab.ops.sparse_tensor import SparseTensor
from flowlab.ops.special_math_ops import div_no_nan
from flowlab.ops.weights_broadcast_ops import assert_broadcastable, broadcast_weights

__all__ = ["recall_at_k", "recall_at_top_k", "precision_at_k", "precision_at_top_k", "sparse_precision_at_k",
           "sparse_recall_at_k", "average_precision_at_k", "sparse_average_precision_at_k"]


def _at_k_name(name: str, k: int | None = None, class_id: int | None = None) -> str:
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


def _refuse(labels: Any, class_id: Any) -> None:
    if isinstance(labels, SparseTensor):
        raise NotImplementedError("flowlab's *_at_k metrics take dense labels only")
    if class_id is not None:
        raise NotImplementedError("flowlab's *_at_k metrics do not take class_id")


def _maybe_expand_labels(labels: Any, predictions: Tensor) -> Tensor:
    """Labels [D1, ..., DN] become [D1, ..., DN, 1] to match [D1, ..., DN, k] predictions."""
    with _name_scope(None, "expand_labels", [labels, predictions]) as scope:
        labels = convert_to_tensor(labels)
        lr, pr = labels.shape.ndims, predictions.shape.ndims
        if lr is not None and pr is not None:
            if pr == lr:
                return labels
            if pr == lr + 1:
                return array_ops.expand_dims(labels, -1, name=scope)
            raise ValueError(f"Unexpected labels shape {labels.shape} for predictions shape {predictions.shape}. "
                             "Predictions rank should be the same rank as labels rank or labels rank plus one .")
        lab = labels
        return cond(math_ops.equal(array_ops.rank(predictions), array_ops.rank(lab) + 1),
                    lambda: array_ops.expand_dims(lab, -1, name=scope), lambda: lab)


def _weighted_count(kind: str, size: Tensor, weights: Any) -> Tensor:
    count = math_ops.cast(size, dtypes.float64)
    if weights is not None:
        with get_default_graph().control_dependencies((assert_broadcastable(weights, count),)):
            weights = math_ops.cast(weights, dtypes.float64)
            count = math_ops.multiply(count, weights)
    return count


def _streaming_count(kind: str, short: str, labels: Tensor, predictions_idx: Tensor, k: Any,
                     weights: Any) -> tuple[Any, Tensor]:
    """(variable, update) of one of true_positive / false_negative / false_positive at k."""
    with _name_scope(None, _at_k_name(short, k), (predictions_idx, labels, weights)) as scope:
        with _name_scope(None, kind, (predictions_idx, labels, weights)):
            if kind == "true_positives":
                s = set_size(set_intersection(predictions_idx, labels))
            elif kind == "false_negatives":
                s = set_size(set_difference(predictions_idx, labels, aminusb=False))
            else:
                s = set_size(set_difference(predictions_idx, labels, aminusb=True))
            counts = _weighted_count(kind, s, weights)
        batch_total = math_ops.cast(math_ops.reduce_sum(counts), dtypes.float64)
        var = metric_variable([], dtypes.float64, name=scope)
        return var, state_ops.assign_add(var, batch_total, name="update")


def _ratio_at_top_k(kind: str, other: str, other_short: str) -> Any:
    def metric(labels: Any, predictions_idx: Any, k: int | None = None, class_id: int | None = None,
               weights: Any = None, metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        _refuse(labels, class_id)
        with _name_scope(name, _at_k_name(kind, k), (predictions_idx, labels, weights)) as scope:
            predictions_idx = convert_to_tensor(predictions_idx)
            labels = _maybe_expand_labels(labels, predictions_idx)
            top_k_idx = math_ops.cast(predictions_idx, dtypes.int64)
            tp, tp_update = _streaming_count("true_positives", "true_positive", labels, top_k_idx, k, weights)
            o, o_update = _streaming_count(other, other_short, labels, top_k_idx, k, weights)
            value = math_ops.divide(tp, math_ops.add(tp, o), name=scope)
            _add_to(metrics_collections, value)
            update = math_ops.divide(tp_update, math_ops.add(tp_update, o_update), name="update")
            _add_to(updates_collections, update)
            return value, update

    metric.__name__ = metric.__qualname__ = f"{kind}_at_top_k"
    return metric


recall_at_top_k = _ratio_at_top_k("recall", "false_negatives", "false_negative")
recall_at_top_k.__doc__ = "tp / (tp + fn) of given top-k class indices against the labels, streamed (float64)."
precision_at_top_k = _ratio_at_top_k("precision", "false_positives", "false_positive")
precision_at_top_k.__doc__ = "tp / (tp + fp) of given top-k class indices against the labels, streamed (float64)."


def _ratio_at_k(kind: str, at_top_k: Any) -> Any:
    def metric(labels: Any, predictions: Any, k: int, class_id: int | None = None, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        _refuse(labels, class_id)
        with _name_scope(name, _at_k_name(kind, k), (predictions, labels, weights)) as scope:
            _, top_k_idx = top_k(predictions, k)
            return at_top_k(labels=labels, predictions_idx=top_k_idx, k=k, weights=weights,
                            metrics_collections=metrics_collections, updates_collections=updates_collections,
                            name=scope)

    metric.__name__ = metric.__qualname__ = f"{kind}_at_k"
    metric.__doc__ = (f"The {kind} of the k highest-scoring classes of `predictions` ([batch, classes]) "
                      "against int `labels`, streamed (float64).\n\n"
                      f"    value, update = tf.metrics.{kind}_at_k(labels, logits, k=5)")
    return metric


recall_at_k = _ratio_at_k("recall", recall_at_top_k)
precision_at_k = _ratio_at_k("precision", precision_at_top_k)
sparse_recall_at_k = recall_at_k
sparse_precision_at_k = precision_at_k


def _expand_and_tile(tensor: Tensor, multiple: int, dim: int = 0, name: str | None = None) -> Tensor:
    if multiple < 1:
        raise ValueError(f"Invalid argument multiple={multiple} for expand_and_tile  call. `multiple` must be an "
                         "integer > 0")
    with _name_scope(name, "expand_and_tile", (tensor,)) as scope:
        tensor = convert_to_tensor(tensor)
        expanded = array_ops.expand_dims(tensor, dim if dim >= 0 else dim - 1, name="expand")
        if multiple == 1:
            return expanded
        ones = array_ops.ones_like(array_ops.shape(tensor))
        multiples = array_ops.concat((ones[:dim], (multiple,), ones[dim:]), 0, name="multiples")
        return array_ops.tile(expanded, multiples, name=scope)


def _num_relevant(labels: Tensor, k: int) -> Tensor:
    if k < 1:
        raise ValueError(f"Invalid k={k}")
    with _name_scope(None, "num_relevant", (labels,)) as scope:
        present = array_ops.where_v2(math_ops.greater_equal(labels, 0), array_ops.ones_like(labels),
                                     array_ops.zeros_like(labels))
        return math_ops.minimum(math_ops.reduce_sum(present, axis=-1), k, name=scope)


def _average_precision_at_top_k(labels: Tensor, predictions_idx: Tensor) -> Tensor:
    with _name_scope(None, "average_precision", (predictions_idx, labels)) as scope:
        predictions_idx = math_ops.cast(predictions_idx, dtypes.int64, name="predictions_idx")
        if predictions_idx.shape.ndims == 0:
            raise ValueError("The rank of `predictions_idx` must be at least 1.")
        k = predictions_idx.shape.as_list()[-1]
        if k is None:
            raise ValueError("The last dimension of predictions_idx must be set. Currently, it is None.")
        labels = _maybe_expand_labels(labels, predictions_idx)
        predictions_idx_per_k = array_ops.expand_dims(predictions_idx, -1, name="predictions_idx_per_k")
        labels_per_k = _expand_and_tile(labels, multiple=k, dim=-1, name="labels_per_k")
        with _name_scope("relevant_per_k", "true_positives", (predictions_idx_per_k, labels_per_k)):
            relevant_per_k = math_ops.cast(set_size(set_intersection(predictions_idx_per_k, labels_per_k)),
                                           dtypes.float64)
        tp_per_k = math_ops.cumsum(relevant_per_k, axis=-1, name="tp_per_k")
        retrieved_per_k = math_ops.cumsum(array_ops.ones_like(relevant_per_k), axis=-1, name="retrieved_per_k")
        precision_per_k = math_ops.divide(math_ops.cast(tp_per_k, dtypes.float64),
                                          math_ops.cast(retrieved_per_k, dtypes.float64), name="precision_per_k")
        relevant_precision_per_k = math_ops.multiply(precision_per_k, math_ops.cast(relevant_per_k, dtypes.float64),
                                                     name="relevant_precision_per_k")
        precision_sum = math_ops.reduce_sum(relevant_precision_per_k, axis=(-1,), name="precision_sum")
        num_relevant_items = math_ops.cast(_num_relevant(labels, k), dtypes.float64)
        return math_ops.divide(precision_sum, num_relevant_items, name=scope)


def _streaming_average_precision_at_top_k(labels: Tensor, predictions_idx: Tensor, weights: Any,
                                          metrics_collections: Any, updates_collections: Any,
                                          name: str | None) -> tuple[Tensor, Tensor]:
    with _name_scope(name, "average_precision_at_top_k", (predictions_idx, labels, weights)) as scope:
        average_precision = _average_precision_at_top_k(labels=labels, predictions_idx=predictions_idx)
        if weights is not None:
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float64), average_precision)
            average_precision = math_ops.multiply(average_precision, weights)
        with _name_scope(None, "max", (average_precision,)) as max_scope:
            max_var = metric_variable([], dtypes.float64, name=max_scope)
            if weights is None:
                batch_max = math_ops.cast(array_ops.size(average_precision, name="batch_max"), dtypes.float64)
            else:
                batch_max = math_ops.reduce_sum(weights, name="batch_max")
            max_update = state_ops.assign_add(max_var, batch_max, name="update")
        with _name_scope(None, "total", (average_precision,)) as total_scope:
            total_var = metric_variable([], dtypes.float64, name=total_scope)
            batch_total = math_ops.reduce_sum(average_precision, name="batch_total")
            total_update = state_ops.assign_add(total_var, batch_total, name="update")
        value = div_no_nan(total_var, max_var, name="mean")
        _add_to(metrics_collections, value)
        update = div_no_nan(total_update, max_update, name=scope)
        _add_to(updates_collections, update)
        return value, update


def _clean_out_of_range_indices(labels: Tensor, num_classes: Tensor) -> Tensor:
    def clean() -> Tensor:
        return array_ops.where_v2(math_ops.greater_equal(labels, num_classes), -1 * array_ops.ones_like(labels),
                                  labels)

    return cond(math_ops.greater_equal(math_ops.reduce_max(labels), num_classes), clean, lambda: labels)


def average_precision_at_k(labels: Any, predictions: Any, k: int, weights: Any = None,
                           metrics_collections: Any = None, updates_collections: Any = None,
                           name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean over examples of the average precision of the top k classes (float64);
    labels at or above the number of classes count as absent.

        value, update = tf.metrics.average_precision_at_k(labels, logits, k=3)
    """
    _refuse(labels, None)
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    with _name_scope(name, _at_k_name("average_precision", k), (predictions, labels, weights)) as scope:
        predictions = convert_to_tensor(predictions)
        _, predictions_idx = top_k(predictions, k)
        labels = _clean_out_of_range_indices(convert_to_tensor(labels),
                                             math_ops.cast(array_ops.shape(predictions)[-1], dtypes.int64))
        return _streaming_average_precision_at_top_k(labels, predictions_idx, weights, metrics_collections,
                                                     updates_collections, scope)


sparse_average_precision_at_k = average_precision_at_k
