"""Kernel of ReverseSequence: one gather along seq_dim with per-batch reversed indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel


@kernel("ReverseSequence", host_memory=("seq_lengths",))
def reverse_sequence(ctx: Any, x: Any, lens: Any) -> Any:
    xp = ctx.xp
    seq_dim, batch_dim = ctx.attrs["seq_dim"], ctx.attrs.get("batch_dim", 0)
    x = xp.asarray(x)
    if seq_dim < 0:
        raise errors.InvalidArgumentError(None, None, f"Invalid seq_dim {seq_dim}")
    lens_h = np.asarray(lens.get() if hasattr(lens, "get") else lens).astype(np.int64).reshape(-1)
    if x.ndim <= max(seq_dim, batch_dim):
        raise errors.InvalidArgumentError(
            None, None, f"seq_dim/batch_dim must be < input rank: {max(seq_dim, batch_dim)} vs. {x.ndim}")
    if lens_h.shape[0] != x.shape[batch_dim]:
        raise errors.InvalidArgumentError(
            None, None,
            f"Length of seq_lengths != input.dims({batch_dim}), ({lens_h.shape[0]} vs. {x.shape[batch_dim]})")
    for b, n in enumerate(lens_h):
        if n < 0:
            raise errors.InvalidArgumentError(None, None, f"seq_lens({b}) < 0")
        if n > x.shape[seq_dim]:
            raise errors.InvalidArgumentError(None, None, f"seq_lens({b}) > input.dims({seq_dim})")
    t = x.shape[seq_dim]
    pos = np.arange(t)[None, :]
    n = lens_h[:, None]
    idx = np.where(pos < n, n - 1 - pos, pos)  # [batch, t]: source position per output position
    # Broadcast idx to x's rank with batch and seq dims in place, then gather along seq_dim.
    shape = [1] * x.ndim
    shape[batch_dim], shape[seq_dim] = x.shape[batch_dim], t
    order = (0, 1) if batch_dim < seq_dim else (1, 0)
    full = np.transpose(idx, order).reshape(shape) if x.ndim else idx
    full = np.broadcast_to(full, x.shape)
    return xp.take_along_axis(x, xp.asarray(full), axis=seq_dim)
