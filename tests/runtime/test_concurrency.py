"""Concurrent steps on one session (paper section 3.2): many threads calling `run`
at once, locked updates exact, queues waking every blocked step."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import data_flow_ops


def _parked_dequeuers(sess, q):
    state = sess.devices[0].resources.get("", q.queue_ref.op.name)
    return 0 if state is None else len(state._dequeuers)


def _wait_until(cond, limit=2000000):
    for _ in range(limit):
        if cond():
            return
    raise AssertionError("condition never became true")


def test_locked_assign_add_is_exact_under_8_threads():
    v = fl.Variable(0, dtype=fl.int64)
    inc = fl.assign_add(v, fl.constant(1, fl.int64), use_locking=True)
    with fl.Session() as sess:
        sess.run(v.initializer)
        step = sess.make_callable(inc.op)
        barrier = threading.Barrier(8)

        def work():
            barrier.wait()
            for _ in range(1000):
                step()

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "deadlock"
        assert sess.run(v) == 8000


def test_hogwild_unlocked_updates_run_and_stay_bounded():
    v = fl.Variable(0.0)
    inc = fl.assign_add(v, 1.0)  # use_locking=False: lost updates are allowed
    with fl.Session() as sess:
        sess.run(v.initializer)
        step = sess.make_callable(inc.op)
        threads = [threading.Thread(target=lambda: [step() for _ in range(200)]) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert 0 < sess.run(v) <= 800


def test_close_wakes_four_blocked_dequeuers():
    q = data_flow_ops.FIFOQueue(10, fl.float32, shapes=[[]])
    d = q.dequeue()
    results = []
    lock = threading.Lock()
    with fl.Session() as sess:
        def consume():
            try:
                sess.run(d)
                r = "value"
            except errors.OutOfRangeError:
                r = "OutOfRange"
            with lock:
                results.append(r)

        threads = [threading.Thread(target=consume) for _ in range(4)]
        for t in threads:
            t.start()
        _wait_until(lambda: _parked_dequeuers(sess, q) == 4)
        sess.run(q.close())
        for t in threads:
            t.join(10)
    assert results == ["OutOfRange"] * 4


def test_close_serves_remaining_elements_to_blocked_many():
    q = data_flow_ops.FIFOQueue(10, fl.int32, shapes=[[]])
    d = q.dequeue_up_to(3)
    with fl.Session() as sess:
        out = []
        t = threading.Thread(target=lambda: out.append(sess.run(d)))
        t.start()
        _wait_until(lambda: _parked_dequeuers(sess, q) == 1)
        sess.run(q.enqueue(4))
        sess.run(q.close())
        t.join(10)
    np.testing.assert_array_equal(out[0], [4])


def test_session_close_cancels_blocked_step():
    q = data_flow_ops.FIFOQueue(1, fl.float32, shapes=[[]])
    d = q.dequeue()
    sess = fl.Session()
    errs = []

    def consume():
        try:
            sess.run(d)
        except Exception as e:  # noqa: BLE001
            errs.append(e)

    t = threading.Thread(target=consume)
    t.start()
    _wait_until(lambda: _parked_dequeuers(sess, q) == 1)
    sess.close()
    t.join(10)
    assert not t.is_alive()
    assert isinstance(errs[0], errors.CancelledError)


def test_timeout_cancels_blocked_enqueue():
    q = data_flow_ops.FIFOQueue(1, fl.float32, shapes=[[]])
    enq = q.enqueue(1.0)
    with fl.Session() as sess:
        sess.run(enq)
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(enq, options=fl.RunOptions(timeout_in_ms=20))
        assert sess.run(q.size()) == 1
        assert sess.run(q.dequeue()) == 1.0


def test_config_timeout_applies():
    q = data_flow_ops.FIFOQueue(1, fl.float32, shapes=[[]])
    with fl.Session(config=fl.ConfigProto(operation_timeout_in_ms=20)) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(q.dequeue())


def test_producers_and_consumers_exchange_everything():
    q = data_flow_ops.FIFOQueue(3, fl.int32, shapes=[[]])
    x = fl.placeholder(fl.int32, [])
    enq = q.enqueue(x)
    d = q.dequeue()
    got = []
    lock = threading.Lock()
    with fl.Session() as sess:
        def produce(k):
            for i in range(50):
                sess.run(enq, {x: k * 1000 + i})

        def consume():
            for _ in range(50):
                v = sess.run(d)
                with lock:
                    got.append(int(v))

        threads = [threading.Thread(target=produce, args=(k,)) for k in range(4)]
        threads += [threading.Thread(target=consume) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)
    assert sorted(got) == sorted(k * 1000 + i for k in range(4) for i in range(50))


def test_failing_op_cancels_blocked_dequeue_in_same_step():
    from tests.runtime.testing_ops import fail

    q = data_flow_ops.FIFOQueue(1, fl.float32, shapes=[[]])
    d = q.dequeue()
    f = fail(fl.constant(1.0), message="bad input")
    with fl.Session() as sess:
        with pytest.raises(errors.OpError, match="bad input"):
            sess.run([d, f])
        assert _parked_dequeuers(sess, q) == 0
