"""`tf.summary` (TensorFlow 1.x): summary ops, `FileWriter`, and the event protos.

The ops (`scalar`, `histogram`, `image`, `audio`, `text`, `tensor_summary`, `merge`,
`merge_all`) are flowlab/ops/summary_ops.py, their kernels
flowlab/kernels/summary_kernels.py; `FileWriter` and `FileWriterCache` are
flowlab/summary/writer.py.  `Summary`, `Event`, `SessionLog`, `SummaryDescription`
and `TaggedRunMetadata` are TensorFlow's own message classes, from the `tensorboard`
package (`tf.Summary(value=[tf.Summary.Value(tag="x", simple_value=1.0)])`).
"""

from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryDescription

from flowlab.ops.summary_ops import (
    audio,
    get_summary_description,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from flowlab.summary.writer import FileWriter, FileWriterCache

__all__ = [
    "Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary",
    "SummaryDescription", "TaggedRunMetadata", "audio", "get_summary_description", "histogram",
    "image", "merge", "merge_all", "scalar", "tensor_summary", "text",
]
