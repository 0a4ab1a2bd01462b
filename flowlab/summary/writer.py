"""`tf.summary.FileWriter` and `tf.summary.FileWriterCache`, as TensorFlow 1.x has them.

A `FileWriter` turns what a program logs into `Event` protos (tensorboard's
`event_pb2`, TensorFlow's schema) and hands them to an `EventFileWriter`
(flowlab/summary/event_file_writer.py), which writes them to an event file in the
background:

- `add_summary(summary, global_step)`: a serialized `Summary` (what a summary op's
  `sess.run` returns) or a `Summary` proto.  A value's `metadata` is written only
  the first time its tag is seen (TensorFlow saves the space the same way);
- `add_graph(graph)`: the graph as a TensorFlow `GraphDef` with `_output_shapes`
  (flowlab/graph/graph_def_pb.py); `FileWriter(logdir, graph)` also writes the
  `MetaGraphDef`, as TensorFlow does;
- `add_meta_graph`, `add_run_metadata(run_metadata, tag)` (per-node times for
  TensorBoard's graph dashboard; a tag is used once), `add_session_log`, `add_event`;
- `flush()`, `close()`, `reopen()` (a new event file in the same logdir),
  `get_logdir()`, usable as a context manager.

Every event gets `wall_time = time.time()` and `step` when a step is given.  After
`close()` writing is a no-op with a warning until `reopen()`, as in TensorFlow.
`FileWriterCache.get(logdir)` keeps one writer per logdir (made with the default
graph), `clear()` closes them all.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

from tensorboard.compat.proto import event_pb2, graph_pb2, summary_pb2

from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.graph_def_pb import to_proto
from flowlab.summary.event_file_writer import EventFileWriter
from flowlab.summary.protos import meta_graph_proto, run_metadata_proto

__all__ = ["FileWriter", "FileWriterCache"]


class FileWriter:
    """Writes summaries, graphs and run metadata to an event file in `logdir`.

        writer = tf.summary.FileWriter("/tmp/logs", sess.graph)
        writer.add_summary(sess.run(merged), step)
        writer.close()

    Args:
      logdir: the directory (created if missing).
      graph: a Graph (or GraphDef) to write at once, with its meta graph.
      max_queue: events that may wait for the background writer.
      flush_secs: the longest time an event waits before it is flushed to disk.
      graph_def: deprecated spelling of `graph`.
      filename_suffix: appended to the event file's name.
      session: unsupported (TensorFlow's writer resource); a ValueError.
    """

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def: Any = None, filename_suffix: str | None = None, session: Any = None) -> None:
        if session is not None:
            raise ValueError(
                "FileWriter(session=...) writes through a summary-writer resource, which flowlab "
                "does not have; pass no session (the events are written the same)."
            )
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._closed = False
        self._session_run_tags: dict[str, bool] = {}
        self._seen_summary_tags: set[str] = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)
            self.add_meta_graph(meta_graph_proto(graph_def if graph_def is not None else graph))

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def get_logdir(self) -> str:
        """The directory the event files are written to."""
        return self.event_writer.get_logdir()

    def _warn_if_closed(self) -> bool:
        if self._closed:
            warnings.warn(
                "Attempting to use a closed FileWriter. The operation will be a noop unless the "
                "FileWriter is explicitly reopened.", stacklevel=3,
            )
        return self._closed

    def _add_event(self, event: Any, step: Any) -> None:
        if self._warn_if_closed():
            return
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_event(self, event: Any) -> None:
        """Write an `Event` proto as it is."""
        if not self._warn_if_closed():
            self.event_writer.add_event(event)

    def add_summary(self, summary: Any, global_step: Any = None) -> None:
        """Write a `Summary` (proto or serialized bytes) at `global_step`."""
        if isinstance(summary, (bytes, bytearray, memoryview)):
            parsed = summary_pb2.Summary()
            parsed.ParseFromString(bytes(summary))
            summary = parsed
        elif not isinstance(summary, summary_pb2.Summary):
            raise TypeError(
                f"add_summary expects a Summary proto or its serialized bytes (what a summary op "
                f"returns from sess.run), got {type(summary).__name__}"
            )
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
                continue
            self._seen_summary_tags.add(value.tag)
        self._add_event(event_pb2.Event(summary=summary), global_step)

    def add_session_log(self, session_log: Any, global_step: Any = None) -> None:
        """Write a `SessionLog` (START / STOP / CHECKPOINT)."""
        self._add_event(event_pb2.Event(session_log=session_log), global_step)

    def add_graph(self, graph: Any, global_step: Any = None, graph_def: Any = None) -> None:
        """Write `graph` (a flowlab Graph, a GraphDef dict or a GraphDef proto) for
        TensorBoard's graph dashboard."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        g = graph if graph is not None else graph_def
        if isinstance(g, Graph):
            pb = to_proto(g, add_shapes=True)
        elif isinstance(g, graph_pb2.GraphDef):
            pb = g
        elif isinstance(g, dict):
            pb = to_proto(g)
        else:
            raise TypeError("The passed graph must be an instance of `Graph` or the deprecated `GraphDef`")
        self._add_event(event_pb2.Event(graph_def=pb.SerializeToString()), global_step)

    def add_meta_graph(self, meta_graph_def: Any, global_step: Any = None) -> None:
        """Write a `MetaGraphDef` (a proto, or flowlab's `export_meta_graph` dict)."""
        pb = meta_graph_proto(meta_graph_def)
        self._add_event(event_pb2.Event(meta_graph_def=pb.SerializeToString()), global_step)

    def add_run_metadata(self, run_metadata: Any, tag: str, global_step: Any = None) -> None:
        """Write a step's `RunMetadata` (from `sess.run(..., options=RunOptions(
        trace_level=FULL_TRACE), run_metadata=md)`) under `tag` (each tag once)."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags[tag] = True
        tagged = event_pb2.TaggedRunMetadata(
            tag=tag, run_metadata=run_metadata_proto(run_metadata).SerializeToString()
        )
        self._add_event(event_pb2.Event(tagged_run_metadata=tagged), global_step)

    def flush(self) -> None:
        """Block until every event added so far is on disk."""
        self._warn_if_closed()
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file; `reopen()` continues in a new one."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """Continue writing, in a new event file of the same logdir, after `close()`."""
        self.event_writer.reopen()
        self._closed = False


class FileWriterCache:
    """One FileWriter per logdir, shared by everything that asks (`tf.summary.FileWriterCache`)."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def clear() -> None:
        """Close and forget every cached writer."""
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir: str) -> FileWriter:
        """The writer of `logdir`, made with the default graph on first use."""
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return FileWriterCache._cache[logdir]
