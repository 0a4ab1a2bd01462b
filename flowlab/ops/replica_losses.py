"""TensorFlow's loss scaling for replicated training, with one replica (flowlab runs
no tf.distribute strategy): `tf.nn.compute_average_loss` (the sum of the per-example
losses, optionally weighted, over the global batch size: the batch dimension unless
given) and `tf.nn.scale_regularization_loss` (the sum over the number of replicas,
1).  Also `tf.nn.batch_norm_with_global_normalization`, TensorFlow 1.x's older
batch_normalization signature."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import convert_to_tensor

__all__ = ["compute_average_loss", "scale_regularization_loss", "batch_norm_with_global_normalization"]


def _scale_by_sample_weight(losses: Tensor, weight: Any) -> Tensor:
    """TensorFlow's scale_losses_by_sample_weight: float32 product, the weight's rank
    made to match (one trailing axis added or squeezed)."""
    losses = math_ops.cast(losses, dtypes.float32)
    w = math_ops.cast(convert_to_tensor(weight), dtypes.float32)
    lr, wr = losses.shape.ndims, w.shape.ndims
    if lr is not None and wr is not None:
        if wr - lr == 1 and w.shape.as_list()[-1] == 1:
            w = array_ops.squeeze(w, [-1])
        elif lr - wr == 1:
            w = array_ops.expand_dims(w, -1)
    return math_ops.multiply(losses, w)


def compute_average_loss(per_example_loss: Any, sample_weight: Any = None, global_batch_size: Any = None) -> Tensor:
    """sum(per_example_loss * sample_weight) / global_batch_size, in the loss's dtype.

    Raises:
      ValueError: for a scalar `per_example_loss` (it must have a batch dimension).
    """
    from flowlab.ops.assertions import assert_integer
    from flowlab.ops.check_ops import assert_positive, assert_scalar

    loss = convert_to_tensor(per_example_loss)
    input_dtype = loss.dtype.base_dtype
    if loss.shape.ndims == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1. "
                         f"Received per_example_loss={loss} with rank 0")
    if sample_weight is not None:
        loss = _scale_by_sample_weight(loss, sample_weight)
    loss = math_ops.cast(loss, input_dtype)
    if global_batch_size is None:
        global_batch_size = array_ops.shape(loss)[0]
    gbs = convert_to_tensor(global_batch_size)
    assert_scalar(gbs, message="global_batch_size must be scalar.")
    assert_integer(gbs, message="global_batch_size must be an integer.")
    assert_positive(gbs, message="global_batch_size must be positive.")
    return math_ops.reduce_sum(loss) / math_ops.cast(gbs, input_dtype)


def scale_regularization_loss(regularization_loss: Any) -> Tensor:
    """sum(regularization_loss) / the number of replicas (1)."""
    return math_ops.reduce_sum(regularization_loss) / 1


def batch_norm_with_global_normalization(t: Any = None, m: Any = None, v: Any = None, beta: Any = None,
                                         gamma: Any = None, variance_epsilon: Any = None,
                                         scale_after_normalization: Any = None, name: str | None = None,
                                         input: Any = None, mean: Any = None, variance: Any = None) -> Tensor:  # noqa: A002
    """batch_normalization(t, m, v, beta, gamma if scale_after_normalization, epsilon)."""
    from flowlab.ops.nn_impl import batch_normalization

    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None, variance_epsilon, name)
