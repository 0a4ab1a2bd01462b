"""The `tf.nn` functions that TensorFlow composes from other ops (its nn_impl.py and
part of nn_ops.py): sigmoid and weighted cross entropy, log-Poisson loss, xw_plus_b,
relu_layer, crelu, l2_normalize, moments, batch_normalization and dropout.

Each is built from the same ops, in the same order and under the same name scope as
in TensorFlow (`logistic_loss`, `xw_plus_b`, `moments`, `batchnorm`, `dropout`, ...),
so that values, dtypes and later gradients follow TensorFlow's.  For example
`sigmoid_cross_entropy_with_logits` uses `Select`s rather than `Relu`/`Abs`: the
gradient at `x == 0` is then `sigmoid(0) - z`, as in TensorFlow, not `-z`; and
`dropout` draws its mask with one `RandomUniform` of the noise shape, so a seeded
dropout draws the same mask as TensorFlow.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops import array_ops, math_ops, random_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.core_ops import stop_gradient
from flowlab.ops.nn_ops import _axis_arg, _name_scope, _require_both, bias_add, relu

__all__ = [
    "swish", "silu",
    "sigmoid_cross_entropy_with_logits", "weighted_cross_entropy_with_logits", "log_poisson_loss",
    "xw_plus_b", "relu_layer", "crelu", "l2_normalize", "moments", "batch_normalization",
    "dropout",
]


# --- losses built from math ops -----------------------------------------------------
def _same_shape_check(labels: Tensor, logits: Tensor) -> None:
    if not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(
            "`logits` and `labels` must have the same shape, "
            f"received ({logits.shape} vs {labels.shape})."
        )


def sigmoid_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Elementwise logistic loss max(x, 0) - x * z + log1p(exp(-|x|)), x = logits,
    z = labels (same shape and dtype); stable for large |x|."""
    if _sentinel is not None:
        raise ValueError(
            "Only call `sigmoid_cross_entropy_with_logits` with named arguments "
            "(labels=..., logits=..., ...)."
        )
    _require_both("sigmoid_cross_entropy_with_logits", labels, logits)
    with _name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        _same_shape_check(labels, logits)
        # Selects rather than relu/abs: their gradients at 0 would be 0, not TF's.
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = math_ops.greater_equal(logits, zeros)
        relu_logits = array_ops.where(cond, logits, zeros)
        neg_abs_logits = array_ops.where(cond, math_ops.negative(logits), logits)
        return math_ops.add(
            relu_logits - logits * labels, math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope
        )


def weighted_cross_entropy_with_logits(
    labels: Any = None, logits: Any = None, pos_weight: Any = None, name: str | None = None,
    targets: Any = None,
) -> Tensor:
    """Logistic loss with positives weighted by `pos_weight` (TF1: `targets` for labels):
    (1 - z) * x + (1 + (q - 1) * z) * (log1p(exp(-|x|)) + max(-x, 0))."""
    labels = _axis_arg(labels, targets, "labels", "targets")
    with _name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        _same_shape_check(labels, logits)
        log_weight = 1 + (pos_weight - 1) * labels
        return math_ops.add(
            (1 - labels) * logits,
            log_weight * (math_ops.log1p(math_ops.exp(-math_ops.abs(logits))) + relu(-logits)),
            name=scope,
        )


# --- layers and statistics ----------------------------------------------------------
def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """matmul(x, weights) + biases, as MatMul then BiasAdd."""
    with _name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        mm = math_ops.matmul(x, weights)
        return bias_add(mm, biases, name=scope)


def l2_normalize(
    x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None, dim: Any = None
) -> Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon)) (TF1: `dim`)."""
    axis = _axis_arg(axis, dim)
    with _name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            raise TypeError("flowlab's l2_normalize does not support complex tensors yet")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


def moments(
    x: Any, axes: Any, shift: Any = None, name: str | None = None, keep_dims: Any = None,
    keepdims: Any = None,
) -> tuple[Tensor, Tensor]:
    """(mean, variance) of `x` over `axes` (population variance; `shift` is unused, as in
    TensorFlow).  float16 is computed in float32 and cast back."""
    keep = _axis_arg(keepdims, keep_dims, "keepdims", "keep_dims")
    with _name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x, name="x")
        half = x.dtype.base_dtype is dtypes.float16
        y = math_ops.cast(x, dtypes.float32) if half else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = math_ops.reduce_mean(
            math_ops.squared_difference(y, stop_gradient(mean)), axes, keepdims=True,
            name="variance",
        )
        if not keep:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if half:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def batch_normalization(
    x: Any, mean: Any, variance: Any, offset: Any, scale: Any, variance_epsilon: float,
    name: str | None = None,
) -> Tensor:
    """(x - mean) * scale / sqrt(variance + variance_epsilon) + offset, computed as
    x * inv + (offset - mean * inv) with inv = scale * rsqrt(variance + epsilon)."""
    with _name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        scaled = x * math_ops.cast(inv, x.dtype)
        shift = offset - mean * inv if offset is not None else -mean * inv
        return scaled + math_ops.cast(shift, x.dtype)


# --- losses -------------------------------------------------------------------------
def log_poisson_loss(
    targets: Any, log_input: Any, compute_full_loss: bool = False, name: str | None = None
) -> Tensor:
    """exp(log_input) - log_input * targets, plus Stirling's approximation of
    log(targets!) for targets > 1 when `compute_full_loss`."""
    with _name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        if not targets.shape.is_compatible_with(log_input.shape):
            raise ValueError(
                "`log_input` and `targets` must have the same shape, received "
                f"({log_input.shape} vs {targets.shape})."
            )
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            dt = targets.dtype
            half = convert_to_tensor(0.5, dtype=dt, name="Const")
            two_pi = convert_to_tensor(2 * math.pi, dtype=dt, name="Const")
            stirling = targets * math_ops.log(targets) - targets + half * math_ops.log(two_pi * targets)
            zeros = array_ops.zeros_like(targets, dtype=dt)
            ones = array_ops.ones_like(targets, dtype=dt)
            small = math_ops.logical_and(targets >= zeros, targets <= ones)
            result += array_ops.where(small, zeros, stirling)
        return result


# --- layers -------------------------------------------------------------------------
def relu_layer(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """relu(matmul(x, weights) + biases)."""
    with _name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return relu(bias_add(math_ops.matmul(x, weights), biases), name=scope)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """Concatenated ReLU: relu(concat([x, -x], axis)); doubles the size of `axis`."""
    with _name_scope(name, "CRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        both = array_ops.concat([features, -features], axis, name=scope)
        return relu(both)


# --- dropout ------------------------------------------------------------------------
def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    """`noise_shape` with its unknown dims filled in from x's static shape."""
    if noise_shape is None:
        return array_ops.shape(x)
    try:
        ns = as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.ndims is not None and ns.ndims == x.shape.ndims:
        return TensorShape([n if n is not None else d for n, d in zip(ns.as_list(), x.shape.as_list())])
    return noise_shape


def dropout(
    x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: int | None = None,
    name: str | None = None, rate: Any = None,
) -> Tensor:
    """Zero each element with probability `rate` (TF1: 1 - `keep_prob`) and scale the
    others by 1 / (1 - rate).  `noise_shape` broadcasts one draw over dimensions of
    size 1; `seed` with the graph seed fixes the mask (the same mask as TensorFlow's).
    """
    if keep_prob is not None:
        try:
            from_keep_prob = 1.0 - keep_prob
        except TypeError:
            raise ValueError(
                "`keep_prob` must be a floating point number or Tensor. "
                f"Received: keep_prob={keep_prob}"
            ) from None
        rate = _axis_arg(rate, from_keep_prob, "rate", "keep_prob")
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    with _name_scope(name, "dropout", [x]):
        is_number = isinstance(rate, numbers.Real)
        if is_number and not 0 <= rate < 1:
            raise ValueError(
                "`rate` must be a scalar tensor or a float in the range [0, 1). "
                f"Received: rate={rate}"
            )
        x = convert_to_tensor(x, name="x")
        dt = x.dtype.base_dtype
        if not dt.is_floating:
            raise ValueError(
                "`x.dtype` must be a floating point tensor as `x` will be scaled. "
                f"Received: x_dtype={dt!r}"
            )
        if is_number and rate == 0:
            return x
        if isinstance(rate, Tensor):
            rate.shape.assert_has_rank(0)
            if rate.dtype.base_dtype is not dt:
                raise ValueError(
                    "`x.dtype` must be compatible with `rate.dtype`. "
                    f"Received: x.dtype={dt!r} and rate.dtype={rate.dtype.base_dtype!r}"
                )
            one = convert_to_tensor(1, dtype=dt, name="Const")
            kept = math_ops.realdiv(x, math_ops.subtract(one, rate, name="Sub"), name="RealDiv")
        elif is_number:
            scale = convert_to_tensor(1 / (1 - rate), dtype=dt, name="Const")
            kept = math_ops.multiply(x, scale, name="Mul")
        else:
            raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: rate={rate}")
        noise = random_ops.random_uniform(_noise_shape(x, noise_shape), dtype=dt, seed=seed)
        keep_mask = math_ops.greater_equal(noise, rate)
        zero = convert_to_tensor(0, dtype=dt, name="Const")
        out = array_ops.where_v2(keep_mask, kept, zero)
        out.set_shape(x.shape)
        return out


def swish(features: Any, beta: Any = 1.0) -> Tensor:
    """`tf.nn.swish` / `tf.nn.silu`: features * sigmoid(beta * features), with
    TensorFlow's custom gradient (also with respect to beta)."""
    from flowlab.ops.custom_gradient import custom_gradient  # noqa: PLC0415 - imports nn_impl's users

    features = convert_to_tensor(features, name="features")
    beta = math_ops.cast(convert_to_tensor(beta, name="beta"), features.dtype)

    @custom_gradient
    def swish_impl(features: Tensor, beta: Tensor) -> Any:
        def grad(dy: Tensor) -> Any:
            with dy.graph.control_dependencies([dy]):
                sig = math_ops.sigmoid(beta * features)
            activation_grad = sig * (1.0 + (beta * features) * (1.0 - sig))
            beta_grad = math_ops.reduce_sum(dy * math_ops.square(features) * sig * (1.0 - sig))
            return dy * activation_grad, beta_grad

        return features * math_ops.sigmoid(beta * features), grad

    return swish_impl(features, beta)


silu = swish
