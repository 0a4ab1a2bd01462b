"""A failed step writes nothing, also beside concurrent steps (the rule of
flowlab.runtime.task.step): its increments are taken back even after other steps added to
them, its overwrites are undone unless a later overwrite superseded them."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors


def _blocked_after(update):
    """An op that waits forever (on an empty queue) after `update` ran."""
    q = fl.FIFOQueue(1, fl.int32)
    with fl.control_dependencies([update]):
        return q.dequeue()


def _timed_out(sess, fetch, ms=30):
    with pytest.raises(errors.DeadlineExceededError):
        sess.run(fetch, options=fl.RunOptions(timeout_in_ms=ms))


@pytest.mark.parametrize("dtype", [fl.int64, fl.float32])
def test_ten_failed_adds_of_100_never_leak_beside_adds_of_1(dtype):
    with fl.Graph().as_default():
        v = fl.Variable(fl.zeros([4], dtype), name="v")
        add100 = fl.assign_add(v, fl.fill([4], fl.constant(100, dtype)), use_locking=True)
        failing = _blocked_after(add100)
        add1 = fl.assign_add(v, fl.ones([4], dtype), use_locking=True).op
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())
            stop = threading.Event()
            ones = [0, 0]
            seen_100 = []

            def adder(i):
                while not stop.is_set():
                    sess.run(add1)
                    ones[i] += 1

            def reader():
                while not stop.is_set():
                    seen_100.append(bool(sess.run(v)[0] >= 100))

            def failer():
                _timed_out(sess, failing)

            adders = [threading.Thread(target=adder, args=(i,)) for i in range(2)]
            watcher = threading.Thread(target=reader)
            for t in adders + [watcher]:
                t.start()
            failers = [threading.Thread(target=failer) for _ in range(10)]
            for t in failers:
                t.start()
            for t in failers:
                t.join()
            stop.set()
            for t in adders + [watcher]:
                t.join()
            # Every add of 1 stays, every add of 100 is gone.
            np.testing.assert_array_equal(sess.run(v), np.full(4, sum(ones), dtype.as_numpy_dtype))
            assert sum(ones) > 0


def test_a_reader_sees_the_failed_write_only_until_the_rollback():
    with fl.Graph().as_default():
        v = fl.Variable(0, name="v")
        started = threading.Event()
        add100 = fl.assign_add(v, 100, use_locking=True)
        failing = _blocked_after(add100)
        with fl.Session() as sess:
            sess.run(v.initializer)
            seen = []

            def watch():
                while not started.is_set():
                    pass
                seen.append(int(sess.run(v)))

            t = threading.Thread(target=watch)
            t.start()
            with pytest.raises(errors.DeadlineExceededError):
                started.set()
                sess.run(failing, options=fl.RunOptions(timeout_in_ms=200))
            t.join()
            assert seen and seen[0] in (0, 100)  # visible while the step runs (no isolation)
            assert sess.run(v) == 0  # and gone after it failed


def test_scatter_add_of_a_failed_step_is_taken_back_after_other_steps_added():
    with fl.Graph().as_default():
        v = fl.Variable(np.zeros(5, np.int32), name="v")
        bad = fl.scatter_add(v, [1, 3, 3], [10, 20, 30], use_locking=True)
        failing = _blocked_after(bad)
        good = fl.scatter_add(v, [0, 3], [1, 2], use_locking=True)
        gate = threading.Event()
        with fl.Session() as sess:
            sess.run(v.initializer)

            def other():
                gate.wait()
                for _ in range(5):
                    sess.run(good)

            t = threading.Thread(target=other)
            t.start()
            with pytest.raises(errors.DeadlineExceededError):
                gate.set()  # the others add while the failing step waits
                sess.run(failing, options=fl.RunOptions(timeout_in_ms=150))
            t.join()
            np.testing.assert_array_equal(sess.run(v), [5, 0, 0, 10, 0])


def _fail_after(sess, update):
    """Run a step that does `update` and then waits on a queue; once `update` is
    visible the caller runs other steps beside it, then runs `close`: the step fails."""
    q = fl.FIFOQueue(1, fl.int32)
    with fl.control_dependencies([update]):
        blocked = q.dequeue()
    close = q.close()
    failed = []

    def step():
        try:
            sess.run(blocked)
        except errors.OutOfRangeError as e:
            failed.append(e)

    t = threading.Thread(target=step)
    t.start()
    return t, failed, close


def test_a_failed_overwrite_superseded_by_a_later_one_stays_superseded():
    with fl.Graph().as_default():
        v = fl.Variable(1, name="v")
        later = fl.assign(v, 7)
        inc = fl.assign_add(v, 1)
        with fl.Session() as sess:
            sess.run(v.initializer)
            t, failed, close = _fail_after(sess, fl.assign(v, 50))
            _wait_for(sess, v, 50)
            sess.run(later)
            sess.run(close)
            t.join()
            assert failed and sess.run(v) == 7  # the later overwrite stands
            # A failed increment followed by another step's overwrite: superseded too.
            t, failed, close = _fail_after(sess, fl.assign_add(v, 100))
            _wait_for(sess, v, 107)
            sess.run(later)
            sess.run(inc)
            sess.run(close)
            t.join()
            assert failed and sess.run(v) == 8  # 7 (supersedes the +100) + 1


def test_a_failed_increment_is_taken_back_from_later_increments():
    with fl.Graph().as_default():
        v = fl.Variable(1, name="v")
        inc = fl.assign_add(v, 1)
        with fl.Session() as sess:
            sess.run(v.initializer)
            t, failed, close = _fail_after(sess, fl.assign_sub(v, 100))
            _wait_for(sess, v, -99)
            for _ in range(3):
                sess.run(inc)
            assert sess.run(v) == -96  # visible while the failing step runs
            sess.run(close)
            t.join()
            assert failed and sess.run(v) == 4  # 1 + 3: the -100 is gone


def _wait_for(sess, v, value, tries=100000):
    for _ in range(tries):
        if sess.run(v) == value:
            return
    raise AssertionError(f"{v.name} never held {value}")


def test_a_failed_step_alone_restores_exactly():
    with fl.Graph().as_default():
        v = fl.Variable(np.arange(3.0), name="v")
        w = fl.Variable(5, name="w")
        failing = _blocked_after(fl.group(fl.assign_add(v, [0.1, 0.2, 0.3]), fl.assign(w, 9),
                                          fl.assign_sub(v, [1.0, 1.0, 1.0])))
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())
            before = sess.run(v)
            _timed_out(sess, failing)
            got = sess.run(v)
            np.testing.assert_array_equal(got, before)  # bit for bit
            assert sess.run(w) == 5


def test_a_failed_count_up_to_is_taken_back_beside_other_counts():
    with fl.Graph().as_default():
        c = fl.Variable(0, name="c")
        count = fl.count_up_to(c, 100)
        with fl.Session() as sess:
            sess.run(c.initializer)
            t, failed, close = _fail_after(sess, count.op)
            _wait_for(sess, c, 1)
            got = [int(sess.run(count)) for _ in range(3)]
            sess.run(close)
            t.join()
            assert failed and got == [1, 2, 3] and sess.run(c) == 3  # the failed +1 is gone
