"""How the host allocator treats the kernels' temporaries (CPU device, glibc only).

Kernels return fresh arrays and never reuse a buffer across steps, so a training step
allocates and frees the same few megabyte-sized temporaries again and again.  glibc's
defaults serve them badly: blocks above the (dynamic) mmap threshold are fresh
mappings, and freed memory at the top of the heap is returned to the kernel once it
passes the trim threshold, so every step page-faults its temporaries back in.  On this
project's 2-core machines that made the Adam update of a 784x512 variable 20 ms
instead of 1.4 ms (docs/notes/training-performance.md).  `tune()` raises both
thresholds once per process, as TensorFlow's own allocator keeps its pools: freed
temporaries below 64 MiB stay in the process and are reused by the next step.

It leaves the allocator alone when the user set MALLOC_MMAP_THRESHOLD_ /
MALLOC_TRIM_THRESHOLD_ (or FLOWLAB_MALLOC_TUNE=0), and on other C libraries.
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_BYTES = 64 << 20
_TRIM_BYTES = 256 << 20
_done = False


def tune() -> bool:
    """Raise glibc's mmap and trim thresholds once; True if this call changed them."""
    global _done
    if _done:
        return False
    _done = True
    env = os.environ
    if (not sys.platform.startswith("linux") or env.get("FLOWLAB_MALLOC_TUNE") == "0"
            or "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc
    ok = mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES) or mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    return bool(ok and mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES))
