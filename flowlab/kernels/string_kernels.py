"""Kernels of the string ops (flowlab.ops.string_ops), CPU only, over object arrays
of `bytes` (as TensorFlow's string kernels are host-only).

Formats and parsers follow TensorFlow's C++ kernels: `AsString` builds a printf
format ("%" + fill flag + width + "." precision + f/e/g) and formats floats as
doubles; `StringToNumber` accepts surrounding whitespace, and for floats "inf",
"nan" and hexadecimal, refusing anything else with "StringToNumberOp could not
correctly convert string: ..."; `ReduceJoin` joins with the first-listed axis
varying fastest.  Regular expressions run on Python's `re` in ASCII mode (RE2's
`\\d`, `\\w`, `\\s` are ASCII), on text decoded with `surrogateescape` so that any
bytes round-trip.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.check_kernels import _fmt  # TensorFlow's PrintOneElement
from flowlab.kernels.farmhash import fingerprint64
from flowlab.kernels.registry import CPU, kernel


def _obj(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=object)


def _out(arr: np.ndarray) -> Any:
    return arr[()] if arr.ndim == 0 else arr


def _map(fn: Any, x: Any, otype: Any = object) -> Any:
    a = _obj(x)
    out = np.empty(a.shape, dtype=otype)
    for idx, v in np.ndenumerate(a):
        out[idx] = fn(v)
    return _out(out)


def _bad(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


# --- length and substrings ----------------------------------------------------------
def _char_starts(s: bytes) -> list[int]:
    """Byte offsets of the UTF-8 characters of `s` (continuation bytes excluded)."""
    return [i for i, b in enumerate(s) if (b & 0xC0) != 0x80]


@kernel("StringLength", devices=CPU)
def string_length(ctx: Any, x: Any) -> Any:
    if ctx.attrs["unit"] == "UTF8_CHAR":
        return _map(lambda s: len(_char_starts(s)), x, np.int32)
    return _map(len, x, np.int32)


def _substr_one(s: bytes, pos: int, length: int, utf8: bool, index: int) -> bytes:
    starts = _char_starts(s) if utf8 else None
    size = len(starts) if starts is not None else len(s)
    if not -size <= pos <= size:
        raise _bad(f"pos {pos} out of range for string b'{s.decode('utf-8', 'replace')}' at index {index}")
    if pos < 0:
        pos += size
    end = size if length < 0 else min(size, pos + length)
    if starts is None:
        return s[pos:end]
    bounds = [*starts, len(s)]
    return s[bounds[pos]:bounds[end]]


@kernel("Substr", devices=CPU)
def substr(ctx: Any, x: Any, pos: Any, length: Any) -> Any:
    a, p, n = np.broadcast_arrays(_obj(x), np.asarray(pos), np.asarray(length))
    utf8 = ctx.attrs["unit"] == "UTF8_CHAR"
    out = np.empty(a.shape, dtype=object)
    for i, idx in enumerate(np.ndindex(a.shape)):
        out[idx] = _substr_one(a[idx], int(p[idx]), int(n[idx]), utf8, i)
    return _out(out)


# --- joins ------------------------------------------------------------------------------
@kernel("ReduceJoin", devices=CPU)
def reduce_join(ctx: Any, x: Any, axes: Any) -> Any:
    a = _obj(x)
    rank = a.ndim
    listed: list[int] = []
    for ax in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= ax < rank:
            raise errors.OutOfRangeError(
                None, None, f"Invalid reduction dimension {ax} for input with {rank} dimension(s)")
        ax %= rank if rank else 1
        if ax in listed:
            raise _bad(f"Duplicate reduction dimension {ax}")
        listed.append(ax)
    kept = [i for i in range(rank) if i not in listed]
    # The first listed axis varies fastest: it goes last in row-major order.
    t = np.transpose(a, kept + listed[::-1]) if rank else a
    flat = t.reshape([a.shape[i] for i in kept] + [-1]) if rank else t.reshape(1, 1)[0]
    sep = ctx.attrs["separator"]
    sep = sep.encode() if isinstance(sep, str) else sep
    out = np.empty(flat.shape[:-1], dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = sep.join(flat[idx])
    if ctx.attrs["keep_dims"]:
        out = out.reshape([1 if i in listed else a.shape[i] for i in range(rank)])
    return _out(out)


# --- regular expressions -------------------------------------------------------------------
def _text(b: Any) -> str:
    return b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else str(b)


def _compile(pattern: Any) -> re.Pattern[str]:
    p = _text(pattern)
    try:
        return re.compile(p, re.ASCII)
    except re.error as e:
        raise _bad(f"Invalid pattern: {p}, error: {e.msg}") from None


def _rewrite_fn(rewrite: Any) -> Any:
    """RE2's rewrite: `\\0`-`\\9` insert groups, `\\\\` a backslash."""
    text = _text(rewrite)
    parts: list[str | int] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and (text[i + 1].isdigit() or text[i + 1] == "\\"):
            nxt = text[i + 1]
            parts.append(nxt if nxt == "\\" else int(nxt))
            i += 2
            continue
        if c == "\\":
            raise _bad(f"Invalid rewrite pattern: {text}")
        parts.append(c)
        i += 1

    def fn(m: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)

    return fn


def _replace(x: Any, pattern: Any, rewrite: Any, replace_global: bool) -> Any:
    rx, fn = _compile(pattern), _rewrite_fn(rewrite)
    count = 0 if replace_global else 1
    return _map(lambda s: rx.sub(fn, _text(s), count=count).encode("utf-8", "surrogateescape"), x)


@kernel("RegexReplace", devices=CPU)
def regex_replace(ctx: Any, x: Any, pattern: Any, rewrite: Any) -> Any:
    return _replace(x, pattern, rewrite, ctx.attrs["replace_global"])


@kernel("StaticRegexReplace", devices=CPU)
def static_regex_replace(ctx: Any, x: Any) -> Any:
    return _replace(x, ctx.attrs["pattern"], ctx.attrs["rewrite"], ctx.attrs["replace_global"])


def _full_match(x: Any, pattern: Any) -> Any:
    rx = _compile(pattern)
    return _map(lambda s: rx.fullmatch(_text(s)) is not None, x, np.bool_)


@kernel("RegexFullMatch", devices=CPU)
def regex_full_match(ctx: Any, x: Any, pattern: Any) -> Any:
    return _full_match(x, pattern)


@kernel("StaticRegexFullMatch", devices=CPU)
def static_regex_full_match(ctx: Any, x: Any) -> Any:
    return _full_match(x, ctx.attrs["pattern"])


# --- case and whitespace ----------------------------------------------------------------------
@kernel("StringStrip", devices=CPU)
def string_strip(ctx: Any, x: Any) -> Any:
    return _map(bytes.strip, x)


def _case(x: Any, encoding: str, lower: bool) -> Any:
    if encoding == "":
        return _map(bytes.lower if lower else bytes.upper, x)
    if encoding.lower().replace("-", "") != "utf8":
        raise _bad(f"Unsupported encoding: {encoding}")
    return _map(lambda s: (s.decode("utf-8").lower() if lower else s.decode("utf-8").upper()).encode("utf-8"), x)


@kernel("StringLower", devices=CPU)
def string_lower(ctx: Any, x: Any) -> Any:
    return _case(x, ctx.attrs["encoding"], True)


@kernel("StringUpper", devices=CPU)
def string_upper(ctx: Any, x: Any) -> Any:
    return _case(x, ctx.attrs["encoding"], False)


# --- numbers <-> strings ------------------------------------------------------------------------
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf(inity)?|nan)", re.I)
_HEX = re.compile(r"[+-]?0[xX][0-9a-fA-F]+(\.[0-9a-fA-F]*)?([pP][+-]?\d+)?")


def _parse_number(s: bytes, dt: np.dtype) -> Any:
    text = s.decode("utf-8", "replace").strip()
    fail = _bad(f"StringToNumberOp could not correctly convert string: {s.decode('utf-8', 'replace')}")
    if dt.kind == "f":
        if _FLOAT.fullmatch(text):
            return dt.type(float(text))
        if _HEX.fullmatch(text):
            return dt.type(float.fromhex(text))
        raise fail
    if not _INT.fullmatch(text):
        raise fail
    v = int(text)
    info = np.iinfo(dt)
    if not info.min <= v <= info.max:
        raise fail
    return v


@kernel("StringToNumber", devices=CPU)
def string_to_number(ctx: Any, x: Any) -> Any:
    dt = np.dtype(ctx.attrs["out_type"].as_numpy_dtype)
    return _map(lambda s: _parse_number(s, dt), x, dt)


def _format_spec(ctx: Any, kind: str, dtype_name: str) -> str:
    precision, width = ctx.attrs["precision"], ctx.attrs["width"]
    scientific, shortest, fill = ctx.attrs["scientific"], ctx.attrs["shortest"], ctx.attrs["fill"]
    is_float = kind in "fc"
    if scientific and shortest:
        raise _bad("Cannot select both scientific and shortest notation")
    if len(fill) > 1:
        raise _bad("Fill string must be one or fewer characters")
    if not is_float:
        for flag, what in ((scientific, "scientific"), (shortest, "shortest"), (precision > -1, "precision")):
            if flag:
                raise _bad(f"{what} not supported for datatype {dtype_name}")
    spec = "%"
    if fill:
        if fill not in " +-0#":
            raise _bad(f'Fill argument not supported: "{fill}"')
        spec += fill
    if width > -1:
        spec += str(width)
    if precision > -1:
        spec += f".{precision}"
    if is_float:
        return spec + ("g" if shortest else "e" if scientific else "f")
    return spec + "d"


@kernel("AsString", devices=CPU)
def as_string(ctx: Any, x: Any) -> Any:
    a = np.asarray(x)
    dt = ctx.attrs["T"]
    if dt.name == "string":
        return _out(_obj(x).copy())
    if a.dtype.kind == "b":
        return _map(lambda v: b"true" if v else b"false", a)
    spec = _format_spec(ctx, a.dtype.kind, dt.name)
    if a.dtype.kind == "c":
        return _map(lambda v: f"({spec % float(v.real)},{spec % float(v.imag)})".encode(), a)
    if a.dtype.kind == "f":
        return _map(lambda v: (spec % float(v)).encode(), a)
    return _map(lambda v: (spec % int(v)).encode(), a)


@kernel("StringToHashBucketFast", devices=CPU)
def string_to_hash_bucket_fast(ctx: Any, x: Any) -> Any:
    n = ctx.attrs["num_buckets"]
    return _map(lambda s: fingerprint64(s) % n, x, np.int64)


# --- formatting tensors into a template ---------------------------------------------------
def _summarize_v2(value: Any, summarize: int) -> str:
    """TensorFlow's `Tensor::SummarizeValue(summarize, print_v2=true)`: nested brackets,
    `summarize` entries at each end of every dimension, strings quoted."""
    a = np.asarray(value, dtype=object if isinstance(value, bytes) else None)
    n = a.size
    limit = n if summarize < 0 else min(summarize, n)

    def element(v: Any) -> str:
        return f'"{_fmt(v)}"' if isinstance(v, (bytes, str)) else _fmt(v)

    if a.ndim == 0:
        return " ".join(element(v) for v in a.reshape(-1)[:limit]) + ("..." if n > limit else "")
    rank = a.ndim

    def spacing(d: int) -> str:
        return " " if d == rank - 1 else "\n" * (rank - d - 1) + " " * (d + 1)

    def one_dim(d: int, sub: np.ndarray) -> str:
        if d == rank:
            return element(sub[()] if isinstance(sub, np.ndarray) else sub)
        count, sep = sub.shape[0], spacing(d)
        out = sep.join(one_dim(d + 1, sub[i]) for i in range(min(limit, count)))
        if count > 2 * limit:  # TensorFlow writes the spacing before "..." even when it comes first
            out += sep + "..."
        for i in range(max(limit, count - limit), count):
            out += sep + one_dim(d + 1, sub[i])
        return "[" + out + "]"

    return one_dim(0, a)


@kernel("StringFormat", devices=CPU)
def string_format(ctx: Any, *inputs: Any) -> Any:
    template, placeholder = ctx.attrs["template"], ctx.attrs["placeholder"]
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(inputs):
        raise _bad(f"num placeholders in template and num inputs must match: {len(pieces) - 1} vs. {len(inputs)}")
    out = pieces[0]
    for x, rest in zip(inputs, pieces[1:]):
        out += _summarize_v2(x, ctx.attrs["summarize"]) + rest
    return out.encode("utf-8")


# --- splitting -----------------------------------------------------------------------------------------
def _sparse(rows: list[list[bytes]]) -> list[Any]:
    pairs = [(i, j) for i, r in enumerate(rows) for j in range(len(r))]
    indices = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    values = np.empty(len(pairs), dtype=object)
    values[:] = [t for r in rows for t in r]
    shape = np.array([len(rows), max((len(r) for r in rows), default=0)], dtype=np.int64)
    return [indices, values, shape]


@kernel("StringSplit", devices=CPU)
def string_split(ctx: Any, x: Any, delimiter: Any) -> Any:
    a = _obj(x)
    if a.ndim != 1:
        raise _bad(f"input must be a vector, got shape: {list(a.shape)}")
    delim = delimiter if isinstance(delimiter, bytes) else _obj(delimiter)[()]
    skip = ctx.attrs["skip_empty"]
    rows = []
    for s in a:
        if not delim or not s:  # an empty string has no pieces, even empty ones
            pieces = [s[i:i + 1] for i in range(len(s))]
        else:
            pieces = re.split(b"[" + re.escape(delim) + b"]", s)
        rows.append([p for p in pieces if p or not skip])
    return _sparse(rows)


@kernel("StringSplitV2", devices=CPU)
def string_split_v2(ctx: Any, x: Any, sep: Any) -> Any:
    a = _obj(x)
    if a.ndim != 1:
        raise _bad(f"input must be a vector, got shape: {list(a.shape)}")
    sep = sep if isinstance(sep, bytes) else _obj(sep)[()]
    maxsplit = ctx.attrs["maxsplit"]
    rows = [s.split(sep or None, maxsplit) for s in a]
    return _sparse(rows)
