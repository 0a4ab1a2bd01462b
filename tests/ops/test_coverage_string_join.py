"""tf.strings.unsorted_segment_join and tf.io.decode_json_example: values and errors,
differential against TensorFlow."""

from __future__ import annotations

from typing import Any

from tests.difftest import assert_same, assert_same_error


def test_unsorted_segment_join(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        return [tf.strings.unsorted_segment_join(["a", "b", "c", "d"], [1, 0, 1, 3], 4, separator="-"),
                tf.strings.unsorted_segment_join([["x", "y"], ["z", "w"]], tf.constant([0, 0], tf.int64), 2),
                tf.strings.unsorted_segment_join(["p", "q"], [0, 0], tf.constant(1, tf.int64), separator=",")]

    assert_same(tf1, build)
    for bad in ([5], [-1]):
        e, a = assert_same_error(tf1, lambda tf, bad=bad: tf.strings.unsorted_segment_join(
            ["a"], tf.placeholder_with_default(bad, [None]), 2))
        msg = "segment_ids are not allowed to exceed num_segments or to have negative values."
        assert msg in e.message and msg in a.message


def test_decode_json_example(tf1: Any) -> None:
    import flowlab as fl

    js = ['{"features": {"feature": {"x": {"floatList": {"value": [1.5, 2]}}}}}',
          '{"features": {"feature": {"a": {"int64List": {"value": ["3"]}}, '
          '"b": {"bytesList": {"value": ["aGk="]}}}}}']
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), tf.Session() as s:
            blobs = s.run(tf.io.decode_json_example(js))
        out.append([fl.train.Example.FromString(b) for b in blobs])
    assert out[0] == out[1]
    assert_same_error(tf1, lambda tf: tf.io.decode_json_example(["{not json"]))
