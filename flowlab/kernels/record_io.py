"""Record files: TFRecord framing and text lines, plain or GZIP/ZLIB compressed.

A TFRecord file is a sequence of records, each

    uint64 length (little endian) | uint32 masked CRC-32C of those 8 bytes
    | length bytes of data | uint32 masked CRC-32C of the data

(TensorFlow's tensorflow/core/lib/io/record_writer.cc).  Writing goes through the
`tensorboard` package's RecordWriter (the same framing, its masked CRC-32C);
reading is here, because a reader must distrust the file: every length is checked
against what is left of the file before anything is allocated (compressed streams
are read in bounded chunks), both CRCs are verified, and a bad or short record is a
DataLossError naming the file and the record's offset.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import zlib
from collections.abc import Iterator
from typing import IO, Any

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from tensorboard.summary.writer.record_writer import RecordWriter

from flowlab import errors

_CHUNK = 1 << 20
COMPRESSION_TYPES = ("", "ZLIB", "GZIP")


def _check_compression(compression_type: str) -> str:
    c = compression_type.upper() if compression_type else ""
    if c not in COMPRESSION_TYPES:
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported compression_type: {compression_type}.")
    return c


def open_read(filename: str, compression_type: str = "") -> IO[bytes]:
    """A binary stream of the file's (decompressed) bytes; NotFoundError if absent."""
    c = _check_compression(compression_type)
    try:
        f: IO[bytes] = open(filename, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{filename}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{filename}; Is a directory") from None
    if c == "GZIP":
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    if c == "ZLIB":
        return _ZlibReader(f)  # type: ignore[return-value]
    return f


class _ZlibReader(io.RawIOBase):
    """A readable stream inflating a zlib stream (TensorFlow's ZLIB option)."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self._z = zlib.decompressobj()
        self._buf = b""

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        while (n < 0 or len(self._buf) < n) and not self._z.eof:
            raw = self._f.read(_CHUNK)
            if not raw:
                break
            self._buf += self._z.decompress(raw, _CHUNK)
            while self._z.unconsumed_tail and (n < 0 or len(self._buf) < n):
                self._buf += self._z.decompress(self._z.unconsumed_tail, _CHUNK)
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def close(self) -> None:
        self._f.close()
        super().close()


def _read_exact(f: IO[bytes], n: int, limit: int | None) -> bytes:
    """`n` bytes, or fewer at the end of the stream; never allocates more than the
    file can hold (`limit`: bytes left in a plain file) or a chunk at a time."""
    if limit is not None:
        return f.read(min(n, limit))
    parts = []
    left = n
    while left > 0:
        b = f.read(min(left, _CHUNK))
        if not b:
            break
        parts.append(b)
        left -= len(b)
    return b"".join(parts)


def _loss(what: str, filename: str, offset: int) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"{what} record at {offset} in file {filename}")


def read_tfrecords(filename: str, compression_type: str = "") -> Iterator[bytes]:
    """The records of a TFRecord file, in order, checked (DataLossError otherwise)."""
    f = open_read(filename, compression_type)
    plain = _check_compression(compression_type) == ""
    size = os.fstat(f.fileno()).st_size if plain else None
    with f:
        offset = 0
        while True:
            header = _read_exact(f, 12, None)
            if not header:
                return
            if len(header) < 12:
                raise _loss("truncated", filename, offset)
            length_bytes, crc = header[:8], struct.unpack("<I", header[8:])[0]
            if masked_crc32c(length_bytes) != crc:
                raise _loss("corrupted", filename, offset)
            (length,) = struct.unpack("<Q", length_bytes)
            left = None if size is None else size - offset - 12
            if left is not None and length + 4 > left:
                raise _loss("truncated", filename, offset)
            data = _read_exact(f, length, left)
            footer = _read_exact(f, 4, None)
            if len(data) < length or len(footer) < 4:
                raise _loss("truncated", filename, offset)
            if masked_crc32c(data) != struct.unpack("<I", footer)[0]:
                raise _loss("corrupted", filename, offset)
            yield data
            offset += 16 + length


def read_lines(filename: str, compression_type: str = "") -> Iterator[bytes]:
    """The lines of a text file without their "\\n" (and a "\\r" before it)."""
    f = open_read(filename, compression_type)
    with f:
        stream = f if isinstance(f, io.BufferedIOBase) else io.BufferedReader(f)  # type: ignore[arg-type]
        for line in stream:
            if line.endswith(b"\n"):
                line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
            yield line


class TFRecordFileWriter:
    """Writes TFRecord files (`tf.io.TFRecordWriter`): the framing of tensorboard's
    RecordWriter over a plain, GZIP or ZLIB stream."""

    def __init__(self, path: str, compression_type: str = "") -> None:
        c = _check_compression(compression_type)
        try:
            raw: IO[bytes] = open(path, "wb")
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
        self._raw = raw
        self._stream: Any
        if c == "GZIP":
            self._stream = gzip.GzipFile(fileobj=raw, mode="wb")
        elif c == "ZLIB":
            self._stream = _ZlibWriter(raw)
        else:
            self._stream = raw
        self._writer = RecordWriter(self._stream)
        self._closed = False

    def write(self, record: bytes) -> None:
        if self._closed:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        self._writer.write(bytes(record))

    def flush(self) -> None:
        self._stream.flush()
        if self._stream is not self._raw:
            self._raw.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stream.close()
        if self._stream is not self._raw:
            self._raw.close()


class _ZlibWriter:
    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self._z = zlib.compressobj()

    def write(self, data: bytes) -> None:
        self._f.write(self._z.compress(data))

    def flush(self) -> None:
        self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._f.flush()

    def close(self) -> None:
        self._f.write(self._z.flush())
        self._f.close()
