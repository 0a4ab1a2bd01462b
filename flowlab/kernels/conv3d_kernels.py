"""Kernels of Conv3D and its backprops (V2), written once over `ctx.xp`.

The same scheme as Conv2D's (flowlab.kernels.conv_kernels): im2col through a strided
view of the padded NDHWC input, [n, od, oh, ow, kd, kh, kw, c], copied once into a
matrix for one GEMM with the filter; the filter backprop is the transposed GEMM and the
input backprop one batched GEMM per tap followed by col2im (one strided addition per
tap).  Like TensorFlow's CPU kernels: NDHWC only, unit dilations, unit batch and depth
strides.  float16 computes in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel
from flowlab.kernels.window_geometry import check_out_backprop, compute_dtype
from flowlab.ops.conv_ops import output_size


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class _Geometry3:
    def __init__(self, attrs: dict[str, Any], x_shape: tuple[int, ...], f_shape: tuple[int, ...]) -> None:
        if attrs["data_format"] != "NDHWC":
            raise _invalid("CPU implementation of Conv3D currently only supports the NHWC tensor format.")
        if any(int(d) != 1 for d in attrs["dilations"]):
            raise _invalid("CPU implementation of Conv3D currently only supports dilated rates of 1.")
        strides = [int(s) for s in attrs["strides"]]
        if strides[0] != 1 or strides[4] != 1:
            raise _invalid("Current implementation does not yet support strides in the batch and depth "
                           "dimensions.")
        if len(x_shape) != 5 or len(f_shape) != 5:
            raise _invalid(f"input and filter must be 5-dimensional: {list(x_shape)} {list(f_shape)}")
        if x_shape[4] != f_shape[3]:
            raise _invalid(f"Input depth must be evenly divisible by filter depth: {x_shape[4]} vs {f_shape[3]}")
        self.s = strides[1:4]
        self.k = list(f_shape[:3])
        self.out, self.pad = [], []
        for i in range(3):
            try:
                o, lo, hi = output_size(x_shape[1 + i], self.k[i], self.s[i], 1, attrs["padding"])
            except ValueError as e:
                raise _invalid(f"Computed output size would be negative: {e}") from None
            self.out.append(o)
            self.pad.append((lo, hi))

    def padded(self, xp: Any, x: Any) -> Any:
        if not any(lo or hi for lo, hi in self.pad):
            return x
        return xp.pad(x, [(0, 0), *self.pad, (0, 0)])

    def cols(self, xp: Any, x: Any) -> Any:
        """[n*od*oh*ow, kd*kh*kw*c] im2col matrix of the NDHWC input."""
        xpad = xp.ascontiguousarray(self.padded(xp, x))
        n, c = x.shape[0], x.shape[4]
        sn, sd, sh, sw, sc = xpad.strides
        shape = (n, *self.out, *self.k, c)
        strides = (sn, sd * self.s[0], sh * self.s[1], sw * self.s[2], sd, sh, sw, sc)
        if xp is np:
            win = np.lib.stride_tricks.as_strided(xpad, shape, strides, writeable=False)
        else:
            win = xp.lib.stride_tricks.as_strided(xpad, shape, strides)
        return win.reshape(n * int(np.prod(self.out)), int(np.prod(self.k)) * c)

    def taps(self) -> list[tuple[int, int, int]]:
        return [(a, b, e) for a in range(self.k[0]) for b in range(self.k[1]) for e in range(self.k[2])]


@kernel("Conv3D", expensive=True)
def conv3d(ctx: Any, x: Any, f: Any) -> Any:
    xp = ctx.xp
    geo = _Geometry3(ctx.attrs, x.shape, f.shape)
    ct = compute_dtype(x.dtype)
    o = f.shape[4]
    y = xp.matmul(geo.cols(xp, x.astype(ct, copy=False)), f.astype(ct, copy=False).reshape(-1, o))
    return xp.ascontiguousarray(y.reshape(x.shape[0], *geo.out, o)).astype(x.dtype, copy=False)


@kernel("Conv3DBackpropInputV2", expensive=True, host_memory=("input_sizes",))
def conv3d_backprop_input_v2(ctx: Any, sizes: Any, f: Any, dy: Any) -> Any:
    xp = ctx.xp
    shape = _sizes5(sizes, "input_sizes")
    geo = _Geometry3(ctx.attrs, shape, f.shape)
    ct = compute_dtype(dy.dtype)
    n, c, o = shape[0], shape[4], f.shape[4]
    check_out_backprop("Conv3DBackprop", dy, (n, *geo.out, o), note="")
    kk = len(geo.taps())
    # One GEMM per tap, batched: [kk, m, c] contributions, added back tap by tap.
    taps = xp.matmul(dy.astype(ct, copy=False).reshape(-1, o),
                     f.astype(ct, copy=False).reshape(kk, c, o).transpose(0, 2, 1))
    (pd, pdd), (ph, phh), (pw, pww) = geo.pad
    out = xp.zeros((n, shape[1] + pd + pdd, shape[2] + ph + phh, shape[3] + pw + pww, c), dtype=ct)
    (od, oh, ow), (sd, sh, sw) = geo.out, geo.s
    for t, (a, b, e) in enumerate(geo.taps()):
        out[:, a:a + (od - 1) * sd + 1:sd, b:b + (oh - 1) * sh + 1:sh, e:e + (ow - 1) * sw + 1:sw, :] += \
            taps[t].reshape(n, od, oh, ow, c)
    dx = out[:, pd:pd + shape[1], ph:ph + shape[2], pw:pw + shape[3], :]
    return xp.ascontiguousarray(dx).astype(dy.dtype, copy=False)


@kernel("Conv3DBackpropFilterV2", expensive=True, host_memory=("filter_sizes",))
def conv3d_backprop_filter_v2(ctx: Any, x: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    f_shape = _sizes5(sizes, "filter_sizes")
    geo = _Geometry3(ctx.attrs, x.shape, f_shape)
    ct = compute_dtype(x.dtype)
    o = f_shape[4]
    check_out_backprop("Conv3DBackprop", dy, (x.shape[0], *geo.out, o), note="")
    df = xp.matmul(geo.cols(xp, x.astype(ct, copy=False)).T, dy.astype(ct, copy=False).reshape(-1, o))
    return xp.ascontiguousarray(df.reshape(f_shape)).astype(x.dtype, copy=False)


def _sizes5(v: Any, what: str) -> tuple[int, ...]:
    s = tuple(int(d) for d in np.asarray(v.get() if hasattr(v, "get") else v).reshape(-1))  # cupy: to host
    if len(s) != 5:
        raise _invalid(f"{what} must be a 5-vector, got {len(s)} values")
    return s
