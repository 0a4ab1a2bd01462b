"""The distributions behind the candidate sampler ops, with TensorFlow's arithmetic
(`core/kernels/range_sampler.cc`, `core/lib/random/{simple_philox,distribution_sampler,
weighted_picker}.cc`), so the same seed gives the same candidates and expected counts.

`Words` is TensorFlow's SimplePhilox over one run's reserved range of the node's
generator.  A sampler has a `range`, `sample(words)`, `probability(k)` (float32, as
TensorFlow's `float` arithmetic gives it) and `update(true_classes)` (only the learned
unigram sampler learns):

- `Uniform`: `Rand64() % range`, P = float(1 / range);
- `LogUniform`: `int64(exp(RandDouble() * log1p(range))) - 1`, then `% range`;
  P(k) = float(log((k + 2) / (k + 1)) / log1p(range)) in double;
- `FixedUnigram`: given weights (`powf(w, distortion)`, float32 sums) drawn by Walker's
  alias method as TensorFlow builds its table (`RandFloat` for the coin, then
  `Uniform(n)` for the bucket);
- `LearnedUnigram`: integer counts, all 1 at first, +1 per true class after each run;
  draws `Uniform(total)` and walks the cumulative counts (WeightedPicker).

Float functions TensorFlow calls in float (`log1pf`, `expm1f`, `powf`) are glibc's,
through ctypes; double ones are the C library's through `math` -- never NumPy's SIMD
loops, whose last bits depend on the CPU.  Without glibc, NumPy's float32 functions
stand in (within an ulp).
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import math
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.philox import GuardedPhilox, SingleSamples

WORDS_PER_CANDIDATE = 2048  # TensorFlow's samples32 = 2048 * num_sampled
_f32 = np.float32


def _load_float_libm() -> Any:
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        for fn, n in ((libm.log1pf, 1), (libm.expm1f, 1), (libm.powf, 2)):
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float] * n
        return libm
    except (OSError, AttributeError):
        return None


_LIBM = _load_float_libm()


def _log1pf(x: float) -> float:
    return float(_LIBM.log1pf(x)) if _LIBM else float(np.log1p(_f32(x)))


def _expm1f(x: float) -> float:
    return float(_LIBM.expm1f(x)) if _LIBM else float(np.expm1(_f32(x)))


def _powf(x: float, y: float) -> float:
    return float(_LIBM.powf(x, y)) if _LIBM else float(np.power(_f32(x), _f32(y)))


class Words:
    """TensorFlow's SimplePhilox over one run's reserved range."""

    def __init__(self, gen: GuardedPhilox, num_sampled: int) -> None:
        self._next = SingleSamples(gen.reserve_samples32(WORDS_PER_CANDIDATE * num_sampled))

    def rand32(self) -> int:
        return self._next()

    def rand64(self) -> int:
        lo = self._next()
        return lo | (self._next() << 32)

    def rand_float(self) -> float:
        bits = np.uint32((self._next() & 0x7FFFFF) | (127 << 23))
        return float(bits.view(np.float32) - _f32(1.0))

    def rand_double(self) -> float:
        hi = self._next() & 0xFFFFF
        lo = self._next()
        return float(np.uint64((hi << 32) | lo | (1023 << 52)).view(np.float64)) - 1.0

    def uniform(self, n: int) -> int:
        return self.rand32() % n


def expected_count(p: float, n: int, tries: int) -> float:
    """TensorFlow's ExpectedCountHelper, in float: p * n when every try was kept."""
    if tries == n:
        return float(_f32(p) * _f32(n))
    return -_expm1f(float(_f32(tries) * _f32(_log1pf(-p))))


class _Fixed:
    def update(self, values: list[int]) -> None:
        """A fixed distribution learns nothing."""


class Uniform(_Fixed):
    def __init__(self, range_max: int) -> None:
        self.range = range_max
        self._p = float(_f32(1.0 / range_max))

    def sample(self, words: Words) -> int:
        return words.rand64() % self.range

    def probability(self, value: int) -> float:
        return self._p


class LogUniform(_Fixed):
    def __init__(self, range_max: int) -> None:
        self.range = range_max
        self._log_range = math.log1p(range_max)

    def sample(self, words: Words) -> int:
        return (int(math.exp(words.rand_double() * self._log_range)) - 1) % self.range

    def probability(self, value: int) -> float:
        return float(_f32(math.log((value + 2.0) / (value + 1.0)) / self._log_range))


class FixedUnigram(_Fixed):
    """Weights from `unigrams` or a vocabulary file, drawn by an alias table."""

    def __init__(self, range_max: int, weights: list[float], total: float) -> None:
        self.range = range_max
        self._weights, self._total = weights, total
        self._prob, self._alt = _alias_table(weights)

    @classmethod
    def from_attrs(cls, attrs: dict[str, Any]) -> FixedUnigram:
        vocab, unigrams = attrs["vocab_file"], list(attrs["unigrams"])
        if not vocab and not unigrams:
            raise errors.InvalidArgumentError(None, None, "Must provide either vocab_file or unigrams.")
        if vocab and unigrams:
            raise errors.InvalidArgumentError(
                None, None, "Must only provide one of vocab_file and unigrams.")
        shards, shard = attrs["num_shards"], attrs["shard"]
        weights = [0.0 for word in range(attrs["num_reserved_ids"]) if word % shards == shard]
        counts = _vocab_counts(vocab) if vocab else unigrams
        total = _f32(0.0)
        word = len(weights)  # TensorFlow counts on from the reserved weights kept
        for w in counts:
            if word % shards == shard:
                w = _powf(w, attrs["distortion"])
                total = _f32(total + _f32(w))
                weights.append(w)
            word += 1
        if attrs["range_max"] != len(weights):
            raise errors.InvalidArgumentError(
                None, None, f"range is {attrs['range_max']} must be equal to weights size  "
                f"{len(weights)}")
        return cls(attrs["range_max"], weights, float(total))

    def sample(self, words: Words) -> int:
        r = words.rand_float()
        idx = words.uniform(len(self._prob))
        return idx if r < self._prob[idx] else self._alt[idx]

    def probability(self, value: int) -> float:
        if not 0 <= value < len(self._weights):
            return 0.0
        return float(_f32(self._weights[value]) / _f32(self._total))


def _vocab_counts(path: str) -> list[float]:
    """The last comma-separated column of each line of a vocabulary file."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise errors.NotFoundError(None, None, f"{path}; {e.strerror}") from None
    counts = []
    for line in lines:
        if not line:
            continue
        try:
            counts.append(float(line.split(",")[-1]))
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Wrong vocabulary format at line: {line}") from None
    return counts


def _alias_table(weights: list[float]) -> tuple[list[float], list[int]]:
    """TensorFlow's DistributionSampler: Walker's alias table, built in its order (the
    last short bucket takes from the last long one), probabilities kept as floats."""
    n = len(weights)
    total = sum(float(w) for w in weights)  # a double sum, in order
    alt = [-1] * n
    pr = [float(_f32(w) * _f32(n)) / total for w in weights]
    low = [i for i in range(n) if pr[i] < 1.0]
    high = [i for i in range(n) if pr[i] >= 1.0]
    while high and low:
        lo, hi = low.pop(), high.pop()
        alt[lo] = hi
        pr[hi] = pr[hi] - (1.0 - pr[lo])
        (low if pr[hi] < 1.0 else high).append(hi)
    prob = [float(_f32(p)) for p in pr]
    for i in high + low:  # rounding leftovers: certain, and their own alternative
        prob[i], alt[i] = 1.0, i
    return prob, alt


class LearnedUnigram:
    """Counts of the true classes seen, starting at 1 each (TensorFlow's UnigramSampler)."""

    def __init__(self, range_max: int) -> None:
        self.range = range_max
        self._counts = [1] * range_max
        self._cumulative: list[int] | None = None
        self._total = range_max

    def sample(self, words: Words) -> int:
        if self._cumulative is None:
            self._cumulative = list(np.cumsum(self._counts).tolist())
        return bisect.bisect_right(self._cumulative, words.uniform(self._total))

    def probability(self, value: int) -> float:
        return float(_f32(self._counts[value]) / _f32(self._total))

    def update(self, values: list[int]) -> None:
        for v in values[: max(0, 2**31 - 1 - self._total)]:
            self._counts[v] += 1
        self._total = sum(self._counts)
        self._cumulative = None
