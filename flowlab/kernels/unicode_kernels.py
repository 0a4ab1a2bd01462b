"""Kernels of UnicodeTranscode and UnicodeEncode (flowlab.ops.unicode_ops), CPU only.

Decoding uses Python's codecs with an error handler that substitutes the op's
replacement character once per undecodable sequence (the granularity of ICU, which
TensorFlow uses) or drops it; "strict" fails with TensorFlow's message.
"""

from __future__ import annotations

import codecs
import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import CPU, kernel

_PY_ENCODING = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
_local = threading.local()


def _substitute(e: UnicodeError) -> tuple[str, int]:
    return _local.replacement, e.end  # type: ignore[attr-defined]


codecs.register_error("flowlab_unicode_replace", _substitute)


def _decode(s: bytes, encoding: str, mode: str, replacement: str) -> str:
    if mode == "strict":
        try:
            return s.decode(encoding)
        except UnicodeDecodeError:
            raise errors.InvalidArgumentError(None, None, "Invalid formatting on input string") from None
    if mode == "ignore":
        return s.decode(encoding, "ignore")
    _local.replacement = replacement
    return s.decode(encoding, "flowlab_unicode_replace")


def _map(fn: Any, x: Any) -> Any:
    a = np.asarray(x, dtype=object)
    out = np.empty(a.shape, dtype=object)
    for idx, v in np.ndenumerate(a):
        out[idx] = fn(v)
    return out[()] if out.ndim == 0 else out


@kernel("UnicodeTranscode", devices=CPU)
def unicode_transcode(ctx: Any, x: Any) -> Any:
    a = ctx.attrs
    try:
        in_enc = codecs.lookup(a["input_encoding"]).name
    except LookupError:
        raise errors.InvalidArgumentError(
            None, None, f"Could not create converter for input encoding: {a['input_encoding']}") from None
    out_enc = _PY_ENCODING[a["output_encoding"]]
    replacement = chr(a["replacement_char"])

    def one(s: bytes) -> bytes:
        text = _decode(s, in_enc, a["errors"], replacement)
        if a["replace_control_characters"]:
            text = "".join(replacement if ord(c) < 0x20 else c for c in text)
        return text.encode(out_enc, "surrogatepass")

    return _map(one, x)


def _valid(c: int) -> bool:
    return 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF


@kernel("UnicodeEncode", devices=CPU)
def unicode_encode(ctx: Any, values: Any, splits: Any) -> Any:
    a = ctx.attrs
    enc, mode, replacement = _PY_ENCODING[a["output_encoding"]], a["errors"], a["replacement_char"]
    vals = np.asarray(values).reshape(-1).tolist()
    bounds = np.asarray(splits).reshape(-1).tolist()
    out = np.empty(max(len(bounds) - 1, 0), dtype=object)
    for i in range(len(out)):
        chars = []
        for c in vals[bounds[i]:bounds[i + 1]]:
            if _valid(c):
                chars.append(chr(c))
            elif mode == "strict":
                raise errors.InvalidArgumentError(
                    None, None, "Code point is out of range for Unicode, or is a surrogate.")
            elif mode == "replace":
                chars.append(chr(replacement))
        out[i] = "".join(chars).encode(enc)
    return out
