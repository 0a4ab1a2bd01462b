"""tf.train.WorkerSessionCreator against TensorFlow's: a non-chief's session is
ready at once when there is nothing to initialize, and runs the graph."""

from __future__ import annotations

import numpy as np


def _run(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0, 2.0]) * 3.0
        scaffold = tf.train.Scaffold(ready_op=tf.constant([], dtype=tf.string),
                                     ready_for_local_init_op=tf.constant([], dtype=tf.string),
                                     local_init_op=tf.no_op())
        creator = tf.train.WorkerSessionCreator(scaffold=scaffold, max_wait_secs=5)
        with tf.train.MonitoredSession(session_creator=creator) as sess:
            return sess.run(x)


def test_worker_session_creator_matches_tensorflow(tf1):
    expected, actual = _run(tf1), _run(__import__("flowlab"))
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)
