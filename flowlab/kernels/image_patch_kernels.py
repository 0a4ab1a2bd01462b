"""Kernel of ExtractImagePatches (flowlab.ops.image_patches): pad (SAME: as a
convolution would, the extra row/column after), then one strided slice per window
cell, stacked cell-major with the channels innermost."""

from __future__ import annotations

from typing import Any

from flowlab.kernels.registry import kernel
from flowlab.ops.image_patches import out_size


@kernel("ExtractImagePatches")
def extract_image_patches(ctx: Any, images: Any) -> Any:
    xp = ctx.xp
    k, s, r = ctx.attrs["ksizes"], ctx.attrs["strides"], ctx.attrs["rates"]
    pad = ctx.attrs["padding"]
    b, rows, cols, ch = images.shape
    out_r = out_size(rows, k[1], s[1], r[1], pad)
    out_c = out_size(cols, k[2], s[2], r[2], pad)
    out_r, out_c = max(out_r, 0), max(out_c, 0)
    pads = []
    for size, kk, st, rt, o in ((rows, k[1], s[1], r[1], out_r), (cols, k[2], s[2], r[2], out_c)):
        eff = kk + (kk - 1) * (rt - 1)
        total = max((o - 1) * st + eff - size, 0) if pad == "SAME" else 0
        pads.append((total // 2, total - total // 2))
    x = xp.pad(images, [(0, 0), pads[0], pads[1], (0, 0)]) if pad == "SAME" else images
    cells = []
    for i in range(k[1]):
        for j in range(k[2]):
            r0, c0 = i * r[1], j * r[2]
            cells.append(x[:, r0:r0 + (out_r - 1) * s[1] + 1:s[1], c0:c0 + (out_c - 1) * s[2] + 1:s[2], :]
                         if out_r and out_c else xp.zeros((b, out_r, out_c, ch), images.dtype))
    out = xp.stack(cells, axis=3)
    return xp.ascontiguousarray(out.reshape(b, out_r, out_c, k[1] * k[2] * ch))
