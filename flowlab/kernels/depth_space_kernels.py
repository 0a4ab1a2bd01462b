"""Kernels of SpaceToDepth and DepthToSpace (flowlab.ops.depth_space_ops), NHWC only,
as TensorFlow's CPU kernels: a reshape, a transpose of the block axes, a reshape."""

from __future__ import annotations

from typing import Any

from flowlab.kernels.array_kernels import _bad
from flowlab.kernels.registry import kernel


def _nhwc(ctx: Any, op: str) -> None:
    fmt = ctx.attrs["data_format"]
    if fmt != "NHWC":
        raise _bad(f"Only NHWC data_format supported on CPU. Got {fmt}")


@kernel("SpaceToDepth")
def space_to_depth(ctx: Any, input: Any) -> Any:  # noqa: A002
    _nhwc(ctx, "SpaceToDepth")
    b = ctx.attrs["block_size"]
    n, h, w, c = input.shape
    if h % b or w % b:
        raise _bad(f"Image width {w} and height {h} should be divisible by block_size: {b}")
    x = input.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, h // b, w // b, b * b * c)


@kernel("DepthToSpace")
def depth_to_space(ctx: Any, input: Any) -> Any:  # noqa: A002
    _nhwc(ctx, "DepthToSpace")
    b = ctx.attrs["block_size"]
    n, h, w, c = input.shape
    if c % (b * b):
        raise _bad(f"Input depth dimension {c} should be divisible by: {b * b}")
    x = input.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, h * b, w * b, c // (b * b))
