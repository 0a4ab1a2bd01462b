"""Philox4x32-10, the counter-based generator behind TensorFlow's random kernels.

State: a 64-bit key and a 128-bit counter (Salmon et al., "Parallel random numbers:
as easy as 1, 2, 3", SC'11).  One call encrypts the counter with the key in ten
rounds and yields four uint32 words; then the counter grows by one.  Because output
`i` depends only on (key, counter + i), a block of outputs is computed at once, as
NumPy arrays, and skipping ahead is an addition.

TensorFlow's seeding: `PhiloxRandom(seed, seed2)` puts `seed` into the key (low
word first) and `seed2` into the two high words of the counter.  `GuardedPhilox`
is the per-kernel state of a random op: each call reserves a range of counters
(`reserve(n)` hands out the current generator and skips it ahead), which is how
successive runs of one op give successive samples.

Invariants: all words are Python ints in [0, 2**32); generated blocks are uint32
arrays of shape (n, 4); the generator never depends on how work is split.
"""

from __future__ import annotations

import os
import threading

import numpy as np

# Round multipliers and Weyl key increments of Philox4x32 (the published constants).
_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1
ROUNDS = 10


class PhiloxRandom:
    """A Philox4x32-10 generator: key (2 words) and counter (4 words).

    >>> g = PhiloxRandom(1, 2)
    >>> g.generate(2).shape
    (2, 4)
    """

    __slots__ = ("key", "counter")

    def __init__(self, seed: int = 0, seed2: int = 0) -> None:
        seed &= _MASK64
        seed2 &= _MASK64
        self.key = (seed & _MASK32, seed >> 32)
        # The counter as one 128-bit integer: words 0..3 from least significant.
        self.counter = (seed2 & _MASK64) << 64

    def copy(self) -> PhiloxRandom:
        g = PhiloxRandom.__new__(PhiloxRandom)
        g.key = self.key
        g.counter = self.counter
        return g

    def skip(self, count: int) -> None:
        """Advance by `count` outputs (each output is four uint32 words)."""
        self.counter = (self.counter + count) & _MASK128

    def generate(self, n: int) -> np.ndarray:
        """The next `n` outputs, as a uint32 array of shape (n, 4); advances by n."""
        out = block(self.key, self.counter, n)
        self.skip(n)
        return out


def block(key: tuple[int, int], counter: int, n: int) -> np.ndarray:
    """Outputs for counters `counter .. counter + n - 1` under `key`: uint32 (n, 4)."""
    return block_at(key, counter, np.arange(max(n, 0), dtype=np.uint64))


def block_at(key: tuple[int, int], counter: int, offsets: np.ndarray) -> np.ndarray:
    """Outputs for counters `counter + offsets[i]` (offsets: uint64) under `key`."""
    offsets = np.asarray(offsets, dtype=np.uint64).reshape(-1)
    lo64 = counter & _MASK64
    hi64 = counter >> 64
    with np.errstate(over="ignore"):
        lo = np.uint64(lo64) + offsets  # wraps modulo 2**64
        hi = np.uint64(hi64) + (lo < np.uint64(lo64))  # the carry
    s32 = np.uint64(32)
    c0 = lo.astype(np.uint32)
    c1 = (lo >> s32).astype(np.uint32)
    c2 = hi.astype(np.uint32)
    c3 = (hi >> s32).astype(np.uint32)
    k0, k1 = key
    p0 = np.empty(offsets.shape[0], np.uint64)
    p1 = np.empty_like(p0)
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + _W0) & _MASK32
            k1 = (k1 + _W1) & _MASK32
        # 32 x 32 -> 64-bit products; their low and high words feed the next round.
        np.multiply(c0, _M0, out=p0, casting="unsafe")
        np.multiply(c2, _M1, out=p1, casting="unsafe")
        lo0 = p0.astype(np.uint32)
        lo1 = p1.astype(np.uint32)
        np.right_shift(p0, s32, out=p0)
        np.right_shift(p1, s32, out=p1)
        n0 = p1.astype(np.uint32)
        n0 ^= c1
        n0 ^= np.uint32(k0)
        n2 = p0.astype(np.uint32)
        n2 ^= c3
        n2 ^= np.uint32(k1)
        c0, c1, c2, c3 = n0, lo1, n2, lo0
    return np.stack([c0, c1, c2, c3], axis=1)


class GuardedPhilox:
    """A random op's generator state: hands out disjoint counter ranges, thread-safely.

    Seeds (0, 0) mean "nondeterministic": fresh seeds come from the OS, as TensorFlow's
    `GuardedPhiloxRandom::Init` does.
    """

    def __init__(self, seed: int, seed2: int) -> None:
        if seed == 0 and seed2 == 0:
            seed = int.from_bytes(os.urandom(8), "little")
            seed2 = int.from_bytes(os.urandom(8), "little")
        self._lock = threading.Lock()
        self._gen = PhiloxRandom(seed, seed2)

    def reserve(self, samples: int) -> PhiloxRandom:
        """The generator as it stands, then skip it ahead by `samples` outputs."""
        with self._lock:
            g = self._gen.copy()
            self._gen.skip(samples)
        return g

    def reserve_outputs(self, output_count: int, multiplier: int = 256) -> PhiloxRandom:
        """What a kernel producing `output_count` values reserves (TensorFlow reserves
        `multiplier` outputs per value, so that rejection sampling never overlaps)."""
        return self.reserve(output_count * multiplier)

    def reserve_samples32(self, samples: int) -> PhiloxRandom:
        """Reserve room for `samples` uint32 words (four per output, rounded up)."""
        return self.reserve((samples + 3) // 4)


class SingleSamples:
    """One uint32 word at a time from a generator (TensorFlow's SingleSampleAdapter)."""

    def __init__(self, gen: PhiloxRandom, chunk: int = 16) -> None:
        self._gen = gen
        self._chunk = chunk
        self._words: list[int] = []
        self._pos = 0

    def __call__(self) -> int:
        if self._pos == len(self._words):
            self._words = self._gen.generate(self._chunk).reshape(-1).tolist()
            self._pos = 0
        w = self._words[self._pos]
        self._pos += 1
        return w
