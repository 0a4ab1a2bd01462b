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
same distribution and the same determinism.
"""

from __future__ import annotations

import ctypes
import ctypes.util
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
# How far (in float32 ulps) from a rounding midpoint glibc's result can round the other
# way than the correctly rounded one.  Measured over every input BoxMullerFloat can pass
# (2**23 values each, glibc 2.36 on x86-64 with FMA): 0.286 for logf, 0.061 for
# sinf/cosf; taken with a margin.  With these bands `logf` and `sincosf` below equal
# glibc's on all 2**23 inputs, so float32 and float16 normals match TensorFlow bit for
# bit whatever the seed (glibc's float functions have been the same since 2.28).
_LOGF_BAND = 0.34
_SINCOSF_BAND = 0.09


def _near_midpoint(y64: np.ndarray, band: float) -> np.ndarray:
    """Where float64 values lie within `band` float32 ulps of a float32 rounding midpoint."""
    f = y64.astype(np.float32)
    f64 = f.astype(np.float64)
    other = np.where(f64 > y64, np.nextafter(f, np.float32(-np.inf)),
                     np.nextafter(f, np.float32(np.inf))).astype(np.float64)
    ulp = np.abs(other - f64)
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = np.abs(y64 - f64) / ulp  # 0 at f, 0.5 at the midpoint
    return dist >= 0.5 - band


def _libm_float(fn: Any, x: np.ndarray, y64: np.ndarray, band: float) -> np.ndarray:
    """`fn(x)` (a glibc float function) from its float64 value `y64`."""
    y = y64.astype(np.float32)
    if _LIBM is None or y.size == 0:
        return y
    idx = np.nonzero(_near_midpoint(y64, band))[0]
    if idx.size:
        y[idx] = np.fromiter(map(fn, x[idx].tolist()), np.float32, idx.size)
    return y


def logf(x: np.ndarray) -> np.ndarray:
    """glibc's `logf` on a float32 array of positive values."""
    return _libm_float(_LIBM and _LIBM.logf, x, np.log(x.astype(np.float64)), _LOGF_BAND)


def sincosf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """glibc's `sincosf` on a float32 array."""
    x64 = x.astype(np.float64)
    s = _libm_float(_LIBM and _LIBM.sinf, x, np.sin(x64), _SINCOSF_BAND)
    c = _libm_float(_LIBM and _LIBM.cosf, x, np.cos(x64), _SINCOSF_BAND)
    return s, c


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


def box_muller_double(x0: Any, x1: Any, x2: Any, x3: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal doubles per four words (BoxMullerDouble)."""
    u1 = np.maximum(uint64_to_double(x0, x1), 1.0e-7)
    v1 = _TWO_PI * uint64_to_double(x2, x3)
    u2 = np.sqrt(-2.0 * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


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
    # Two words (one double) per sample, rounded up to whole outputs (TensorFlow's
    # reservation), then the rows in order from one word stream: what TensorFlow's CPU
    # kernel does when it runs the batch as one shard (all but large batches).
    gen = _generator(ctx).reserve_outputs(batch * ((k + 3) // 4 * 4) * 2, _RESERVED_PER_OUTPUT)
    words = np.asarray(gen.generate(-(-batch * k * 2 // 4))).reshape(-1)[: batch * k * 2]
    u = uint64_to_double(words[0::2], words[1::2]).reshape(batch, k)
    x = logits.astype(np.float64)
    finite = np.isfinite(x)
    with np.errstate(invalid="ignore", over="ignore"):
        row_max = np.where(finite, x, -np.inf).max(axis=1, keepdims=True)
        row_max = np.where(np.isfinite(row_max), row_max, np.finfo(logits.dtype).min)
        p = np.where(finite, np.exp(x - row_max), 0.0)
    cdf = np.cumsum(p, axis=1)  # left to right, as the kernel's running total
    for b in range(batch):
        out[b] = np.searchsorted(cdf[b], u[b] * cdf[b, -1], side="right")
    return out


__all__ = [
    "logf", "sincosf", "uniform", "normal", "uniform_int", "truncated_normal",
    "box_muller_float", "box_muller_double", "shuffle_permutation",
]
