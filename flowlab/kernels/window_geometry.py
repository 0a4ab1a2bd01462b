"""Window geometry shared by the convolution and pooling kernels (2-d, depthwise).

One node's kernel size, strides, dilations, padding and output size, computed from its
attrs as TensorFlow does (SAME, VALID, EXPLICIT), and the strided views the kernels
are written with: the padded NHWC input seen as windows [n, oh, ow, kh, kw, c] (no
copy), one tap of every window as [n, oh, ow, c], and col2im (a sum of taps back into
the input).  Also the edges every such kernel shares: NCHW in and out of NHWC, float16
computed in float32, and the shape checks with TensorFlow's messages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.ops.conv_ops import explicit_pads, output_size, spatial


def invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class WindowGeometry:
    """Window geometry of one node: kernel, strides, dilations, pads and output size."""

    def __init__(self, attrs: dict[str, Any], in_hw: tuple[int, int], k_hw: tuple[int, int],
                 dilated: bool = True) -> None:
        fmt = attrs["data_format"]
        self.nchw = fmt == "NCHW"
        strides = list(attrs["strides"])
        c = 1 if self.nchw else 3
        if strides[0] != 1 or strides[c] != 1:
            raise invalid("Current implementation does not yet support strides in the batch "
                           "and depth dimensions.")
        self.s = spatial(strides, fmt)
        if min(self.s) < 1:
            raise invalid(f"Sliding window strides must be positive, got {strides}")
        self.d = (1, 1)
        if dilated:
            dil = list(attrs["dilations"])
            if dil[0] != 1 or dil[c] != 1:
                raise invalid("Current implementation does not yet support dilations in the "
                               "batch and depth dimensions.")
            self.d = spatial(dil, fmt)
            if min(self.d) < 1:
                raise invalid(f"Dilation rates must be positive, got {dil}")
        padding = attrs["padding"]
        pads = ((0, 0), (0, 0))
        if padding == "EXPLICIT":
            pads = explicit_pads(list(attrs["explicit_paddings"]), fmt)
            if min(min(p) for p in pads) < 0:
                raise invalid("All elements of explicit_paddings must be nonnegative")
        self.k = k_hw
        self.in_hw = in_hw
        try:
            oh, pt, pb = output_size(in_hw[0], k_hw[0], self.s[0], self.d[0], padding, pads[0])
            ow, pl, pr = output_size(in_hw[1], k_hw[1], self.s[1], self.d[1], padding, pads[1])
        except ValueError as e:
            raise invalid(f"Computed output size would be negative: {e}") from None
        self.out = (oh, ow)
        self.pad = ((pt, pb), (pl, pr))

    def padded(self, xp: Any, x: Any, value: Any = 0) -> Any:
        (pt, pb), (pl, pr) = self.pad
        if pt == pb == pl == pr == 0:
            return x
        return xp.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=value)

    def windows(self, xp: Any, xp_padded: Any) -> Any:
        """A strided view [n, oh, ow, kh, kw, c] of the padded NHWC input (no copy)."""
        n, _, _, c = xp_padded.shape
        sn, sh, sw, sc = xp_padded.strides
        shape = (n, self.out[0], self.out[1], self.k[0], self.k[1], c)
        strides = (sn, sh * self.s[0], sw * self.s[1], sh * self.d[0], sw * self.d[1], sc)
        if xp is np:
            return np.lib.stride_tricks.as_strided(xp_padded, shape, strides, writeable=False)
        return xp.lib.stride_tricks.as_strided(xp_padded, shape, strides)  # CuPy: no writeable

    def tap(self, x_padded: Any, i: int, j: int) -> Any:
        """The [n, oh, ow, c] strided view of the padded input under window tap (i, j)."""
        r, q = i * self.d[0], j * self.d[1]
        (oh, ow), (sh, sw) = self.out, self.s
        return x_padded[:, r:r + (oh - 1) * sh + 1:sh, q:q + (ow - 1) * sw + 1:sw, :]

    def taps(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(self.k[0]) for j in range(self.k[1])]

    def scatter(self, xp: Any, tap_values: Any, in_shape: tuple[int, ...], dtype: Any) -> Any:
        """col2im: sum `tap_values(i, j)` ([n, oh, ow, c] each) back into an NHWC input.

        One strided addition per tap on a padded buffer; no [n, oh, ow, kh, kw, c]
        intermediate exists, so each addition reads a contiguous operand.
        """
        n, h, w, c = in_shape
        (pt, pb), (pl, pr) = self.pad
        out = xp.zeros((n, h + pt + pb, w + pl + pr, c), dtype=dtype)
        for i, j in self.taps():
            dst = self.tap(out, i, j)
            dst += tap_values(i, j)
        return out[:, pt:pt + h, pl:pl + w, :]

    def col2im(self, xp: Any, cols: Any, in_shape: tuple[int, ...]) -> Any:
        """Sum window-shaped values [n, oh, ow, kh, kw, c] back into an NHWC input."""
        return self.scatter(xp, lambda i, j: cols[:, :, :, i, j, :], in_shape, cols.dtype)

    def valid(self, xp: Any, i: int, j: int) -> Any:
        """[1, oh, ow, 1] mask: which windows' tap (i, j) lies inside the unpadded input,
        or None when every tap of every window does (no padding)."""
        (pt, pb), (pl, pr) = self.pad
        if pt == pb == pl == pr == 0:
            return None
        h = self.in_hw[0]
        w = self.in_hw[1]
        rows = np.arange(self.out[0]) * self.s[0] + i * self.d[0] - pt
        cols = np.arange(self.out[1]) * self.s[1] + j * self.d[1] - pl
        m = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
        return xp.asarray(m[None, :, :, None])


def to_nhwc(x: Any, nchw: bool) -> Any:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: Any, nchw: bool) -> Any:
    return x.transpose(0, 3, 1, 2) if nchw else x


def compute_dtype(dtype: Any) -> Any:
    return np.float32 if dtype == np.float16 else dtype


def finish(xp: Any, y: Any, dtype: Any, nchw: bool) -> Any:
    return xp.ascontiguousarray(from_nhwc(y, nchw)).astype(dtype, copy=False)


def check4(what: str, x: Any) -> None:
    if x.ndim != 4:
        raise invalid(f"{what} must be 4-dimensional: {list(x.shape)}")


def sizes4(v: Any, what: str) -> tuple[int, ...]:
    s = tuple(int(d) for d in np.asarray(v.get() if hasattr(v, "get") else v).reshape(-1))  # cupy: to host
    if len(s) != 4:
        raise invalid(f"{what} must be a 4-vector, got {len(s)} values")
    return s


def check_out_backprop(who: str, dy: Any, want: tuple[int, ...],
                       note: str = " (computed from the input and filter)") -> None:
    """A backprop kernel's out_backprop must have the forward output's shape `want`."""
    if tuple(dy.shape) != want:
        raise invalid(f"{who}: out_backprop has shape {list(dy.shape)}, expected {list(want)}{note}")
