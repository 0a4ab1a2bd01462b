"""Queues: FIFO, padding, priority and random-shuffle queues, against NumPy and
TensorFlow (multi-step programs run step by step in both)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import data_flow_ops
from tests.difftest import _compare


def Q(tf):
    """The module holding the queue classes (TensorFlow, or flowlab's data_flow_ops
    until flowlab's top level re-exports them)."""
    return data_flow_ops if tf is fl else tf


def run_steps(tf, build):
    """`build(tf)` returns a list of fetches; run them one step each in one session.
    A failing step records ("error", class name) and the program goes on."""
    g = tf.Graph()
    with g.as_default():
        steps = build(tf)
        out = []
        op_error = errors.OpError if tf is fl else tf.errors.OpError
        with tf.Session(graph=g) as sess:
            for fetch in steps:
                try:
                    out.append(sess.run(fetch))
                except op_error as e:
                    out.append(("error", type(e).__name__))
    return out


def assert_same_steps(tf1, build):
    expected = run_steps(tf1, build)
    actual = run_steps(fl, build)
    assert len(expected) == len(actual)
    for i, (e, a) in enumerate(zip(expected, actual)):
        if isinstance(e, tuple) and e and e[0] == "error":
            assert a == e, f"step {i}: {a!r} vs TensorFlow's {e!r}"
        else:
            _compare(e, a, 1e-6, 1e-6, f"step {i}")
    return actual


# --- graph construction --------------------------------------------------------------
def test_fifo_graph_matches_tensorflow(tf1):
    def build(tf):
        q = Q(tf).FIFOQueue(3, [tf.float32, tf.int32], shapes=[[2], []])
        ops = [q.enqueue([[1.0, 2.0], 3]), q.enqueue_many([[[1.0, 2.0]], [4]]), q.dequeue(),
               q.dequeue_many(2), q.dequeue_up_to(2), q.close(), q.close(True), q.size(), q.is_closed()]
        g = tf.get_default_graph()
        return [(op.name, op.type) for op in g.get_operations()], ops

    def shapes(ts):
        return [t.shape.as_list() if t.shape.dims is not None else None for t in ts]

    with tf1.Graph().as_default():
        tf_ops, tf_out = build(tf1)
        tf_shapes = [shapes(tf_out[i]) for i in (2, 3, 4)]
        tf_handle = tf_out[0].inputs[0].dtype.name
    with fl.Graph().as_default():
        fl_ops, fl_out = build(fl)
        fl_shapes = [shapes(fl_out[i]) for i in (2, 3, 4)]
        fl_handle = fl_out[0].inputs[0].dtype.name
    assert fl_ops == tf_ops
    assert fl_shapes == tf_shapes
    assert fl_handle == tf_handle == "resource"


def test_queue_types_and_attrs(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            q = Q(mod).RandomShuffleQueue(10, 2, mod.float32, seed=3)
            p = Q(mod).PriorityQueue(10, [mod.string], shapes=[[]])
            pad = Q(mod).PaddingFIFOQueue(10, [mod.float32], shapes=[[None]])
            assert q.queue_ref.op.type == "RandomShuffleQueueV2"
            assert q.queue_ref.op.get_attr("seed2") == 3
            assert q.queue_ref.op.get_attr("min_after_dequeue") == 2
            assert [d.name for d in p.dtypes] == ["int64", "string"]
            assert p.queue_ref.op.type == "PriorityQueueV2"
            assert pad.queue_ref.op.type == "PaddingFIFOQueueV2"
            assert p.dequeue()[0].dtype == mod.int64
            assert q.dequeue().shape.dims is None


def test_build_time_errors():
    q = data_flow_ops.FIFOQueue(3, [fl.float32], shapes=[[2]])
    with pytest.raises(ValueError):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="Expected 1 components, got 2"):
        q.enqueue([1.0, 2.0])
    with pytest.raises(ValueError, match="Shapes must be provided"):
        data_flow_ops.PaddingFIFOQueue(3, [fl.float32], None)
    with pytest.raises(ValueError, match="same length"):
        data_flow_ops.FIFOQueue(3, [fl.float32, fl.int32], shapes=[[2]])


# --- values against TensorFlow ---------------------------------------------------------
def test_fifo_order_sizes_and_close(tf1):
    def build(tf):
        q = Q(tf).FIFOQueue(5, [tf.float32, tf.int32], shapes=[[2], []])
        return [
            q.enqueue_many([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [1, 2, 3]]),
            q.enqueue([[7.0, 8.0], 4]),
            q.size(),
            q.dequeue(),
            q.dequeue_many(2),
            q.close(),
            q.is_closed(),
            q.enqueue([[0.0, 0.0], 0]),   # CancelledError: closed
            q.dequeue_many(2),             # OutOfRange: 1 left
            q.dequeue_up_to(5),            # the last element
            q.dequeue(),                   # OutOfRange
            q.size(),
        ]

    out = assert_same_steps(tf1, build)
    assert out[7] == ("error", "CancelledError")
    assert out[8] == ("error", "OutOfRangeError")


def test_single_component_and_scalars(tf1):
    def build(tf):
        q = Q(tf).FIFOQueue(4, tf.int64, shapes=[[]])
        return [q.enqueue(7), q.enqueue_many([[8, 9]]), q.dequeue(), q.dequeue_many(2),
                q.dequeue_many(0)]

    assert_same_steps(tf1, build)


def test_strings(tf1):
    def build(tf):
        q = Q(tf).FIFOQueue(4, [tf.string, tf.float64], shapes=[[], [1]])
        return [q.enqueue_many([["a", "bc"], [[1.0], [2.0]]]), q.dequeue(), q.enqueue(["d", [3.0]]),
                q.dequeue_many(2)]

    assert_same_steps(tf1, build)


def test_padding_fifo(tf1):
    def build(tf):
        q = Q(tf).PaddingFIFOQueue(5, [tf.int32, tf.string], shapes=[[None], [None]])
        return [q.enqueue([[1], ["a"]]), q.enqueue([[1, 2, 3], ["b", "c"]]), q.enqueue([[], []]),
                q.dequeue_many(3)]

    out = assert_same_steps(tf1, build)
    np.testing.assert_array_equal(out[3][0], [[1, 0, 0], [1, 2, 3], [0, 0, 0]])


def test_priority_queue(tf1):
    def build(tf):
        q = Q(tf).PriorityQueue(10, [tf.string], shapes=[[]])
        e = q.enqueue_many([tf.constant([5, 1, 3], tf.int64), ["e", "a", "c"]])
        return [e, q.enqueue([tf.constant(2, tf.int64), "b"]), q.size(), q.dequeue(), q.dequeue_many(3)]

    out = assert_same_steps(tf1, build)
    assert list(out[4][1]) == [b"b", b"c", b"e"]


def test_dequeue_many_needs_shapes(tf1):
    def build(tf):
        q = Q(tf).FIFOQueue(3, tf.float32)
        return [q.enqueue_many([[1.0, 2.0]]), q.dequeue_many(2), q.size()]

    assert assert_same_steps(tf1, build)[1] == ("error", "InvalidArgumentError")


def test_runtime_shape_mismatch(tf1):
    def build(tf):
        q = Q(tf).FIFOQueue(3, tf.float32, shapes=[[2]])
        p = tf.placeholder(tf.float32)
        return [q.enqueue(p)]

    for mod in (tf1, fl):
        g = mod.Graph()
        with g.as_default():
            q = Q(mod).FIFOQueue(3, mod.float32, shapes=[[2]])
            p = mod.placeholder(mod.float32)
            enq = q.enqueue(p)
            with mod.Session() as sess:
                err = errors.InvalidArgumentError if mod is fl else mod.errors.InvalidArgumentError
                with pytest.raises(err, match="Shape mismatch in tuple component 0. Expected \\[2\\], got \\[3\\]"):
                    sess.run(enq, {p: [1.0, 2.0, 3.0]})


def test_error_message_names_queue():
    q = data_flow_ops.FIFOQueue(3, fl.float32)
    d = q.dequeue()
    with fl.Session() as sess:
        sess.run(q.close())
        with pytest.raises(errors.OutOfRangeError,
                           match=r"FIFOQueue '_\d+_fifo_queue' is closed and has insufficient elements "
                                 r"\(requested 1, current size 0\)"):
            sess.run(d)


# --- random shuffle --------------------------------------------------------------------
def test_random_shuffle_is_a_permutation_and_keeps_reserve():
    q = data_flow_ops.RandomShuffleQueue(20, 3, fl.int32, shapes=[[]], seed=7)
    enq = q.enqueue_many([np.arange(10, dtype=np.int32)])
    d = q.dequeue_many(7)
    with fl.Session() as sess:
        sess.run(enq)
        got = list(sess.run(d))
        assert sess.run(q.size()) == 3
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=fl.RunOptions(timeout_in_ms=20))
        sess.run(q.close())
        got += list(sess.run(q.dequeue_up_to(10)))  # closed: the reserve is served
    assert sorted(got) == list(range(10))
    assert got != list(range(10))


def test_random_shuffle_seeded_is_repeatable():
    def run():
        with fl.Graph().as_default():
            fl.set_random_seed(1)
            q = data_flow_ops.RandomShuffleQueue(20, 0, fl.int32, shapes=[[]])
            enq = q.enqueue_many([np.arange(10, dtype=np.int32)])
            with fl.Session() as sess:
                sess.run(enq)
                return list(sess.run(q.dequeue_many(10)))

    assert run() == run()


# --- blocking --------------------------------------------------------------------------
def test_blocked_enqueue_resumes_after_dequeue():
    q = data_flow_ops.FIFOQueue(1, fl.int32, shapes=[[]])
    enq = q.enqueue(fl.constant(5))
    d = q.dequeue()
    with fl.Session() as sess:
        sess.run(enq)
        t = threading.Thread(target=sess.run, args=(enq,))
        t.start()
        assert sess.run(d) == 5
        t.join(5)
        assert not t.is_alive()
        assert sess.run(q.size()) == 1


def test_dequeue_many_larger_than_capacity():
    q = data_flow_ops.FIFOQueue(2, fl.int32, shapes=[[]])
    enq = q.enqueue_many([np.arange(5, dtype=np.int32)])
    d = q.dequeue_many(5)
    with fl.Session() as sess:
        t = threading.Thread(target=sess.run, args=(enq,))
        t.start()
        np.testing.assert_array_equal(sess.run(d), np.arange(5))
        t.join(5)


def test_close_cancels_pending_enqueues():
    q = data_flow_ops.FIFOQueue(1, fl.int32, shapes=[[]])
    enq = q.enqueue(fl.constant(1))
    result = []
    with fl.Session() as sess:
        sess.run(enq)

        def blocked():
            try:
                sess.run(enq)
                result.append("ok")
            except errors.CancelledError as e:
                result.append(str(e))

        t = threading.Thread(target=blocked)
        t.start()
        while not q_parked(sess, q):
            pass
        sess.run(q.close(cancel_pending_enqueues=True))
        t.join(5)
        assert "is closed" in result[0]
        assert sess.run(q.dequeue()) == 1  # what was enqueued stays


def q_parked(sess, q):
    """Whether an enqueue attempt is parked on `q` (its state in the CPU's resources)."""
    state = sess.devices[0].resources.get("", q.queue_ref.op.name)
    return state is not None and bool(state._enqueuers)


def test_close_without_cancel_lets_pending_enqueue_finish():
    q = data_flow_ops.FIFOQueue(1, fl.int32, shapes=[[]])
    enq = q.enqueue(fl.constant(1))
    with fl.Session() as sess:
        sess.run(enq)
        t = threading.Thread(target=sess.run, args=(enq,))
        t.start()
        while not q_parked(sess, q):
            pass
        sess.run(q.close())
        assert sess.run(q.dequeue()) == 1
        t.join(5)
        assert sess.run(q.dequeue()) == 1
        with pytest.raises(errors.OutOfRangeError):
            sess.run(q.dequeue())


def test_timeout_leaves_queue_usable():
    q = data_flow_ops.FIFOQueue(2, fl.float32, shapes=[[]])
    d = q.dequeue_many(2)
    with fl.Session() as sess:
        sess.run(q.enqueue(1.0))
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(d, options=fl.RunOptions(timeout_in_ms=20))
        # the element collected by the timed-out dequeue went back to the queue
        assert sess.run(q.size()) == 1
        sess.run(q.enqueue(2.0))
        np.testing.assert_array_equal(sess.run(d), [1.0, 2.0])


def test_shared_name_shares_state():
    q1 = data_flow_ops.FIFOQueue(2, fl.int32, shapes=[[]], shared_name="shared")
    q2 = data_flow_ops.FIFOQueue(2, fl.int32, shapes=[[]], shared_name="shared")
    with fl.Session() as sess:
        sess.run(q1.enqueue(3))
        assert sess.run(q2.dequeue()) == 3
