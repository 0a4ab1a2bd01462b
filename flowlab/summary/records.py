"""TFRecord framing for event files: tensorboard's `RecordWriter`, with a fast CRC.

A record is: little-endian uint64 length, masked CRC-32C of those 8 bytes, the
data, masked CRC-32C of the data (mask: rotate right by 15, add 0xa282ead8).
tensorboard's `RecordWriter` frames records this way, but its CRC-32C is pure
Python (about 10 MB/s), which made writing a histogram summary per step cost more
than the step; `masked_crc32c` here uses the `google-crc32c` C extension when it is
installed (a dependency of flowlab) and tensorboard's function otherwise -- the same
values either way.  `RecordWriter` is tensorboard's class with only the checksum
function swapped.  Stateless apart from the writer's file.
"""

from __future__ import annotations

import struct
from typing import Any

from tensorboard.summary.writer.record_writer import RecordWriter as _TensorBoardRecordWriter

__all__ = ["RecordWriter", "masked_crc32c"]

_gcrc: Any
try:
    import google_crc32c as _gcrc
except ImportError:  # pragma: no cover - exercised only without the C extension
    _gcrc = None


def _u32(x: int) -> int:
    return x & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TensorFlow's masked CRC-32C of `data` (what TFRecords store)."""
    if _gcrc is None:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as slow

        return int(slow(data))
    x = _gcrc.value(data)
    return _u32(((x >> 15) | _u32(x << 17)) + 0xA282EAD8)


class RecordWriter(_TensorBoardRecordWriter):
    """tensorboard's record writer over a binary file, with `masked_crc32c` above."""

    def write(self, data: Any) -> None:
        header = struct.pack("<Q", len(data))
        self._writer.write(
            header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))
        )
