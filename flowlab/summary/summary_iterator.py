"""Reading event files back: `tf.train.summary_iterator(path)`.

An event file is a sequence of TFRecords -- little-endian uint64 length, masked
CRC-32C of the length, the `Event` bytes, masked CRC-32C of the bytes -- and this
iterator checks both checksums (flowlab/summary/records.py) and yields
`event_pb2.Event` messages in file order.  A record cut short at the end of the file
(a writer still writing) ends the iteration; a checksum that does not match is a
`DataLossError` naming the file and the byte offset.  Nothing is cached.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from tensorboard.compat.proto import event_pb2

from flowlab import errors

__all__ = ["summary_iterator"]


def summary_iterator(path: str) -> Iterator[Any]:
    """Yield the `Event` protos of the event file `path`, in order.

        for e in tf.train.summary_iterator(path):
            for v in e.summary.value:
                print(e.step, v.tag, v.simple_value)
    """
    from flowlab.summary.records import masked_crc32c

    with open(path, "rb") as f:
        offset = 0
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
            yield event
            offset += 12 + length + 4
