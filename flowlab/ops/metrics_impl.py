"""Streaming metrics (`tf.metrics`): a value and an update op over local variables.

State: each metric owns zero-initialized, non-trainable variables in the
LOCAL_VARIABLES and METRIC_VARIABLES collections, named under the metric's variable
scope as TensorFlow names them (`accuracy/total`, `accuracy/count`,
`mean_iou/total_confusion_matrix`).  Invariant: `update_op` adds one batch to the
variables (AssignAdd / ScatterAdd) and returns the metric over everything seen so
far; `value` reads the variables without changing them.  Running
`tf.local_variables_initializer()` starts a new stream.

The graphs follow TensorFlow's metrics_impl op for op, so op names, dtypes and values
match: the ratios are DivNoNan(total, Maximum(count, 0)), precision and recall a
Select on tp + fp > 0.  The threshold metrics (auc, *_at_thresholds,
sensitivity_at_specificity) are in flowlab.ops.metrics_thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.graph_keys import GraphKeys
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, check_ops, math_ops, state_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.check_ops import Assert
from flowlab.ops.cond import cond
from flowlab.ops.confusion_matrix import confusion_matrix
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import identity, no_op
from flowlab.ops.linalg_diag import diag_part
from flowlab.ops.losses import remove_squeezable_dimensions
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.special_math_ops import div_no_nan
from flowlab.ops.variable_scope import variable_scope
from flowlab.ops.variables import Variable
from flowlab.ops.weights_broadcast_ops import broadcast_weights

__all__ = [
    "mean", "mean_tensor", "accuracy", "mean_absolute_error", "mean_squared_error",
    "root_mean_squared_error", "mean_relative_error", "mean_cosine_distance", "percentage_below",
    "true_positives", "false_positives", "true_negatives", "false_negatives", "precision", "recall",
    "mean_iou", "mean_per_class_accuracy",
]


def metric_variable(shape: Any, dtype: Any, validate_shape: bool = True, name: str | None = None) -> Variable:
    """A zero-initialized local variable in LOCAL_VARIABLES and METRIC_VARIABLES."""
    return Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def _add_to(collections: Any, value: Any) -> None:
    if collections:
        get_default_graph().add_to_collections(collections, value)


def _remove_squeezable_dimensions(predictions: Any, labels: Any, weights: Any) -> tuple[Tensor, Any, Any]:
    """Squeeze the last dimension of predictions or labels when their ranks differ by
    one; squeeze or expand the weights' last dimension to the predictions' rank."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    wr = weights.shape.ndims
    if wr == 0:
        return predictions, labels, weights
    pr = predictions.shape.ndims
    if pr is not None and wr is not None:
        if wr - pr == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif pr - wr == 1:
            weights = array_ops.expand_dims(weights, [-1])
        return predictions, labels, weights
    w_rank = array_ops.rank(weights)
    rank_diff = w_rank - array_ops.rank(predictions)
    w = weights

    def maybe_expand() -> Tensor:
        return cond(math_ops.equal(rank_diff, -1), lambda: array_ops.expand_dims(w, [-1]), lambda: w)

    last = w.shape.as_list()[-1] if wr is not None else None
    if wr is not None and last not in (None, 1):
        def maybe_squeeze() -> Tensor:
            return w
    else:
        def maybe_squeeze() -> Tensor:
            return array_ops.squeeze(w, [-1])

    def maybe_adjust() -> Tensor:
        return cond(math_ops.equal(rank_diff, 1), maybe_squeeze, maybe_expand)

    weights = cond(math_ops.equal(w_rank, 0), lambda: w, maybe_adjust)
    return predictions, labels, weights


def _ratio(total: Any, count: Any, name: str) -> Tensor:
    return div_no_nan(total, math_ops.maximum(count, 0), name=name)


def mean(values: Any, weights: Any = None, metrics_collections: Any = None,
         updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The (weighted) mean of every value seen: total / count, as float32.

        m, update = tf.metrics.mean(x)   # sess.run(update) per batch, then sess.run(m)
    """
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.reduce_sum(weights)
        update_total = state_ops.assign_add(total, math_ops.reduce_sum(values))
        with get_default_graph().control_dependencies([values]):
            update_count = state_ops.assign_add(count, num_values)
        value = _ratio(total, count, "value")
        _add_to(metrics_collections, value)
        update_op = _ratio(update_total, update_count, "update_op")
        _add_to(updates_collections, update_op)
        return value, update_op


def mean_tensor(values: Any, weights: Any = None, metrics_collections: Any = None,
                updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The element-wise (weighted) mean of every `values` tensor seen."""
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable(values.shape, dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape, dtypes.float32, name="count_tensor")
        num_values = array_ops.ones_like(values)
        if weights is not None:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.multiply(num_values, weights)
        update_total = state_ops.assign_add(total, values)
        with get_default_graph().control_dependencies([values]):
            update_count = state_ops.assign_add(count, num_values)
        value = _ratio(total, count, "value")
        _add_to(metrics_collections, value)
        update_op = _ratio(update_total, update_count, "update_op")
        _add_to(updates_collections, update_op)
        return value, update_op


def accuracy(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
             updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """How often `predictions` equals `labels` (the mean of Equal cast to float32)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions.shape.assert_is_compatible_with(labels.shape)
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_absolute_error(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
                        updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean of |predictions - labels|."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    errors = math_ops.abs(predictions - labels)
    return mean(errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error")


def mean_squared_error(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
                       updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean of (labels - predictions) ** 2."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    errors = math_ops.squared_difference(labels, predictions)
    return mean(errors, weights, metrics_collections, updates_collections, name or "mean_squared_error")


def root_mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """sqrt of mean_squared_error (its variables: `root_mean_squared_error/total`, ...)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None,
                                         name or "root_mean_squared_error")
    value = math_ops.sqrt(mse)
    _add_to(metrics_collections, value)
    update_op = math_ops.sqrt(update_mse)
    _add_to(updates_collections, update_op)
    return value, update_op


def mean_relative_error(labels: Any, predictions: Any, normalizer: Any, weights: Any = None,
                        metrics_collections: Any = None, updates_collections: Any = None,
                        name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean of |labels - predictions| / normalizer (0 where the normalizer is 0)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions, normalizer = remove_squeezable_dimensions(predictions, normalizer)
    predictions.shape.assert_is_compatible_with(normalizer.shape)
    relative = array_ops.where(math_ops.equal(normalizer, 0.0), array_ops.zeros_like(labels),
                               math_ops.divide(math_ops.abs(labels - predictions), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections, name or "mean_relative_error")


def mean_cosine_distance(labels: Any, predictions: Any, dim: int, weights: Any = None,
                         metrics_collections: Any = None, updates_collections: Any = None,
                         name: str | None = None) -> tuple[Tensor, Tensor]:
    """1 - mean(sum(labels * predictions, dim)): inputs are expected unit-normalized."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    radial = math_ops.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    mean_distance = math_ops.subtract(1.0, mean_distance)
    update_op = math_ops.subtract(1.0, update_op)
    _add_to(metrics_collections, mean_distance)
    _add_to(updates_collections, update_op)
    return mean_distance, update_op


def percentage_below(values: Any, threshold: Any, weights: Any = None, metrics_collections: Any = None,
                     updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The fraction of values below `threshold`."""
    below = math_ops.cast(math_ops.less(values, threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections, name or "percentage_below_threshold")


# --- counts of a condition --------------------------------------------------------------
def _count_condition(values: Tensor, weights: Any, metrics_collections: Any,
                     updates_collections: Any) -> tuple[Tensor, Tensor]:
    check_ops.assert_type(values, dtypes.bool)
    count = metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        weights = convert_to_tensor(weights)
        with get_default_graph().control_dependencies([_assert_rank_in(weights, (0, array_ops.rank(values)))]):
            weights = math_ops.cast(weights, dtypes.float32)
            values = math_ops.multiply(values, weights)
    value = identity(count)
    _add_to(metrics_collections, value)
    update_op = state_ops.assign_add(count, math_ops.reduce_sum(values))
    _add_to(updates_collections, update_op)
    return value, update_op


def _assert_rank_in(x: Tensor, ranks: tuple[Any, ...]) -> Any:
    """TensorFlow's check_ops.assert_rank_in: a NoOp when the ranks decide it at build
    time (a ValueError when they refute it), else an Assert on Rank(x)."""
    with _name_scope(None, "assert_rank_in", [x]):
        rank_ts = [convert_to_tensor(r, name="rank") for r in ranks]
        data = ["", f"Tensor {x.name} must have rank in", *rank_ts, "Received shape: ", array_ops.shape(x)]
        for r in rank_ts:
            check_ops.assert_type(r, dtypes.int32)
        static = [constant_value(r) for r in rank_ts]
        if x.shape.ndims is not None and all(r is not None for r in static):
            if x.shape.ndims not in [int(r) for r in static]:
                raise ValueError(
                    f"Tensor {x.name} must have rank in {tuple(int(r) for r in static)}.  Received "
                    f"rank {x.shape.ndims}, shape {x.shape}")
            return no_op(name="static_checks_determined_all_ok")
        actual = array_ops.rank(x)
        condition = math_ops.equal(rank_ts[0], actual)
        for r in rank_ts[1:]:
            condition = math_ops.logical_or(condition, math_ops.equal(r, actual))
        return Assert(condition, data)


def _counting(kind: str, want_label: bool, want_pred: bool) -> Callable[..., tuple[Tensor, Tensor]]:
    def metric(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
        with variable_scope(name, kind, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool), weights)
            hit = math_ops.logical_and(math_ops.equal(labels, want_label),
                                       math_ops.equal(predictions, want_pred))
            return _count_condition(hit, weights, metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = kind
    metric.__doc__ = (f"The (weighted) number of {kind.replace('_', ' ')}: label {want_label} "
                      f"predicted {want_pred}, as a float32 count.")
    return metric


true_positives = _counting("true_positives", True, True)
false_positives = _counting("false_positives", False, True)
true_negatives = _counting("true_negatives", False, False)
false_negatives = _counting("false_negatives", True, False)


def _precision_or_recall(kind: str, other: Callable[..., tuple[Tensor, Tensor]]) -> Callable[..., Any]:
    def metric(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
        with variable_scope(name, kind, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool), weights)
            tp, tp_update = true_positives(labels, predictions, weights)
            other_v, other_update = other(labels, predictions, weights)

            def compute(t: Tensor, o: Tensor, op_name: str) -> Tensor:
                return array_ops.where(math_ops.greater(t + o, 0), math_ops.divide(t, t + o), 0, op_name)

            value = compute(tp, other_v, "value")
            _add_to(metrics_collections, value)
            update_op = compute(tp_update, other_update, "update_op")
            _add_to(updates_collections, update_op)
            return value, update_op

    metric.__name__ = metric.__qualname__ = kind
    return metric


precision = _precision_or_recall("precision", false_positives)
precision.__doc__ = "tp / (tp + fp) over the stream (0 while nothing is predicted positive)."
recall = _precision_or_recall("recall", false_negatives)
recall.__doc__ = "tp / (tp + fn) over the stream (0 while no label is positive)."


# --- per class -------------------------------------------------------------------------
def _flat(t: Tensor) -> Tensor:
    return array_ops.reshape(t, [-1]) if t.shape.ndims > 1 else t


def mean_iou(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
             metrics_collections: Any = None, updates_collections: Any = None,
             name: str | None = None) -> tuple[Tensor, Tensor]:
    """Mean intersection-over-union over the classes present, from a streaming
    float64 confusion matrix; `update_op` returns that matrix (TensorFlow's contract)."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
        predictions.shape.assert_is_compatible_with(labels.shape)
        total_cm = metric_variable([num_classes, num_classes], dtypes.float64, name="total_confusion_matrix")
        predictions = _flat(math_ops.cast(predictions, dtypes.int64))
        labels = _flat(math_ops.cast(labels, dtypes.int64))
        n = math_ops.cast(num_classes, dtypes.int64)
        if weights is not None:
            weights = convert_to_tensor(weights)
            weights = _flat(weights)
        current = confusion_matrix(labels, predictions, n, weights=weights, dtype=dtypes.float64)
        update_op = state_ops.assign_add(total_cm, current)

        rows = math_ops.cast(math_ops.reduce_sum(total_cm, 0), dtypes.float32)
        cols = math_ops.cast(math_ops.reduce_sum(total_cm, 1), dtypes.float32)
        diag = math_ops.cast(diag_part(total_cm), dtypes.float32)
        denominator = rows + cols - diag
        num_valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0), dtype=dtypes.float32))
        denominator = array_ops.where(math_ops.greater(denominator, 0), denominator,
                                      array_ops.ones_like(denominator))
        iou = math_ops.divide(diag, denominator)
        value = array_ops.where(math_ops.greater(num_valid, 0),
                                math_ops.reduce_sum(iou, name="mean_iou") / num_valid, 0)
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update_op)
        return value, update_op


def mean_per_class_accuracy(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean over classes of each class's accuracy (ScatterAdd per label)."""
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        predictions = convert_to_tensor(predictions)
        labels = _flat(math_ops.cast(labels, dtypes.int64))
        predictions = _flat(predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = array_ops.ones([array_ops.size(labels)], dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = math_ops.cast(predictions, labels.dtype)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = _flat(convert_to_tensor(weights))
            weights = math_ops.cast(weights, dtypes.float32)
            is_correct *= weights
            ones *= weights
        update_total = state_ops.scatter_add(total, labels, ones)
        update_count = state_ops.scatter_add(count, labels, is_correct)
        per_class = div_no_nan(count, math_ops.maximum(total, 0))
        value = math_ops.reduce_mean(per_class, name="mean_accuracy")
        _add_to(metrics_collections, value)
        update_op = _ratio(update_count, update_total, "update_op")
        _add_to(updates_collections, update_op)
        return value, update_op
