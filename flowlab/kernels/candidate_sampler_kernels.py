"""Kernels of the candidate samplers and of ComputeAccidentalHits: TensorFlow's numbers
(`candidate_sampler_ops.cc`) under the same seeds.

State: each sampler node keeps its generator (a `GuardedPhilox` seeded by its
`seed`/`seed2` attrs, as the random ops) and its sampler (flowlab.kernels.range_samplers)
in its device's resource manager; a learned sampler's counts change with every run.
A run reserves 2048 words per candidate (TensorFlow's `ReserveSamples32(2048 *
num_sampled)`) and draws from the start of that range one word at a time; with
`unique`, a candidate already drawn is drawn again (rejection), and the number of tries
enters the expected counts.  The loops run in Python: a sampler draws tens to a few
thousand candidates per step, each depending on the ones before (rejection).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.philox import GuardedPhilox
from flowlab.kernels.range_samplers import (
    FixedUnigram,
    LearnedUnigram,
    LogUniform,
    Uniform,
    Words,
    expected_count,
)
from flowlab.kernels.registry import CPU, kernel
from flowlab.ops import candidate_sampling_ops  # noqa: F401  (declares the ops)

_CONTAINER = "_candidate_samplers"
_FLT_MAX = float(np.finfo(np.float32).max)


class _State:
    """A sampler node's kernel state: its generator and its sampler (a learned sampler's
    counts change with every run)."""

    def __init__(self, ctx: Any, make_sampler: Any) -> None:
        self.gen = GuardedPhilox(ctx.attrs.get("seed", 0), ctx.attrs.get("seed2", 0))
        self.sampler = make_sampler(ctx.attrs)
        self.lock = threading.Lock()


def _state(ctx: Any, make_sampler: Any) -> _State:
    return ctx.resources.lookup_or_create(_CONTAINER, ctx.name, lambda: _State(ctx, make_sampler))


def _check_true_classes(ctx: Any, true_classes: np.ndarray) -> None:
    if true_classes.ndim != 2:
        raise errors.InvalidArgumentError(None, None, "true_classes must be a matrix")
    if true_classes.shape[1] != ctx.attrs["num_true"]:
        raise errors.InvalidArgumentError(
            None, None, f"true_classes must have num_true columns, expected: "
            f"{true_classes.shape[1]} was: {ctx.attrs['num_true']}")


def _check_range(ctx: Any, true_classes: np.ndarray, range_max: int) -> None:
    if ctx.attrs["unique"] and ctx.attrs["num_sampled"] > range_max:
        raise errors.InvalidArgumentError(None, None, "Sampler's range is too small.")
    bad = (true_classes < 0) | (true_classes >= range_max)
    if bad.any():
        raise errors.InvalidArgumentError(
            None, None, f"`true_candidate` out of range [0, {range_max}), received "
            f"{int(true_classes.reshape(-1)[np.argmax(bad.reshape(-1))])}")


def _sample(ctx: Any, true_classes: np.ndarray, make_sampler: Any) -> tuple[np.ndarray, ...]:
    _check_true_classes(ctx, true_classes)
    state = _state(ctx, make_sampler)
    with state.lock:  # a learned sampler reads and updates its counts
        return _draw(ctx, true_classes, state)


def _draw(ctx: Any, true_classes: np.ndarray, state: _State) -> tuple[np.ndarray, ...]:
    sampler = state.sampler
    _check_range(ctx, true_classes, sampler.range)
    n, unique = ctx.attrs["num_sampled"], ctx.attrs["unique"]
    words = Words(state.gen, n)
    if unique:
        picked: list[int] = []
        used: set[int] = set()
        tries = 0
        while len(picked) < n:
            tries += 1
            v = sampler.sample(words)
            if v not in used:
                used.add(v)
                picked.append(v)
    else:
        picked = [sampler.sample(words) for _ in range(n)]
        tries = n
    sampled_q = [expected_count(sampler.probability(v), n, tries) for v in picked]
    true_flat = true_classes.reshape(-1).tolist()
    true_q = [expected_count(sampler.probability(int(v)), n, tries) for v in true_flat]
    sampler.update(true_flat)
    return (np.array(picked, np.int64), np.array(true_q, np.float32).reshape(true_classes.shape),
            np.array(sampled_q, np.float32))


@kernel("UniformCandidateSampler", devices=CPU)
def uniform_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    return _sample(ctx, true_classes, lambda a: Uniform(a["range_max"]))


@kernel("LogUniformCandidateSampler", devices=CPU)
def log_uniform_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    return _sample(ctx, true_classes, lambda a: LogUniform(a["range_max"]))


@kernel("LearnedUnigramCandidateSampler", devices=CPU)
def learned_unigram_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    return _sample(ctx, true_classes, lambda a: LearnedUnigram(a["range_max"]))


@kernel("FixedUnigramCandidateSampler", devices=CPU)
def fixed_unigram_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    return _sample(ctx, true_classes, FixedUnigram.from_attrs)


@kernel("AllCandidateSampler", devices=CPU)
def all_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    _check_true_classes(ctx, true_classes)
    n = ctx.attrs["num_sampled"]
    _check_range(ctx, true_classes, n)
    return (np.arange(n, dtype=np.int64), np.ones(true_classes.shape, np.float32),
            np.ones(n, np.float32))


@kernel("ComputeAccidentalHits", devices=CPU)
def compute_accidental_hits(ctx: Any, true_classes: np.ndarray,
                            sampled: np.ndarray) -> tuple[np.ndarray, ...]:
    if true_classes.ndim != 2 or true_classes.shape[1] != ctx.attrs["num_true"]:
        raise errors.InvalidArgumentError(
            None, None, "true_candidates must be a batch_size * num_true matrix")
    if sampled.ndim != 1:
        raise errors.InvalidArgumentError(
            None, None, "sampled_candidates must be a vector, which is typically an output "
            "from CandidateSampler")
    position = {v: i for i, v in enumerate(sampled.tolist())}  # the last one wins, as TF's map
    rows, ids = [], []
    for r, row in enumerate(true_classes.tolist()):
        for c in row:
            if c in position:
                rows.append(r)
                ids.append(position[c])
    return (np.array(rows, np.int32), np.array(ids, np.int64),
            np.full(len(rows), -_FLT_MAX, np.float32))
