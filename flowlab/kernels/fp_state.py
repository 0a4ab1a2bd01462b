"""NumPy's floating-point error state, as kernels and steps read and set it.

Every step ignores floating-point errors (flowlab.runtime.task.fp_errors: TensorFlow's
kernels return inf/nan silently).  A kernel that also runs outside a step (constant
folding, a direct call) keeps its own `np.errstate`, but that costs ~2.4 us a use
(more with cold caches): `ignoring()` is a no-op context when the state already
ignores everything, as it does inside every step.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

try:  # NumPy 2.x keeps the error state in this context variable.
    from numpy._core._ufunc_config import _extobj_contextvar as VAR  # type: ignore[attr-defined]

    with np.errstate(all="ignore"):
        IGNORE = VAR.get()
except Exception:  # noqa: BLE001 - any other NumPy: use the public API
    VAR = None
    IGNORE = None

_ALREADY = contextlib.nullcontext()


def ignoring() -> Any:
    """A context in which NumPy ignores floating-point errors: `np.errstate(all=
    "ignore")`, or nothing when that is the state already (inside a step)."""
    if VAR is not None and VAR.get() is IGNORE:
        return _ALREADY
    return np.errstate(all="ignore")
