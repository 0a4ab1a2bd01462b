"""Queue `shapes=` read as TensorFlow reads them: a list of dimensions is one shape
(`()` a scalar), whatever the number of dtypes."""

from __future__ import annotations

import numpy as np
import pytest


def _scalar_queue(tf):
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(3, tf.float32, shapes=())
        enq = q.enqueue(2.5)
        out = q.dequeue()
        with tf.Session(graph=g) as sess:
            sess.run(enq)
            return out.shape.as_list(), sess.run(out)


def test_empty_shapes_is_one_scalar_component(tf1):
    import flowlab as fl

    (tf_shape, tf_value), (fl_shape, fl_value) = _scalar_queue(tf1), _scalar_queue(fl)
    assert fl_shape == tf_shape == []
    assert type(fl_value) is type(tf_value) and fl_value == tf_value == np.float32(2.5)


@pytest.mark.parametrize("dtypes,shapes", [
    (["float32", "int32"], [2, 3]),   # one shape [2, 3] for two dtypes
    (["float32", "int32"], ()),       # one scalar shape for two dtypes
])
def test_a_single_shape_for_several_dtypes_is_an_error(tf1, dtypes, shapes):
    import flowlab as fl

    messages = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(ValueError) as e:
                tf.FIFOQueue(3, [getattr(tf, d) for d in dtypes], shapes=shapes)
            messages.append(str(e.value))
    assert messages[1] == messages[0]
