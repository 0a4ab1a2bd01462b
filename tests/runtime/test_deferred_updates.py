"""Deferred variable updates (flowlab.runtime.deferred_updates): an optimizer update at
the end of its straight-line step, in place when its variables hold their arrays
alone -- with the values of the logged update, nothing written by a step that fails,
and no array anyone else holds ever changed."""

from __future__ import annotations

import queue
from collections import Counter

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels import training_kernels
from flowlab.runtime import deferred_updates


@pytest.fixture
def writes(monkeypatch):
    """Count how the deferred Adam updates wrote: in place or as new arrays."""
    seen: Counter = Counter()
    in_place, fresh = training_kernels._DeferredAdam._in_place, training_kernels._adam_fresh

    def counting_in_place(self, scratch):
        seen["in_place"] += 1
        return in_place(self, scratch)

    def counting_fresh(*args):
        seen["fresh"] += 1
        return fresh(*args)

    monkeypatch.setattr(training_kernels._DeferredAdam, "_in_place", counting_in_place)
    monkeypatch.setattr(training_kernels, "_adam_fresh", counting_fresh)
    return seen


def _program(seed=0):
    rng = np.random.default_rng(seed)
    x = fl.placeholder(fl.float32, [None, 4])
    w = fl.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")
    b = fl.Variable(np.zeros(3, np.float32), name="b")
    loss = fl.reduce_mean(fl.square(fl.nn.relu(fl.matmul(x, w) + b) - 1.0))
    train = fl.train.AdamOptimizer(0.05).minimize(loss)
    feed = {x: rng.standard_normal((8, 4)).astype(np.float32)}
    return x, w, b, loss, train, feed


def _run(steps, env, monkeypatch, fetch_loss=True):
    monkeypatch.setenv("FLOWLAB_FORWARDING", env)  # off: no forwarding, no deferral
    g = fl.Graph()
    with g.as_default():
        x, w, b, loss, train, feed = _program()
        with fl.Session(graph=g) as sess:
            sess.run(fl.global_variables_initializer())
            losses = [sess.run([train, loss] if fetch_loss else train, feed) for _ in range(steps)]
            slots = [sess.run(s) for s in fl.global_variables()]
            return losses, slots


def test_in_place_updates_give_the_logged_updates_values_bit_for_bit(monkeypatch, writes):
    on, slots_on = _run(12, "1", monkeypatch)
    assert writes["in_place"] >= 2 * 10  # both variables, every step after the first
    off, slots_off = _run(12, "0", monkeypatch)
    for a, b in zip(on, off):
        assert a[1] == b[1]
    for a, b in zip(slots_on, slots_off):
        np.testing.assert_array_equal(a, b)


def test_a_step_that_fails_after_the_update_writes_nothing(monkeypatch, writes):
    """The update's turn comes, then an op fails: the commit never runs, so the
    variables, the slots and the beta powers are as they were."""
    x, w, b, loss, train, feed = _program(1)
    with fl.control_dependencies([train]):
        fail = fl.check_numerics(fl.log(loss - loss - 1.0), "always_fails")  # log(-1): NaN
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        for _ in range(3):
            sess.run(train, feed)
        before = sess.run(fl.global_variables())
        in_place = writes["in_place"]
        with pytest.raises(fl.errors.InvalidArgumentError, match="always_fails"):
            sess.run(fail, feed)
        assert writes["in_place"] == in_place  # deferred, then dropped
        assert "step.commit()" in sess._plan_of(fail, feed).source
        after = sess.run(fl.global_variables())
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_a_fetched_value_is_never_changed_by_a_later_update(monkeypatch, writes):
    x, w, b, loss, train, feed = _program(2)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        held = sess.run(w)  # the caller's array
        copy = held.copy()
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(held, copy)
        assert not np.array_equal(sess.run(w), copy)
    assert writes["fresh"] >= 1  # while `held` was the variable's array, not in place


def test_a_value_in_a_queue_is_never_changed_by_a_later_update(writes):
    x, w, b, loss, train, feed = _program(3)
    q = fl.FIFOQueue(4, [fl.float32], shapes=[[4, 3]])
    enqueue = q.enqueue([w])
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        sess.run(enqueue)
        want = sess.run(w)
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(sess.run(q.dequeue()), want)


def test_a_read_after_the_update_in_the_same_step_sees_the_update(monkeypatch, writes):
    """An op after the update that reads the variable: the update is not deferred
    (the read must see the new value), as TensorFlow's control edge promises."""
    x, w, b, loss, train, feed = _program(4)
    with fl.control_dependencies([train]):
        w_after = fl.identity(w)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        w0 = sess.run(w)
        got = sess.run(w_after, feed)
        np.testing.assert_array_equal(got, sess.run(w))
        assert not np.array_equal(got, w0)
        plan = sess._plan_of(w_after, feed)
        from flowlab.runtime.straight_line import _line_order
        order = _line_order(plan.nodes)
        names = {plan.nodes[i].op.name for i in deferred_updates.deferrable(order, plan.fetch_slots)}
        assert names == {"Adam/update_b/ApplyAdam"}  # b is read by nothing later


def test_deferrable_names_the_updates_whose_variables_nothing_later_uses():
    x, w, b, loss, train, feed = _program(5)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        plan = sess._plan_of(train, feed)
        from flowlab.runtime.straight_line import _line_order
        order = _line_order(plan.nodes)
        names = {plan.nodes[i].op.name for i in deferred_updates.deferrable(order, plan.fetch_slots)}
        assert names == {"Adam/update_w/ApplyAdam", "Adam/update_b/ApplyAdam"}
        # Fetching a variable keeps its update in the step.
        fetched = sess._plan_of([train, w], feed)
        order = _line_order(fetched.nodes)
        names = {fetched.nodes[i].op.name for i in deferred_updates.deferrable(order, fetched.fetch_slots)}
        assert names == {"Adam/update_b/ApplyAdam"}


def test_concurrent_steps_train_without_errors_and_end_finite(writes):
    """Two threads train one model: updates may interleave (TensorFlow's
    use_locking=False), but every step completes and the values stay finite."""
    import threading

    x, w, b, loss, train, feed = _program(6)
    errors: queue.Queue = queue.Queue()
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())

        def work():
            try:
                for _ in range(20):
                    sess.run(train, feed)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.put(e)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors.empty()
        assert np.isfinite(sess.run(w)).all()
