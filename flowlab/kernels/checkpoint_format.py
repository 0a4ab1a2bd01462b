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

Since the atomic save, the index also names each shard's data file (``"data_files":
["model.data-00000-of-00002", ...]``; without it, the canonical names above).

Invariants that make a checkpoint survive faults:
- a save never changes a file an index names: it writes new files under fresh names
  and makes them the checkpoint with one rename of the index, under a lock of the
  directory; a killed save's leftovers are removed by the next save (the protocol,
  and why the newest complete checkpoint restores at every instant, is in
  flowlab.kernels.checkpoint_commit);
- readers validate the whole index before they allocate anything
  (flowlab.kernels.checkpoint_index: dtypes from a closed list, every size checked,
  every field's type), check each piece against its data file's size, verify its
  length and checksums, and raise ``DataLossError`` naming the file and the tensor;
  a missing tensor is a ``NotFoundError`` naming it.  A reader opens the data files
  when it is made, so a save that replaces the checkpoint meanwhile does not pull
  the files from under it.

Test hook: ``FLOWLAB_CHECKPOINT_WRITE_DELAY`` (seconds, float) sleeps after a data
shard is written and before it is committed, so fault tests can kill a saving
process at that point (the deterministic hook is checkpoint_commit's `crash_at`).
"""

from __future__ import annotations

import glob
import json
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import checkpoint_commit as commit
from flowlab.kernels import checkpoint_index as cindex
from flowlab.ops.slice_spec import Slice, format_shape_and_slice, parse_shape_and_slice

FORMAT = cindex.FORMAT
VERSION = 2  # 2: "sum64" block checksums (1: "crc32", still read)
_CHUNK = 512  # bytes per uint64 sum of block_checksum
_ALIGN = 64


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
    """The existing files of checkpoint `prefix` (the data files its index names,
    then the index)."""
    d = os.path.dirname(prefix)
    found = [os.path.join(d, f) for f in commit.referenced_files(prefix)]
    idx = index_filename(prefix)
    return sorted(f for f in found if os.path.exists(f)) + ([idx] if os.path.exists(idx) else [])


def atomic_write_text(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file and one rename, holding the
    save lock of its directory (flowlab.kernels.checkpoint_commit)."""
    with commit.dir_lock(os.path.dirname(path)):
        commit.write_text(path, text)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# --- bytes of one tensor -------------------------------------------------------------
def _dtype_name(dt: np.dtype) -> str:
    name = "string" if dt.kind in "OSU" else dt.name
    if name not in cindex.DTYPES:
        raise errors.InvalidArgumentError(
            None, None, f"Cannot save a tensor of dtype {dt}: a checkpoint holds "
            f"{', '.join(cindex.DTYPES)}."
        )
    return name


def _encode_strings(arr: np.ndarray) -> bytes:
    items = [x if isinstance(x, bytes) else str(x).encode("utf-8") for x in arr.ravel()]
    lengths = np.array([len(x) for x in items], dtype="<u8")
    return lengths.tobytes() + b"".join(items)


def _decode_strings(buf: memoryview, shape: tuple[int, ...], where: str) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    if len(buf) < 8 * n:
        raise errors.DataLossError(None, None, f"{where}: string tensor is truncated.")
    lengths = np.frombuffer(buf[: 8 * n], dtype="<u8")
    room = len(buf) - 8 * n
    # Checked before any string is made: the lengths must add up to the bytes there.
    if n and (int(lengths.max()) > room or sum(lengths.tolist()) != room):
        raise errors.DataLossError(None, None, f"{where}: string tensor has a bad length.")
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

    `add()` appends tensors to a temporary data file
    (`<prefix>.data-<shard>-of-<num_shards>.tmp-<random>`); `finish()` closes it,
    renames it to its canonical name (not with ``rename=False``: `save_tensors`
    commits it atomically instead, flowlab.kernels.checkpoint_commit) and returns
    the index entries.
    `abort()` removes the temporary file."""

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
        self.tmp = commit.temp_name(self.path)
        self._fd: int | None = commit.create(self.tmp)
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

    def finish(self, rename: bool = True) -> dict[str, dict[str, Any]]:
        """Close the data file and return the index entries.  `rename`: also give the
        file its canonical name (for `write_index`; `save_tensors` commits instead)."""
        self._close()
        delay = os.environ.get("FLOWLAB_CHECKPOINT_WRITE_DELAY")
        if delay:
            time.sleep(float(delay))
        if rename:
            commit.replace(self.tmp, self.path)
        return self.tensors

    def abort(self) -> None:
        try:
            self._close()
        except OSError:
            pass
        _remove_quietly(self.tmp)


def write_index(prefix: str, tensors: dict[str, dict[str, Any]], num_shards: int) -> None:
    """Write `<prefix>.index` (atomically) for data files under their canonical names."""
    doc = {"format": FORMAT, "version": VERSION, "num_shards": num_shards,
           "tensors": dict(sorted(tensors.items()))}
    atomic_write_text(index_filename(prefix), json.dumps(doc, separators=(",", ":")))


def save_tensors(prefix: str, names: list[str], values: list[Any],
                 specs: list[str] | None = None) -> None:
    """Save tensors as a one-shard checkpoint `prefix` (the SaveV2 kernel's work),
    atomically (flowlab.kernels.checkpoint_commit)."""
    d = os.path.dirname(prefix)
    if d and not os.path.isdir(d):
        # One level, as TensorFlow's SaveV2: a missing grandparent is an error.
        try:
            os.mkdir(d)
        except FileExistsError:
            pass
    with commit.dir_lock(d):
        commit.cleanup(d, prefix=prefix)
        w = ShardWriter(prefix)
        try:
            for i, (name, value) in enumerate(zip(names, values)):
                full, sl = parse_shape_and_slice(specs[i] if specs else "")
                w.add(name, value, full, sl)
            tensors = w.finish(rename=False)
            commit.commit(prefix, [w.tmp], tensors, VERSION, FORMAT)
        except BaseException:
            w.abort()
            raise


def merge_checkpoints(sources: list[str], destination: str, delete_old_dirs: bool = True) -> None:
    """Merge one-shard checkpoints `sources` into checkpoint `destination` with
    ``len(sources)`` shards, atomically: the parts' data files move into the
    destination's directory and one rename of the index switches to them."""
    from flowlab.kernels.checkpoint_reader import CheckpointReader

    commit.check_parts_exist(sources)
    merged: dict[str, dict[str, Any]] = {}
    staged = []
    for i, src in enumerate(sources):
        part = CheckpointReader(src)
        try:
            staged.append(os.path.join(os.path.dirname(src), part.data_files[0]))
            for name, entry in part.tensors.items():
                pieces = [{k: v for k, v in p.items() if k != "dims"} | {"shard": i}
                          for p in entry["slices"]]
                if name in merged:
                    merged[name]["slices"].extend(pieces)
                else:
                    merged[name] = dict(entry, slices=pieces)
        finally:
            part.close()
    d = os.path.dirname(destination)
    with commit.dir_lock(d):
        commit.cleanup(d, keep=tuple(os.path.dirname(s) for s in sources), prefix=destination)
        commit.commit(destination, staged, merged, VERSION, FORMAT)
    for src in sources:
        commit.unlink(index_filename(src))
        if delete_old_dirs:
            try:
                os.rmdir(os.path.dirname(src))
            except OSError:  # a running Saver's `.live` file is still there
                pass


def __getattr__(name: str) -> Any:
    # The reader lives in flowlab.kernels.checkpoint_reader (it imports this module).
    if name == "CheckpointReader":
        from flowlab.kernels.checkpoint_reader import CheckpointReader

        return CheckpointReader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def checkpoint_exists(prefix: str) -> bool:
    """Whether a checkpoint with this prefix (its index) exists."""
    return os.path.exists(index_filename(prefix))


def remove_checkpoint(prefix: str) -> None:
    """Delete the files of checkpoint `prefix` (index first, so it stops being valid;
    a kill after that leaves data files the next save removes)."""
    d = os.path.dirname(prefix)
    with commit.dir_lock(d):
        named = commit.referenced_files(prefix)
        commit.unlink(index_filename(prefix))
        for f in sorted(named | {os.path.basename(x) for x in glob.glob(
                glob.escape(prefix) + ".data-?????-of-?????")}):
            commit.unlink(os.path.join(d, f))


__all__ = [  # and CheckpointReader, from flowlab.kernels.checkpoint_reader (`__getattr__`)
    "ShardWriter", "save_tensors", "merge_checkpoints", "write_index",
    "parse_shape_and_slice", "format_shape_and_slice", "checkpoint_exists",
    "remove_checkpoint", "data_filename", "index_filename", "checkpoint_files",
    "atomic_write_text",
]
