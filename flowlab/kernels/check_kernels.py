"""Kernels of Assert, CheckNumerics and Print, and TensorFlow's tensor summary format.

`summarize_value` reproduces `Tensor::SummarizeValue(max_entries)`: the first
`max_entries` values in row-major order, nested in brackets by dimension, "..." where
values were left out (-1: all of them); floats print as C's %g with the shortest
round-tripping precision, bools as 1/0, strings C-escaped.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel


def _fmt_float(v: Any) -> str:
    v = float(v) if not isinstance(v, np.floating) else v
    if np.isnan(v):
        return "nan" if not np.signbit(v) else "-nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, np.float64) or type(v) is float:
        digits, kind = (15, 17), float
    else:
        digits, kind = (6, 9), np.float32  # float16 / bfloat16 print as floats
    s = f"{float(v):.{digits[0]}g}"
    if kind(s) != kind(v):
        s = f"{float(v):.{digits[1]}g}"
    return s


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}


def _c_escape(b: bytes) -> str:
    # absl::CEscape: C escapes, other bytes outside printable ASCII as octal.
    return "".join(_ESCAPES.get(c) or (chr(c) if 0x20 <= c < 0x7F else f"\\{c:03o}") for c in b)


def _fmt(v: Any) -> str:
    if isinstance(v, (bytes, np.bytes_)):
        return _c_escape(bytes(v))
    if isinstance(v, str):
        return _c_escape(v.encode())
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (np.floating, float)):
        return _fmt_float(v)
    if isinstance(v, (np.complexfloating, complex)):
        return f"({_fmt_float(v.real)},{_fmt_float(v.imag)})"
    return str(int(v)) if isinstance(v, (np.integer, int)) else str(v)


def summarize_value(value: Any, max_entries: int = 3) -> str:
    """TensorFlow's `Tensor::SummarizeValue` (print_v2=false) of one value."""
    a = np.asarray(value)
    flat = a.reshape(-1)
    n = flat.size
    limit = n if max_entries < 0 else min(max_entries, n)
    shape = a.shape
    out: list[str] = []
    if not shape:
        out.extend(_fmt(flat[i]) for i in range(limit))
        return " ".join(out) + ("..." if n > limit else "")
    idx = [0]

    def one_dim(d: int) -> None:
        if idx[0] >= limit:
            return
        if d == len(shape) - 1:
            for i in range(shape[d]):
                if idx[0] >= limit:
                    if d != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(_fmt(flat[idx[0]]))
                idx[0] += 1
            return
        for _ in range(shape[d]):
            opened = idx[0] < limit
            if opened:
                out.append("[")
            one_dim(d + 1)
            if idx[0] < limit or opened:
                out.append("]")

    one_dim(0)
    return "".join(out) + ("..." if n > limit else "")


@kernel("Assert", devices=CPU)  # host-only, as TensorFlow's
def assert_(ctx: Any, condition: Any, *data: Any) -> None:
    if np.ndim(condition) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"In[0] should be a scalar: {list(np.shape(condition))}"
        )
    if bool(condition):
        return None
    summarize = ctx.attrs.get("summarize", 3)
    msg = "assertion failed: " + " ".join(f"[{summarize_value(d, summarize)}]" for d in data)
    raise errors.InvalidArgumentError(None, None, msg)


# What a learner does next, on a line after TensorFlow's own words (which tests match).
_NAN_ADVICE = (
    "\nTo find the first op that made it, run the step with flowlab.debug.Stepper(sess, "
    "fetches, feed_dict, stop_on_nan_or_inf=True).continue_(). Common causes: a learning rate "
    "too high, log(0) or x/0 (a loss written as log(softmax(...)) instead of "
    "tf.nn.sparse_softmax_cross_entropy_with_logits), or NaN in the input data."
)


@kernel("CheckNumerics")
def check_numerics(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    has_nan = bool(xp.isnan(x).any())
    has_inf = bool(xp.isinf(x).any())
    if has_nan or has_inf:
        what = "Inf and NaN" if has_nan and has_inf else ("NaN" if has_nan else "Inf")
        raise errors.InvalidArgumentError(
            None, None, f"{ctx.attrs['message']} : Tensor had {what} values" + _NAN_ADVICE)
    return x


# Print's first_n counter: TensorFlow keeps it in the stateful kernel, which a session
# shares across run calls; here it lives in the device's resource manager (per session).
_PRINT_LOCK = threading.Lock()


class _PrintCount:
    def __init__(self) -> None:
        self.n = 0


@kernel("Print", devices=CPU)
def print_(ctx: Any, x: Any, *data: Any) -> Any:
    first_n = ctx.attrs.get("first_n", -1)
    if first_n >= 0:
        counter = ctx.resources.lookup_or_create("_print_first_n", ctx.name, _PrintCount)
        with _PRINT_LOCK:
            if counter.n >= first_n:
                return x
            counter.n += 1
    summarize = ctx.attrs.get("summarize", 3)
    msg = ctx.attrs.get("message", "") + "".join(f"[{summarize_value(d, summarize)}]" for d in data)
    print(msg, file=sys.stderr, flush=True)
    return x
