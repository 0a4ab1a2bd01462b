"""Reading event files back: `tf.train.summary_iterator(path)` and a tailing reader.

An event file is a sequence of TFRecords -- little-endian uint64 length, masked
CRC-32C of the length, the `Event` bytes, masked CRC-32C of the bytes -- and both
readers check both checksums (flowlab/summary/records.py) and yield
`event_pb2.Event` messages in file order.  A record cut short at the end of the file
(a writer still writing) ends the iteration without consuming it; a checksum that
does not match is a `DataLossError` naming the file and the byte offset.

`EventFileReader(path).read_new()` returns the events appended since its previous
call (its one piece of state is the offset of the first unread record), which is
what a live plot of a run that is still training needs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from tensorboard.compat.proto import event_pb2

from flowlab import errors

__all__ = ["summary_iterator", "EventFileReader"]


def _records(path: str, offset: int) -> Iterator[tuple[int, Any]]:
    """(offset after the record, Event) for each whole record from byte `offset` on."""
    from flowlab.summary.records import masked_crc32c

    with open(path, "rb") as f:
        f.seek(offset)
        while True:
            header = f.read(12)
            if len(header) < 12:
                return
            (length,) = struct.unpack("<Q", header[:8])
            (length_crc,) = struct.unpack("<I", header[8:])
            if masked_crc32c(header[:8]) != length_crc:
                raise errors.DataLossError(None, None, f"{path}: corrupted record length at byte {offset}")
            body = f.read(length + 4)
            if len(body) < length + 4:
                return
            data = body[:length]
            (data_crc,) = struct.unpack("<I", body[length:])
            if masked_crc32c(data) != data_crc:
                raise errors.DataLossError(None, None, f"{path}: corrupted record data at byte {offset}")
            event = event_pb2.Event()
            event.ParseFromString(data)
            offset += 12 + length + 4
            yield offset, event


def summary_iterator(path: str) -> Iterator[Any]:
    """Yield the `Event` protos of the event file `path`, in order.

        for e in tf.train.summary_iterator(path):
            for v in e.summary.value:
                print(e.step, v.tag, v.simple_value)
    """
    for _, event in _records(path, 0):
        yield event


class EventFileReader:
    """Reads an event file that may still be growing, a batch of new events at a time.

        r = EventFileReader(path)
        r.read_new()   # everything so far
        r.read_new()   # only what was written since
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0

    def read_new(self) -> list[Any]:
        """The whole records after the last one returned (a partial one waits)."""
        out = []
        for end, event in _records(self.path, self.offset):
            self.offset = end
            out.append(event)
        return out
