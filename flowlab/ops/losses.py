"""`tf.losses`: weighted losses reduced as TensorFlow 1.x does, added to GraphKeys.LOSSES.

Every loss computes elementwise losses in float32, multiplies them by `weights`
(broadcastable to the losses) and reduces them by `reduction`; the default,
SUM_BY_NONZERO_WEIGHTS, divides the weighted sum by the number of elements whose
(broadcast) weight is nonzero, and gives 0 rather than nan when there are none.  The
result is cast back to the input dtype and appended to `loss_collection`.
`get_total_loss` adds the collected losses and, by default, the regularization losses.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, math_ops, nn_impl, nn_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.cond import cond
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import stop_gradient
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.special_math_ops import div_no_nan
from flowlab.ops.weights_broadcast_ops import assert_broadcastable, broadcast_weights

__all__ = [
    "Reduction", "compute_weighted_loss", "add_loss", "get_losses", "get_regularization_losses",
    "get_regularization_loss", "get_total_loss", "mean_squared_error", "absolute_difference",
    "log_loss", "hinge_loss", "huber_loss", "softmax_cross_entropy",
    "sparse_softmax_cross_entropy", "sigmoid_cross_entropy", "cosine_distance",
    "mean_pairwise_squared_error",
]


class Reduction:
    """How a weighted loss tensor is reduced (TensorFlow's names)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


def _safe_mean(losses: Tensor, num_present: Tensor) -> Tensor:
    """sum(losses) / num_present, 0 when num_present is 0 (DivNoNan `value`)."""
    total = math_ops.reduce_sum(losses)
    return div_no_nan(total, num_present, name="value")


def _num_present(losses: Tensor, weights: Any, per_batch: bool = False) -> Tensor:
    """The number of elements of `losses` whose broadcast weight is nonzero (per batch
    row, kept as [batch, 1, ...], when `per_batch`)."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with _name_scope(None, "num_present", [losses, weights]) as scope:
        w = math_ops.cast(weights, dtypes.float32)
        present = array_ops.where(math_ops.equal(w, 0.0), array_ops.zeros_like(w),
                                  array_ops.ones_like(w))
        present = broadcast_weights(present, losses)
        if per_batch:
            return math_ops.reduce_sum(present, axis=math_ops.range(1, array_ops.rank(present)),
                                       keepdims=True, name=scope)
        return math_ops.reduce_sum(present, name=scope)


def _num_elements(losses: Tensor) -> Tensor:
    with _name_scope(None, "num_elements", [losses]) as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), losses.dtype)


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: str | None = None,
                          loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weight `losses` and reduce them; the result joins `loss_collection`."""
    Reduction.validate(reduction)
    with _name_scope(scope, "weighted_loss", [losses, weights]):
        check = assert_broadcastable(weights, losses)
        with get_default_graph().control_dependencies([check]):
            losses = convert_to_tensor(losses)
            input_dtype = losses.dtype
            losses = math_ops.cast(losses, dtypes.float32)
            weights = math_ops.cast(weights, dtypes.float32)
            weighted = math_ops.multiply(losses, weights)
            if reduction == Reduction.NONE:
                loss = weighted
            else:
                loss = math_ops.reduce_sum(weighted)
                if reduction == Reduction.MEAN:
                    loss = _safe_mean(loss, math_ops.reduce_sum(array_ops.ones_like(losses) * weights))
                elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                    loss = _safe_mean(loss, _num_present(losses, weights))
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    loss = _safe_mean(loss, _num_elements(losses))
            loss = math_ops.cast(loss, input_dtype)
            add_loss(loss, loss_collection)
            return loss


def add_loss(loss: Any, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Any]:
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None,
                            name: str = "total_regularization_loss") -> Tensor:
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """The sum of the collected losses (and regularization losses)."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)


def _require(labels: Any, predictions: Any, pred_name: str = "predictions") -> None:
    if labels is None:
        raise ValueError("Argument `labels` must not be None.")
    if predictions is None:
        raise ValueError(f"Argument `{pred_name}` must not be None.")


def _compatible(a: Tensor, b: Tensor) -> None:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


def _regression(kind: str, labels: Any, predictions: Any, weights: Any, scope: Any,
                loss_collection: Any, reduction: str, fn: Any) -> Tensor:
    _require(labels, predictions)
    with _name_scope(scope, kind, [predictions, labels, weights]) as sc:
        predictions = math_ops.cast(predictions, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        _compatible(predictions, labels)
        return compute_weighted_loss(fn(labels, predictions), weights, sc, loss_collection,
                                     reduction=reduction)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: str | None = None,
                       loss_collection: str = GraphKeys.LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted mean of (predictions - labels)**2."""
    return _regression("mean_squared_error", labels, predictions, weights, scope,
                       loss_collection, reduction, lambda y, p: math_ops.squared_difference(p, y))


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0,
                        scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted mean of |predictions - labels|."""
    return _regression("absolute_difference", labels, predictions, weights, scope,
                       loss_collection, reduction,
                       lambda y, p: math_ops.abs(math_ops.subtract(p, y)))


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7,
             scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
             reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted mean of -y log(p + eps) - (1 - y) log(1 - p + eps)."""
    def fn(y: Tensor, p: Tensor) -> Tensor:  # Python operators, as TensorFlow (`sub_2`)
        return -math_ops.multiply(y, math_ops.log(p + epsilon)) - math_ops.multiply(
            (1 - y), math_ops.log(1 - p + epsilon))

    return _regression("log_loss", labels, predictions, weights, scope, loss_collection,
                       reduction, fn)


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0,
               scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Quadratic within `delta` of the labels, linear beyond."""
    def fn(y: Tensor, p: Tensor) -> Tensor:
        err = math_ops.abs(math_ops.subtract(p, y))
        quadratic = math_ops.minimum(err, delta)
        linear = math_ops.subtract(err, quadratic)
        half = convert_to_tensor(0.5, dtype=quadratic.dtype)  # TensorFlow's `Const`
        return math_ops.add(math_ops.multiply(half, math_ops.multiply(quadratic, quadratic)),
                            math_ops.multiply(delta, linear))

    return _regression("huber_loss", labels, predictions, weights, scope, loss_collection,
                       reduction, fn)


def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
               loss_collection: str = GraphKeys.LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted mean of max(0, 1 - (2 labels - 1) * logits); labels in {0, 1}."""
    _require(labels, logits, "logits")
    with _name_scope(scope, "hinge_loss", [logits, labels, weights]) as sc:
        logits = math_ops.cast(logits, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        _compatible(logits, labels)
        all_ones = array_ops.ones_like(labels)
        signed = math_ops.subtract(2 * labels, all_ones)
        losses = nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(signed, logits)))
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction=reduction)


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted softmax cross entropy of [batch, classes] logits against one-hot labels
    (smoothed toward 1/classes by `label_smoothing`)."""
    if onehot_labels is None:
        raise ValueError("Argument `onehot_labels` must not be None.")
    if logits is None:
        raise ValueError("Argument `logits` must not be None.")
    with _name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as sc:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(onehot_labels, logits.dtype)
        _compatible(logits, labels)
        if label_smoothing > 0:
            classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
        labels = stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                             name="xentropy")
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction=reduction)


def _last_is_one(s: Any) -> bool:
    return s.as_list()[-1] in (1, None)


def _squeeze_if(pred: Tensor, t: Tensor) -> Tensor:
    return cond(pred, lambda: array_ops.squeeze(t, [-1]), lambda: t)


def remove_squeezable_dimensions(labels: Any, predictions: Any,
                                 expected_rank_diff: int = 0) -> tuple[Tensor, Tensor]:
    """TensorFlow's confusion_matrix.remove_squeezable_dimensions: squeeze the last
    dimension (of size 1) of whichever side has one rank too many (a cond on the ranks
    when they are unknown)."""
    with _name_scope(None, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        ps, ls = predictions.shape, labels.shape
        if ls.ndims is not None and ps.ndims is not None:
            rank_diff = ps.ndims - ls.ndims
            if rank_diff == expected_rank_diff + 1 and _last_is_one(ps):
                predictions = array_ops.squeeze(predictions, [-1])
            elif rank_diff == expected_rank_diff - 1 and _last_is_one(ls):
                labels = array_ops.squeeze(labels, [-1])
            return labels, predictions
        diff = array_ops.rank(predictions) - array_ops.rank(labels)
        if ps.ndims is None or _last_is_one(ps):
            predictions = _squeeze_if(math_ops.equal(expected_rank_diff + 1, diff), predictions)
        if ls.ndims is None or _last_is_one(ls):
            labels = _squeeze_if(math_ops.equal(expected_rank_diff - 1, diff), labels)
        return labels, predictions


def _remove_squeezable_dimensions(labels: Any, predictions: Any, weights: Any,
                                  expected_rank_diff: int) -> tuple[Tensor, Tensor, Any]:
    labels, predictions = remove_squeezable_dimensions(labels, predictions, expected_rank_diff)
    if weights is None:
        return labels, predictions, weights
    weights = convert_to_tensor(weights)
    lr, ws = labels.shape.ndims, weights.shape
    if lr is not None and ws.ndims is not None:
        if ws.ndims - lr == 1:
            weights = array_ops.squeeze(weights, [-1])
        return labels, predictions, weights
    diff = array_ops.rank(weights) - array_ops.rank(labels)
    if ws.ndims is None or (ws.ndims > 0 and _last_is_one(ws)):
        weights = _squeeze_if(math_ops.equal(1, diff), weights)
    return labels, predictions, weights


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0,
                                 scope: str | None = None,
                                 loss_collection: str = GraphKeys.LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted softmax cross entropy of logits against class indices (labels of the
    logits' rank with a trailing 1 are squeezed, and weights with one rank too many)."""
    _require(labels, logits, "logits")
    with _name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as sc:
        labels, logits, weights = _remove_squeezable_dimensions(labels, logits, weights, 1)
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                 name="xentropy")
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction=reduction)


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted logistic loss of logits against labels in [0, 1] (smoothed toward 1/2)."""
    if multi_class_labels is None:
        raise ValueError("Argument `multi_class_labels` must not be None.")
    if logits is None:
        raise ValueError("Argument `logits` must not be None.")
    with _name_scope(scope, "sigmoid_cross_entropy_loss",
                     [logits, multi_class_labels, weights]) as sc:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(multi_class_labels, logits.dtype)
        _compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                           name="xentropy")
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction=reduction)


def cosine_distance(labels: Any, predictions: Any, axis: int | None = None, weights: Any = 1.0,
                    scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
                    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim: int | None = None) -> Tensor:
    """Weighted 1 - sum(labels * predictions) along `axis` (both assumed unit-normalized)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = axis if axis is not None else dim
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _require(labels, predictions)
    with _name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as sc:
        predictions = math_ops.cast(predictions, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        _compatible(predictions, labels)
        radial = math_ops.multiply(predictions, labels)
        losses = 1 - math_ops.reduce_sum(radial, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction=reduction)


def mean_pairwise_squared_error(labels: Any, predictions: Any, weights: Any = 1.0,
                                scope: str | None = None,
                                loss_collection: str = GraphKeys.LOSSES) -> Tensor:
    """Weighted mean over each batch row of the squared differences between all pairs
    of (predictions - labels) elements, as TensorFlow computes it (DivNoNan `value`s)."""
    _require(labels, predictions)
    with _name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        weights = math_ops.cast(weights, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        check = assert_broadcastable(weights, labels)
        with get_default_graph().control_dependencies([check]):
            predictions = math_ops.cast(predictions, dtypes.float32)
            _compatible(predictions, labels)
            diffs = math_ops.subtract(predictions, labels)
            axis = math_ops.range(1, array_ops.rank(diffs))
            sum_squares = math_ops.reduce_sum(math_ops.square(diffs), axis=axis, keepdims=True)
            num_present = _num_present(diffs, weights, per_batch=True)
            term1 = 2.0 * div_no_nan(sum_squares, math_ops.maximum(num_present - 1, 0),
                                     name="value")
            sum_diff = math_ops.reduce_sum(diffs, axis=axis, keepdims=True)
            term2 = 2.0 * div_no_nan(
                math_ops.square(sum_diff),
                math_ops.maximum(math_ops.multiply(num_present, num_present - 1), 0),
                name="value")
            loss = math_ops.reduce_sum(math_ops.multiply(term1 - term2, weights))
            mean_loss = array_ops.where(math_ops.reduce_sum(num_present) > 0, loss,
                                        array_ops.zeros_like(loss), name="value")
            add_loss(mean_loss, loss_collection)
            return mean_loss
