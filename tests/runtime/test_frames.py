"""The executor's multi-execution hook and its frame path (loops built by hand from
the control-flow primitives)."""

from __future__ import annotations

import queue

import numpy as np
import pytest

import flowlab as tf
from flowlab import errors
from flowlab.runtime.executor import Execution, run_executions
from flowlab.runtime.step import Step
from tests.runtime import testing_ops as T


# --- several executions of one step, driven together ------------------------------------
def _plan(sess, fetches, feeds=()):
    return sess._plan_for(list(feeds), list(fetches), [])


def test_run_executions_drives_several_plans_of_one_step():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(2.0)
        a = T.async_copy(x * 3.0, delay=0.02)
        b = T.async_copy(x + 1.0, delay=0.01)
    sess = tf.Session(graph=g)
    step = Step(sess)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex1 = Execution(_plan(sess, [a]), step, [], completions=shared)
    ex2 = Execution(_plan(sess, [b]), step, [], completions=shared)
    assert run_executions([ex1, ex2]) == [[6.0], [3.0]]


def test_run_executions_first_error_fails_all_and_undoes_writes_once():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        assign = tf.assign(v, 5.0)
        with tf.control_dependencies([assign]):
            bad = T.fail(tf.constant(1.0), message="kaput")
        blocked = T.block(tf.constant(1.0))
    sess = tf.Session(graph=g)
    sess.run(v.initializer)
    step = Step(sess)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex1 = Execution(_plan(sess, [bad]), step, [], completions=shared)
    ex2 = Execution(_plan(sess, [blocked]), step, [], completions=shared)
    with pytest.raises(errors.InvalidArgumentError, match="kaput"):
        run_executions([ex2, ex1])
    assert ex2.error is not None
    assert sess.run(v) == 1.0


def test_run_executions_deadline():
    g = tf.Graph()
    with g.as_default():
        blocked = T.block(tf.constant(1.0))
    sess = tf.Session(graph=g)
    import time

    step = Step(sess, deadline=time.monotonic() + 0.05)
    shared: queue.SimpleQueue = queue.SimpleQueue()
    ex = Execution(_plan(sess, [blocked]), step, [], completions=shared)
    with pytest.raises(errors.DeadlineExceededError):
        run_executions([ex])


def test_run_executions_rejects_separate_queues():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
    sess = tf.Session(graph=g)
    step = Step(sess)
    with pytest.raises(ValueError):
        run_executions([Execution(_plan(sess, [c]), step, []), Execution(_plan(sess, [c]), step, [])])


def test_single_execution_advance_and_on_completion():
    g = tf.Graph()
    with g.as_default():
        a = T.async_copy(tf.constant(np.arange(3.0)), delay=0.01)
        b = a * 2.0
    sess = tf.Session(graph=g)
    ex = Execution(_plan(sess, [b]), Step(sess), [])
    ex.start()
    ex.advance()
    assert not ex.finished
    item = ex.completions.get(timeout=5)
    assert item[0] is ex
    ex.on_completion(item)
    ex.advance()
    assert ex.finished
    np.testing.assert_array_equal(ex.finish()[0], [0.0, 2.0, 4.0])
