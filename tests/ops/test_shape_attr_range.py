"""Shape attrs hold int64 dimensions: a larger one is TensorFlow's TypeError."""

from __future__ import annotations

import pytest

import flowlab as fl


@pytest.mark.parametrize("dim", [2**64, 2**63])
def test_placeholder_dimension_out_of_int64_range(dim):
    with fl.Graph().as_default():
        with pytest.raises(TypeError) as ei:
            fl.placeholder(fl.float32, [dim])
    assert str(ei.value) == (f"Error converting [{dim}] (arg name = shape) to a TensorShape: "
                             f"Value out of range: {dim}")


def test_largest_int64_dimension_is_accepted():
    with fl.Graph().as_default():
        p = fl.placeholder(fl.float32, [2**63 - 1, None])
    assert p.shape.as_list() == [2**63 - 1, None]


@pytest.mark.parametrize("shape", [[2**64], [3, 2**63], [2**63 - 1]])
def test_same_as_tensorflow(tf1, shape):
    def outcome(tf):
        with tf.Graph().as_default():
            try:
                return tf.placeholder(tf.float32, shape).shape.as_list()
            except TypeError as e:
                return ("TypeError", str(e))

    assert outcome(fl) == outcome(tf1)
