"""Kernels of FFT/IFFT/FFT2D/IFFT2D/FFT3D/IFFT3D (flowlab.ops.fft_ops): the array
module's FFT over the innermost axes, in the input's complex precision."""

from __future__ import annotations

from typing import Any

from flowlab.kernels.registry import kernel


def _transform(rank: int, inverse: bool) -> Any:
    def run(ctx: Any, input: Any) -> Any:  # noqa: A002
        xp = ctx.xp
        axes = tuple(range(-rank, 0))
        fn = xp.fft.ifftn if inverse else xp.fft.fftn
        if input.size == 0:
            return xp.zeros_like(input)
        return fn(input, axes=axes).astype(input.dtype)
    return run


for _name, _rank, _inv in (("FFT", 1, False), ("IFFT", 1, True), ("FFT2D", 2, False),
                           ("IFFT2D", 2, True), ("FFT3D", 3, False), ("IFFT3D", 3, True)):
    kernel(_name)(_transform(_rank, _inv))
