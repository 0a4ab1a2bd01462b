"""TFRecord files from Python (`tf.io.TFRecordWriter`, `tf.python_io.tf_record_iterator`).

The framing and its checks live in flowlab.kernels.record_io, shared with the
TFRecordDataset kernel; this module is the Python API TensorFlow 1.x programs call
to write records (usually serialized `tf.train.Example`s) and to read them back
outside a graph.

    >>> with TFRecordWriter("/tmp/x.tfrecord") as w:
    ...     w.write(example.SerializeToString())
    >>> list(tf_record_iterator("/tmp/x.tfrecord"))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flowlab.kernels.record_io import TFRecordFileWriter, read_tfrecords

__all__ = ["TFRecordWriter", "TFRecordOptions", "TFRecordCompressionType", "tf_record_iterator"]


class TFRecordCompressionType:
    """The compression of a TFRecord file (`tf.io.TFRecordCompressionType`)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
          TFRecordCompressionType.GZIP: "GZIP"}


class TFRecordOptions:
    """Options of a TFRecord file: its compression (`tf.io.TFRecordOptions`)."""

    def __init__(self, compression_type: Any = None, **unused: Any) -> None:
        if compression_type is None:
            compression_type = ""
        if isinstance(compression_type, int):
            compression_type = _NAMES[compression_type]
        if compression_type not in ("", "ZLIB", "GZIP"):
            raise ValueError(f'Unsupported compression_type: "{compression_type}"')
        self.compression_type = compression_type

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return TFRecordOptions(options).compression_type


class TFRecordWriter:
    """Writes records to a TFRecord file; a context manager (`tf.io.TFRecordWriter`)."""

    def __init__(self, path: str, options: Any = None) -> None:
        self._w = TFRecordFileWriter(str(path), TFRecordOptions.get_compression_type_string(options))

    def write(self, record: bytes) -> None:
        """Append one record (bytes or str)."""
        self._w.write(record.encode() if isinstance(record, str) else record)

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def tf_record_iterator(path: str, options: Any = None) -> Iterator[bytes]:
    """The records of a TFRecord file, checked (DataLossError on a corrupt one)."""
    return read_tfrecords(str(path), TFRecordOptions.get_compression_type_string(options))
