"""Memory-bound kernels on the intra-op threads, by blocks of their first dimension.

An activation, a bias addition or a pooling pass over a convolution's output is a
few passes over megabytes: on one thread it is a fixed serial part of a step whose
GEMMs the intra-op threads share (flowlab.kernels.intra_op.run_blocks).  NumPy
releases the GIL inside its element loops, so blocks of the batch (images, rows) run
on the threads side by side.  cnn_train's step with 2 intra-op threads spent ~17 ms
of 77 in such kernels, each on one thread.

Every block writes its own rows of the output: the values are those of one call,
except a reduction (BiasAddGrad), whose per-block partial sums are added in block
order whatever the thread timing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from flowlab.kernels import intra_op
from flowlab.kernels.fp_state import ignoring

# Below this many elements a kernel runs whole: one pass over 1 MiB of float32 takes
# ~0.1 ms, against ~10-30 us to hand a block to another thread.
MIN_ELEMENTS = 1 << 18


def bounds(x: np.ndarray) -> list[int]:
    """Bounds along axis 0 of the blocks the intra-op threads share for a pass over
    `x`: [0, len(x)] (one block) when sharing would not pay."""
    threads = intra_op.intra_op_threads()
    n = x.shape[0] if x.ndim else 0
    if threads < 2 or n < 2 or x.size < MIN_ELEMENTS or type(x) is not np.ndarray:
        return [0, n]
    step = -(-n // min(threads, n))
    return list(range(0, n, step)) + [n]


def each(b: list[int], fn: Callable[[int, int], None]) -> None:
    """`fn(lo, hi)` for every block, on the intra-op threads, floating-point errors
    ignored there as in a step (NumPy's error state is per thread)."""
    def block(i: int) -> None:
        with ignoring():
            fn(b[i], b[i + 1])

    intra_op.run_blocks(len(b) - 1, block)
