"""encode_base64 / decode_base64 (tf and tf.io), string_to_hash_bucket(_strong) and
tf.strings.to_hash_bucket(_strong): values and errors, differential against TensorFlow."""

from __future__ import annotations

from typing import Any

import pytest

from tests.difftest import assert_same, assert_same_error

WORDS = ["", "a", "hello", "hello world!", "0123456789abcdef", "seventeen bytes!!", "\xff\x00 odd",
         "a much longer string that crosses several eight-byte words", "日本語"]


def test_base64_round_trip(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant(WORDS + ["hi?", "\xfb\xff"])
        e, p = tf.encode_base64(x), tf.encode_base64(x, pad=True)
        return [e, p, tf.decode_base64(e), tf.decode_base64(p), tf.io.encode_base64(x), tf.io.decode_base64(e),
                tf.encode_base64(tf.constant([["ab"], ["cd"]]))]

    assert_same(tf1, build)


@pytest.mark.parametrize("bad", ["a", "ab$d", "ab+/"])
def test_decode_base64_errors(tf1: Any, bad: str) -> None:
    assert_same_error(tf1, lambda tf: tf.decode_base64(tf.constant([bad])))


@pytest.mark.parametrize("buckets", [1, 7, 1000, 2**40])
def test_hash_buckets(tf1: Any, buckets: int) -> None:
    def build(tf: Any) -> Any:
        x = tf.constant(WORDS)
        return [tf.string_to_hash_bucket(x, buckets), tf.strings.to_hash_bucket(x, buckets),
                tf.string_to_hash_bucket_strong(x, buckets, [1, 2]),
                tf.strings.to_hash_bucket_strong(x, buckets, [-5, 12345678901234])]

    assert_same(tf1, build)

