"""Kernels of the stateless random ops (flowlab.ops.stateless_random_ops): TensorFlow's
GenerateKey, and Philox at the given key and counter feeding the stateful kernels'
distributions."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import random_kernels
from flowlab.kernels.philox import PhiloxRandom, block
from flowlab.kernels.registry import CPU, kernel

_M32 = (1 << 32) - 1


@kernel("StatelessRandomGetKeyCounter", devices=CPU)
def get_key_counter(ctx: Any, seed: Any) -> Any:
    s = np.asarray(seed)
    if s.shape != (2,):
        raise errors.InvalidArgumentError(None, None, f"seed must have shape [2], not {list(s.shape)}")
    s0, s1 = (int(v) & ((1 << 64) - 1) for v in s.astype(np.int64))
    counter = s0 | (s1 << 64)
    mix = [int(v) for v in block((0x3EC8F720, 0x02461E29), counter, 1)[0]]
    key = mix[0] | (mix[1] << 32)
    out_counter = [0, mix[2] | (mix[3] << 32)]
    return [np.array([key], np.uint64), np.array(out_counter, np.uint64)]


def _generator(key: Any, counter: Any) -> PhiloxRandom:
    k = int(np.asarray(key).reshape(-1)[0])
    c = [int(v) for v in np.asarray(counter).reshape(-1)]
    g = PhiloxRandom.__new__(PhiloxRandom)
    g.key = (k & _M32, k >> 32)
    g.counter = c[0] | (c[1] << 64)
    return g


def _dims(shape: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in np.asarray(shape).reshape(-1))


def _check_alg(alg: Any) -> None:
    a = int(np.asarray(alg))
    if a not in (1, 3):
        raise errors.InvalidArgumentError(None, None, f"Unsupported algorithm id: {a}")


def _float_kernel(dist: Any) -> Any:
    def run(ctx: Any, shape: Any, key: Any, counter: Any, alg: Any) -> Any:
        _check_alg(alg)
        dims = _dims(shape)
        dt = np.dtype(ctx.attrs["dtype"].as_numpy_dtype)
        n = int(np.prod(dims)) if dims else 1
        return np.asarray(dist(_generator(key, counter), n, dt), dtype=dt).reshape(dims)
    return run


kernel("StatelessRandomUniformV2", devices=CPU)(_float_kernel(random_kernels.uniform))
kernel("StatelessRandomNormalV2", devices=CPU)(_float_kernel(random_kernels.normal))
kernel("StatelessTruncatedNormalV2", devices=CPU)(_float_kernel(random_kernels.truncated_normal))


@kernel("StatelessRandomUniformIntV2", devices=CPU)
def uniform_int(ctx: Any, shape: Any, key: Any, counter: Any, alg: Any, minval: Any, maxval: Any) -> Any:
    _check_alg(alg)
    lo, hi = int(np.asarray(minval)), int(np.asarray(maxval))
    if not lo < hi:
        raise errors.InvalidArgumentError(None, None, f"Need minval < maxval: {lo} >= {hi}")
    dims = _dims(shape)
    dt = np.dtype(ctx.attrs["dtype"].as_numpy_dtype)
    n = int(np.prod(dims)) if dims else 1
    return random_kernels.uniform_int(_generator(key, counter), n, lo, hi, dt).astype(dt).reshape(dims)


@kernel("StatelessRandomUniformFullIntV2", devices=CPU)
def uniform_full_int(ctx: Any, shape: Any, key: Any, counter: Any, alg: Any) -> Any:
    """TensorFlow's UniformFullIntDistribution: one uint32 word per 32-bit value, two
    (low word first) per 64-bit value, reinterpreted in the output dtype."""
    _check_alg(alg)
    dims = _dims(shape)
    dt = np.dtype(ctx.attrs["dtype"].as_numpy_dtype)
    n = int(np.prod(dims)) if dims else 1
    per = 2 if dt.itemsize == 8 else 1
    words = _generator(key, counter).generate((n * per + 3) // 4).reshape(-1)[: n * per]
    if per == 2:
        lo, hi = words[0::2].astype(np.uint64), words[1::2].astype(np.uint64)
        bits = lo | (hi << np.uint64(32))
    else:
        bits = words.astype(np.uint32)
    return bits.view(dt).reshape(dims)
