"""Strings encoded and hashed: `tf.encode_base64` / `tf.decode_base64` (also tf.io;
web-safe alphabet, padding optional), `tf.string_to_hash_bucket` (TensorFlow's legacy
Hash64, a MurmurHash2-64 with seed 0xDECAFCAFFE) and `tf.string_to_hash_bucket_strong`
(keyed SipHash-2-4), each with its tf.strings name (to_hash_bucket,
to_hash_bucket_strong).  The ops are TensorFlow's EncodeBase64, DecodeBase64,
StringToHashBucket and StringToHashBucketStrong; none is differentiable.  Kernels:
flowlab.kernels.string_codec_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["encode_base64", "decode_base64", "string_to_hash_bucket", "string_to_hash_bucket_strong"]


def _same(op: Operation) -> list[Any]:
    return [op.inputs[0].shape]


op_def("EncodeBase64", inputs=["input: string"], outputs=["output: string"], attrs=["pad: bool = false"],
       shape_fn=_same)
op_def("DecodeBase64", inputs=["input: string"], outputs=["output: string"], shape_fn=_same)
op_def("StringToHashBucket", inputs=["string_tensor: string"], outputs=["output: int64"],
       attrs=["num_buckets: int >= 1"], shape_fn=_same)
op_def("StringToHashBucketStrong", inputs=["input: string"], outputs=["output: int64"],
       attrs=["num_buckets: int >= 1", "key: list(int)"], shape_fn=_same)
for _t in ("EncodeBase64", "DecodeBase64", "StringToHashBucket", "StringToHashBucketStrong"):
    not_differentiable(_t)


def _strings(x: Any, name: str) -> Tensor:
    return convert_to_tensor(x, dtype=dtypes.string, name=name)


def encode_base64(input: Any, pad: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """Web-safe base64 of each string ('-' and '_' for '+' and '/'), '=' padding if `pad`.

    >>> tf.encode_base64(["hi?"])   # [b'aGk_']
    """
    return apply_op("EncodeBase64", input=_strings(input, "input"), pad=bool(pad), name=name or "EncodeBase64")


def decode_base64(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The bytes of each web-safe base64 string (padded or not)."""
    return apply_op("DecodeBase64", input=_strings(input, "input"), name=name or "DecodeBase64")


def string_to_hash_bucket(string_tensor: Any, num_buckets: int, name: str | None = None,
                          input: Any = None) -> Tensor:  # noqa: A002
    """Hash64(s) % num_buckets for each string (TensorFlow's legacy, unkeyed hash)."""
    x = string_tensor if string_tensor is not None else input
    return apply_op("StringToHashBucket", string_tensor=_strings(x, "string_tensor"), num_buckets=int(num_buckets),
                    name=name or "StringToHashBucket")


def string_to_hash_bucket_strong(input: Any, num_buckets: int, key: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """SipHash-2-4(key, s) % num_buckets for each string; `key` is two ints.

    Raises:
      ValueError: when `key` does not have two elements.
    """
    key = [int(k) for k in key]
    if len(key) != 2:
        raise ValueError(f"Key must have 2 elements, got {len(key)}.")
    return apply_op("StringToHashBucketStrong", input=_strings(input, "input"), num_buckets=int(num_buckets),
                    key=key, name=name or "StringToHashBucketStrong")
