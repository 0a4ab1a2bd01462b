"""Kernels of EncodeBase64, DecodeBase64, StringToHashBucket and
StringToHashBucketStrong (flowlab.ops.string_codec_ops), with the hash functions
TensorFlow uses: Hash64 (tensorflow/core/lib/hash/hash.cc, MurmurHash2-64A with seed
0xDECAFCAFFE) and SipHash-2-4 (highwayhash's), both over little-endian 64-bit words."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

from flowlab.kernels.array_kernels import _bad
from flowlab.kernels.registry import CPU, kernel

_M64 = (1 << 64) - 1
_WEB_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TensorFlow's Hash64 (legacy MurmurHash2-64A)."""
    m, r = 0xC6A4A7935BD1E995, 47
    n = len(data)
    h = (seed ^ (n * m)) & _M64
    end = n - n % 8
    for i in range(0, end, 8):
        k = int.from_bytes(data[i:i + 8], "little")
        k = (k * m) & _M64
        k ^= k >> r
        k = (k * m) & _M64
        h ^= k
        h = (h * m) & _M64
    rest = data[end:]
    if rest:
        for j in range(len(rest) - 1, -1, -1):
            h ^= rest[j] << (8 * j)
        h = (h * m) & _M64
    h ^= h >> r
    h = (h * m) & _M64
    h ^= h >> r
    return h


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _M64


def siphash24(key: tuple[int, int], data: bytes) -> int:
    """SipHash-2-4 of `data` under the 128-bit key (k0, k1)."""
    k0, k1 = key[0] & _M64, key[1] & _M64
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _M64
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _M64
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _M64
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _M64
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(data[end:], "little")
    v[3] ^= last
    rounds(2)
    v[0] ^= last
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def _map(fn: Any, x: Any, otype: Any) -> Any:
    a = np.asarray(x, dtype=object)
    out = np.empty(a.shape, dtype=otype)
    for idx, s in np.ndenumerate(a):
        out[idx] = fn(s if isinstance(s, bytes) else str(s).encode())
    return out


@kernel("EncodeBase64", devices=CPU)
def encode_base64(ctx: Any, input: Any) -> Any:  # noqa: A002
    pad = ctx.attrs["pad"]

    def enc(s: bytes) -> bytes:
        out = base64.urlsafe_b64encode(s)
        return out if pad else out.rstrip(b"=")
    return _map(enc, input, object)


@kernel("DecodeBase64", devices=CPU)
def decode_base64(ctx: Any, input: Any) -> Any:  # noqa: A002
    def dec(s: bytes) -> bytes:
        body = s.rstrip(b"=") if len(s) % 4 == 0 else s
        if body.strip(_WEB_SAFE):
            raise _bad("Invalid character found in base64.")
        if len(body) % 4 == 1:
            raise _bad(f"Invalid base64: {s.decode(errors='replace')!r}")
        try:
            return base64.b64decode(body + b"=" * (-len(body) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            raise _bad("Invalid character found in base64.") from None
    return _map(dec, input, object)


@kernel("StringToHashBucket", devices=CPU)
def string_to_hash_bucket(ctx: Any, string_tensor: Any) -> Any:
    n = ctx.attrs["num_buckets"]
    return _map(lambda s: hash64(s) % n, string_tensor, np.int64)


@kernel("StringToHashBucketStrong", devices=CPU)
def string_to_hash_bucket_strong(ctx: Any, input: Any) -> Any:  # noqa: A002
    n, key = ctx.attrs["num_buckets"], ctx.attrs["key"]
    return _map(lambda s: siphash24((key[0], key[1]), s) % n, input, np.int64)
