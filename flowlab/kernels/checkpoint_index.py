"""Validation of a checkpoint index before anything is read or allocated for it.

The index (`<prefix>.index`, JSON; its schema is in flowlab.kernels.checkpoint_format)
comes from disk and may be damaged or crafted.  `parse_index` checks every field's
type and range before the reader uses any of it, so that a bad file gives
`DataLossError` naming the file and the entry, never a raw Python error, a crash or
a large allocation:

- dtypes come from a closed list (`DTYPES`): NumPy's dtype parser is never given a
  string from the file (``"O,O"`` would turn file bytes into object pointers);
- shapes are lists of non-negative ints (no bools, no floats) of rank <= 254 whose
  element count fits in 2**62 bytes; slices lie inside their shape;
- a numeric piece's ``length`` equals its element count times the item size, a
  string piece's is at least 8 bytes per element; the pieces of one data file never
  overlap, so the bytes all pieces claim never exceed the files' sizes (the reader
  checks each piece against its file's size before it allocates: see
  `CheckpointReader`);
- checksums are one unsigned 32-bit int per CRC block of the piece;
- ``data_files`` (the data file of each shard, written since the atomic save of
  flowlab.kernels.checkpoint_commit) are names of this checkpoint's own data files,
  in the index's directory: a crafted index cannot make the reader open another file.

State: none; the functions are pure (bytes in, a validated document or an error out).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from typing import Any

import numpy as np

from flowlab import errors

FORMAT = "flowlab-checkpoint"
VERSIONS = (1, 2)  # 2: "sum64" block checksums (1: "crc32", still read)
MAX_SHARDS = 99999  # five digits in the data file names
MAX_RANK = 254  # TensorFlow's limit

# The closed list of dtype names an index may hold, and their NumPy dtypes
# (little-endian, as stored).  "string" is TensorFlow's string (bytes) dtype.
DTYPES: dict[str, np.dtype | None] = {
    "bool": np.dtype("?"),
    "int8": np.dtype("<i1"), "int16": np.dtype("<i2"), "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint8": np.dtype("<u1"), "uint16": np.dtype("<u2"), "uint32": np.dtype("<u4"),
    "uint64": np.dtype("<u8"),
    "float16": np.dtype("<f2"), "float32": np.dtype("<f4"), "float64": np.dtype("<f8"),
    "complex64": np.dtype("<c8"), "complex128": np.dtype("<c16"),
    "string": None,
}

_TOP_KEYS = {"format", "version", "num_shards", "tensors", "data_files"}
_ENTRY_KEYS = {"dtype", "shape", "slices"}
_PIECE_KEYS = {"slice", "shard", "offset", "length", "sum64", "crc32"}
_TMP = r"\.tmp-[0-9a-f]{12}"


class NotARegularFile(OSError):
    """A path that is a directory, a FIFO, a device: not a file to read."""


class FileTooLarge(OSError):
    """A file larger than the reader accepts."""


def read_regular(path: str, limit: int) -> bytes:
    """All bytes of the regular file `path`.  Never blocks (a FIFO is refused, not
    waited on), never allocates more than the file holds; raises FileNotFoundError,
    NotARegularFile or FileTooLarge (more than `limit` bytes)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        if st.st_size > limit:
            raise FileTooLarge(f"{path} has {st.st_size} bytes (at most {limit} expected)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()  # to the end; read(n) would allocate n bytes up front
    finally:
        os.close(fd)


def data_basename(base: str, shard: int, num_shards: int) -> str:
    return f"{base}.data-{shard:05d}-of-{num_shards:05d}"


def data_file_pattern(base: str, shard: int, num_shards: int) -> re.Pattern[str]:
    """The names shard `shard`'s data file may have: the canonical one, or it with a
    temporary suffix (a save that replaced a checkpoint in place, between its two
    switches: flowlab.kernels.checkpoint_commit)."""
    return re.compile(re.escape(data_basename(base, shard, num_shards)) + f"(?:{_TMP})?")


def num_blocks(length: int, block: int) -> int:
    return max(1, -(-length // block))


class _Bad(Exception):
    """A validation failure: where (the entry) and what."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)


def _int(x: Any, where: str, lo: int = 0, hi: int = (1 << 63) - 1) -> int:
    if type(x) is not int:
        raise _Bad(where, f"expected an integer, got {type(x).__name__} {_short(x)}")
    if not lo <= x <= hi:
        raise _Bad(where, f"{x} is out of range [{lo}, {hi}]")
    return x


def _short(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def _dict(x: Any, where: str, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if type(x) is not dict:
        raise _Bad(where, f"expected an object, got {type(x).__name__}")
    unknown = set(x) - allowed
    if unknown:
        raise _Bad(where, f"unknown field {sorted(unknown)[0]!r}")
    missing = required - set(x)
    if missing:
        raise _Bad(where, f"missing field {sorted(missing)[0]!r}")
    return x


def _shape(x: Any, where: str) -> tuple[int, ...]:
    if type(x) is not list or len(x) > MAX_RANK:
        raise _Bad(where, f"expected a list of at most {MAX_RANK} dimensions, got {_short(x)}")
    dims = tuple(_int(d, f"{where}[{i}]") for i, d in enumerate(x))
    if math.prod(max(d, 1) for d in dims) > (1 << 62) // 16:
        raise _Bad(where, f"shape {list(dims)} has too many elements")
    return dims


def _validate_entry(name: str, e: Any, num_shards: int, version: int,
                    block: int) -> dict[str, Any]:
    where = f"tensor '{name}'"
    e = _dict(e, where, _ENTRY_KEYS, _ENTRY_KEYS)
    dtn = e["dtype"]
    if type(dtn) is not str or dtn not in DTYPES:
        raise _Bad(f"{where} dtype", f"{_short(dtn)} is not one of {', '.join(DTYPES)}")
    np_dt = DTYPES[dtn]
    full = _shape(e["shape"], f"{where} shape")
    pieces = e["slices"]
    if type(pieces) is not list or not pieces:
        raise _Bad(f"{where} slices", "expected a non-empty list")
    out = []
    for k, p in enumerate(pieces):
        pw = f"{where} slice {k}"
        p = _dict(p, pw, _PIECE_KEYS, {"slice", "shard", "offset", "length"})
        sl = p["slice"]
        if sl is None:
            dims = full
        else:
            if type(sl) is not list or len(sl) != len(full):
                raise _Bad(f"{pw} 'slice'", f"expected null or {len(full)} [start, length] pairs")
            dims_l = []
            for d, (pair, size) in enumerate(zip(sl, full)):
                if type(pair) is not list or len(pair) != 2:
                    raise _Bad(f"{pw} 'slice'[{d}]", f"expected [start, length], got {_short(pair)}")
                s = _int(pair[0], f"{pw} 'slice'[{d}] start", 0, size)
                n = _int(pair[1], f"{pw} 'slice'[{d}] length", 0, size - s)
                dims_l.append(n)
            dims = tuple(dims_l)
        _int(p["shard"], f"{pw} 'shard'", 0, num_shards - 1)
        _int(p["offset"], f"{pw} 'offset'")
        length = _int(p["length"], f"{pw} 'length'")
        count = math.prod(dims)
        if np_dt is not None and length != count * np_dt.itemsize:
            raise _Bad(f"{pw} 'length'", f"{length} bytes, but shape {list(dims)} of {dtn} "
                       f"needs {count * np_dt.itemsize}")
        if np_dt is None and length < 8 * count:
            raise _Bad(f"{pw} 'length'", f"{length} bytes cannot hold {count} strings "
                       "(8 bytes of length each)")
        key = "sum64" if version >= 2 else "crc32"
        sums = p.get(key)
        if sums is None:
            raise _Bad(pw, f"the index holds no checksum ({key!r})")
        want = num_blocks(length, block)
        if type(sums) is not list or len(sums) != want:
            raise _Bad(f"{pw} {key!r}", f"expected a list of {want} checksums")
        for i, c in enumerate(sums):
            _int(c, f"{pw} {key!r}[{i}]", 0, 0xFFFFFFFF)
        out.append(dict(p, slice=None if sl is None else [list(q) for q in sl], dims=dims))
    return {"dtype": dtn, "shape": list(full), "slices": out}


def parse_index(raw: bytes, path: str, base: str, block: int) -> dict[str, Any]:
    """The validated index document of file `path` (contents `raw`) of the checkpoint
    whose file names start with `base`; `block` is the CRC block size.  Each piece
    gains ``dims`` (its shape).  Raises DataLossError naming `path` and the entry."""
    try:
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise _Bad("", f"not valid JSON ({type(e).__name__}: {str(e)[:100]})") from None
        doc = _dict(doc, "", _TOP_KEYS, {"format", "num_shards", "tensors"})
        if doc["format"] != FORMAT:
            raise _Bad("'format'", f"expected {FORMAT!r}, got {_short(doc['format'])}")
        version = doc.get("version", 1)
        if type(version) is not int or version not in VERSIONS:
            raise _Bad("'version'", f"expected one of {list(VERSIONS)}, got {_short(version)}")
        n = _int(doc["num_shards"], "'num_shards'", 1, MAX_SHARDS)
        files = doc.get("data_files")
        if files is not None:
            if type(files) is not list or len(files) != n:
                raise _Bad("'data_files'", f"expected a list of {n} file names")
            for i, f in enumerate(files):
                if type(f) is not str or not data_file_pattern(base, i, n).fullmatch(f):
                    raise _Bad(f"'data_files'[{i}]", f"{_short(f)} is not a data file name of "
                               f"this checkpoint (expected {data_basename(base, i, n)})")
        else:
            files = [data_basename(base, i, n) for i in range(n)]
        tensors = doc["tensors"]
        if type(tensors) is not dict:
            raise _Bad("'tensors'", "expected an object")
        checked = {name: _validate_entry(name, e, n, version, block) for name, e in tensors.items()}
        # The pieces of one data file never overlap (a writer puts each after the last).
        by_shard: dict[int, list[tuple[int, int, str]]] = {}
        for name, e in checked.items():
            for p in e["slices"]:
                by_shard.setdefault(p["shard"], []).append((p["offset"], p["length"], name))
        for shard, ranges in by_shard.items():
            ranges.sort()
            for (o1, n1, a), (o2, _n2, b) in zip(ranges, ranges[1:]):
                if o1 + n1 > o2:
                    raise _Bad(f"tensor '{b}'", f"its bytes in shard {shard} overlap those of "
                               f"tensor '{a}' ([{o1}, {o1 + n1}) and [{o2}, ...))")
    except _Bad as e:
        raise errors.DataLossError(
            None, None, f"Checkpoint index {path} is corrupted or truncated: {e}"
        ) from None
    return {"version": version, "num_shards": n, "data_files": files, "tensors": checked}


__all__ = ["DTYPES", "FORMAT", "parse_index", "read_regular", "NotARegularFile", "FileTooLarge", "data_basename", "data_file_pattern", "num_blocks"]
