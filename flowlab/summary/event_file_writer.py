"""An event file: TensorFlow's TFRecord-framed `Event` protos, written in the background.

`EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)` creates
`logdir/events.out.tfevents.<time>.<host>.<pid>.<n><suffix>` (the name tensorboard's
writer uses: unique per process and writer, which TensorBoard globs by its
`tfevents` part) and writes, first, the `Event(file_version="brain.Event:2")` every
TensorFlow event file starts with.  The records are framed by tensorboard's
`RecordWriter` (length, masked CRC-32C of the length, data, masked CRC-32C of the
data; the CRC computed in C, flowlab/summary/records.py) and queued to tensorboard's background writer thread, which writes and
flushes them at least every `flush_secs` seconds; at most `max_queue` events wait,
so `add_event` blocks only when the disk falls that far behind.

State: open (events accepted) -> closed (`close()`: pending events written, file
closed; `add_event` then raises) -> `reopen()` opens a new file in the same logdir,
as TensorFlow's writer does.  `flush()` returns once every event added before it is
on disk.

Why not `tensorboard.summary.writer.event_file_writer.EventFileWriter` itself: it
opens the file through `tensorboard.compat.tf`, which imports TensorFlow whenever it
is installed (seconds, and a second runtime in the process); this class opens the
file with `open()` and uses the same record writer and background thread.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from typing import Any

from tensorboard.compat.proto import event_pb2

__all__ = ["EventFileWriter", "FILE_VERSION"]

FILE_VERSION = "brain.Event:2"
_uid = itertools.count()
_uid_lock = threading.Lock()


class EventFileWriter:
    """Writes `Event` protos to a new event file in `logdir` (see the module docstring).

        w = EventFileWriter("/tmp/logs", max_queue=10, flush_secs=120)
        w.add_event(event_pb2.Event(step=1, summary=...))
        w.close()
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str | None = None) -> None:
        self._logdir = str(logdir)
        self._max_queue = int(max_queue)
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._lock = threading.Lock()
        self._closed = True
        self._writer: Any = None
        self._path = ""
        self._open()

    def _open(self) -> None:
        # Imported on first use: tensorboard's writer package costs ~0.2 s to import.
        from tensorboard.summary.writer.event_file_writer import _AsyncWriter

        from flowlab.summary.records import RecordWriter

        os.makedirs(self._logdir, exist_ok=True)
        with _uid_lock:
            uid = next(_uid)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{uid}"
        self._path = os.path.join(self._logdir, name + self._suffix)
        f = open(self._path, "wb")  # noqa: SIM115 - owned by the record writer until close()
        # A queue of 0 would be unbounded in queue.Queue: keep at least one slot.
        self._writer = _AsyncWriter(RecordWriter(f), max(self._max_queue, 1), self._flush_secs)
        self._closed = False
        first = event_pb2.Event(wall_time=time.time(), file_version=FILE_VERSION)
        first.source_metadata.writer = "flowlab.summary"
        self._writer.write(first.SerializeToString())
        self._writer.flush()

    @property
    def path(self) -> str:
        """The event file being written (a new one after each `reopen()`)."""
        return self._path

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, event: Any) -> None:
        """Queue one `Event` proto; IOError once closed."""
        if not isinstance(event, event_pb2.Event):
            raise TypeError(f"Expected an event_pb2.Event proto, but got {type(event)}")
        with self._lock:
            if self._closed:
                raise OSError("Writer is closed")
            self._writer.write(event.SerializeToString())

    def flush(self) -> None:
        """Write every queued event to disk (no-op when closed)."""
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self) -> None:
        """Write pending events and close the file; idempotent."""
        with self._lock:
            if not self._closed:
                self._writer.close()
                self._closed = True

    def reopen(self) -> None:
        """After `close()`: continue in a new event file in the same logdir."""
        with self._lock:
            if self._closed:
                self._open()

    @property
    def closed(self) -> bool:
        return self._closed
