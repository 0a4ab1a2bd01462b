"""Kernels of the nn op family: activations, softmax, BiasAdd, L2Loss, the two
softmax cross-entropy ops and InTopKV2.

Each kernel computes in the input dtype, with the formulas of TensorFlow's CPU
kernels (Eigen functors), so that results agree to the last bits where it matters:
Elu and Selu use `exp(x) - 1` (not expm1), Softplus switches to `x` / `exp(x)` past
TensorFlow's thresholds, softmax and the cross entropies subtract the row maximum
before exponentiating (logits of +-1000 give exact results, not nan).  Overflow and
0 * inf give inf / nan silently, as in TensorFlow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import batch_blocks
from flowlab.kernels.fp_state import ignoring
from flowlab.kernels.registry import can_forward, fits, kernel

# Constants of the SELU paper (Klambauer et al. 2017), as TensorFlow writes them.
_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# --- activations --------------------------------------------------------------------
@kernel("Relu", forward=(0,))
def relu(ctx: Any, x: Any) -> Any:
    # maximum propagates NaN, as Eigen's cwiseMax does in TensorFlow's kernel.
    if type(x) is np.ndarray:
        out = x if ctx.forwardable and can_forward(x) else None
        blocks = batch_blocks.bounds(x)
        if len(blocks) > 2:
            y = np.empty_like(x) if out is None else out

            def block(lo: int, hi: int) -> None:
                np.maximum(x[lo:hi], np.zeros(x[lo:hi].shape, x.dtype), out=y[lo:hi])

            batch_blocks.each(blocks, block)
            return y
        if x.size >= _VECTOR_MAX_SIZE:
            # NumPy vectorizes maximum of two arrays, not of an array and a scalar:
            # against a zero array it is 2-3x faster on a [128,512] float32 input.
            return np.maximum(x, np.zeros(x.shape, x.dtype), out=out)
        return np.maximum(x, x.dtype.type(0), out=out)
    return ctx.xp.maximum(x, x.dtype.type(0))


_VECTOR_MAX_SIZE = 4096  # below this, the zero array costs more than it saves


@kernel("Relu6")
def relu6(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    return xp.minimum(xp.maximum(x, x.dtype.type(0)), x.dtype.type(6))


@kernel("Elu")
def elu(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    t = x.dtype.type
    neg = xp.exp(xp.minimum(x, t(0))) - t(1)
    return xp.where(x < 0, neg, x)


@kernel("Selu")
def selu(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    t = x.dtype.type
    neg = t(_SELU_SCALE_ALPHA) * (xp.exp(xp.minimum(x, t(0))) - t(1))
    return xp.where(x < 0, neg, t(_SELU_SCALE) * x)


@kernel("LeakyRelu")
def leaky_relu(ctx: Any, x: Any) -> Any:
    # A select, not a max: alpha > 1 gives alpha * x for x <= 0, as in TensorFlow.
    alpha = x.dtype.type(ctx.attrs["alpha"])
    with np.errstate(over="ignore", invalid="ignore"):
        return ctx.xp.where(x > 0, x, x * alpha)


@kernel("Softplus")
def softplus(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    t = x.dtype.type
    # Past these points log1p(exp(x)) equals x (or exp(x)) to machine precision.
    threshold = t(np.log(np.finfo(x.dtype).eps) + 2)
    with np.errstate(over="ignore", invalid="ignore"):
        e = xp.exp(x)
        return xp.where(x > -threshold, x, xp.where(x < threshold, e, xp.log1p(e)))


@kernel("Softsign")
def softsign(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    with np.errstate(invalid="ignore"):
        return x / (xp.abs(x) + x.dtype.type(1))


# --- softmax ------------------------------------------------------------------------
def _check_logits_rank(x: Any) -> None:
    if x.ndim < 1:
        raise _invalid(f"logits must have >= 1 dimension, got {_dims(x.shape)}")


def _shifted_exp(xp: Any, x: Any) -> tuple[Any, Any, Any]:
    """(x - max, exp(x - max), sum of exp) along the last axis, keeping dims."""
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return shifted, e, xp.sum(e, axis=-1, keepdims=True)


@kernel("Softmax")
def softmax(ctx: Any, x: Any) -> Any:
    _check_logits_rank(x)
    if x.size == 0:
        return ctx.xp.zeros_like(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        _, e, s = _shifted_exp(ctx.xp, x)
        return e / s


@kernel("LogSoftmax")
def log_softmax(ctx: Any, x: Any) -> Any:
    _check_logits_rank(x)
    if x.size == 0:
        return ctx.xp.zeros_like(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        shifted, _, s = _shifted_exp(ctx.xp, x)
        return shifted - ctx.xp.log(s)


# --- BiasAdd, L2Loss ----------------------------------------------------------------
@kernel("BiasAdd", forward=(0,))
def bias_add(ctx: Any, value: Any, bias: Any) -> Any:
    if value.ndim < 2:
        raise _invalid(f"Input tensor must be at least 2D: {_dims(value.shape)}")
    if bias.ndim != 1:
        raise _invalid(f"Biases must be 1D: {_dims(bias.shape)}")
    channel_axis = 1 if ctx.attrs.get("data_format", "NHWC") == "NCHW" else value.ndim - 1
    if value.shape[channel_axis] != bias.shape[0]:
        # TensorFlow says "last dimension" for both data formats.
        raise _invalid(
            "Must provide as many biases as the last dimension of the input tensor: "
            f"{_dims(bias.shape)} vs. {_dims(value.shape)}"
        )
    b = bias.reshape((-1,) + (1,) * (value.ndim - 1 - channel_axis))
    blocks = batch_blocks.bounds(value)
    if len(blocks) > 2 and fits(b, value):
        out = value if ctx.forwardable and can_forward(value) else np.empty_like(value)
        batch_blocks.each(blocks, lambda lo, hi: np.add(value[lo:hi], b, out=out[lo:hi]))
        return out
    with np.errstate(over="ignore", invalid="ignore"):
        if ctx.forwardable and can_forward(value) and fits(b, value):
            return np.add(value, b, out=value)  # the input dies here: its buffer
        return value + b


@kernel("L2Loss")
def l2_loss(ctx: Any, t: Any) -> Any:
    xp = ctx.xp
    with np.errstate(over="ignore", invalid="ignore"):
        return xp.sum(xp.square(t) * t.dtype.type(0.5), dtype=t.dtype)


# --- cross entropies ----------------------------------------------------------------
@kernel("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy_with_logits(ctx: Any, logits: Any, labels: Any) -> Any:
    xp = ctx.xp
    if logits.shape != labels.shape:
        try:
            shape = np.broadcast_shapes(logits.shape, labels.shape)
        except ValueError:
            raise _invalid(
                "logits and labels must be broadcastable: "
                f"logits_size={_dims(logits.shape)} labels_size={_dims(labels.shape)}"
            ) from None
        logits = xp.broadcast_to(logits, shape)
        labels = xp.broadcast_to(labels, shape)
    if logits.ndim != 2:
        raise _invalid(
            "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional"
        )
    batch, classes = logits.shape
    if classes == 0:
        return xp.zeros((batch,), logits.dtype), xp.zeros(logits.shape, logits.dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        shifted, e, s = _shifted_exp(xp, logits)
        loss = xp.sum(labels * (xp.log(s) - shifted), axis=1)
        backprop = e / s - labels
    return loss, backprop


@kernel("SparseSoftmaxCrossEntropyWithLogits", forward=(0,))
def sparse_softmax_cross_entropy_with_logits(ctx: Any, logits: Any, labels: Any) -> Any:
    xp = ctx.xp
    if logits.ndim != 2:
        raise _invalid(f"logits must be 2-D, but got shape {_dims(logits.shape)}")
    if labels.ndim != 1:
        raise _invalid(f"labels must be 1-D, but got shape {_dims(labels.shape)}")
    batch, classes = logits.shape
    if labels.shape[0] != batch:
        raise _invalid(
            "logits and labels must have the same first dimension, got logits shape "
            f"{_dims(logits.shape)} and labels shape {_dims(labels.shape)}"
        )
    if classes == 0:
        raise _invalid(f"Must have at least one class, but got logits shape {_dims(logits.shape)}")
    if batch == 0:
        return xp.zeros((0,), logits.dtype), xp.zeros(logits.shape, logits.dtype)
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= classes:
        # TensorFlow reports the smallest label when one is negative, else the largest.
        bad = lo if lo < 0 else hi
        values = " ".join(str(v) for v in labels.ravel().tolist())
        raise _invalid(
            f"Received a label value of {bad} which is outside the valid range of "
            f"[0, {classes}).  Label values: {values}"
        )
    rows = xp.arange(batch)
    with ignoring():
        if ctx.forwardable and can_forward(logits):
            # The logits die here: the same arithmetic, in their buffer.
            np.subtract(logits, logits.max(axis=-1, keepdims=True), out=logits)
            picked = logits[rows, labels]
            e = np.exp(logits, out=logits)
            s = e.sum(axis=-1, keepdims=True)
            loss = np.log(s[:, 0]) - picked
            backprop = np.divide(e, s, out=e)
        else:
            shifted, e, s = _shifted_exp(xp, logits)
            loss = xp.log(s[:, 0]) - shifted[rows, labels]
            backprop = e / s
    backprop[rows, labels] -= logits.dtype.type(1)  # a fresh array or the dying logits
    return loss, backprop


# --- InTopKV2 -----------------------------------------------------------------------
@kernel("InTopKV2")
def in_top_k(ctx: Any, predictions: Any, targets: Any, k: Any) -> Any:
    xp = ctx.xp
    if predictions.ndim != 2:
        raise _invalid("predictions must be 2-dimensional")
    if targets.ndim != 1:
        raise _invalid("targets must be 1-dimensional")
    if predictions.shape[0] != targets.shape[0]:
        raise _invalid(
            f"First dimension of predictions {predictions.shape[0]} must match length of "
            f"targets {targets.shape[0]}"
        )
    k_shape = tuple(getattr(k, "shape", ()))
    if k_shape:
        raise _invalid(f"k must be 0-D, got shape {_dims(k_shape)}")
    batch, classes = predictions.shape
    if classes == 0 or batch == 0:
        return xp.zeros((batch,), np.bool_)
    valid = (targets >= 0) & (targets < classes)
    target_pred = predictions[xp.arange(batch), xp.clip(targets, 0, classes - 1)]
    # A non-finite prediction anywhere in the row makes the answer "no", as in TensorFlow.
    finite = xp.all(xp.isfinite(predictions), axis=1)
    with np.errstate(invalid="ignore"):
        better = xp.sum(predictions > target_pred[:, None], axis=1)
    return valid & finite & (better < int(k))


@kernel("TopKV2", host_memory=("k",))
def top_k(ctx: Any, x: Any, k: Any) -> Any:
    xp = ctx.xp
    if x.ndim < 1:
        raise _invalid(f"input must be >= 1-D, got shape {_dims(x.shape)}")
    k = int(k)
    if k < 0:
        raise _invalid(f"Need k >= 0, got {k}")
    n = x.shape[-1]
    if n < k:
        raise _invalid(f"input must have at least k columns. Had {n}, needed {k}")
    # Descending, ties (and NaNs, which sort as the largest) in increasing index order:
    # a stable ascending sort of the reversed row, read backwards.
    order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1) - order
    values = xp.take_along_axis(x, indices, axis=-1)
    return values, indices.astype(ctx.attrs["index_type"].as_numpy_dtype)
