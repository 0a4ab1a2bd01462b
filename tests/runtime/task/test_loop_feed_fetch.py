"""A tensor made inside a while loop's body may be neither fed nor fetched: a
ValueError naming it, as TensorFlow's."""

from __future__ import annotations

import pytest

import flowlab as fl


def _loop(tf):
    box = []

    def body(i):
        inner = tf.identity(i + 1, name="inner")
        box.append(inner)
        return inner

    out = tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    return out, box[0]


def _errors(tf, session):
    with tf.Graph().as_default():
        out, inner = _loop(tf)
        with session() as sess:
            got = []
            for feeds, fetches in (({inner: 5}, out), ({}, inner), ({}, [out, inner]),
                                   ({}, inner.op)):
                with pytest.raises(ValueError) as ei:
                    sess.run(fetches, feeds)
                got.append(str(ei.value))
            assert sess.run(out) == 3  # the loop itself still runs
    return inner.name, got


def test_feeding_or_fetching_inside_a_while_body_names_the_tensor():
    name, got = _errors(fl, fl.Session)
    assert name == "while/inner:0"
    assert got[0] == "Tensor while/inner:0 may not be fed."
    fetch = ("Operation while/inner has been marked as not fetchable. Typically this happens "
             "when it is defined in another function or code block. Use return values, "
             "explicit Python locals or TensorFlow collections to access it.")
    assert got[1:] == [fetch] * 3


def test_same_errors_as_tensorflow(tf1):
    assert _errors(tf1, tf1.Session) == _errors(fl, fl.Session)


def test_make_callable_refuses_a_loop_feed_too():
    with fl.Graph().as_default():
        out, inner = _loop(fl)
        with fl.Session() as sess:
            with pytest.raises(ValueError, match=r"^Tensor while/inner:0 may not be fed\.$"):
                sess.make_callable(out, [inner])
            # The loop's result (its Exit) is outside the loop: fetchable and feedable.
            assert sess.run(out, {out: 7}) == 7
