"""QueueRunner, Coordinator and start_queue_runners."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import data_flow_ops
from flowlab.train import (
    Coordinator,
    LooperThread,
    QueueRunner,
    add_queue_runner,
    start_queue_runners,
)


# --- Coordinator -----------------------------------------------------------------------
def test_request_stop_and_clear():
    coord = Coordinator()
    assert not coord.should_stop()
    coord.request_stop()
    assert coord.should_stop() and coord.wait_for_stop(0)
    coord.clear_stop()
    assert not coord.should_stop()
    assert not coord.wait_for_stop(0.001)


def test_join_reraises_first_exception():
    coord = Coordinator()

    def bad(msg):
        with coord.stop_on_exception():
            raise ValueError(msg)

    t = threading.Thread(target=bad, args=("first",))
    t.start()
    t.join()
    coord.request_stop(RuntimeError("second"))  # after the stop: ignored
    with pytest.raises(ValueError, match="first"):
        coord.join([t])
    assert coord.joined


def test_clean_stop_exception_is_not_raised():
    coord = Coordinator()
    coord.request_stop(errors.OutOfRangeError(None, None, "done"))
    coord.join([])
    coord2 = Coordinator(clean_stop_exception_types=())
    coord2.request_stop(errors.OutOfRangeError(None, None, "done"))
    with pytest.raises(errors.OutOfRangeError):
        coord2.join([])


def test_join_grace_period_reports_stragglers():
    coord = Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, name="straggler")
    t.start()
    coord.register_thread(t)
    coord.request_stop()
    with pytest.raises(RuntimeError, match="threads still running: straggler"):
        coord.join(stop_grace_period_secs=0.01)
    release.set()
    t.join()


def test_join_ignore_live_threads():
    coord = Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait)
    t.start()
    coord.request_stop()
    coord.join([t], stop_grace_period_secs=0.01, ignore_live_threads=True)  # no RuntimeError
    assert t.is_alive()  # join returned without waiting for the live thread
    release.set()
    t.join()


def test_join_waits_for_threads_that_finish():
    coord = Coordinator()
    done = []
    threads = [threading.Thread(target=lambda: done.append(1)) for _ in range(3)]
    for t in threads:
        t.start()
    coord.join(threads)  # no stop requested: returns once all are done
    assert len(done) == 3


def test_looper_thread_runs_until_stop():
    coord = Coordinator()
    calls = []

    def target():
        calls.append(1)
        if len(calls) == 3:
            coord.request_stop()

    LooperThread.loop(coord, None, target)
    coord.join()
    assert len(calls) == 3


# --- QueueRunner -----------------------------------------------------------------------
def _counter_pipeline(limit=None):
    """A variable counting up (to `limit`: then OutOfRange) feeding a FIFO queue."""
    v = fl.Variable(0, dtype=fl.int32)
    x = fl.count_up_to(v, limit) if limit is not None else fl.assign_add(v, 1, use_locking=True)
    q = data_flow_ops.FIFOQueue(4, fl.int32, shapes=[[]])
    qr = QueueRunner(q, [q.enqueue(x)])
    add_queue_runner(qr)
    return v, q, qr


def test_queue_runner_fills_and_closes_on_out_of_range():
    v, q, qr = _counter_pipeline(limit=10)
    d = q.dequeue()
    with fl.Session() as sess:
        sess.run(v.initializer)
        coord = Coordinator()
        threads = start_queue_runners(sess, coord)
        assert len(threads) == 2  # the enqueue thread and the cancelling thread
        got = []
        with pytest.raises(errors.OutOfRangeError):
            while True:
                got.append(int(sess.run(d)))
        coord.request_stop()
        coord.join(threads)
    assert got == list(range(10))
    assert qr.exceptions_raised == []


def test_queue_runner_with_several_threads_closes_once_all_are_done():
    v = fl.Variable(0, dtype=fl.int32)
    x = fl.count_up_to(v, 30)
    q = data_flow_ops.FIFOQueue(4, fl.int32, shapes=[[]])
    enq = q.enqueue(x)
    qr = QueueRunner(q, [enq] * 3)
    d = q.dequeue()
    with fl.Session() as sess:
        sess.run(v.initializer)
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        assert qr.create_threads(sess) == []  # already running for this session
        got = []
        with pytest.raises(errors.OutOfRangeError):
            while True:
                got.append(int(sess.run(d)))
        coord.request_stop()
        coord.join(threads)
    assert sorted(got) == list(range(30))


def test_stop_cancels_enqueues_blocked_on_a_full_queue():
    v, q, qr = _counter_pipeline()
    with fl.Session() as sess:
        sess.run(v.initializer)
        coord = Coordinator()
        threads = start_queue_runners(sess, coord)
        sess.run(q.dequeue())  # the runner is going
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        assert sess.run(q.is_closed())


def test_enqueue_error_is_reported_to_the_coordinator():
    p = fl.placeholder(fl.float32, [])  # never fed: every run fails
    q = data_flow_ops.FIFOQueue(4, fl.float32, shapes=[[]])
    qr = QueueRunner(q, [q.enqueue(p)])
    with fl.Session() as sess:
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        with pytest.raises(errors.InvalidArgumentError):
            coord.join(threads)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_enqueue_error_without_coordinator_is_kept():
    """Without a coordinator the thread re-raises (as TensorFlow's does) and the
    runner keeps the exception."""
    p = fl.placeholder(fl.float32, [])
    q = data_flow_ops.FIFOQueue(4, fl.float32, shapes=[[]])
    qr = QueueRunner(q, [q.enqueue(p)])
    with fl.Session() as sess:
        threads = qr.create_threads(sess, start=True)
        for t in threads:
            t.join(10)
    assert len(qr.exceptions_raised) == 1
    assert isinstance(qr.exceptions_raised[0], errors.InvalidArgumentError)


def test_queue_runner_properties_and_validation():
    q = data_flow_ops.FIFOQueue(4, fl.float32, shapes=[[]])
    enq = q.enqueue(1.0)
    qr = QueueRunner(q, [enq])
    assert qr.queue is q and qr.enqueue_ops == [enq] and qr.name == "fifo_queue"
    assert qr.close_op.type == "QueueCloseV2" and qr.cancel_op.get_attr("cancel_pending_enqueues")
    assert qr.queue_closed_exception_types == (errors.OutOfRangeError,)
    with pytest.raises(ValueError):
        QueueRunner(q, [])
    with pytest.raises(TypeError):
        QueueRunner(q, [enq], queue_closed_exception_types=(ValueError,))


def test_start_queue_runners_uses_default_session_and_collection():
    v, q, _ = _counter_pipeline(limit=3)
    with fl.Session() as sess:
        sess.run(v.initializer)
        threads = start_queue_runners()  # the default session; no coordinator
        np.testing.assert_array_equal(sess.run(q.dequeue_many(3)), [0, 1, 2])
        for t in threads:
            t.join(10)
    assert fl.get_default_graph().get_collection(fl.GraphKeys.QUEUE_RUNNERS)


def test_start_queue_runners_without_session_fails():
    with pytest.raises(ValueError, match="No default session"):
        start_queue_runners()
