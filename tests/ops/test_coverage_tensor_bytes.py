"""serialize_tensor / parse_tensor, decode_compressed, write_file (tf and tf.io) and
timestamp: bytes, values, dtypes and errors, differential against TensorFlow."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, assert_same_error


@pytest.mark.parametrize("value,dtype", [([[1.0, 2.0]], "float32"), (3, "int32"), (["a", "bc"], "string"),
                                         ([True, False], "bool"), (np.zeros([2, 0]), "float64"),
                                         ([1 + 2j], "complex64"), ([[7]], "int64"), (1.5, "float16")])
def test_serialize_parse(tf1: Any, value: Any, dtype: str) -> None:
    def build(tf: Any) -> Any:
        t = tf.constant(value, dtype=getattr(tf, dtype))
        s = tf.serialize_tensor(t)
        return [s, tf.parse_tensor(s, t.dtype), tf.io.serialize_tensor(t), tf.io.parse_tensor(s, t.dtype)]

    assert_same(tf1, build)


def test_parse_tensor_errors(tf1: Any) -> None:
    e, a = assert_same_error(tf1, lambda tf: tf.parse_tensor(tf.serialize_tensor(tf.constant([1, 2])), tf.float32))
    msg = "Type mismatch between parsed tensor (int32) and dtype (float)"
    assert msg in e.message and msg in a.message
    e, a = assert_same_error(tf1, lambda tf: tf.parse_tensor("garbage", tf.float32))
    msg = "Could not parse `serialized` as TensorProto, base64: Z2FyYmFnZQ=="
    assert msg in e.message and msg in a.message


def test_decode_compressed(tf1: Any) -> None:
    raw = [b"hello" * 20, b"", b"\x00\x01\xff"]
    z = [zlib.compress(r) for r in raw]
    g = [gzip.compress(r) for r in raw]

    def build(tf: Any) -> Any:
        return [tf.decode_compressed(z, "ZLIB"), tf.decode_compressed(g, "GZIP"), tf.decode_compressed(raw),
                tf.io.decode_compressed(tf.constant([z[:2], z[1:]]), compression_type="ZLIB")]

    assert_same(tf1, build)
    e, a = assert_same_error(tf1, lambda tf: tf.decode_compressed(["abc"], "ZLIB"))
    assert "inflate() failed with error -3: incorrect header check" in e.message
    assert "inflate() failed with error -3: incorrect header check" in a.message
    e, a = assert_same_error(tf1, lambda tf: tf.decode_compressed(["abc"], "BAD"))
    assert "Only ZLIB, ZSTD, GZIP or NONE are supported compressions" in a.message


def test_write_file(tf1: Any, tmp_path: Any) -> None:
    def run(tf: Any, sub: str) -> Any:
        path = str(tmp_path / sub / "deeper" / "out.bin")
        with tf.Graph().as_default():
            w = tf.write_file(path, tf.constant(b"\x00payload\xff"))
            w2 = tf.io.write_file(path + "2", "second")
            with tf.Session() as s:
                s.run([w, w2])
                back = s.run(tf.read_file(path))
            return back, open(path + "2", "rb").read(), w.type

    assert run(tf1, "tf") == run(fl, "fl")


def test_timestamp(tf1: Any) -> None:
    import time

    before = time.time()
    got = assert_same(tf1, lambda tf: [tf.cast(tf.timestamp() > 0, tf.int32), tf.constant(str(tf.timestamp().shape))])
    assert got[0] == 1
    with fl.Graph().as_default(), fl.Session() as s:
        v = s.run(fl.timestamp())
    assert isinstance(v, np.float64) and before <= v <= time.time() + 1
