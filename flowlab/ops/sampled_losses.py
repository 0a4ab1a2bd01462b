"""Sampled losses: `tf.nn.nce_loss` and `tf.nn.sampled_softmax_loss`, built from ops as
TensorFlow 1.x builds them (`nn_impl._compute_sampled_logits`), so the graph, its
names and its numbers are TensorFlow's.

For a batch of inputs [batch, dim] with `num_true` true classes each, the logits are
computed only for the true classes and for `num_sampled` candidates drawn once per
batch (by default `log_uniform_candidate_sampler(unique=True)`), each minus the log
of its expected count in the draw (log Q): one embedding lookup of the rows of
`weights` and `biases` for all those ids (so a sharded `weights` list is gathered
where its shards live), a MatMul against the sampled rows, row-wise dots for the true
ones.  `sampled_softmax_loss` masks the candidates that are a row's own true class
(`remove_accidental_hits`) and takes softmax cross-entropy against labels 1/num_true
on the true columns; `nce_loss` takes per-column sigmoid cross-entropy and sums it.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.ops import array_ops, math_ops, nn_ops, slicing
from flowlab.ops.candidate_sampling_ops import (
    compute_accidental_hits,
    log_uniform_candidate_sampler,
)
from flowlab.ops.core_ops import stop_gradient
from flowlab.ops.embedding_ops import embedding_lookup
from flowlab.ops.nn_impl import sigmoid_cross_entropy_with_logits
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.partitioned_variables import PartitionedVariable
from flowlab.ops.sparse_ops import sparse_to_dense

__all__ = ["nce_loss", "sampled_softmax_loss"]


def _sum_rows(x: Any) -> Any:
    """reduce_sum(x, 1) as TensorFlow writes it for these losses: a MatMul with a column
    of ones (its gradient is cheaper than reduce_sum's)."""
    cols = array_ops.shape(x)[1]
    ones = array_ops.ones(array_ops.stack([cols, 1]), x.dtype)
    return array_ops.reshape(math_ops.matmul(x, ones), [-1])


def _compute_sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any,
                            num_sampled: int, num_classes: int, num_true: int = 1,
                            sampled_values: Any = None, subtract_log_q: bool = True,
                            remove_accidental_hits: bool = False,
                            partition_strategy: str = "mod", name: str | None = None,
                            seed: int | None = None) -> tuple[Any, Any]:
    if isinstance(weights, PartitionedVariable):  # its shards, each gathered where it lives
        weights = list(weights)
    weights = list(weights) if isinstance(weights, (list, tuple)) else [weights]
    with _name_scope(name, "compute_sampled_logits", weights + [biases, inputs, labels]):
        if labels.dtype != dtypes.int64:
            labels = math_ops.cast(labels, dtypes.int64)
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        sampled, true_expected_count, sampled_expected_count = (
            stop_gradient(s) for s in sampled_values)
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype != inputs.dtype:
            all_w = math_ops.cast(all_w, inputs.dtype)
        true_w = slicing.slice(all_w, [0, 0],
                               array_ops.stack([array_ops.shape(labels_flat)[0], -1]))
        sampled_w = slicing.slice(all_w, array_ops.stack([array_ops.shape(labels_flat)[0], 0]),
                                  [-1, -1])
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = math_ops.cast(all_b, inputs.dtype)
        true_b = slicing.slice(all_b, [0], array_ops.shape(labels_flat))
        sampled_b = slicing.slice(all_b, array_ops.shape(labels_flat), [-1])
        dim = array_ops.shape(true_w)[1:2]
        new_true_w_shape = array_ops.concat([[-1, num_true], dim], 0)
        row_wise_dots = math_ops.multiply(array_ops.expand_dims(inputs, 1),
                                          array_ops.reshape(true_w, new_true_w_shape))
        dots_as_matrix = array_ops.reshape(row_wise_dots, array_ops.concat([[-1], dim], 0))
        true_logits = array_ops.reshape(_sum_rows(dots_as_matrix), [-1, num_true])
        true_b = array_ops.reshape(true_b, [-1, num_true])
        true_logits += true_b
        sampled_logits += sampled_b
        if remove_accidental_hits:
            acc_indices, acc_ids, acc_weights = compute_accidental_hits(
                labels, sampled, num_true=num_true)
            acc_indices_2d = array_ops.reshape(acc_indices, [-1, 1])
            acc_ids_2d_int32 = array_ops.reshape(math_ops.cast(acc_ids, dtypes.int32), [-1, 1])
            sparse_indices = array_ops.concat([acc_indices_2d, acc_ids_2d_int32], 1,
                                              "sparse_indices")
            sampled_logits_shape = array_ops.concat(
                [array_ops.shape(labels)[:1], array_ops.expand_dims(num_sampled, 0)], 0)
            if sampled_logits.dtype != acc_weights.dtype:
                acc_weights = math_ops.cast(acc_weights, sampled_logits.dtype)
            sampled_logits += sparse_to_dense(sparse_indices, sampled_logits_shape, acc_weights,
                                              default_value=0.0, validate_indices=False)
        if subtract_log_q:
            true_logits -= math_ops.log(true_expected_count)
            sampled_logits -= math_ops.log(sampled_expected_count)
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat([array_ops.ones_like(true_logits) / num_true,
                                       array_ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None,
             remove_accidental_hits: bool = False, partition_strategy: str = "mod",
             name: str = "nce_loss") -> Any:
    """Noise-contrastive estimation loss per example, [batch] (`tf.nn.nce_loss`).

        >>> loss = tf.reduce_mean(tf.nn.nce_loss(nce_w, nce_b, labels, embed, 64, vocab))
    """
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="sampled_losses")
    return _sum_rows(sampled_losses)


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                         num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss", seed: int | None = None) -> Any:
    """Softmax cross-entropy over the true and `num_sampled` sampled classes, [batch]
    (`tf.nn.sampled_softmax_loss`), an estimate of the full softmax loss for training."""
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    labels = stop_gradient(labels, name="labels_stop_gradient")
    return nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
