"""Candidate samplers and accidental hits: the ops under sampled losses (`nce_loss`,
`sampled_softmax_loss`), as TensorFlow declares them.

A sampler op takes the true classes (int64, [batch, num_true]) and returns
`num_sampled` candidate classes in [0, range_max), the expected count of each true
class and of each candidate in a draw of that many -- what the losses subtract as
log Q.  It is stateful: its generator (Philox, seeded by `seed`/`seed2` as the random
ops are) lives in its device's resource manager and moves on with every run, so two
runs draw different candidates (flowlab.kernels.candidate_sampler_kernels gives the
same numbers as TensorFlow's kernels).  `compute_accidental_hits` finds the
candidates that are also a row's true class, so a loss can mask them out.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.random_ops import get_seed

__all__ = [
    "all_candidate_sampler", "compute_accidental_hits", "fixed_unigram_candidate_sampler",
    "learned_unigram_candidate_sampler", "log_uniform_candidate_sampler",
    "uniform_candidate_sampler",
]

CandidateSamplerOutput = namedtuple(
    "CandidateSamplerOutput", ["sampled_candidates", "true_expected_count", "sampled_expected_count"])
AccidentalHitsOutput = namedtuple("AccidentalHitsOutput", ["indices", "ids", "weights"])


def _matrix_of_true_classes(op: Operation) -> Any:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {s.ndims} for '{op.name}' "
                         f"({op.type}) with input shapes: {s}.")
    return None if s.ndims is None else s.as_list()[0]


def _sampler_shape(op: Operation) -> list[TensorShape]:
    batch = _matrix_of_true_classes(op)
    n = op.get_attr("num_sampled")
    return [TensorShape([n]), TensorShape([batch, op.get_attr("num_true")]), TensorShape([n])]


def _accidental_hits_shape(op: Operation) -> list[TensorShape]:
    _matrix_of_true_classes(op)
    s = op.inputs[1].shape
    if s.ndims is not None and s.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.ndims} for '{op.name}' "
                         f"({op.type}) with input shapes: {op.inputs[0].shape}, {s}.")
    return [TensorShape([None])] * 3


_SAMPLER_OUTPUTS = ["sampled_candidates: int64", "true_expected_count: float",
                    "sampled_expected_count: float"]
_COMMON = ["num_true: int >= 1", "num_sampled: int >= 1", "unique: bool",
           "seed: int = 0", "seed2: int = 0"]
for _type in ("UniformCandidateSampler", "LogUniformCandidateSampler"):
    op_def(_type, inputs=["true_classes: int64"], outputs=_SAMPLER_OUTPUTS,
           attrs=_COMMON + ["range_max: int >= 1"], shape_fn=_sampler_shape, stateful=True)
    not_differentiable(_type)
op_def("LearnedUnigramCandidateSampler", inputs=["true_classes: int64"], outputs=_SAMPLER_OUTPUTS,
       attrs=_COMMON + ["range_max: int >= 1"], shape_fn=_sampler_shape, stateful=True)
not_differentiable("LearnedUnigramCandidateSampler")
op_def("FixedUnigramCandidateSampler", inputs=["true_classes: int64"], outputs=_SAMPLER_OUTPUTS,
       attrs=_COMMON + ["range_max: int >= 1", "vocab_file: string = ''",
                        "distortion: float = 1.0", "num_reserved_ids: int = 0",
                        "num_shards: int >= 1 = 1", "shard: int >= 0 = 0",
                        "unigrams: list(float) = []"],
       shape_fn=_sampler_shape, stateful=True)
not_differentiable("FixedUnigramCandidateSampler")
op_def("AllCandidateSampler", inputs=["true_classes: int64"], outputs=_SAMPLER_OUTPUTS,
       attrs=_COMMON, shape_fn=_sampler_shape, stateful=True)
not_differentiable("AllCandidateSampler")
op_def("ComputeAccidentalHits", inputs=["true_classes: int64", "sampled_candidates: int64"],
       outputs=["indices: int32", "ids: int64", "weights: float"],
       attrs=["num_true: int", "seed: int = 0", "seed2: int = 0"],
       shape_fn=_accidental_hits_shape)
not_differentiable("ComputeAccidentalHits")


def _sampler(op_type: str, true_classes: Any, num_true: int, num_sampled: int, unique: bool,
             seed: int | None, name: str | None, **attrs: Any) -> CandidateSamplerOutput:
    s1, s2 = get_seed(seed)
    out = apply_op(op_type, name=name, true_classes=true_classes,
                   num_true=num_true, num_sampled=num_sampled, unique=unique,
                   seed=s1 or 0, seed2=s2 or 0, **attrs)
    return CandidateSamplerOutput(*out)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: int | None = None,
                              name: str | None = None) -> CandidateSamplerOutput:
    """`num_sampled` classes drawn uniformly from [0, range_max) (`tf.nn.uniform_candidate_sampler`)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    seed, name, range_max=range_max)


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                  unique: bool, range_max: int, seed: int | None = None,
                                  name: str | None = None) -> CandidateSamplerOutput:
    """`num_sampled` classes drawn from the log-uniform (Zipfian) distribution
    P(k) = log((k + 2) / (k + 1)) / log(range_max + 1) over [0, range_max), the right
    prior when classes are sorted by decreasing frequency
    (`tf.nn.log_uniform_candidate_sampler`).

        >>> s, true_q, sampled_q = log_uniform_candidate_sampler(labels, 1, 64, True, 50000)
    """
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    seed, name, range_max=range_max)


def learned_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                      unique: bool, range_max: int, seed: int | None = None,
                                      name: str | None = None) -> CandidateSamplerOutput:
    """Candidates drawn from the classes' counts so far: every class starts at 1 and
    each run adds 1 for each of its true classes (`tf.nn.learned_unigram_candidate_sampler`)."""
    if range_max > 2147483647:
        raise ValueError(f"Value of range_max:{range_max} is too large to handle")
    return _sampler("LearnedUnigramCandidateSampler", true_classes, num_true, num_sampled,
                    unique, seed, name, range_max=range_max)


def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                    unique: bool, range_max: int, vocab_file: str = "",
                                    distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0,
                                    unigrams: Any = (), seed: int | None = None,
                                    name: str | None = None) -> CandidateSamplerOutput:
    """Candidates drawn from given counts (`unigrams`, or the last column of each line of
    `vocab_file`) raised to `distortion`, after `num_reserved_ids` classes of weight 0,
    keeping the ids of one `shard` of `num_shards` (`tf.nn.fixed_unigram_candidate_sampler`)."""
    return _sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique,
                    seed, name, range_max=range_max, vocab_file=vocab_file,
                    distortion=float(distortion), num_reserved_ids=num_reserved_ids,
                    num_shards=num_shards, shard=shard, unigrams=[float(u) for u in unigrams])


def all_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                          seed: int | None = None, name: str | None = None) -> CandidateSamplerOutput:
    """Every class 0..num_sampled-1, each with expected count 1 (`tf.nn.all_candidate_sampler`)."""
    return _sampler("AllCandidateSampler", true_classes, num_true, num_sampled, unique, seed, name)


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int,
                            seed: int | None = None, name: str | None = None) -> AccidentalHitsOutput:
    """Where a sampled candidate is one of its row's true classes: (row indices, positions
    in `sampled_candidates`, weights of -FLT_MAX) (`tf.nn.compute_accidental_hits`)."""
    s1, s2 = get_seed(seed)
    out = apply_op("ComputeAccidentalHits", name=name,
                   true_classes=true_classes, sampled_candidates=sampled_candidates,
                   num_true=num_true, seed=s1 or 0, seed2=s2 or 0)
    return AccidentalHitsOutput(*out)
