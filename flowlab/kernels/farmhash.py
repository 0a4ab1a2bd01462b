"""FarmHash Fingerprint64 (farmhashna::Hash64), the hash behind TensorFlow's
`StringToHashBucketFast` and `tf.fingerprint(method="farmhash64")`.

Bit-exact with Google's farmhash.cc on every length (0-16, 17-32, 33-64 bytes and
the 64-byte-block loop above that): unsigned 64-bit arithmetic written as Python
integers masked to 64 bits, little-endian loads.
"""

from __future__ import annotations

M = (1 << 64) - 1
k0 = 0xc3a5c85c97cb3127
k1 = 0xb492b66fbe98f273
k2 = 0x9ae16a3b2f90404f


def _f64(s, i):
    return int.from_bytes(s[i:i + 8], "little")


def _f32(s, i):
    return int.from_bytes(s[i:i + 4], "little")


def _rot(v, r):
    return ((v >> r) | (v << (64 - r))) & M if r else v


def _smix(v):
    return v ^ (v >> 47)


def _h16(u, v, mul):
    a = ((u ^ v) * mul) & M
    a ^= a >> 47
    b = ((v ^ a) * mul) & M
    b ^= b >> 47
    return (b * mul) & M


def _h0to16(s, n):
    if n >= 8:
        mul = (k2 + n * 2) & M
        a = (_f64(s, 0) + k2) & M
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & M
        d = ((_rot(a, 25) + b) * mul) & M
        return _h16(c, d, mul)
    if n >= 4:
        mul = (k2 + n * 2) & M
        a = _f32(s, 0)
        return _h16((n + (a << 3)) & M, _f32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = (a + (b << 8)) & 0xFFFFFFFF
        z = (n + (c << 2)) & 0xFFFFFFFF
        return (_smix(((y * k2) ^ (z * k0)) & M) * k2) & M
    return k2


def _h17to32(s, n):
    mul = (k2 + n * 2) & M
    a = (_f64(s, 0) * k1) & M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & M
    d = (_f64(s, n - 16) * k2) & M
    return _h16((_rot((a + b) & M, 43) + _rot(c, 30) + d) & M, (a + _rot((b + k2) & M, 18) + c) & M, mul)


def _h33to64(s, n):
    mul = (k2 + n * 2) & M
    a = (_f64(s, 0) * k2) & M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & M
    d = (_f64(s, n - 16) * k2) & M
    y = (_rot((a + b) & M, 43) + _rot(c, 30) + d) & M
    z = _h16(y, (a + _rot((b + k2) & M, 18) + c) & M, mul)
    e = (_f64(s, 16) * mul) & M
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & M
    h = ((z + _f64(s, n - 24)) * mul) & M
    return _h16((_rot((e + f) & M, 43) + _rot(g, 30) + h) & M, (e + _rot((f + a) & M, 18) + g) & M, mul)


def _weak(w, x, y, z, a, b):
    a = (a + w) & M
    b = _rot((b + a + z) & M, 21)
    c = a
    a = (a + x) & M
    a = (a + y) & M
    b = (b + _rot(a, 44)) & M
    return (a + z) & M, (b + c) & M


def _weak_s(s, i, a, b):
    return _weak(_f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24), a, b)


def fingerprint64(s: bytes) -> int:
    """The 64-bit FarmHash fingerprint of `s` (an unsigned integer)."""
    n = len(s)
    if n <= 16:
        return _h0to16(s, n)
    if n <= 32:
        return _h17to32(s, n)
    if n <= 64:
        return _h33to64(s, n)
    seed = 81
    x = seed
    y = (seed * k1 + 113) & M
    z = (_smix((y * k2 + 113) & M) * k2) & M
    v = (0, 0)
    w = (0, 0)
    x = (x * k2 + _f64(s, 0)) & M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _f64(s, i + 8)) & M, 37) * k1) & M
        y = (_rot((y + v[1] + _f64(s, i + 48)) & M, 42) * k1) & M
        x ^= w[1]
        y = (y + v[0] + _f64(s, i + 40)) & M
        z = (_rot((z + w[0]) & M, 33) * k1) & M
        v = _weak_s(s, i, (v[1] * k1) & M, (x + w[0]) & M)
        w = _weak_s(s, i + 32, (z + w[1]) & M, (y + _f64(s, i + 16)) & M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = (k1 + ((z & 0xFF) << 1)) & M
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & M, w[1])
    v = ((v[0] + w[0]) & M, v[1])
    w = ((w[0] + v[0]) & M, w[1])
    x = (_rot((x + y + v[0] + _f64(s, i + 8)) & M, 37) * mul) & M
    y = (_rot((y + v[1] + _f64(s, i + 48)) & M, 42) * mul) & M
    x ^= (w[1] * 9) & M
    y = (y + v[0] * 9 + _f64(s, i + 40)) & M
    z = (_rot((z + w[0]) & M, 33) * mul) & M
    v = _weak_s(s, i, (v[1] * mul) & M, (x + w[0]) & M)
    w = _weak_s(s, i + 32, (z + w[1]) & M, (y + _f64(s, i + 16)) & M)
    z, x = x, z
    return _h16((_h16(v[0], w[0], mul) + _smix(y) * k0 + z) & M, (_h16(v[1], w[1], mul) + x) & M, mul)
