"""Summary ops: `tf.summary.scalar`, `histogram`, `image`, `audio`, `text`,
`tensor_summary`, `merge`, `merge_all` as TensorFlow 1.x builds them.

Each builder adds one op of TensorFlow's type (`ScalarSummary`, `HistogramSummary`,
`ImageSummary`, `AudioSummaryV2`, `TensorSummaryV2`, `MergeSummary`) whose output is
a scalar string: a serialized `Summary` protocol buffer (the kernels are in
flowlab/kernels/summary_kernels.py).  They are ops like any other, so they are
placed, partitioned, pruned and shown in the pictures; a step that fetches one runs
it, a step that does not never pays for it.

Names and tags follow TensorFlow's `summary_scope`: the name is cleaned (characters
outside `[-/\\w.]` become `_`, leading `/` dropped), a name scope is opened on it (or
on `family/name`), the op takes the scope's name and the tag is the scope without
its trailing `/` -- prefixed once more with `family/` when a family is given, so
`scalar("loss", x, family="train")` is the op `train/loss` with the tag
`train/train/loss`, as in TensorFlow.  Every builder adds its output to
`collections` (default `[GraphKeys.SUMMARIES]`; `merge`'s default is none), which is
what `merge_all(key)` merges.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.graph_keys import GraphKeys
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "scalar", "histogram", "image", "audio", "text", "tensor_summary", "merge", "merge_all",
    "get_summary_description",
]


def _scalar(op: Any) -> list[TensorShape]:
    return [TensorShape([])]


op_def("ScalarSummary", inputs=["tags: string", "values: T"], outputs=["summary: string"],
       attrs=["T: real"], shape_fn=_scalar,
       doc="A Summary with one simple_value per element of `values`, tagged by `tags`.")
op_def("HistogramSummary", inputs=["tag: string", "values: T"], outputs=["summary: string"],
       attrs=["T: real = float32"], shape_fn=_scalar,
       doc="A Summary holding the histogram of `values` (TensorFlow's default buckets).")
op_def("ImageSummary", inputs=["tag: string", "tensor: T"], outputs=["summary: string"],
       attrs=["max_images: int >= 1 = 3", "T: {uint8, float32, float16, float64} = float32",
              "bad_color: tensor = None"],
       shape_fn=_scalar, doc="A Summary with up to `max_images` PNG images of `tensor`.")
op_def("AudioSummaryV2", inputs=["tag: string", "tensor: float32", "sample_rate: float32"],
       outputs=["summary: string"], attrs=["max_outputs: int >= 1 = 3"], shape_fn=_scalar,
       doc="A Summary with up to `max_outputs` WAV clips of `tensor`.")
op_def("TensorSummaryV2", inputs=["tag: string", "tensor: T", "serialized_summary_metadata: string"],
       outputs=["summary: string"], attrs=["T: type"], shape_fn=_scalar,
       doc="A Summary holding `tensor` itself (TensorProto) and its SummaryMetadata.")
op_def("MergeSummary", inputs=["inputs: N * string"], outputs=["summary: string"],
       attrs=["N: int >= 1"], shape_fn=_scalar,
       doc="The union of the values of serialized Summary protos; a repeated tag is an error.")
for _t in ("ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2",
           "TensorSummaryV2", "MergeSummary"):
    not_differentiable(_t)

# ImageSummary's default `bad_color`: opaque red, the colour of non-finite pixels.
BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def clean_tag(name: str | None) -> str | None:
    """`name` with characters outside `[-/\\w.]` replaced by `_` and leading `/`
    removed (TensorFlow's summary_op_util.clean_tag)."""
    if name is not None:
        name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    return name


@contextlib.contextmanager
def summary_scope(name: str | None, family: str | None = None, default_name: str | None = None,
                  values: Any = None) -> Iterator[tuple[str, str]]:
    """Open the name scope of a summary; yields `(tag, scope)` (see the module docstring)."""
    name = clean_tag(name)
    family = clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    g = graph_of(values) if values else get_default_graph()
    with g.as_default(), g.name_scope(base if base is not None else default_name) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def _collect(value: Any, collections: Any, default: list[str]) -> None:
    g = value.graph
    for key in default if collections is None else collections:
        g.add_to_collection(key, value)


def scalar(name: str, tensor: Any, collections: list[str] | None = None,
           family: str | None = None) -> Tensor:
    """A `ScalarSummary`: a scalar string Tensor holding a serialized Summary whose one
    value is `tensor` as `simple_value` (`tf.summary.scalar`).

        loss_summary = tf.summary.scalar("loss", loss)   # op 'loss', tag 'loss'

    `tensor` must hold one real number; anything else fails when the op runs
    ("tags and values are not the same shape"), as in TensorFlow.
    """
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        val = apply_op("ScalarSummary", tags=tag, values=tensor, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def histogram(name: str, values: Any, collections: list[str] | None = None,
              family: str | None = None) -> Tensor:
    """A `HistogramSummary` of `values` (any shape, real): min, max, count, sum, sum of
    squares and counts in TensorFlow's default buckets (`tf.summary.histogram`).
    A NaN or an infinity fails the step with InvalidArgumentError."""
    with summary_scope(name, family, default_name="HistogramSummary", values=[values]) as (tag, scope):
        val = apply_op("HistogramSummary", tag=tag, values=values, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def image(name: str, tensor: Any, max_outputs: int = 3, collections: list[str] | None = None,
          family: str | None = None) -> Tensor:
    """An `ImageSummary` of a `[batch, height, width, channels]` tensor (channels 1, 3 or
    4; uint8, or float scaled per image as TensorFlow does), as PNG images tagged
    `name/image` (max_outputs 1) or `name/image/0`, `name/image/1`, ... (`tf.summary.image`)."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        val = apply_op("ImageSummary", tag=tag, tensor=tensor, max_images=max_outputs,
                       bad_color=BAD_COLOR, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def audio(name: str, tensor: Any, sample_rate: Any, max_outputs: int = 3,
          collections: list[str] | None = None, family: str | None = None) -> Tensor:
    """An `AudioSummaryV2` of a float32 `[batch, frames]` or `[batch, frames, channels]`
    tensor with values in [-1, 1], as 16-bit WAV clips tagged `name/audio` or
    `name/audio/i` (`tf.summary.audio`)."""
    with summary_scope(name, family=family, values=[tensor]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        val = apply_op("AudioSummaryV2", tag=tag, tensor=tensor, max_outputs=max_outputs,
                       sample_rate=rate, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def _metadata_pb2() -> Any:
    from tensorboard.compat.proto import summary_pb2

    return summary_pb2


def text(name: str, tensor: Any, collections: list[str] | None = None) -> Tensor:
    """A `TensorSummaryV2` of a string tensor that TensorBoard's text dashboard shows
    (plugin "text"; `tf.summary.text`).  ValueError if `tensor` is not a string."""
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got {tensor.dtype}")
    pb = _metadata_pb2()
    metadata = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, summary_metadata=metadata, collections=collections)


def tensor_summary(name: str, tensor: Any, summary_description: str | None = None,
                   collections: list[str] | None = None, summary_metadata: Any = None,
                   family: str | None = None, display_name: str | None = None) -> Tensor:
    """A `TensorSummaryV2`: a Summary holding `tensor` as a TensorProto, with its
    `SummaryMetadata` (description, display name, plugin) (`tf.summary.tensor_summary`)."""
    pb = _metadata_pb2()
    if summary_metadata is None:
        summary_metadata = pb.SummaryMetadata()
    if summary_description is not None:
        summary_metadata.summary_description = summary_description
    if display_name is not None:
        summary_metadata.display_name = display_name
    serialized = summary_metadata.SerializeToString()
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        val = apply_op("TensorSummaryV2", tag=tag, tensor=tensor,
                       serialized_summary_metadata=serialized, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def merge(inputs: list[Any], collections: list[str] | None = None, name: str | None = None) -> Tensor:
    """A `MergeSummary` of serialized Summary tensors: one Summary with all their values,
    in order (`tf.summary.merge`).  Two values with the same tag fail the step
    ("Duplicate tag ... found in summary inputs")."""
    name = clean_tag(name)
    g = graph_of([inputs]) if inputs else get_default_graph()
    with g.as_default(), g.name_scope(name if name is not None else "Merge"):
        val = apply_op("MergeSummary", inputs=list(inputs), name=name)
        _collect(val, collections, [])
    return val


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None,
              name: str | None = None) -> Tensor | None:
    """`merge` of every summary in collection `key` of the default graph (those whose
    name matches `scope`, with `re.match`), or None when there is none (`tf.summary.merge_all`)."""
    summary_ops = get_default_graph().get_collection(key, scope=scope)
    if not summary_ops:
        return None
    return merge(summary_ops, name=name)


def get_summary_description(node_def: Any) -> Any:
    """The `SummaryDescription` of a `TensorSummary` node (`tf.summary.get_summary_description`).

    TensorFlow 1.x reads it from the op's `description` attr (JSON); flowlab builds
    only `TensorSummaryV2`, so for any other node this is a ValueError, as TensorFlow's."""
    op = node_def["op"] if isinstance(node_def, dict) else node_def.op
    if op != "TensorSummary":
        raise ValueError(f"Can't get_summary_description on {op}")
    from google.protobuf import json_format

    attr = node_def["attr"]["description"]["s"] if isinstance(node_def, dict) else node_def.attr["description"].s
    text_ = attr.decode() if isinstance(attr, bytes) else attr
    return json_format.Parse(text_, _metadata_pb2().SummaryDescription())
