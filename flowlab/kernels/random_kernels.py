"""Kernels of the random ops: the same numbers as TensorFlow's CPU kernels.

State: each random node keeps a `GuardedPhilox` in its device's resource manager
(container "_random_ops", keyed by node name), created on the node's first run in a
session from its (seed, seed2) attrs.  That is where TensorFlow keeps it too (the
kernel object, shared per session and node); resetting the session's resources
restarts the sequences.

Each run reserves 256 Philox outputs per value produced (TensorFlow's
`ReserveRandomOutputs(n, 256)`), then fills the output group by group, as
`FillPhiloxRandom` does: a group is the values made from one Philox output (4 floats,
2 doubles, 4 int32, 2 int64).  TruncatedNormal, which rejects samples, starts each
group of 4 (or 2 doubles) at its own offset of 256 (128) outputs and draws words one
at a time from there.  The results therefore do not depend on how TensorFlow shards
the work, and neither on how we vectorize it.

Floats follow `random_distributions.h`: a uniform float is 1.m - 1 with 23 random
mantissa bits (Uint32ToFloat), a double uses 52 bits from two words, a half 10 bits
from the low half of a word; normals are Box-Muller pairs (BoxMullerFloat computes
`sqrt(-2 logf(u1))` and `sincosf(2 pi u2)` in float).  To agree bit for bit with
TensorFlow, whose CPU kernels call glibc's `logf` and `sincosf`, values are computed
correctly rounded in NumPy and, where glibc's rounding may differ (results close to a
float32 rounding midpoint), recomputed by glibc itself through ctypes.  Without glibc
the values may differ from TensorFlow's in the last bits (up to 3 ulp), still with the
same distribution and the same determinism.  Doubles call the C library's `log`, `sin`
and `cos` (through `math`) value by value, as TensorFlow does: NumPy's float64 ufuncs
dispatch to SIMD code by CPU (its AVX-512 `log` differs from glibc's by an ulp now and
then), which would make the numbers depend on the machine.

RandomShuffle is TensorFlow's front-to-back Fisher-Yates with one word per swap.
Multinomial draws one double per sample by inverting the row's running sum of
exp(logit - max); its word stream depends on how TensorFlow splits the rows among
threads, which `_shard_starts` reproduces from the CPU count and Eigen's cost model.

On accelerators the kernels compute on the host and copy the result over: the numbers
are the CPU kernel's (TensorFlow's GPU kernels give other numbers).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.philox import GuardedPhilox, PhiloxRandom, SingleSamples, block_at
from flowlab.kernels.registry import CPU, GPU, kernel

_CONTAINER = "_random_ops"
_RESERVED_PER_OUTPUT = 256  # TensorFlow's kReservedSamplesPerOutput
_TWO_PI = 2.0 * np.pi  # double, as `2.0f * M_PI` is in C
_F32_ONE_BITS = np.uint32(127 << 23)
_F16_ONE_BITS = np.uint16(15 << 10)


# --- glibc's float functions -------------------------------------------------------------
def _load_glibc() -> Any:
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        if not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
            return None
        for fn in (libm.logf, libm.sinf, libm.cosf):
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float]
        return libm
    except (OSError, AttributeError):
        return None


_LIBM = _load_glibc()

# Where glibc may round differently from the correctly rounded value: the largest
# distance from a float32 rounding midpoint (in ulps) at which it did, per bucket of
# results, over every input BoxMullerFloat can pass (2**23 each; glibc 2.36, x86-64 with
# FMA; glibc's float functions are the same since 2.28).  Buckets: logf by the binary
# exponent of the result; sinf/cosf by the quadrant of the argument (x / (pi/2) rounded,
# 0..4 for x in [0, 2 pi)) and the exponent of the result.  A bucket that is absent never
# differed.  Values within a bucket's band (with a margin) are recomputed by glibc, so
# `logf` and `sincosf` equal glibc's on all those inputs (checked exhaustively) and
# float32/float16 normals match TensorFlow bit for bit whatever the seed, at the cost of
# a ctypes call for about one value in six.  `_measure_bands()` recomputes the tables.
_LOGF_BANDS: dict[Any, float] = {
    -22: 0.001, -20: 0.001, -12: 0.001, -10: 0.001, -9: 0.001, -8: 0.014, -7: 0.085, -6: 0.287,
    -5: 0.201, -4: 0.085, -3: 0.045, -2: 0.025, -1: 0.013, 0: 0.038, 1: 0.019, 2: 0.008,
    3: 0.003,
}
_SINF_BANDS: dict[Any, float] = {
    (0, -6): 0.001, (0, -5): 0.002, (0, -4): 0.007, (0, -3): 0.025, (0, -2): 0.061,
    (0, -1): 0.06, (0, 0): 0.046, (1, 0): 0.001, (2, -7): 0.001, (2, -6): 0.001, (2, -5): 0.002,
    (2, -4): 0.007, (2, -3): 0.026, (2, -2): 0.061, (2, -1): 0.061, (2, 0): 0.047,
    (3, 0): 0.001, (4, -6): 0.001, (4, -5): 0.002, (4, -4): 0.007, (4, -3): 0.026,
    (4, -2): 0.06, (4, -1): 0.061, (4, 0): 0.046,
}
_COSF_BANDS: dict[Any, float] = {
    (0, 0): 0.001, (1, -7): 0.001, (1, -6): 0.001, (1, -5): 0.002, (1, -4): 0.007,
    (1, -3): 0.026, (1, -2): 0.061, (1, -1): 0.061, (1, 0): 0.047, (2, 0): 0.001,
    (3, -6): 0.001, (3, -5): 0.002, (3, -4): 0.008, (3, -3): 0.026, (3, -2): 0.061,
    (3, -1): 0.061, (3, 0): 0.048, (4, 0): 0.001,
}
_MARGIN = 1.25
_EXP_OFFSET = 160  # float32 binary exponents (frexp) lie in [-148, 128]


def _dense(table: dict[Any, float], quadrants: bool) -> np.ndarray:
    out = np.full((5 if quadrants else 1, 2 * _EXP_OFFSET), -1.0)
    for key, band in table.items():
        q, e = key if quadrants else (0, key)
        out[q, e + _EXP_OFFSET] = band * _MARGIN
    return out


_LOGF_DENSE = _dense(_LOGF_BANDS, False)
_SINF_DENSE = _dense(_SINF_BANDS, True)
_COSF_DENSE = _dense(_COSF_BANDS, True)


def _midpoint_distance(y64: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps from each float64 value to the nearest float32 rounding
    midpoint: 0 on a midpoint, 0.5 on a float32."""
    f = y64.astype(np.float32)
    f64 = f.astype(np.float64)
    other = np.where(f64 > y64, np.nextafter(f, np.float32(-np.inf)),
                     np.nextafter(f, np.float32(np.inf))).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 0.5 - np.abs(y64 - f64) / np.abs(other - f64)


def _quadrant(x: np.ndarray) -> np.ndarray:
    return np.rint(x.astype(np.float64) * (2 / np.pi)).astype(np.int64)


def _libm_float(fn: Any, x: np.ndarray, y64: np.ndarray, dense: np.ndarray,
                quadrant: np.ndarray | None) -> np.ndarray:
    """`fn(x)` (a glibc float function) from its float64 value `y64`."""
    y = y64.astype(np.float32)
    if _LIBM is None or y.size == 0:
        return y
    # frexp's exponent of a normal float32 is its biased exponent - 126.
    exp = ((y.view(np.uint32) >> np.uint32(23)) & np.uint32(0xFF)).astype(np.intp)
    exp += _EXP_OFFSET - 126
    if quadrant is None:
        band = dense[0, exp]
    else:
        inside = (quadrant >= 0) & (quadrant < dense.shape[0])
        band = np.where(inside, dense[np.clip(quadrant, 0, dense.shape[0] - 1), exp], 0.5)
    # Only values in a bucket with a band can differ; measure just those.
    cand = np.nonzero(band >= 0)[0]
    idx = cand[_midpoint_distance(y64[cand]) <= band[cand]]
    if idx.size:
        y[idx] = np.fromiter(map(fn, x[idx].tolist()), np.float32, idx.size)
    return y


def logf(x: np.ndarray) -> np.ndarray:
    """glibc's `logf` on positive float32 values (exactly on BoxMullerFloat's inputs,
    within an ulp elsewhere)."""
    return _libm_float(_LIBM and _LIBM.logf, x, np.log(x.astype(np.float64)), _LOGF_DENSE, None)


def sincosf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """glibc's `sincosf` on float32 values (exactly on BoxMullerFloat's inputs, within an
    ulp elsewhere)."""
    x64 = x.astype(np.float64)
    q = _quadrant(x)
    s = _libm_float(_LIBM and _LIBM.sinf, x, np.sin(x64), _SINF_DENSE, q)
    c = _libm_float(_LIBM and _LIBM.cosf, x, np.cos(x64), _COSF_DENSE, q)
    return s, c


def _measure_bands() -> list[dict[Any, float]]:
    """The three band tables above, measured against glibc (a few minutes)."""
    u = uint32_to_float(np.arange(1 << 23, dtype=np.uint32))
    u1 = np.maximum(u, np.float32(1.0e-7))
    v1 = (_TWO_PI * u.astype(np.float64)).astype(np.float32)
    tables = []
    for fn, x, y64, quadrants in (
        (_LIBM.logf, u1, np.log(u1.astype(np.float64)), False),
        (_LIBM.sinf, v1, np.sin(v1.astype(np.float64)), True),
        (_LIBM.cosf, v1, np.cos(v1.astype(np.float64)), True),
    ):
        exact = np.fromiter(map(fn, x.tolist()), np.float32, x.size)
        f = y64.astype(np.float32)
        miss = exact != f
        exps = np.frexp(f)[1][miss].tolist()
        qs = _quadrant(x)[miss].tolist() if quadrants else [None] * len(exps)
        table: dict[Any, float] = {}
        for q, e, d in zip(qs, exps, _midpoint_distance(y64)[miss].tolist()):
            key = (q, e) if quadrants else e
            table[key] = max(table.get(key, 0.0), float(np.ceil(d * 1000) / 1000))
        tables.append(dict(sorted(table.items())))
    return tables


# --- word -> value conversions (random_distributions.h) ----------------------------------
def uint32_to_float(w: np.ndarray) -> np.ndarray:
    """[0, 1) floats from the low 23 bits of each word."""
    return ((w & np.uint32(0x7FFFFF)) | _F32_ONE_BITS).view(np.float32) - np.float32(1.0)


def uint64_to_double(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """[0, 1) doubles from 20 bits of `w0` and all 32 of `w1`."""
    man = ((w0 & np.uint32(0xFFFFF)).astype(np.uint64) << np.uint64(32)) | w1.astype(np.uint64)
    return (man | np.uint64(1023 << 52)).view(np.float64) - 1.0


def uint16_to_half(w: np.ndarray) -> np.ndarray:
    """[0, 1) halves from the low 10 bits of each word."""
    bits = (w & np.uint32(0x3FF)).astype(np.uint16) | _F16_ONE_BITS
    return bits.view(np.float16) - np.float16(1.0)


def box_muller_float(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal floats per pair of words (BoxMullerFloat)."""
    u1 = np.maximum(uint32_to_float(x0), np.float32(1.0e-7))
    v1 = (_TWO_PI * uint32_to_float(x1).astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2.0) * logf(u1))
    s, c = sincosf(v1)
    return s * u2, c * u2


def _libm_double(fn: Any, x: np.ndarray) -> np.ndarray:
    """`fn` (`math.log`, `math.sin` or `math.cos`: the C library's double function) on
    every element of `x`.  NumPy's own float64 ufuncs are SIMD code on some CPUs (its
    AVX-512 `log` is 1 ulp from glibc's in ~0.3% of values), so they would make the
    numbers depend on the machine; the C library's scalar functions are what
    TensorFlow's BoxMullerDouble calls, on every CPU."""
    return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def box_muller_double(x0: Any, x1: Any, x2: Any, x3: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal doubles per four words (BoxMullerDouble)."""
    u1 = np.maximum(uint64_to_double(x0, x1), 1.0e-7)
    v1 = _TWO_PI * uint64_to_double(x2, x3)
    u2 = np.sqrt(-2.0 * _libm_double(math.log, u1))
    return _libm_double(math.sin, v1) * u2, _libm_double(math.cos, v1) * u2


def _interleave(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty(a.size * 2, a.dtype)
    out[0::2] = a
    out[1::2] = b
    return out


# --- distributions: n values from a generator --------------------------------------------
def uniform(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        w = gen.generate(-(-n // 2)).reshape(-1)
        return uint64_to_double(w[0::2], w[1::2])[:n]
    w = gen.generate(-(-n // 4)).reshape(-1)[:n]
    return uint16_to_half(w) if dtype == np.float16 else uint32_to_float(w)


def normal(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        w = gen.generate(-(-n // 2))
        return _interleave(*box_muller_double(w[:, 0], w[:, 1], w[:, 2], w[:, 3]))[:n]
    w = gen.generate(-(-n // 4)).reshape(-1)
    f = _interleave(*box_muller_float(w[0::2], w[1::2]))[:n]
    return f.astype(np.float16) if dtype == np.float16 else f


def uniform_int(gen: PhiloxRandom, n: int, lo: int, hi: int, dtype: np.dtype) -> np.ndarray:
    if dtype == np.int64:
        w = gen.generate(-(-n // 2)).reshape(-1)
        bits = w[0::2].astype(np.uint64) | (w[1::2].astype(np.uint64) << np.uint64(32))
        span = np.uint64((hi - lo) % (1 << 64))
        with np.errstate(over="ignore"):
            return (np.uint64(lo % (1 << 64)) + bits[:n] % span).view(np.int64)
    w = gen.generate(-(-n // 4)).reshape(-1)[:n]
    span = np.uint32((hi - lo) % (1 << 32))
    with np.errstate(over="ignore"):
        return (np.uint32(lo % (1 << 32)) + w % span).view(np.int32)


def truncated_normal(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    """Groups of 4 floats (2 doubles), each from its own stretch of 256 (128) outputs."""
    is_double = dtype == np.float64
    group = 2 if is_double else 4
    stride = group * _RESERVED_PER_OUTPUT // 4
    groups = -(-n // group)
    if groups == 0:
        return np.zeros(0, dtype)
    # Two Philox outputs per group give 4 (doubles) or 8 (floats) candidates; a group
    # with too few of them inside (-2, 2) -- about one in 10**5 -- is finished below.
    per_group = 2
    offsets = (np.arange(groups, dtype=np.uint64)[:, None] * np.uint64(stride)
               + np.arange(per_group, dtype=np.uint64)[None, :]).reshape(-1)
    w = block_at(gen.key, gen.counter, offsets).reshape(groups, per_group * 4)
    if is_double:
        a, b = box_muller_double(w[:, 0::4], w[:, 1::4], w[:, 2::4], w[:, 3::4])
        limit: Any = 2.0
    else:
        a, b = box_muller_float(w[:, 0::2].reshape(-1), w[:, 1::2].reshape(-1))
        a, b = a.reshape(groups, -1), b.reshape(groups, -1)
        limit = np.float32(2.0)
    cand = np.stack([a, b], axis=2).reshape(groups, -1)  # draw order: pair by pair
    ok = np.abs(cand) < limit
    first = np.argsort(~ok, axis=1, kind="stable")[:, :group]
    out = np.take_along_axis(cand, first, axis=1)
    for g in np.nonzero(ok.sum(axis=1) < group)[0]:
        out[g] = _truncated_group(gen, int(g) * stride, group, is_double)
    out = out.reshape(-1)[:n]
    return out.astype(np.float16) if dtype == np.float16 else out


def _truncated_group(gen: PhiloxRandom, offset: int, group: int, is_double: bool) -> np.ndarray:
    g = gen.copy()
    g.skip(offset)
    words = SingleSamples(g)
    res: list[Any] = []
    while True:
        if is_double:
            x = [np.array([words()], np.uint32) for _ in range(4)]
            pair = box_muller_double(*x)
            limit: Any = 2.0
        else:
            x0, x1 = np.array([words()], np.uint32), np.array([words()], np.uint32)
            pair = box_muller_float(x0, x1)
            limit = np.float32(2.0)
        for v in pair:
            if abs(v[0]) < limit:
                res.append(v[0])
                if len(res) == group:
                    return np.array(res)


# --- kernels -------------------------------------------------------------------------------
def _generator(ctx: Any) -> GuardedPhilox:
    seed, seed2 = ctx.attrs.get("seed", 0), ctx.attrs.get("seed2", 0)
    return ctx.resources.lookup_or_create(
        _CONTAINER, ctx.name, lambda: GuardedPhilox(seed, seed2)
    )


def _output_shape(ctx: Any, shape: Any) -> tuple[int, ...]:
    s = np.asarray(shape)
    if s.ndim != 1:
        raise errors.InvalidArgumentError(
            None, None, f"shape must be a vector of {{int32,int64}}, got shape {list(s.shape)}"
        )
    dims = tuple(int(d) for d in s.tolist())
    for d in dims:
        if d < 0:
            raise errors.InvalidArgumentError(None, None, f"Dimension {d} must be >= 0")
    return dims


def _random_kernel(op_type: str, host_memory: tuple[str, ...] = ()) -> Any:
    """Register `fn` on CPU, and on accelerators computed on the host and copied over:
    the numbers are the CPU kernel's (TensorFlow's GPU kernels give other numbers)."""

    def register(fn: Any) -> Any:
        kernel(op_type, devices=CPU, host_memory=host_memory)(fn)

        def on_accelerator(ctx: Any, *inputs: Any) -> Any:
            dev = ctx.device
            return dev.from_host(fn(ctx, *(dev.to_host(x) for x in inputs)))

        kernel(op_type, devices=GPU, host_memory=host_memory)(on_accelerator)
        return fn

    return register


def _fill(ctx: Any, shape: Any, draw: Any, dtype: Any) -> np.ndarray:
    dims = _output_shape(ctx, shape)
    n = int(np.prod(dims, dtype=np.int64))
    gen = _generator(ctx).reserve_outputs(n, _RESERVED_PER_OUTPUT)
    values = draw(gen, n, dtype) if n else np.zeros(0, dtype)
    return np.ascontiguousarray(values, dtype=dtype).reshape(dims)


@_random_kernel("RandomUniform", host_memory=("shape",))
def random_uniform(ctx: Any, shape: Any) -> np.ndarray:
    return _fill(ctx, shape, uniform, ctx.attrs["dtype"].as_numpy_dtype)


@_random_kernel("RandomStandardNormal", host_memory=("shape",))
def random_standard_normal(ctx: Any, shape: Any) -> np.ndarray:
    return _fill(ctx, shape, normal, ctx.attrs["dtype"].as_numpy_dtype)


@_random_kernel("TruncatedNormal", host_memory=("shape",))
def truncated_normal_kernel(ctx: Any, shape: Any) -> np.ndarray:
    return _fill(ctx, shape, truncated_normal, ctx.attrs["dtype"].as_numpy_dtype)


@_random_kernel("RandomUniformInt", host_memory=("shape", "minval", "maxval"))
def random_uniform_int(ctx: Any, shape: Any, minval: Any, maxval: Any) -> np.ndarray:
    for v, which in ((minval, "minval"), (maxval, "maxval")):
        if np.ndim(v) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"{which} must be 0-D, got shape {list(np.shape(v))}"
            )
    dtype = ctx.attrs["Tout"].as_numpy_dtype
    dims = _output_shape(ctx, shape)
    n = int(np.prod(dims, dtype=np.int64))
    if n == 0:
        return np.zeros(dims, dtype)
    lo, hi = int(minval), int(maxval)
    if not lo < hi:
        raise errors.InvalidArgumentError(None, None, f"Need minval < maxval, got {lo} >= {hi}")
    gen = _generator(ctx).reserve_outputs(n, _RESERVED_PER_OUTPUT)
    return uniform_int(gen, n, lo, hi, dtype).reshape(dims)


@_random_kernel("RandomShuffle")
def random_shuffle(ctx: Any, value: Any) -> Any:
    if np.ndim(value) == 0:
        return value  # TensorFlow hands a scalar back unchanged
    value = np.asarray(value)
    n = value.shape[0]
    if n <= 1:
        return value
    return value[shuffle_permutation(_generator(ctx).reserve_samples32(n - 1), n)]


def shuffle_permutation(gen: PhiloxRandom, n: int) -> np.ndarray:
    """TensorFlow's RandomShuffle order: Fisher-Yates from the front, swapping item i
    with item i + word_i % (n - i), the words taken one by one from `gen`."""
    words = gen.generate(-(-(n - 1) // 4)).reshape(-1)[: n - 1].astype(np.int64)
    targets = (np.arange(n - 1) + words % np.arange(n, 1, -1)).tolist()
    perm = list(range(n))
    for i, j in enumerate(targets):  # the swaps themselves are sequential
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


@_random_kernel("Multinomial", host_memory=("num_samples",))
def multinomial(ctx: Any, logits: Any, num_samples: Any) -> np.ndarray:
    logits = np.asarray(logits)
    if logits.ndim != 2:
        raise errors.InvalidArgumentError(
            None, None, f"logits should be a matrix, got shape {list(logits.shape)}"
        )
    if np.ndim(num_samples) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"num_samples should be a scalar, got shape {list(np.shape(num_samples))}"
        )
    k = int(num_samples)
    if k < 0:
        raise errors.InvalidArgumentError(None, None, f"num_samples should be non-negative, got {k}")
    batch, classes = logits.shape
    if classes <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"num_classes should be positive, got {classes}"
        )
    out_dtype = ctx.attrs["output_dtype"].as_numpy_dtype
    out = np.zeros((batch, k), out_dtype)
    if out.size == 0:
        return out
    # TensorFlow reserves two words (one double) per sample, rounded up to whole
    # outputs; each shard of rows starts (start_row * (k + 3) / 4) outputs in and draws
    # its rows' doubles in order from one word stream.
    gen = _generator(ctx).reserve_outputs(batch * ((k + 3) // 4 * 4) * 2, _RESERVED_PER_OUTPUT)
    cost = int(50 * (k * math.log(classes) / math.log(2) + classes))
    starts = _shard_starts(batch, cost, _intra_op_threads())
    u = np.empty((batch, k))
    for start, limit in zip(starts, starts[1:] + [batch]):
        shard = gen.copy()
        shard.skip(start * (k + 3) // 4)
        n_words = (limit - start) * k * 2
        words = shard.generate(-(-n_words // 4)).reshape(-1)[:n_words]
        u[start:limit] = uint64_to_double(words[0::2], words[1::2]).reshape(limit - start, k)
    x = logits.astype(np.float64)
    finite = np.isfinite(x)
    lowest = np.finfo(x.dtype).min if logits.dtype.kind == "f" else np.iinfo(logits.dtype).min
    with np.errstate(invalid="ignore", over="ignore"):
        row_max = np.where(finite, x, -np.inf).max(axis=1, keepdims=True)
        row_max = np.where(np.isfinite(row_max), row_max, float(lowest))
        p = np.where(finite, np.exp(x - row_max), 0.0)
    cdf = np.cumsum(p, axis=1)  # left to right, as the kernel's running total
    for b in range(batch):
        out[b] = np.searchsorted(cdf[b], u[b] * cdf[b, -1], side="right")
    return out


def _intra_op_threads() -> int:
    """TensorFlow's default intra-op pool size: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _shard_starts(total: int, cost_per_unit: int, threads: int) -> list[int]:
    """Where TensorFlow's `Shard` (through Eigen's `parallelFor` cost model) starts the
    blocks of `total` units of `cost_per_unit` cycles on a pool of `threads`."""
    if total <= 1 or threads <= 1:
        return [0]
    # Eigen's TensorCostModel: 100000 startup and per-thread cycles, 40000 per task.
    wanted = (total * cost_per_unit - 100000) / 100000 + 0.9
    if min(threads, max(1, int(wanted))) == 1:
        return [0]
    block = min(total, max(-(-total // (4 * threads)), int(40000 / max(cost_per_unit, 1))))
    max_block = min(total, 2 * block)
    count = -(-total // block)

    def efficiency(blocks: int) -> float:
        return blocks / (-(-blocks // threads) * threads)

    best = efficiency(count)
    prev = count
    while best < 1.0 and prev > 1:
        coarser = -(-total // (prev - 1))
        if coarser > max_block:
            break
        coarser_count = -(-total // coarser)
        prev = coarser_count
        eff = efficiency(coarser_count)
        if eff + 0.01 >= best:
            block, count = coarser, coarser_count
            best = max(best, eff)
    return list(range(0, total, block))

__all__ = [
    "logf", "sincosf", "uniform", "normal", "uniform_int", "truncated_normal",
    "box_muller_float", "box_muller_double", "shuffle_permutation",
]
