"""Kernels of the summary ops: each returns a serialized `Summary` protocol buffer.

The messages are `tensorboard.compat.proto.summary_pb2.Summary` (TensorFlow's own
schema, shipped by the `tensorboard` package), so the bytes are what TensorFlow's
kernels produce for the same input:

- `ScalarSummary`: one `simple_value` (as float32) per element, `tags` and `values`
  of one shape;
- `HistogramSummary`: `HistogramProto` with TensorFlow's default bucket limits
  (`histogram.cc`: +-1e-12 growing by 10% up to +-1e20, +-DBL_MAX, and 0), counts by
  upper bound, runs of empty buckets collapsed into their last limit, and sum and
  sum of squares accumulated in order in double precision;
- `ImageSummary`: float images scaled per image as TensorFlow does (all >= 0: by
  255/max; else by 127/max|x| around 128; non-finite pixels take `bad_color`),
  encoded by flowlab.kernels.png_encoder (TensorFlow's PNG bytes);
- `AudioSummaryV2`: 16-bit PCM WAV, samples clamped to [-1, 1] * 32768 rounded half
  away from zero, the rate rounded to an integer in the header;
- `TensorSummaryV2`: the tensor as a `TensorProto` (raw `tensor_content`;
  `string_val` for strings) and the op's `SummaryMetadata`;
- `MergeSummary`: the values of every input Summary in order; a non-empty tag seen
  twice is an error.

Stateless: every kernel is a pure function of its inputs and attrs.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

import numpy as np
from tensorboard.compat.proto import summary_pb2

from flowlab import errors
from flowlab.kernels.png_encoder import encode_png
from flowlab.kernels.registry import CPU, kernel

__all__ = ["bucket_limits", "histogram_proto", "tensor_proto"]

_DBL_MAX = sys.float_info.max


def _default_bucket_limits() -> np.ndarray:
    pos = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(_DBL_MAX)
    return np.array([-x for x in reversed(pos)] + [0.0] + pos)


_LIMITS = _default_bucket_limits()


def bucket_limits() -> np.ndarray:
    """TensorFlow's default histogram bucket limits (a copy)."""
    return _LIMITS.copy()


def histogram_proto(values: np.ndarray, proto: Any) -> None:
    """Fill `proto` (a HistogramProto) with the histogram of finite `values`, as
    TensorFlow's `Histogram::EncodeToProto(proto, preserve_zero_buckets=false)`."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    counts = np.bincount(np.searchsorted(_LIMITS, x, side="right"), minlength=len(_LIMITS))
    counts = counts[: len(_LIMITS)].astype(np.float64)
    if x.size:
        proto.min = float(x.min())
        proto.max = float(x.max())
        proto.sum = float(np.add.accumulate(x)[-1])  # in order, as the C++ loop adds
        proto.sum_squares = float(np.add.accumulate(x * x)[-1])
    else:
        proto.min = _DBL_MAX
        proto.max = -_DBL_MAX
        proto.sum = 0.0
        proto.sum_squares = 0.0
    proto.num = float(x.size)
    nonzero = counts > 0
    # An empty bucket is written only as the last of its run of empty buckets.
    last_of_run = np.append(nonzero[1:], True)
    keep = nonzero | last_of_run
    proto.bucket_limit.extend(_LIMITS[keep].tolist())
    proto.bucket.extend(counts[keep].tolist())


def _scalar_bytes(x: Any, message: str) -> bytes:
    if isinstance(x, bytes):
        return x
    a = np.asarray(x, dtype=object)
    if a.shape != ():
        raise errors.InvalidArgumentError(None, None, message)
    v = a.item()
    return v if isinstance(v, bytes) else str(v).encode()


def _flat_strings(x: Any) -> list[bytes]:
    if isinstance(x, bytes):
        return [x]
    return [v if isinstance(v, bytes) else str(v).encode() for v in np.asarray(x, dtype=object).reshape(-1)]


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


@kernel("ScalarSummary", devices=CPU)
def scalar_summary(ctx: Any, tags: Any, values: Any) -> bytes:
    tag_list = _flat_strings(tags)
    tags_shape = np.shape(tags) if not isinstance(tags, bytes) else ()
    values = np.asarray(values)
    if tags_shape != values.shape:
        single = f" (tag '{tag_list[0].decode(errors='replace')}')" if len(tag_list) == 1 else ""
        raise errors.InvalidArgumentError(
            None, None, f"tags and values are not the same shape: {_shape_str(tags_shape)} != "
            f"{_shape_str(values.shape)}{single}"
        )
    s = summary_pb2.Summary()
    for tag, v in zip(tag_list, values.astype(np.float32).reshape(-1).tolist()):
        s.value.add(tag=tag.decode("utf-8", errors="replace"), simple_value=v)
    return s.SerializeToString()


@kernel("HistogramSummary", devices=CPU)
def histogram_summary(ctx: Any, tag: Any, values: Any) -> bytes:
    tag_b = _scalar_bytes(tag, "tags must be scalar")
    x = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(x)
    if not finite.all():
        first = x.reshape(-1)[np.argmin(finite.reshape(-1))]
        kind = "Nan in summary histogram" if np.isnan(first) else "Infinity in Histogram"
        raise errors.InvalidArgumentError(None, None, f"{kind} for: {ctx.name}")
    s = summary_pb2.Summary()
    v = s.value.add(tag=tag_b.decode("utf-8", errors="replace"))
    histogram_proto(x, v.histo)
    return s.SerializeToString()


def _normalize_float_image(values: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """TensorFlow's NormalizeFloatImage of one `[hw, depth]` image (float16/32/64)."""
    finite = np.isfinite(values).all(axis=1)
    good = values[finite].astype(np.float32)
    image_min = np.float32(good.min()) if good.size else np.float32(np.inf)
    image_max = np.float32(good.max()) if good.size else np.float32(-np.inf)
    t = values.dtype.type
    if image_min < 0:
        max_val = max(abs(image_min), abs(image_max))
        scale = t(np.float32(0.0) if max_val < np.float32(1e-6) else np.float32(127.0) / max_val)
        offset = t(128.0)
    else:
        scale = t(np.float32(0.0) if image_max < np.float32(1e-6) else np.float32(255.0) / image_max)
        offset = t(0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = (values * scale + offset).astype(np.uint8)
    scaled[~finite] = bad_color
    return scaled


@kernel("ImageSummary", devices=CPU)
def image_summary(ctx: Any, tag: Any, tensor: Any) -> bytes:
    base_tag = _scalar_bytes(tag, "Tags must be a scalar").decode("utf-8", errors="replace")
    tensor = np.asarray(tensor)
    if tensor.ndim != 4 or tensor.shape[3] not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None, None, f"Tensor must be 4-D with last dim 1, 3, or 4, not {_shape_str(tensor.shape)}"
        )
    batch, h, w, depth = tensor.shape
    if h * w <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"input tensor must have non-zero dims. Found: [{batch}, {h}, {w}, {depth}]."
        )
    max_images = int(ctx.attrs["max_images"])
    bad_color = ctx.attrs.get("bad_color")
    bad_color = np.array([255, 0, 0, 255], np.uint8) if bad_color is None else np.asarray(bad_color)
    s = summary_pb2.Summary()
    n = min(max_images, batch)
    if n and tensor.dtype != np.uint8:
        if bad_color.dtype != np.uint8:
            raise errors.InvalidArgumentError(None, None, f"bad_color must be uint8, got {bad_color.dtype}")
        if bad_color.shape[0] < depth:
            raise errors.InvalidArgumentError(
                None, None, f"expected depth <= bad_color.size, got depth = {depth}, "
                f"bad_color.size = {bad_color.shape[0]}"
            )
    for i in range(n):
        flat = tensor[i].reshape(h * w, depth)
        if tensor.dtype != np.uint8:
            flat = _normalize_float_image(flat, bad_color[:depth])
        v = s.value.add(tag=f"{base_tag}/image/{i}" if max_images > 1 else f"{base_tag}/image")
        v.image.height = h
        v.image.width = w
        v.image.colorspace = depth
        v.image.encoded_image_string = encode_png(flat.reshape(h, w, depth))
    return s.SerializeToString()


def encode_wav(frames: np.ndarray, sample_rate: int) -> bytes:
    """16-bit little-endian PCM WAV of `[frames, channels]` float samples in [-1, 1]
    (TensorFlow's wav::EncodeAudioAsS16LEWav)."""
    n_frames, channels = frames.shape
    y = np.asarray(frames, np.float32) * np.float32(32768.0)
    y64 = y.astype(np.float64)
    rounded = np.sign(y64) * np.floor(np.abs(y64) + 0.5)  # roundf: half away from zero
    samples = np.nan_to_num(np.clip(rounded, -32768, 32767)).astype("<i2")
    data = samples.tobytes()
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(data), b"WAVE", b"fmt ", 16, 1, channels,
        sample_rate, sample_rate * 2 * channels, 2 * channels, 16, b"data", len(data),
    )
    return header + data


@kernel("AudioSummaryV2", devices=CPU)
def audio_summary(ctx: Any, tag: Any, tensor: Any, sample_rate: Any) -> bytes:
    base_tag = _scalar_bytes(tag, "Tag must be a scalar").decode("utf-8", errors="replace")
    tensor = np.asarray(tensor, np.float32)
    if not 2 <= tensor.ndim <= 3:
        raise errors.InvalidArgumentError(
            None, None, f"Tensor must be 3-D or 2-D, got: {_shape_str(tensor.shape)}"
        )
    rate = np.asarray(sample_rate, np.float32)
    if rate.size != 1:
        raise errors.InvalidArgumentError(None, None, "sample_rate must be rank-0 or contain a single value")
    rate_f = np.float32(rate.reshape(-1)[0])
    if not rate_f > 0:
        raise errors.InvalidArgumentError(None, None, "sample_rate must be > 0")
    batch, length = tensor.shape[0], tensor.shape[1]
    channels = 1 if tensor.ndim == 2 else tensor.shape[2]
    max_outputs = int(ctx.attrs["max_outputs"])
    rate_int = max(int(np.rint(rate_f)), 1)
    s = summary_pb2.Summary()
    for i in range(min(max_outputs, batch)):
        v = s.value.add(tag=f"{base_tag}/audio/{i}" if max_outputs > 1 else f"{base_tag}/audio")
        v.audio.sample_rate = float(rate_f)
        v.audio.num_channels = channels
        v.audio.length_frames = length
        v.audio.content_type = "audio/wav"
        v.audio.encoded_audio_string = encode_wav(tensor[i].reshape(length, channels), rate_int)
    return s.SerializeToString()


def tensor_proto(value: Any, proto: Any) -> None:
    """Fill `proto` (a TensorProto) as TensorFlow's `AsProtoTensorContent` (strings:
    `AsProtoField`, one `string_val` per element)."""
    from flowlab.graph.dtypes import as_dtype

    a = np.asarray(value)
    proto.tensor_shape.SetInParent()  # a scalar's shape is written, empty
    if isinstance(value, bytes) or a.dtype == object or a.dtype.kind in "SU":
        proto.dtype = 7  # DT_STRING
        proto.string_val.extend(_flat_strings(value))
    else:
        proto.dtype = as_dtype(a.dtype).as_datatype_enum
        if a.size:
            proto.tensor_content = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
    for d in a.shape:
        proto.tensor_shape.dim.add(size=d)


@kernel("TensorSummaryV2", devices=CPU)
def tensor_summary(ctx: Any, tag: Any, tensor: Any, serialized_summary_metadata: Any) -> bytes:
    tag_b = _scalar_bytes(tag, "tag must be scalar")
    meta = _scalar_bytes(serialized_summary_metadata, "serialized_summary_metadata must be scalar")
    s = summary_pb2.Summary()
    v = s.value.add(tag=tag_b.decode("utf-8", errors="replace"))
    tensor_proto(tensor, v.tensor)
    v.metadata.ParseFromString(meta)
    return s.SerializeToString()


@kernel("MergeSummary", devices=CPU)
def merge_summary(ctx: Any, *inputs: Any) -> bytes:
    out = summary_pb2.Summary()
    seen: set[str] = set()
    for x in inputs:
        for serialized in _flat_strings(x):
            s = summary_pb2.Summary()
            try:
                s.ParseFromString(serialized)
            except Exception:
                raise errors.InvalidArgumentError(None, None, "Could not parse one of the summary inputs") from None
            for value in s.value:
                if value.tag and value.tag in seen:
                    raise errors.InvalidArgumentError(
                        None, None, f"Duplicate tag {value.tag} found in summary inputs"
                    )
                seen.add(value.tag)
                out.value.add().CopyFrom(value)
    return out.SerializeToString()
