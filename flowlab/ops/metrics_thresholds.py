"""Streaming metrics over a list of thresholds: auc, precision/recall and the four
counts at thresholds, sensitivity_at_specificity, specificity_at_sensitivity.

State: one float32 vector variable per count kept (`true_positives`,
`false_negatives`, `true_negatives`, `false_positives`), of length
len(thresholds), in LOCAL_VARIABLES and METRIC_VARIABLES.  Each batch tiles the
flattened predictions against the thresholds ([thresholds, predictions]) and adds,
per threshold, the (weighted) number of predictions above it by label.  Predictions
must lie in [0, 1] (two Asserts the counts depend on, as in TensorFlow).

auc's thresholds are TensorFlow's: -1e-7, then (i + 1) / (num_thresholds - 1) for i
< num_thresholds - 2, then 1 + 1e-7, and its Riemann sums ('trapezoidal' by default,
'careful_interpolation', 'minoring', 'majoring') are built op for op.
"""

from __future__ import annotations

import logging
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, check_ops, math_ops, state_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.metrics_impl import _add_to, _remove_squeezable_dimensions, metric_variable
from flowlab.ops.special_math_ops import div_no_nan
from flowlab.ops.variable_scope import variable_scope
from flowlab.ops.weights_broadcast_ops import broadcast_weights

__all__ = [
    "auc", "precision_at_thresholds", "recall_at_thresholds", "true_positives_at_thresholds",
    "false_positives_at_thresholds", "true_negatives_at_thresholds", "false_negatives_at_thresholds",
    "sensitivity_at_specificity", "specificity_at_sensitivity",
]

_log = logging.getLogger("flowlab")
_ALL = ("tp", "fn", "tn", "fp")
_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives", "fp": "false_positives"}


def _confusion_matrix_at_thresholds(labels: Any, predictions: Any, thresholds: list[float], weights: Any = None,
                                    includes: tuple[str, ...] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(variables, update ops) keyed 'tp', 'fn', 'tn', 'fp', each a [len(thresholds)] vector."""
    if includes is None:
        includes = _ALL
    for key in includes:
        if key not in _ALL:
            raise ValueError(f"Invalid key: {key}")
    predictions = convert_to_tensor(predictions)
    g = get_default_graph()
    checks = [
        check_ops.assert_greater_equal(predictions, math_ops.cast(0.0, dtype=predictions.dtype),
                                       message="predictions must be in [0, 1]"),
        check_ops.assert_less_equal(predictions, math_ops.cast(1.0, dtype=predictions.dtype),
                                    message="predictions must be in [0, 1]"),
    ]
    with g.control_dependencies(checks):
        predictions, labels, weights = _remove_squeezable_dimensions(
            math_ops.cast(predictions, dtypes.float32), math_ops.cast(labels, dtype=dtypes.bool), weights)
    n = len(thresholds)
    predictions_2d = array_ops.reshape(predictions, [-1, 1])
    labels_2d = array_ops.reshape(math_ops.cast(labels, dtype=dtypes.bool), [1, -1])
    num_predictions: Any = predictions_2d.shape.as_list()[0]
    if num_predictions is None:
        num_predictions = array_ops.shape(predictions_2d)[0]
    thresh_tiled = array_ops.tile(array_ops.expand_dims(constant(thresholds), [1]),
                                  array_ops.stack([1, num_predictions]))
    pred_is_pos = math_ops.greater(array_ops.tile(array_ops.transpose(predictions_2d), [n, 1]), thresh_tiled)
    pred_is_neg = math_ops.logical_not(pred_is_pos) if ("fn" in includes or "tn" in includes) else None
    label_is_pos = array_ops.tile(labels_2d, [n, 1])
    label_is_neg = math_ops.logical_not(label_is_pos) if ("fp" in includes or "tn" in includes) else None
    weights_tiled = None
    if weights is not None:
        weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), predictions)
        weights_tiled = array_ops.tile(array_ops.reshape(weights, [1, -1]), [n, 1])
        thresh_tiled.shape.assert_is_compatible_with(weights_tiled.shape)
    sides = {"tp": (label_is_pos, pred_is_pos), "fn": (label_is_pos, pred_is_neg),
             "tn": (label_is_neg, pred_is_neg), "fp": (label_is_neg, pred_is_pos)}
    values: dict[str, Any] = {}
    updates: dict[str, Any] = {}
    for key in _ALL:  # TensorFlow's order, whatever the order of `includes`
        if key not in includes:
            continue
        var = metric_variable([n], dtypes.float32, name=_NAMES[key])
        hit = math_ops.cast(math_ops.logical_and(*sides[key]), dtypes.float32)
        if weights_tiled is not None:
            hit *= weights_tiled
        updates[key] = state_ops.assign_add(var, math_ops.reduce_sum(hit, 1))
        values[key] = var
    return values, updates


def _edge_thresholds(num_thresholds: int, top: float) -> list[float]:
    kepsilon = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - kepsilon] + inner + [top]


def auc(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
        metrics_collections: Any = None, updates_collections: Any = None, curve: str = "ROC",
        name: str | None = None, summation_method: str = "trapezoidal",
        thresholds: Any = None) -> tuple[Tensor, Tensor]:
    """Area under the ROC or PR curve from counts at `num_thresholds` thresholds.

        auc, update = tf.metrics.auc(labels, probabilities)
    """
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if thresholds is not None:
            inner = sorted(thresholds)
            num_thresholds = len(inner) + 2
            thresholds = [0.0 - 1e-7] + inner + [1.0 + 1e-7]
        else:
            thresholds = _edge_thresholds(num_thresholds, 1.0 + 1e-7)
        values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights)
        epsilon = 1e-6
        k = num_thresholds - 1

        def interpolate_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor) -> Tensor:
            dtp = tp[:k] - tp[1:]
            p = tp + fp
            prec_slope = div_no_nan(dtp, math_ops.maximum(p[:k] - p[1:], 0), name="prec_slope")
            intercept = tp[1:] - math_ops.multiply(prec_slope, p[1:])
            safe_p_ratio = array_ops.where(
                math_ops.logical_and(p[:k] > 0, p[1:] > 0),
                div_no_nan(p[:k], math_ops.maximum(p[1:], 0), name="recall_relative_ratio"),
                array_ops.ones_like(p[1:]))
            return math_ops.reduce_sum(
                div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                           math_ops.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment"),
                name="interpolate_pr_auc")

        def compute_auc(tp: Tensor, fn: Tensor, tn: Tensor, fp: Tensor, op_name: str) -> Tensor:
            if curve == "PR":
                if summation_method == "trapezoidal":
                    _log.warning("Trapezoidal rule is known to produce incorrect PR-AUCs; please "
                                 'switch to "careful_interpolation" instead.')
                elif summation_method == "careful_interpolation":
                    return interpolate_pr_auc(tp, fp, fn)
            rec = math_ops.divide(tp + epsilon, tp + fn + epsilon)
            if curve == "ROC":
                x, y = math_ops.divide(fp, fp + tn + epsilon), rec
            else:
                x, y = rec, math_ops.divide(tp + epsilon, tp + fp + epsilon)
            combine = {"trapezoidal": lambda a, b: (a + b) / 2.0,
                       "careful_interpolation": lambda a, b: (a + b) / 2.0,
                       "minoring": math_ops.minimum, "majoring": math_ops.maximum}.get(summation_method)
            if combine is None:
                raise ValueError(
                    f"Invalid summation_method: {summation_method} summation_method should be "
                    "'trapezoidal', 'careful_interpolation', 'minoring', or 'majoring'.")
            widths = x[:k] - x[1:]  # built before the heights, as TensorFlow's expression
            return math_ops.reduce_sum(math_ops.multiply(widths, combine(y[:k], y[1:])), name=op_name)

        value = compute_auc(values["tp"], values["fn"], values["tn"], values["fp"], "value")
        _add_to(metrics_collections, value)
        update_op = compute_auc(updates["tp"], updates["fn"], updates["tn"], updates["fp"], "update_op")
        _add_to(updates_collections, update_op)
        return value, update_op


def _ratio_at_thresholds(kind: str, other: str) -> Any:
    def metric(labels: Any, predictions: Any, thresholds: list[float], weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        with variable_scope(name, f"{kind}_at_thresholds", (predictions, labels, weights)):
            values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights,
                                                              includes=("tp", other))

            def compute(tp: Tensor, o: Tensor, which: str) -> Tensor:
                return math_ops.divide(tp, 1e-7 + tp + o, name=f"{kind}_{which}")

            value = compute(values["tp"], values[other], "value")
            _add_to(metrics_collections, value)
            update_op = compute(updates["tp"], updates[other], "update_op")
            _add_to(updates_collections, update_op)
            return value, update_op

    metric.__name__ = metric.__qualname__ = f"{kind}_at_thresholds"
    metric.__doc__ = f"tp / (tp + {other} + 1e-7) at each threshold: a [len(thresholds)] float32 vector."
    return metric


precision_at_thresholds = _ratio_at_thresholds("precision", "fp")
recall_at_thresholds = _ratio_at_thresholds("recall", "fn")


def _count_at_thresholds(key: str) -> Any:
    kind = _NAMES[key]

    def metric(labels: Any, predictions: Any, thresholds: list[float], weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        with variable_scope(name, kind, (predictions, labels, weights)):
            values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                              weights=weights, includes=(key,))
            value = identity(values[key])
            _add_to(metrics_collections, value)
            _add_to(updates_collections, updates[key])
            return value, updates[key]

    metric.__name__ = metric.__qualname__ = f"{kind}_at_thresholds"
    metric.__doc__ = f"The (weighted) {kind.replace('_', ' ')} at each threshold (float32 vector)."
    return metric


true_positives_at_thresholds = _count_at_thresholds("tp")
false_positives_at_thresholds = _count_at_thresholds("fp")
true_negatives_at_thresholds = _count_at_thresholds("tn")
false_negatives_at_thresholds = _count_at_thresholds("fn")


def sensitivity_at_specificity(labels: Any, predictions: Any, specificity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Any = None,
                               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The recall at the threshold whose specificity is nearest `specificity`."""
    if specificity < 0 or specificity > 1:
        raise ValueError("`specificity` must be in the range [0, 1]. Currently, "
                         f"`specificity` got {specificity}.")
    with variable_scope(name, "sensitivity_at_specificity", (predictions, labels, weights)):
        kepsilon = 1e-7
        thresholds = _edge_thresholds(num_thresholds, 1.0 + kepsilon)
        values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights)

        def compute(tp: Tensor, tn: Tensor, fp: Tensor, fn: Tensor, op_name: str) -> Tensor:
            specificities = math_ops.divide(tn, tn + fp + kepsilon)
            i = math_ops.cast(math_ops.argmin(math_ops.abs(specificities - specificity), 0), dtypes.int32)
            return math_ops.divide(tp[i], tp[i] + fn[i] + kepsilon, op_name)

        value = compute(values["tp"], values["tn"], values["fp"], values["fn"], "value")
        _add_to(metrics_collections, value)
        update_op = compute(updates["tp"], updates["tn"], updates["fp"], updates["fn"], "update_op")
        _add_to(updates_collections, update_op)
        return value, update_op


def specificity_at_sensitivity(labels: Any, predictions: Any, sensitivity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Any = None,
                               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The specificity at the last threshold whose sensitivity is nearest `sensitivity`."""
    if sensitivity < 0 or sensitivity > 1:
        raise ValueError("`sensitivity` must be in the range [0, 1]. Currently, "
                         f"`sensitivity` is {sensitivity}.")
    with variable_scope(name, "specificity_at_sensitivity", (predictions, labels, weights)):
        kepsilon = 1e-7
        # TensorFlow's top threshold here is 1 - 1e-7 (auc's is 1 + 1e-7).
        thresholds = _edge_thresholds(num_thresholds, 1.0 - kepsilon)
        values, updates = _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights)

        def compute(tp: Tensor, tn: Tensor, fp: Tensor, fn: Tensor, op_name: str) -> Tensor:
            sensitivities = math_ops.divide(tp, tp + fn + kepsilon)
            min_val = math_ops.reduce_min(math_ops.abs(sensitivities - sensitivity))
            at_min = math_ops.cast(math_ops.equal(math_ops.abs(sensitivities - sensitivity), min_val),
                                   dtypes.int64)
            i = math_ops.cast(math_ops.argmax(math_ops.cumsum(at_min), 0), dtypes.int32)
            return math_ops.divide(tn[i], tn[i] + fp[i] + kepsilon, op_name)

        value = compute(values["tp"], values["tn"], values["fp"], values["fn"], "value")
        _add_to(metrics_collections, value)
        update_op = compute(updates["tp"], updates["tn"], updates["fp"], updates["fn"], "update_op")
        _add_to(updates_collections, update_op)
        return value, update_op
