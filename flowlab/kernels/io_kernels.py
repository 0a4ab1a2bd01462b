"""Kernels of the reader and parsing ops (flowlab.ops.io_ops).

A reader resource (`ReaderState`) holds its current work unit (a file name), the
file's bytes, a position and counters, under a lock.  `ReaderReadV2` is asynchronous:
when the reader has no work it dequeues a file name from the queue resource through
the queue's callback interface (flowlab.kernels.queue_state), so a read waiting for
file names parks no thread, and is cancelled with its step.  File names that arrive
while another read already has work wait in `pending`.  Files are read whole when a
work unit starts (input files of notebook-sized pipelines are small).
"""

from __future__ import annotations

import csv
import glob
import os
import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.record_io import read_tfrecords
from flowlab.kernels.registry import CPU, kernel


class ReaderState:
    """One reader: its kind-specific record splitting plus the shared work logic."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.work: str | None = None
        self.pending: list[str] = []
        self.data = b""
        self.pos = 0
        self.index = 0
        self.records_produced = 0
        self.work_units_completed = 0

    def start(self, work: str) -> None:
        self.work = work
        self.index = 0
        try:
            with open(work, "rb") as f:
                self.data = f.read()
        except OSError as e:
            self.work = None
            raise errors.NotFoundError(None, None, f"{work}; {e.strerror}") from None
        self.pos = 0
        self.on_start()

    def on_start(self) -> None:
        pass

    def next_record(self) -> tuple[str, bytes] | None:
        """The next record of the current work, or None at its end."""
        raise NotImplementedError

    def read_locked(self, limit: int) -> list[tuple[bytes, bytes]] | None:
        """Up to `limit` records from the current (or a pending) work unit; None when
        a new file name is needed from the queue.  Caller holds `lock`."""
        while True:
            if self.work is None:
                if not self.pending:
                    return None
                self.start(self.pending.pop(0))
            out = []
            while len(out) < limit:
                r = self.next_record()
                if r is None:
                    break
                out.append((r[0].encode(), r[1]))
            if len(out) < limit:  # the file is done
                self.work = None
                self.data = b""
                self.work_units_completed += 1
            if out:
                self.records_produced += len(out)
                return out


class TextLineState(ReaderState):
    def __init__(self, name: str, skip_header_lines: int) -> None:
        self.skip = skip_header_lines
        super().__init__(name)

    def on_start(self) -> None:
        self.line = 0
        for _ in range(self.skip):
            if self._line() is None:
                break

    def _line(self) -> bytes | None:
        if self.pos >= len(self.data):
            return None
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            end = len(self.data)
        line = self.data[self.pos:end]
        self.pos = end + 1
        self.line += 1
        return line[:-1] if line.endswith(b"\r") else line

    def next_record(self) -> tuple[str, bytes] | None:
        line = self._line()
        if line is None:
            return None
        return f"{self.work}:{self.line}", line


class FixedLengthState(ReaderState):
    def __init__(self, name: str, header: int, record: int, footer: int, hop: int) -> None:
        self.header, self.record, self.footer, self.hop = header, record, footer, hop
        super().__init__(name)

    def on_start(self) -> None:
        self.pos = self.header
        self.limit = len(self.data) - self.footer

    def next_record(self) -> tuple[str, bytes] | None:
        if self.pos + self.record > self.limit:
            return None
        value = self.data[self.pos:self.pos + self.record]
        self.pos += self.hop if self.hop > 0 else self.record
        key = f"{self.work}:{self.index}"
        self.index += 1
        return key, value


class WholeFileState(ReaderState):
    def next_record(self) -> tuple[str, bytes] | None:
        if self.pos > 0:
            return None
        self.pos = 1
        return self.work or "", self.data


class TFRecordState(ReaderState):
    """Records read lazily, so the ones before a corrupt record are still produced."""

    def __init__(self, name: str, compression_type: str) -> None:
        self.compression_type = compression_type
        super().__init__(name)

    def start(self, work: str) -> None:
        self.work = work
        try:
            self._records = read_tfrecords(work, self.compression_type)
            self._first = next(self._records, None)  # opens the file: errors come now
        except errors.OpError:
            self.work = None
            raise
        self.offset = 0

    def next_record(self) -> tuple[str, bytes] | None:
        value, self._first = self._first, None
        if value is None:
            value = next(self._records, None)
            if value is None:
                return None
        key = f"{self.work}:{self.offset}"
        self.offset += 16 + len(value)  # length, its CRC, the data, its CRC
        return key, value


class IdentityState(ReaderState):
    def start(self, work: str) -> None:
        self.work = work
        self.pos = 0

    def next_record(self) -> tuple[str, bytes] | None:
        if self.pos > 0:
            return None
        self.pos = 1
        return self.work or "", (self.work or "").encode()


def _reader(ctx: Any, make: Any) -> ReaderState:
    a = ctx.attrs
    key = a["shared_name"] or ctx.name
    r = ctx.resources.get(a["container"], key)
    return r if r is not None else ctx.resources.lookup_or_create(a["container"], key, make)


@kernel("TextLineReaderV2", devices=CPU)
def text_line_reader(ctx: Any) -> ReaderState:
    return _reader(ctx, lambda: TextLineState(ctx.name, ctx.attrs["skip_header_lines"]))


@kernel("FixedLengthRecordReaderV2", devices=CPU)
def fixed_length_reader(ctx: Any) -> ReaderState:
    a = ctx.attrs
    if a["encoding"]:
        raise errors.UnimplementedError(None, None, f"FixedLengthRecordReader encoding {a['encoding']!r}")
    if a["record_bytes"] <= 0:
        raise errors.InvalidArgumentError(None, None, f"record_bytes must be > 0 not {a['record_bytes']}")
    return _reader(ctx, lambda: FixedLengthState(
        ctx.name, a["header_bytes"], a["record_bytes"], a["footer_bytes"], a["hop_bytes"]))


@kernel("WholeFileReaderV2", devices=CPU)
def whole_file_reader(ctx: Any) -> ReaderState:
    return _reader(ctx, lambda: WholeFileState(ctx.name))


@kernel("TFRecordReaderV2", devices=CPU)
def tf_record_reader(ctx: Any) -> ReaderState:
    c = ctx.attrs["compression_type"]
    if c not in ("", "ZLIB", "GZIP"):
        raise errors.InvalidArgumentError(None, None, f"Unsupported compression_type: {c}.")
    return _reader(ctx, lambda: TFRecordState(ctx.name, c))


@kernel("IdentityReaderV2", devices=CPU)
def identity_reader(ctx: Any) -> ReaderState:
    return _reader(ctx, lambda: IdentityState(ctx.name))


def _read(reader: ReaderState, queue: Any, step: Any, limit: int, finish: Any) -> None:
    """Read up to `limit` records, dequeuing file names as needed; `finish(records)` or
    `finish(error=...)`."""
    try:
        with reader.lock:
            got = reader.read_locked(limit)
    except errors.OpError as e:
        finish(error=e)
        return
    if got is not None:
        finish(got)
        return

    def on_work(value: Any = None, error: BaseException | None = None) -> None:
        if error is not None:
            finish(error=error)
            return
        name = value[0][0]
        with reader.lock:
            reader.pending.append(name.decode() if isinstance(name, bytes) else str(name))
        _read(reader, queue, step, limit, finish)

    queue.dequeue(1, False, step, on_work)


@kernel("ReaderReadV2", devices=CPU, asynchronous=True)
def reader_read(ctx: Any, step: Any, done: Any, reader: ReaderState, queue: Any) -> None:
    def finish(records: Any = None, error: BaseException | None = None) -> None:
        if error is not None:
            done(error=error)
        else:
            done([records[0][0], records[0][1]])

    _read(reader, queue, step, 1, finish)


@kernel("ReaderReadUpToV2", devices=CPU, asynchronous=True, host_memory=("num_records",))
def reader_read_up_to(ctx: Any, step: Any, done: Any, reader: ReaderState, queue: Any, n: Any) -> None:
    n = int(n)
    if n <= 0:
        raise errors.InvalidArgumentError(None, None, f"num_records ({n}) must be > 0")

    def finish(records: Any = None, error: BaseException | None = None) -> None:
        if error is not None:
            done(error=error)
            return
        keys = np.empty(len(records), dtype=object)
        values = np.empty(len(records), dtype=object)
        for i, (k, v) in enumerate(records):
            keys[i], values[i] = k, v
        done([keys, values])

    _read(reader, queue, step, n, finish)


@kernel("ReaderNumRecordsProducedV2", devices=CPU)
def reader_num_records(ctx: Any, reader: ReaderState) -> Any:
    return np.int64(reader.records_produced)


@kernel("ReaderNumWorkUnitsCompletedV2", devices=CPU)
def reader_num_work_units(ctx: Any, reader: ReaderState) -> Any:
    return np.int64(reader.work_units_completed)


@kernel("ReaderResetV2", devices=CPU)
def reader_reset(ctx: Any, reader: ReaderState) -> None:
    with reader.lock:
        reader.reset()


# --- parsing ------------------------------------------------------------------------
def _parse(field: str, dt: Any, col: int, rec: int) -> Any:
    try:
        if dt.kind == "O":
            return field.encode()
        if dt.kind == "i":
            v = int(field.strip())
            info = np.iinfo(dt)
            if not info.min <= v <= info.max:
                raise ValueError
            return v
        return float(field)
    except ValueError:
        name = {"int32": "int32", "int64": "int64", "float32": "float", "float64": "double"}[dt.name]
        raise errors.InvalidArgumentError(
            None, None, f"Field {col} in record {rec} is not a valid {name}: {field}"
        ) from None


@kernel("DecodeCSV", devices=CPU)
def decode_csv(ctx: Any, records: Any, *defaults: Any) -> list[Any]:
    a = ctx.attrs
    delim = a["field_delim"]
    if len(delim) != 1:
        raise errors.InvalidArgumentError(None, None, "field_delim should be only 1 char")
    na = a["na_value"]
    select = a["select_cols"]
    types = [t.as_numpy_dtype for t in a["OUT_TYPE"]]
    types = [np.dtype(object) if t is object else np.dtype(t) for t in types]
    for i, d in enumerate(defaults):
        if np.size(d) > 1:
            raise errors.InvalidArgumentError(
                None, None, f"Shape of a default must be a length-0 or length-1 vector, or a scalar."
                f" Got shape [{','.join(map(str, np.shape(d)))}] at index {i}")
    recs = np.asarray(records, dtype=object)
    flat = recs.reshape(-1)
    outs = [np.empty(flat.shape, dtype=t) for t in types]
    reader_kw = {"delimiter": delim, "quotechar": '"' if a["use_quote_delim"] else None,
                 "quoting": csv.QUOTE_MINIMAL if a["use_quote_delim"] else csv.QUOTE_NONE,
                 "doublequote": True, "strict": False}
    for r, rec in enumerate(flat):
        text = rec.decode() if isinstance(rec, bytes) else str(rec)
        fields = next(csv.reader([text], **reader_kw), []) if text else [""]
        if select:
            if len(fields) <= select[-1]:
                raise errors.InvalidArgumentError(
                    None, None, f"Expect {select[-1] + 1} fields but have {len(fields)} in record {r}")
            fields = [fields[c] for c in select]
        elif len(fields) != len(types):
            raise errors.InvalidArgumentError(
                None, None, f"Expect {len(types)} fields but have {len(fields)} in record {r}")
        for c, (field, dt) in enumerate(zip(fields, types)):
            if field == "" or (na and field == na):
                d = defaults[c]
                if np.size(d) == 0:
                    raise errors.InvalidArgumentError(
                        None, None, f"Field {c} is required but missing in record {r}!")
                outs[c][r] = np.asarray(d, dtype=object if dt.kind == "O" else dt).reshape(-1)[0]
            else:
                outs[c][r] = _parse(field, dt, c, r)
    result = []
    for o in outs:
        o = o.reshape(recs.shape)
        result.append(o[()] if o.ndim == 0 else o)
    return result


@kernel("DecodeRaw", devices=CPU)
def decode_raw(ctx: Any, data: Any) -> Any:
    dt = np.dtype(ctx.attrs["out_type"].as_numpy_dtype)
    if not ctx.attrs["little_endian"] and dt.itemsize > 1:
        dt = dt.newbyteorder(">")
    arr = np.asarray(data, dtype=object)
    flat = arr.reshape(-1)
    size = len(flat[0]) if flat.size else 0
    if size % dt.itemsize:
        raise errors.InvalidArgumentError(
            None, None, f"Input to DecodeRaw has length {size} that is not a multiple of "
            f"{dt.itemsize}, the size of {ctx.attrs['out_type'].name}")
    for i, b in enumerate(flat):
        if len(b) != size:
            raise errors.InvalidArgumentError(
                None, None, "DecodeRaw requires input strings to all be the same size, but element "
                f"{i} has size {len(b)} != {size}")
    out = np.frombuffer(b"".join(flat), dtype=dt) if flat.size else np.empty(0, dt)
    return out.astype(dt.newbyteorder("="), copy=True).reshape(arr.shape + (size // dt.itemsize,))


@kernel("ReadFile", devices=CPU)
def read_file(ctx: Any, filename: Any) -> Any:
    name = filename.decode() if isinstance(filename, bytes) else str(filename)
    if not os.path.exists(name):
        raise errors.NotFoundError(None, None, f"{name}; No such file or directory")
    with open(name, "rb") as f:
        return f.read()


@kernel("MatchingFiles", devices=CPU)
def matching_files(ctx: Any, pattern: Any) -> Any:
    patterns = np.asarray(pattern, dtype=object).reshape(-1)
    if np.ndim(pattern) > 1:
        raise errors.InvalidArgumentError(None, None, "Input pattern tensor must be scalar or vector.")
    names: list[str] = []
    for p in patterns:
        names.extend(glob.glob(p.decode() if isinstance(p, bytes) else str(p)))
    names.sort()  # TensorFlow sorts the matches of all the patterns together
    out = np.empty(len(names), dtype=object)
    for i, n in enumerate(names):
        out[i] = n.encode()
    return out
