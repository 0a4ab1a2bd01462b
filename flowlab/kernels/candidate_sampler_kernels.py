"""Kernels of the candidate samplers and of ComputeAccidentalHits: TensorFlow's numbers
(`candidate_sampler_ops.cc`, `range_sampler.cc`) under the same seeds.

State: each sampler node keeps a `GuardedPhilox` in its device's resource manager (as
the random ops do, flowlab.kernels.random_kernels).  A run reserves 2048 words per
sampled candidate (TensorFlow's `ReserveSamples32(2048 * num_sampled)`) and draws
from the start of that range one word at a time (`SimplePhilox` on a
`SingleSampleAdapter`):

- uniform: `Rand64() % range` (two words, low first);
- log-uniform: `int64(exp(RandDouble() * log1p(range))) - 1`, then `% range`
  (`RandDouble` is two words: 20 + 32 mantissa bits);
- with `unique`, a candidate already drawn is drawn again (rejection), and the number
  of tries enters the expected counts.

Expected counts are float32 as TensorFlow computes them: `p * n` when every try was
kept, else `-expm1f(tries * log1pf(-p))`, with p = P(class) rounded to float
(uniform: `float(1 / range)`; log-uniform: `float(log((k + 2) / (k + 1)) / log1p(range))`
in double).  The float functions are glibc's, called through ctypes, and the double
ones the C library's through `math`, so the bits do not depend on NumPy's SIMD loops
(without glibc, NumPy's float32 `log1p`/`expm1` stand in: within an ulp).

The loops run in Python, value by value: a sampler draws tens to a few thousand
candidates per step, and each draw depends on the ones before it (rejection).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.philox import GuardedPhilox, SingleSamples
from flowlab.kernels.registry import CPU, kernel
from flowlab.ops import candidate_sampling_ops  # noqa: F401  (declares the ops)

_CONTAINER = "_candidate_samplers"
_WORDS_PER_CANDIDATE = 2048  # TensorFlow's samples32 = 2048 * num_sampled
_FLT_MAX = float(np.finfo(np.float32).max)


def _load_float_libm() -> Any:
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        for fn in (libm.log1pf, libm.expm1f):
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float]
        return libm
    except (OSError, AttributeError):
        return None


_LIBM = _load_float_libm()
_f32 = np.float32


def _log1pf(x: float) -> float:
    return float(_LIBM.log1pf(x)) if _LIBM else float(np.log1p(_f32(x)))


def _expm1f(x: float) -> float:
    return float(_LIBM.expm1f(x)) if _LIBM else float(np.expm1(_f32(x)))


class _Words:
    """TensorFlow's SimplePhilox over one run's reserved range."""

    def __init__(self, gen: GuardedPhilox, num_sampled: int) -> None:
        self._next = SingleSamples(gen.reserve_samples32(_WORDS_PER_CANDIDATE * num_sampled))

    def rand64(self) -> int:
        lo = self._next()
        return lo | (self._next() << 32)

    def rand_double(self) -> float:
        hi = self._next() & 0xFFFFF
        lo = self._next()
        return float(np.uint64((hi << 32) | lo | (1023 << 52)).view(np.float64)) - 1.0


class _Uniform:
    def __init__(self, range_max: int) -> None:
        self.range = range_max
        self._p = float(_f32(1.0 / range_max))

    def sample(self, words: _Words) -> int:
        return words.rand64() % self.range

    def probability(self, value: int) -> float:
        return self._p


class _LogUniform:
    def __init__(self, range_max: int) -> None:
        self.range = range_max
        self._log_range = math.log1p(range_max)

    def sample(self, words: _Words) -> int:
        return (int(math.exp(words.rand_double() * self._log_range)) - 1) % self.range

    def probability(self, value: int) -> float:
        return float(_f32(math.log((value + 2.0) / (value + 1.0)) / self._log_range))


def _expected_count(p: float, n: int, tries: int) -> float:
    if tries == n:
        return float(_f32(p) * _f32(n))
    return -_expm1f(float(_f32(tries) * _f32(_log1pf(-p))))


def _generator(ctx: Any) -> GuardedPhilox:
    seed, seed2 = ctx.attrs.get("seed", 0), ctx.attrs.get("seed2", 0)
    return ctx.resources.lookup_or_create(_CONTAINER, ctx.name, lambda: GuardedPhilox(seed, seed2))


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


def _sample(ctx: Any, true_classes: np.ndarray, sampler: Any) -> tuple[np.ndarray, ...]:
    _check_true_classes(ctx, true_classes)
    _check_range(ctx, true_classes, sampler.range)
    n, unique = ctx.attrs["num_sampled"], ctx.attrs["unique"]
    words = _Words(_generator(ctx), n)
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
    sampled_q = [_expected_count(sampler.probability(v), n, tries) for v in picked]
    true_q = [_expected_count(sampler.probability(int(v)), n, tries)
              for v in true_classes.reshape(-1).tolist()]
    return (np.array(picked, np.int64), np.array(true_q, np.float32).reshape(true_classes.shape),
            np.array(sampled_q, np.float32))


@kernel("UniformCandidateSampler", devices=CPU)
def uniform_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    return _sample(ctx, true_classes, _Uniform(ctx.attrs["range_max"]))


@kernel("LogUniformCandidateSampler", devices=CPU)
def log_uniform_candidate_sampler(ctx: Any, true_classes: np.ndarray) -> tuple[np.ndarray, ...]:
    return _sample(ctx, true_classes, _LogUniform(ctx.attrs["range_max"]))


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
