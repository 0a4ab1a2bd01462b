"""Readers and parsers for file-reading input pipelines (paper section 3.1, Figure 2).

A reader op (`TextLineReaderV2`, `FixedLengthRecordReaderV2`, `WholeFileReaderV2`)
outputs a `resource` handle to a reader living in its device's resource manager
(flowlab.kernels.io_kernels).  `ReaderReadV2(reader, queue)` produces one (key, value)
record; when the reader has finished its current file it dequeues the next file name
from `queue` (asynchronously: a closed, drained queue ends the input with
OutOfRangeError).  `decode_csv`, `decode_raw` and `read_file` turn records into
tensors.  Names, attrs and static shapes follow TensorFlow 1.x.

    filenames = tf.train.string_input_producer(["a.csv", "b.csv"])
    key, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
    x, y = tf.decode_csv(line, record_defaults=[[0.0], [0]])
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "ReaderBase",
    "TextLineReader",
    "FixedLengthRecordReader",
    "WholeFileReader",
    "TFRecordReader",
    "IdentityReader",
    "decode_csv",
    "decode_raw",
    "read_file",
    "matching_files",
]

_READER_ATTRS = ["container: string = ''", "shared_name: string = ''"]


def _scalar(op: Any) -> list[Any]:
    return [TensorShape([])]


def _two_scalars(op: Any) -> list[Any]:
    return [TensorShape([]), TensorShape([])]


def _two_vectors(op: Any) -> list[Any]:
    return [TensorShape([None]), TensorShape([None])]


op_def("TextLineReaderV2", outputs=["reader_handle: resource"],
       attrs=["skip_header_lines: int = 0", *_READER_ATTRS], shape_fn=_scalar, stateful=True,
       doc="A reader that outputs the lines of a file, keyed by 'file:line'.")
op_def("FixedLengthRecordReaderV2", outputs=["reader_handle: resource"],
       attrs=["header_bytes: int = 0", "record_bytes: int", "footer_bytes: int = 0",
              "hop_bytes: int = 0", *_READER_ATTRS, "encoding: string = ''"],
       shape_fn=_scalar, stateful=True,
       doc="A reader that outputs fixed-length records of a file, keyed by 'file:index'.")
op_def("WholeFileReaderV2", outputs=["reader_handle: resource"], attrs=_READER_ATTRS,
       shape_fn=_scalar, stateful=True, doc="A reader that outputs whole files, keyed by name.")
op_def("TFRecordReaderV2", outputs=["reader_handle: resource"],
       attrs=[*_READER_ATTRS, "compression_type: string = ''"], shape_fn=_scalar, stateful=True,
       doc="A reader that outputs the records of TFRecord files, keyed by 'file:offset'.")
op_def("IdentityReaderV2", outputs=["reader_handle: resource"], attrs=_READER_ATTRS,
       shape_fn=_scalar, stateful=True,
       doc="A reader that outputs each work unit (file name) as both key and value.")
op_def("ReaderReadV2", inputs=["reader_handle: resource", "queue_handle: resource"],
       outputs=["key: string", "value: string"], shape_fn=_two_scalars, stateful=True,
       doc="The next (key, value) record; takes file names from the queue as needed.")
op_def("ReaderReadUpToV2",
       inputs=["reader_handle: resource", "queue_handle: resource", "num_records: int64"],
       outputs=["keys: string", "values: string"], shape_fn=_two_vectors, stateful=True,
       doc="Up to num_records (key, value) records.")
op_def("ReaderNumRecordsProducedV2", inputs=["reader_handle: resource"],
       outputs=["records_produced: int64"], shape_fn=_scalar, stateful=True,
       doc="How many records the reader has produced.")
op_def("ReaderNumWorkUnitsCompletedV2", inputs=["reader_handle: resource"],
       outputs=["units_completed: int64"], shape_fn=_scalar, stateful=True,
       doc="How many files the reader has finished.")
op_def("ReaderResetV2", inputs=["reader_handle: resource"], stateful=True,
       doc="Return the reader to its initial state.")


def _same_shape_outputs(op: Any) -> list[Any]:
    return [op.inputs[0].shape] * len(op.get_attr("OUT_TYPE"))


def _decode_raw_shape(op: Any) -> list[Any]:
    s = op.inputs[0].shape
    if s.dims is None:
        return [TensorShape(None)]
    return [s.concatenate([None])]


op_def("DecodeCSV", inputs=["records: string", "record_defaults: OUT_TYPE"],
       outputs=["output: OUT_TYPE"],
       attrs=["OUT_TYPE: list(type) >= 1", "field_delim: string = ','", "use_quote_delim: bool = true",
              "na_value: string = ''", "select_cols: list(int) = []"],
       shape_fn=_same_shape_outputs, doc="Parse CSV records into one tensor per column.")
op_def("DecodeRaw", inputs=["bytes: string"], outputs=["output: out_type"],
       attrs=["out_type: {float16, float32, float64, int32, uint16, uint8, int16, int8, int64, "
              "complex64, complex128, bool}", "little_endian: bool = true"],
       shape_fn=_decode_raw_shape, doc="Reinterpret the bytes of strings as numbers.")
op_def("MatchingFiles", inputs=["pattern: string"], outputs=["filenames: string"],
       shape_fn=lambda op: [TensorShape([None])], doc="The sorted file names matching glob pattern(s).")
op_def("ReadFile", inputs=["filename: string"], outputs=["contents: string"], shape_fn=_scalar,
       doc="The contents of a file.")

for _t in ("TextLineReaderV2", "FixedLengthRecordReaderV2", "WholeFileReaderV2", "TFRecordReaderV2",
           "IdentityReaderV2", "ReaderReadV2",
           "ReaderReadUpToV2", "ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2",
           "ReaderResetV2", "DecodeCSV", "DecodeRaw", "ReadFile", "MatchingFiles"):
    not_differentiable(_t)


class ReaderBase:
    """A reader's handle and the builders of its ops (`tf.ReaderBase`)."""

    def __init__(self, reader_ref: Tensor, supports_serialize: bool = False) -> None:
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self) -> Tensor:
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        return self._supports_serialize

    @staticmethod
    def _queue_ref(queue: Any) -> Any:
        return queue if isinstance(queue, Tensor) else queue.queue_ref

    def read(self, queue: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """The next (key, value) record, taking file names from `queue`."""
        key, value = apply_op("ReaderReadV2", reader_handle=self._reader_ref,
                              queue_handle=self._queue_ref(queue), name=name or "ReaderReadV2")
        return key, value

    def read_up_to(self, queue: Any, num_records: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """Up to `num_records` records (fewer at the end of a file)."""
        keys, values = apply_op("ReaderReadUpToV2", reader_handle=self._reader_ref,
                                queue_handle=self._queue_ref(queue),
                                num_records=num_records,
                                name=name or "ReaderReadUpToV2")
        return keys, values

    def num_records_produced(self, name: str | None = None) -> Tensor:
        return apply_op("ReaderNumRecordsProducedV2", reader_handle=self._reader_ref,
                        name=name or "ReaderNumRecordsProducedV2")

    def num_work_units_completed(self, name: str | None = None) -> Tensor:
        return apply_op("ReaderNumWorkUnitsCompletedV2", reader_handle=self._reader_ref,
                        name=name or "ReaderNumWorkUnitsCompletedV2")

    def reset(self, name: str | None = None) -> Any:
        return apply_op("ReaderResetV2", reader_handle=self._reader_ref, name=name or "ReaderResetV2")


class TextLineReader(ReaderBase):
    """Lines of text files, without their line endings; keys are 'file:line_number'."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        ref = apply_op("TextLineReaderV2", skip_header_lines=skip_header_lines or 0,
                       name=name or "TextLineReaderV2")
        super().__init__(ref)


class FixedLengthRecordReader(ReaderBase):
    """Records of `record_bytes` bytes after `header_bytes`, before `footer_bytes`
    (records start every `hop_bytes` when it is set); keys are 'file:record_index'."""

    def __init__(self, record_bytes: int, header_bytes: int | None = None,
                 footer_bytes: int | None = None, hop_bytes: int | None = None,
                 name: str | None = None, encoding: str | None = None) -> None:
        ref = apply_op("FixedLengthRecordReaderV2", record_bytes=record_bytes,
                       header_bytes=header_bytes or 0, footer_bytes=footer_bytes or 0,
                       hop_bytes=hop_bytes or 0, encoding=encoding or "",
                       name=name or "FixedLengthRecordReaderV2")
        super().__init__(ref)


class WholeFileReader(ReaderBase):
    """Whole files; the key is the file name."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(apply_op("WholeFileReaderV2", name=name or "WholeFileReaderV2"))


_COMPRESSION_NAMES = {0: "", 1: "ZLIB", 2: "GZIP"}  # tf.io.TFRecordCompressionType's values


def _compression_type_string(options: Any) -> str:
    """TFRecordOptions, a TFRecordCompressionType value, a string or None -> "", "ZLIB"
    or "GZIP" (TFRecordOptions.get_compression_type_string)."""
    if options is None:
        return ""
    if isinstance(options, int):
        return _COMPRESSION_NAMES[options]
    if isinstance(options, str):
        return options
    return _compression_type_string(options.compression_type)


class TFRecordReader(ReaderBase):
    """The records of TFRecord files (`options`: their compression); keys are
    'file:offset', the record's byte offset in the uncompressed stream."""

    def __init__(self, name: str | None = None, options: Any = None) -> None:
        ref = apply_op("TFRecordReaderV2", compression_type=_compression_type_string(options),
                       name=name or "TFRecordReaderV2")
        super().__init__(ref)


class IdentityReader(ReaderBase):
    """Each work unit from the queue as one record: key and value are the file name,
    and the file is never opened."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(apply_op("IdentityReaderV2", name=name or "IdentityReaderV2"),
                         supports_serialize=True)


def decode_csv(records: Any, record_defaults: Any, field_delim: str = ",", use_quote_delim: bool = True,
               name: str | None = None, na_value: str = "", select_cols: Any = None) -> list[Tensor]:
    """One tensor per column of the CSV `records`; an empty field takes its column's
    default (a column whose default is empty is required)."""
    if select_cols is not None and any(select_cols[i] >= select_cols[i + 1]
                                       for i in range(len(select_cols) - 1)):
        raise ValueError("select_cols is not strictly increasing.")
    if select_cols is not None and select_cols and select_cols[0] < 0:
        raise ValueError("select_cols contains negative values.")
    if select_cols is not None and len(select_cols) != len(record_defaults):
        raise ValueError("Length of select_cols and record_defaults do not match.")
    out = apply_op("DecodeCSV", records=records, record_defaults=list(record_defaults),
                   field_delim=field_delim, use_quote_delim=use_quote_delim, na_value=na_value,
                   select_cols=list(select_cols or []), name=name or "DecodeCSV")
    return out if isinstance(out, list) else [out]


def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True,
               name: str | None = None, bytes: Any = None) -> Tensor:  # noqa: A002 - TF's name
    """The bytes of each string reinterpreted as `out_type` numbers (a new last axis)."""
    if input_bytes is None:
        input_bytes = bytes
    return apply_op("DecodeRaw", bytes=input_bytes, out_type=out_type, little_endian=little_endian,
                    name=name or "DecodeRaw")


def read_file(filename: Any, name: str | None = None) -> Tensor:
    """The contents of the file `filename` as a string scalar."""
    return apply_op("ReadFile", filename=filename, name=name or "ReadFile")


def matching_files(pattern: Any, name: str | None = None) -> Tensor:
    """The sorted names of the files matching the glob `pattern` (a string or a vector
    of them)."""
    return apply_op("MatchingFiles", pattern=pattern, name=name or "MatchingFiles")
