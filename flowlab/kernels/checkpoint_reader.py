"""Reading checkpoints (`tf.train.NewCheckpointReader`): validated, then verified.

A `CheckpointReader` reads the index once and validates all of it
(flowlab.kernels.checkpoint_index) before it uses any field; it then opens the data
files the index names and keeps them open, so a save that replaces the checkpoint
afterwards does not take them away: a reader sees one checkpoint, the one whose
index it read.  A save changes what a data file *name* holds (renames, deletes,
links) only while the index does not name it; but a reader that read an older index
could open such a name after the change.  So once the data files are open, the
reader reads the index again: if it holds the same bytes, the open files are the
ones it describes (the same lengths and checksums; a save never writes into an
existing file).  Otherwise (a save switched in between) the reader starts again (up
to ten times) and settles on the newer checkpoint.  (Comparing the index's inode
instead would not do: file systems reuse a freed inode number at once.)

Before a piece is read, its byte range is checked against its file's size; before a
requested slice is allocated, its size is checked against the bytes its pieces hold
(pieces never overlap, so that is at most the files' sizes).  So a crafted index can
make the reader allocate no more than the checkpoint's files hold.  Every damage is
a `DataLossError` naming the file and the tensor.
"""

from __future__ import annotations

import math
import os
import stat
import zlib
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import checkpoint_format as fmt
from flowlab.kernels import checkpoint_index as cindex

_REREADS = 10
_MAX_INDEX = 1 << 31  # an index larger than this is not ours


class CheckpointReader:
    """Reads a checkpoint written by flowlab.kernels.checkpoint_format.

        r = CheckpointReader("/ckpt/model.ckpt-100")
        r.get_variable_to_shape_map()     # {"w": [10, 4], ...}
        r.get_tensor("w")                 # the whole tensor, checksums verified
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._fds: list[int | None] = []
        for attempt in range(_REREADS + 1):
            doc, raw = self._read_index()
            fds = _open_all(os.path.dirname(prefix), doc["data_files"])
            if _raw_index(fmt.index_filename(prefix)) == raw or attempt == _REREADS:
                break  # (files still missing now are missing: an error when read)
            _close_all(fds)  # a save switched meanwhile: read its index
        self._fds = fds
        self.num_shards: int = doc["num_shards"]
        self.data_files: list[str] = doc["data_files"]
        self.tensors: dict[str, dict[str, Any]] = doc["tensors"]
        self._sizes = [None if fd is None else os.fstat(fd).st_size for fd in fds]

    def _read_index(self) -> tuple[dict[str, Any], bytes]:
        """The validated index, and its bytes."""
        path = fmt.index_filename(self.prefix)
        try:
            raw = cindex.read_regular(path, _MAX_INDEX)
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                f"matching files for {self.prefix}"
            ) from None
        except (cindex.NotARegularFile, cindex.FileTooLarge) as e:
            raise errors.DataLossError(
                None, None, f"Checkpoint index {path} is corrupted or truncated: {e}."
            ) from None
        except OSError as e:
            raise errors.DataLossError(
                None, None, f"Checkpoint index {path} cannot be read: {e.strerror or e}."
            ) from None
        return cindex.parse_index(raw, path, os.path.basename(self.prefix), fmt.CRC_BLOCK), raw

    def close(self) -> None:
        """Close the data files (also done when the reader is garbage collected)."""
        fds, self._fds = self._fds, []
        _close_all(fds)

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

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
        want_full, want = fmt.parse_shape_and_slice(spec)
        if want_full is not None and want_full != full:
            raise errors.InvalidArgumentError(
                None, None, f"Requested tensor '{name}' with full shape {list(want_full)}, but "
                f"the checkpoint {self.prefix} holds shape {list(full)}."
            )
        if want is None:
            want = tuple((0, n) for n in full)
        stored = cindex.DTYPES[entry["dtype"]]
        np_dtype = np.dtype(object) if stored is None else stored
        if dtype is not None and np.dtype(dtype) != np_dtype:
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; expected dtype {np.dtype(dtype).name} does "
                f"not equal original dtype {entry['dtype']}"
            )
        pieces = entry["slices"]
        # Fast path: the request is exactly one stored piece.
        for p in pieces:
            if _piece_slice(p, full) == want:
                return self._load_piece(name, p, np_dtype)
        shape = tuple(n for _, n in want)
        # Validate before allocating: the pieces' bytes bound what they can cover.
        per_item = 8 if stored is None else stored.itemsize
        if math.prod(shape) * per_item > sum(p["length"] for p in pieces):
            raise errors.NotFoundError(
                None, None, f"The slices saved for '{name}' in checkpoint {self.prefix} do not "
                f"cover the requested slice {spec!r}."
            )
        out = np.empty(shape, dtype=np_dtype)
        if out.size == 0:
            return out
        covered = np.zeros(out.shape, dtype=bool)
        for p in pieces:
            psl = _piece_slice(p, full)
            inter = [(max(a, c), min(a + b, c + d)) for (a, b), (c, d) in zip(psl, want)]
            if any(lo >= hi for lo, hi in inter):
                continue
            value = self._load_piece(name, p, np_dtype)
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

    def _load_piece(self, name: str, p: dict[str, Any], np_dtype: np.dtype) -> np.ndarray:
        shard = p["shard"]
        path = os.path.join(os.path.dirname(self.prefix), self.data_files[shard])
        where = f"Checkpoint data file {path}, tensor '{name}'"
        length, offset, shape = p["length"], p["offset"], p["dims"]
        fd = self._fds[shard] if shard < len(self._fds) else None
        if fd is None:
            raise errors.DataLossError(None, None, f"{where}: the data file is missing.")
        size = self._sizes[shard]
        assert size is not None
        if offset + length > size:
            raise errors.DataLossError(
                None, None, f"{where}: the file is truncated (it has {size} bytes; the tensor "
                f"needs bytes [{offset}, {offset + length}))."
            )
        is_str = np_dtype.kind == "O"
        if not is_str:
            arr = np.empty(shape, dtype=np_dtype)
            buf = memoryview(arr).cast("B") if arr.size else memoryview(bytearray(0))
        else:
            buf = memoryview(bytearray(length))
        stored, check = (p["sum64"], fmt.block_checksum) if "sum64" in p else (p["crc32"], zlib.crc32)
        block = fmt.CRC_BLOCK
        if length <= block:
            results = [fmt._read_block(fd, buf, offset, check)]
        else:
            jobs = [fmt._POOL.submit(fmt._read_block, fd, buf[i: i + block], offset + i, check)
                    for i in range(0, length, block)]
            results = [f.result() for f in jobs]
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
                f"[{bad * block}, {min(length, (bad + 1) * block)}) of the tensor: "
                f"stored {stored[bad] if bad < len(stored) else None} vs. calculated on the "
                f"restored bytes {computed[bad] if bad < len(computed) else None}."
            )
        if is_str:
            return fmt._decode_strings(buf, shape, where)
        if not np.little_endian:  # pragma: no cover
            arr = arr.astype(np_dtype.newbyteorder("="))
        return arr


def _piece_slice(p: dict[str, Any], full: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    sl = p["slice"]
    return tuple((0, n) for n in full) if sl is None else tuple((a, b) for a, b in sl)


def _raw_index(path: str) -> bytes | None:
    try:
        return cindex.read_regular(path, _MAX_INDEX)
    except OSError:
        return None


def _open_all(directory: str, names: list[str]) -> list[int | None]:
    """An fd per data file (None: missing, or not a regular file)."""
    fds: list[int | None] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: no wait
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
            fds.append(None)
            continue
        except OSError as e:  # e.g. too many open files: not the file's fault
            _close_all(fds)
            raise errors.ResourceExhaustedError(
                None, None, f"Cannot open checkpoint data file {path}: {e.strerror}"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, a device: not data
            os.close(fd)
            fds.append(None)
            continue
        fds.append(fd)
    return fds


def _close_all(fds: list[int | None]) -> None:
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


__all__ = ["CheckpointReader"]
