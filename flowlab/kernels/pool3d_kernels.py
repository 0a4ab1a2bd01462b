"""Kernels of 3-D pooling and its gradients, written once over `ctx.xp` (NDHWC only,
like TensorFlow's CPU kernels).

Each window op is a loop over the kd*kh*kw taps of strided views of the padded input:
a running maximum, a sum divided by the count of non-padding elements, or (gradients)
one strided addition per tap.  MaxPool3DGrad gives a window's gradient to every element
equal to its maximum and MaxPool3DGradGrad reads the first maximum only, as
TensorFlow's CPU kernels do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.pool_kernels import lowest
from flowlab.kernels.registry import kernel
from flowlab.kernels.window_geometry import compute_dtype
from flowlab.ops.conv_ops import output_size


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class _Windows:
    def __init__(self, attrs: dict[str, Any], shape: tuple[int, ...]) -> None:
        if attrs["data_format"] != "NDHWC":
            raise _invalid("Default MaxPooling3dOp only supports NDHWC on device type CPU")
        if len(shape) != 5:
            raise _invalid(f"tensor_in must be 5-dimensional: {list(shape)}")
        k, s = [int(v) for v in attrs["ksize"]], [int(v) for v in attrs["strides"]]
        if k[0] != 1 or k[4] != 1 or s[0] != 1 or s[4] != 1:
            raise _invalid("Pooling is not yet supported on the batch or depth dimension.")
        self.k, self.s, self.size = k[1:4], s[1:4], list(shape[1:4])
        self.out, self.pad = [], []
        for i in range(3):
            o, lo, hi = output_size(self.size[i], self.k[i], self.s[i], 1, attrs["padding"])
            self.out.append(o)
            self.pad.append((lo, hi))

    def padded(self, xp: Any, x: Any, value: Any = 0) -> Any:
        if not any(lo or hi for lo, hi in self.pad):
            return x
        return xp.pad(x, [(0, 0), *self.pad, (0, 0)], constant_values=value)

    def taps(self) -> list[tuple[int, int, int]]:
        return [(a, b, e) for a in range(self.k[0]) for b in range(self.k[1]) for e in range(self.k[2])]

    def view(self, xpad: Any, t: tuple[int, int, int]) -> Any:
        (od, oh, ow), (sd, sh, sw) = self.out, self.s
        a, b, e = t
        return xpad[:, a:a + (od - 1) * sd + 1:sd, b:b + (oh - 1) * sh + 1:sh, e:e + (ow - 1) * sw + 1:sw, :]

    def unpad(self, xpad: Any) -> Any:
        (pd, _), (ph, _), (pw, _) = self.pad
        d, h, w = self.size
        return xpad[:, pd:pd + d, ph:ph + h, pw:pw + w, :]

    def counts(self, xp: Any, dtype: Any) -> Any:
        per = []
        for i in range(3):
            start = np.arange(self.out[i]) * self.s[i] - self.pad[i][0]
            per.append(np.minimum(start + self.k[i], self.size[i]) - np.maximum(start, 0))
        c = per[0][:, None, None] * per[1][None, :, None] * per[2][None, None, :]
        return xp.asarray(c[None, :, :, :, None].astype(dtype))


@kernel("MaxPool3D")
def max_pool3d(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    win = _Windows(ctx.attrs, x.shape)
    xpad = win.padded(xp, x, lowest(x.dtype))
    taps = win.taps()
    y = xp.array(win.view(xpad, taps[0]))
    for t in taps[1:]:
        xp.maximum(y, win.view(xpad, t), out=y)
    return y


@kernel("AvgPool3D")
def avg_pool3d(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    win = _Windows(ctx.attrs, x.shape)
    ct = compute_dtype(x.dtype)
    xpad = win.padded(xp, x.astype(ct, copy=False))
    taps = win.taps()
    total = xp.array(win.view(xpad, taps[0]))
    for t in taps[1:]:
        total += win.view(xpad, t)
    return (total / win.counts(xp, ct)).astype(x.dtype, copy=False)


def _grad_shape(win: _Windows, dy: Any, n: int, c: int) -> None:
    want = (n, *win.out, c)
    if tuple(dy.shape) != want:
        raise _invalid(f"Expected grad shape to be {list(want)}, but got {list(dy.shape)}")


@kernel("MaxPool3DGrad")
def max_pool3d_grad(ctx: Any, x: Any, y: Any, dy: Any) -> Any:
    xp = ctx.xp
    win = _Windows(ctx.attrs, x.shape)
    _grad_shape(win, dy, x.shape[0], x.shape[4])
    ct = compute_dtype(dy.dtype)
    xpad = win.padded(xp, x, lowest(x.dtype))
    out = xp.zeros(xpad.shape, dtype=ct)
    dyc = dy.astype(ct, copy=False)
    zero = xp.zeros((), dtype=ct)
    for t in win.taps():
        dst = win.view(out, t)
        dst += xp.where(win.view(xpad, t) == y, dyc, zero)
    return xp.ascontiguousarray(win.unpad(out)).astype(dy.dtype, copy=False)


@kernel("MaxPool3DGradGrad")
def max_pool3d_grad_grad(ctx: Any, x: Any, y: Any, g: Any) -> Any:
    xp = ctx.xp
    win = _Windows(ctx.attrs, x.shape)
    if g.shape != x.shape:
        raise _invalid(f"grad must have the shape of orig_input: {list(g.shape)} vs {list(x.shape)}")
    xpad = win.padded(xp, x, lowest(x.dtype))
    gpad = win.padded(xp, g)
    # TensorFlow's CPU kernel reads grad at the first maximum of each window (scan order).
    out = xp.zeros(y.shape, dtype=g.dtype)
    found = xp.zeros(y.shape, dtype=bool)
    for t in win.taps():
        take = (win.view(xpad, t) == y) & ~found
        xp.copyto(out, win.view(gpad, t), where=take)
        found |= take
    return out


@kernel("AvgPool3DGrad", host_memory=("orig_input_shape",))
def avg_pool3d_grad(ctx: Any, sizes: Any, dy: Any) -> Any:
    xp = ctx.xp
    shape = tuple(int(d) for d in np.asarray(sizes.get() if hasattr(sizes, "get") else sizes).reshape(-1))
    win = _Windows(ctx.attrs, shape)
    _grad_shape(win, dy, shape[0], shape[4])
    ct = compute_dtype(dy.dtype)
    share = dy.astype(ct, copy=False) / win.counts(xp, ct)
    (pd, pdd), (ph, phh), (pw, pww) = win.pad
    out = xp.zeros((shape[0], shape[1] + pd + pdd, shape[2] + ph + phh, shape[3] + pw + pww, shape[4]), dtype=ct)
    for t in win.taps():
        dst = win.view(out, t)
        dst += share
    return xp.ascontiguousarray(win.unpad(out)).astype(dy.dtype, copy=False)
