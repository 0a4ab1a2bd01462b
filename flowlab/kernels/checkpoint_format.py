"""The on-disk checkpoint format: a JSON index plus data shards of raw arrays.

A checkpoint is named by a *prefix* (``/ckpt/model.ckpt-100``) and made of the files

    <prefix>.index                          the index (UTF-8 JSON, below)
    <prefix>.data-00000-of-00002            data shard 0: raw bytes of tensors
    <prefix>.data-00001-of-00002            data shard 1 (one shard per Save op/device)

as TensorFlow names them, so programs that glob checkpoint files behave.  Nothing is
pickled: a shard holds each tensor's bytes in C order, little-endian, one after the
other (each starting at a multiple of 64 bytes); string tensors are stored as
``n`` little-endian uint64 lengths followed by the concatenated bytes.

The index::

    {"format": "flowlab-checkpoint", "version": 1, "num_shards": 2,
     "tensors": {
       "layer/w": {"dtype": "float32", "shape": [10, 4],
                   "slices": [{"slice": [[0, 5], [0, 4]], "shard": 0,
                               "offset": 0, "length": 80, "sum64": [123456789]}, ...]},
       "step":    {"dtype": "int64", "shape": [],
                   "slices": [{"slice": null, "shard": 1, "offset": 0, "length": 8,
                               "sum64": [42]}]}}}

``shape`` is the full shape of the saved tensor; each entry of ``slices`` is one
stored piece: ``slice`` is a list of ``[start, length]`` per dimension (``null``: the
whole tensor), ``shard`` the data file, ``offset``/``length`` the byte range and
``sum64`` one checksum per block of ``CRC_BLOCK`` (16 MiB) of those bytes (one value
for a small piece; blocks let a pool of threads checksum large tensors while the file
is written or read).  A block's checksum (`block_checksum`) is the zlib CRC-32 of the
wrapping uint64 sums of its 512-byte chunks, followed by its last ``len % 512`` bytes:
NumPy sums a block at ~6 GB/s where CRC-32 alone runs at ~1.2 GB/s here, so restore
runs near the speed of reading the file.  It catches what damages files -- flipped or
zeroed bytes, truncation, torn or misplaced chunks -- but, unlike a CRC of every byte,
not two 8-byte words swapped inside one 512-byte chunk.  Version 1 indexes (written
before, with ``crc32``: the CRC-32 of each block) are still read and verified.  A variable saved as 3 slices (a sharded
variable, its ``save_slice_info``) has 3 entries under its full name; any slice of it
(the whole tensor, or a different sharding) can be read back when the saved pieces
cover it.  Slice specs as strings follow TensorFlow's ``shape_and_slices`` syntax:
``""`` (the whole tensor) or ``"10 4 0,5:-"`` (full shape, then ``start,length`` or
``-`` per dimension).

Invariants that make a checkpoint survive faults:
- every file is written under a temporary name (``<name>.tmp-<random>``) and renamed
  with ``os.replace`` once complete; the index is renamed after its data shards, and
  the Saver's ``checkpoint`` state file is written last, so a process killed mid-save
  leaves the previous checkpoint complete and the state file pointing at it;
- readers verify each piece's length and CRC-32 and raise ``DataLossError`` naming the
  file and the tensor; a missing tensor is a ``NotFoundError`` naming it.
Data is not fsync'ed (as TensorFlow): a killed process loses nothing the kernel has
accepted; a power loss may.

Test hook: ``FLOWLAB_CHECKPOINT_WRITE_DELAY`` (seconds, float) sleeps after a data
shard is written and before it is renamed, so fault tests can kill a saving process
at that point.
"""

from __future__ import annotations

import glob
import json
import os
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from flowlab import errors

FORMAT = "flowlab-checkpoint"
VERSION = 2  # 2: "sum64" block checksums (1: "crc32", still read)
_CHUNK = 512  # bytes per uint64 sum of block_checksum
_ALIGN = 64

Slice = tuple[tuple[int, int], ...]  # (start, length) per dimension

# Large tensors are written and read in blocks of CRC_BLOCK bytes by a pool of
# threads (pwrite/pread and zlib release the GIL), each block checksummed by the
# thread that moved it: copies to and from the page cache and CRCs run on all cores.
CRC_BLOCK = 1 << 24
_POOL = ThreadPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2))),
                               thread_name_prefix="flowlab-crc32")


def block_checksum(block: bytes | memoryview) -> int:
    """The ``sum64`` checksum of one block: CRC-32 of its 512-byte chunks' uint64 sums
    (wrapping, little-endian), then of its trailing bytes.  NumPy's reduction releases
    the GIL, so the pool checksums blocks in parallel."""
    block = memoryview(block).cast("B")
    rows = len(block) // _CHUNK
    crc = 0
    if rows:
        words = np.frombuffer(block, dtype="<u8", count=rows * (_CHUNK // 8))
        sums = words.reshape(rows, _CHUNK // 8).sum(axis=1, dtype=np.uint64)
        crc = zlib.crc32(sums.astype("<u8", copy=False), crc)
    return zlib.crc32(block[rows * _CHUNK:], crc)


def _write_block(fd: int, block: memoryview, offset: int) -> int:
    """pwrite one block at `offset` and return its checksum (runs on the pool)."""
    done = 0
    while done < len(block):
        done += os.pwrite(fd, block[done:], offset + done)
    return block_checksum(block)


def _read_block(fd: int, block: memoryview, offset: int, check: Any) -> tuple[int, int]:
    """pread one block from `offset`; (bytes read, `check` of them) (runs on the pool)."""
    got = 0
    while got < len(block):
        n = os.preadv(fd, [block[got:]], offset + got)
        if n <= 0:
            break
        got += n
    return got, check(block[:got])


def _blocks(n: int) -> range:
    return range(0, n, CRC_BLOCK) if n else range(0, 1)


def checksums(data: bytes | memoryview) -> list[int]:
    """The ``sum64`` list of the index for these bytes (one per CRC_BLOCK)."""
    data = memoryview(data).cast("B")
    return [block_checksum(data[i: i + CRC_BLOCK]) for i in _blocks(len(data))]


# --- names ---------------------------------------------------------------------------
def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_filename(prefix: str) -> str:
    return f"{prefix}.index"


def checkpoint_files(prefix: str) -> list[str]:
    """The existing files of checkpoint `prefix` (index and data shards)."""
    found = glob.glob(glob.escape(prefix) + ".data-?????-of-?????")
    idx = index_filename(prefix)
    return sorted(found) + ([idx] if os.path.exists(idx) else [])


def _temp_name(path: str) -> str:
    return f"{path}.tmp-{uuid.uuid4().hex[:12]}"


def atomic_write_text(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename."""
    tmp = _temp_name(path)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# --- slice specs ---------------------------------------------------------------------
def parse_shape_and_slice(spec: str | bytes) -> tuple[tuple[int, ...] | None, Slice | None]:
    """TensorFlow's ``shape_and_slices`` syntax -> (full shape, slice) or (None, None).

    ``"10 4 0,5:-"`` -> ((10, 4), ((0, 5), (0, 4)))."""
    if isinstance(spec, bytes):
        spec = spec.decode("utf-8")
    spec = spec.strip()
    if not spec:
        return None, None
    parts = spec.split(" ")
    try:
        full = tuple(int(p) for p in parts[:-1])
        dims = parts[-1].split(":") if parts[-1] else []
        if len(dims) != len(full) or any(d < 0 for d in full):
            raise ValueError
        sl = []
        for d, size in zip(dims, full):
            if d == "-":
                sl.append((0, size))
                continue
            start, length = (int(x) for x in d.split(","))
            if start < 0 or length < 0 or start + length > size:
                raise ValueError
            sl.append((start, length))
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid shape_and_slice spec '{spec}': expected '' or "
            "'<dim0> ... <dimN-1> <start>,<length>:...' with '-' for a whole dimension."
        ) from None
    return full, tuple(sl)


def format_shape_and_slice(full_shape: tuple[int, ...], sl: Slice) -> str:
    """The inverse of `parse_shape_and_slice`."""
    dims = ":".join(
        "-" if (s == 0 and n == size) else f"{s},{n}" for (s, n), size in zip(sl, full_shape)
    )
    return " ".join(str(d) for d in full_shape) + " " + dims


# --- bytes of one tensor -------------------------------------------------------------
def _dtype_name(dt: np.dtype) -> str:
    return "string" if dt.kind in "OSU" else dt.name


def _encode_strings(arr: np.ndarray) -> bytes:
    items = [x if isinstance(x, bytes) else str(x).encode("utf-8") for x in arr.ravel()]
    lengths = np.array([len(x) for x in items], dtype="<u8")
    return lengths.tobytes() + b"".join(items)


def _decode_strings(buf: memoryview, shape: tuple[int, ...], where: str) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    if len(buf) < 8 * n:
        raise errors.DataLossError(None, None, f"{where}: string tensor is truncated.")
    lengths = np.frombuffer(buf[: 8 * n], dtype="<u8")
    out = np.empty(n, dtype=object)
    pos = 8 * n
    for i, ln in enumerate(lengths.tolist()):
        out[i] = bytes(buf[pos: pos + ln])
        pos += ln
    if pos != len(buf):
        raise errors.DataLossError(None, None, f"{where}: string tensor has a bad length.")
    return out.reshape(shape)


def _raw_view(arr: np.ndarray) -> memoryview:
    """A byte view of `arr` in C order, little-endian (copying only when needed)."""
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    arr = np.ascontiguousarray(arr)
    return memoryview(arr).cast("B") if arr.size else memoryview(b"")


# --- writing -------------------------------------------------------------------------
class ShardWriter:
    """Writes one data shard and a partial index of what it holds.

    `add()` appends tensors to a temporary data file; `finish()` renames it to
    `<prefix>.data-<shard>-of-<num_shards>` and returns the index entries.  `abort()`
    removes the temporary file."""

    def __init__(self, prefix: str, shard: int = 0, num_shards: int = 1) -> None:
        self.prefix, self.shard, self.num_shards = prefix, shard, num_shards
        self.path = data_filename(prefix, shard, num_shards)
        d = os.path.dirname(self.path)
        if d and not os.path.isdir(d):
            # One level, as TensorFlow's SaveV2: a missing grandparent is an error.
            try:
                os.mkdir(d)
            except FileExistsError:
                pass
        self.tmp = _temp_name(self.path)
        self._fd: int | None = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._pos = 0
        self.tensors: dict[str, dict[str, Any]] = {}

    def add(self, name: str, value: Any, full_shape: tuple[int, ...] | None = None,
            sl: Slice | None = None) -> None:
        arr = np.asarray(value)
        shape = tuple(arr.shape)
        if full_shape is None:
            full_shape = shape
        elif sl is not None and tuple(n for _, n in sl) != shape:
            raise errors.InvalidArgumentError(
                None, None, f"Tensor '{name}': slice {format_shape_and_slice(full_shape, sl)} "
                f"has shape {list(tuple(n for _, n in sl))} but the value has shape {list(shape)}."
            )
        if sl is not None and all(s == 0 and n == size for (s, n), size in zip(sl, full_shape)):
            sl = None
        entry = self.tensors.get(name)
        dtn = _dtype_name(arr.dtype)
        if entry is None:
            entry = self.tensors[name] = {"dtype": dtn, "shape": list(full_shape), "slices": []}
        elif entry["dtype"] != dtn or entry["shape"] != list(full_shape) or sl is None:
            raise errors.InvalidArgumentError(
                None, None, f"Tensor '{name}' is saved twice with different dtypes, shapes, "
                "or once whole; only slices of one tensor may share a name."
            )
        self._pos += (-self._pos) % _ALIGN  # the gap stays a hole of zeros
        data = memoryview(_encode_strings(arr)) if dtn == "string" else _raw_view(arr)
        # Blocks are written (pwrite) and checksummed on the pool, in parallel.
        fd = self._fd
        assert fd is not None
        if len(data) <= CRC_BLOCK:
            crc = [_write_block(fd, data, self._pos)]
        else:
            jobs = [_POOL.submit(_write_block, fd, data[i: i + CRC_BLOCK], self._pos + i)
                    for i in _blocks(len(data))]
            crc = [f.result() for f in jobs]
        entry["slices"].append({
            "slice": None if sl is None else [list(p) for p in sl],
            "shard": self.shard, "offset": self._pos, "length": len(data), "sum64": crc,
        })
        self._pos += len(data)

    def _close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.ftruncate(fd, self._pos)
            os.close(fd)

    def finish(self) -> dict[str, dict[str, Any]]:
        self._close()
        delay = os.environ.get("FLOWLAB_CHECKPOINT_WRITE_DELAY")
        if delay:
            time.sleep(float(delay))
        os.replace(self.tmp, self.path)
        return self.tensors

    def abort(self) -> None:
        try:
            self._close()
        except OSError:
            pass
        _remove_quietly(self.tmp)


def write_index(prefix: str, tensors: dict[str, dict[str, Any]], num_shards: int) -> None:
    """Write `<prefix>.index` (atomically); call after every shard is renamed."""
    doc = {"format": FORMAT, "version": VERSION, "num_shards": num_shards,
           "tensors": dict(sorted(tensors.items()))}
    atomic_write_text(index_filename(prefix), json.dumps(doc, separators=(",", ":")))


def save_tensors(prefix: str, names: list[str], values: list[Any],
                 specs: list[str] | None = None) -> None:
    """Save tensors as a one-shard checkpoint `prefix` (the SaveV2 kernel's work)."""
    w = ShardWriter(prefix)
    try:
        for i, (name, value) in enumerate(zip(names, values)):
            full, sl = parse_shape_and_slice(specs[i] if specs else "")
            w.add(name, value, full, sl)
        tensors = w.finish()
    except BaseException:
        w.abort()
        raise
    write_index(prefix, tensors, 1)


def merge_checkpoints(sources: list[str], destination: str, delete_old_dirs: bool = True) -> None:
    """Merge one-shard checkpoints `sources` into checkpoint `destination` with
    ``len(sources)`` shards: rename each data file, then write the merged index."""
    n = len(sources)
    merged: dict[str, dict[str, Any]] = {}
    parts = [CheckpointReader(src) for src in sources]
    for i, part in enumerate(parts):
        for name, entry in part.tensors.items():
            pieces = [dict(p, shard=i) for p in entry["slices"]]
            if name in merged:
                merged[name]["slices"].extend(pieces)
            else:
                merged[name] = dict(entry, slices=pieces)
    for i, src in enumerate(sources):
        os.replace(data_filename(src, 0, 1), data_filename(destination, i, n))
    write_index(destination, merged, n)
    for src in sources:
        _remove_quietly(index_filename(src))
        if delete_old_dirs:
            try:
                os.rmdir(os.path.dirname(src))
            except OSError:
                pass


# --- reading -------------------------------------------------------------------------
class CheckpointReader:
    """Reads a checkpoint written by this module (`tf.train.NewCheckpointReader`).

        r = CheckpointReader("/ckpt/model.ckpt-100")
        r.get_variable_to_shape_map()     # {"w": [10, 4], ...}
        r.get_tensor("w")                 # the whole tensor, checksums verified
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        path = index_filename(prefix)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                f"matching files for {prefix}"
            ) from None
        try:
            doc = json.loads(raw.decode("utf-8"))
            if doc.get("format") != FORMAT:
                raise ValueError("not a flowlab checkpoint index")
            self.num_shards = int(doc["num_shards"])
            self.tensors: dict[str, dict[str, Any]] = doc["tensors"]
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
            raise errors.DataLossError(
                None, None, f"Checkpoint index {path} is corrupted or truncated ({e})."
            ) from None

    # --- what is there ----------------------------------------------------------
    def has_tensor(self, name: str) -> bool:
        return name in self.tensors

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {k: list(v["shape"]) for k, v in self.tensors.items()}

    def get_variable_to_dtype_map(self) -> dict[str, Any]:
        from flowlab.graph import dtypes

        return {k: dtypes.string if v["dtype"] == "string" else dtypes.as_dtype(v["dtype"])
                for k, v in self.tensors.items()}

    def _entry(self, name: str) -> dict[str, Any]:
        try:
            return self.tensors[name]
        except KeyError:
            raise errors.NotFoundError(
                None, None, f"Key {name} not found in checkpoint {self.prefix}"
            ) from None

    # --- values -----------------------------------------------------------------
    def get_tensor(self, name: str) -> Any:
        """The whole saved tensor (assembled from its slices); a scalar comes back as
        TensorFlow's reader gives it, a NumPy scalar (bytes for a string)."""
        value = self.read(name, "")
        return value[()] if value.ndim == 0 else value

    def read(self, name: str, spec: str | bytes = "", dtype: Any = None) -> Any:
        """The slice `spec` of tensor `name` (`""`: all of it), checksums verified.

        Assembles it from the saved pieces that overlap it, so a tensor saved as 3
        slices reads back whole or in 2 slices."""
        entry = self._entry(name)
        full = tuple(entry["shape"])
        want_full, want = parse_shape_and_slice(spec)
        if want_full is not None and want_full != full:
            raise errors.InvalidArgumentError(
                None, None, f"Requested tensor '{name}' with full shape {list(want_full)}, but "
                f"the checkpoint {self.prefix} holds shape {list(full)}."
            )
        if want is None:
            want = tuple((0, n) for n in full)
        is_str = entry["dtype"] == "string"
        np_dtype = np.dtype(object) if is_str else np.dtype(entry["dtype"])
        if dtype is not None and np.dtype(dtype) != np_dtype:
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; expected dtype {np.dtype(dtype).name} does "
                f"not equal original dtype {entry['dtype']}"
            )
        pieces = entry["slices"]
        # Fast path: the request is exactly one stored piece.
        for p in pieces:
            psl = tuple((0, n) for n in full) if p["slice"] is None else tuple(map(tuple, p["slice"]))
            if psl == want:
                return self._load_piece(name, p, np_dtype, tuple(n for _, n in want))
        out = np.empty(tuple(n for _, n in want), dtype=np_dtype)
        if out.size == 0:
            return out
        covered = np.zeros(out.shape, dtype=bool)
        for p in pieces:
            psl = tuple((0, n) for n in full) if p["slice"] is None else tuple(map(tuple, p["slice"]))
            inter = [(max(a, c), min(a + b, c + d)) for (a, b), (c, d) in zip(psl, want)]
            if any(lo >= hi for lo, hi in inter):
                continue
            value = self._load_piece(name, p, np_dtype, tuple(n for _, n in psl))
            src = tuple(slice(lo - a, hi - a) for (lo, hi), (a, _) in zip(inter, psl))
            dst = tuple(slice(lo - c, hi - c) for (lo, hi), (c, _) in zip(inter, want))
            out[dst] = value[src]
            covered[dst] = True
        if not covered.all():
            raise errors.NotFoundError(
                None, None, f"The slices saved for '{name}' in checkpoint {self.prefix} do not "
                f"cover the requested slice {spec!r}."
            )
        return out

    def _load_piece(self, name: str, p: dict[str, Any], np_dtype: np.dtype,
                    shape: tuple[int, ...]) -> np.ndarray:
        path = data_filename(self.prefix, int(p["shard"]), self.num_shards)
        where = f"Checkpoint data file {path}, tensor '{name}'"
        length, offset = int(p["length"]), int(p["offset"])
        is_str = np_dtype.kind == "O"
        if not is_str:
            expected = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
            if expected != length:
                raise errors.DataLossError(
                    None, None, f"{where}: index says {length} bytes, shape {list(shape)} "
                    f"needs {expected}."
                )
            arr = np.empty(shape, dtype=np_dtype.newbyteorder("<"))
            buf = memoryview(arr).cast("B") if arr.size else memoryview(bytearray(0))
        else:
            buf = memoryview(bytearray(length))
        stored = p.get("sum64")
        check: Any = block_checksum
        if stored is None:  # a version 1 checkpoint
            stored, check = p.get("crc32"), zlib.crc32
        if not isinstance(stored, list):
            raise errors.DataLossError(None, None, f"{where}: the index holds no checksum.")
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise errors.DataLossError(None, None, f"{where}: the data file is missing.") from None
        try:
            if length <= CRC_BLOCK:
                results = [_read_block(fd, buf, offset, check)]
            else:
                jobs = [_POOL.submit(_read_block, fd, buf[i: i + CRC_BLOCK], offset + i, check)
                        for i in _blocks(length)]
                results = [f.result() for f in jobs]
        finally:
            os.close(fd)
        got = sum(n for n, _ in results)
        if got != length:
            raise errors.DataLossError(
                None, None, f"{where}: the file is truncated (read {got} of {length} bytes at "
                f"offset {offset})."
            )
        computed = [c for _, c in results]
        if computed != stored:
            bad = next((i for i, (a, b) in enumerate(zip(computed, stored)) if a != b),
                       min(len(computed), len(stored)))
            raise errors.DataLossError(
                None, None, f"{where}: checksum does not match in bytes "
                f"[{bad * CRC_BLOCK}, {min(length, (bad + 1) * CRC_BLOCK)}) of the tensor: "
                f"stored {stored[bad] if bad < len(stored) else None} vs. calculated on the "
                f"restored bytes {computed[bad] if bad < len(computed) else None}."
            )
        if is_str:
            return _decode_strings(buf, shape, where)
        if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not np.little_endian):
            arr = arr.astype(np_dtype)
        return arr


def checkpoint_exists(prefix: str) -> bool:
    """Whether a checkpoint with this prefix (its index) exists."""
    return os.path.exists(index_filename(prefix))


def remove_checkpoint(prefix: str) -> None:
    """Delete the files of checkpoint `prefix` (index first, so it stops being valid)."""
    idx = index_filename(prefix)
    _remove_quietly(idx)
    for f in glob.glob(glob.escape(prefix) + ".data-?????-of-?????"):
        _remove_quietly(f)


__all__ = [
    "CheckpointReader", "ShardWriter", "save_tensors", "merge_checkpoints", "write_index",
    "parse_shape_and_slice", "format_shape_and_slice", "checkpoint_exists",
    "remove_checkpoint", "data_filename", "index_filename", "checkpoint_files",
    "atomic_write_text",
]
