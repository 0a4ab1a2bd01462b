"""A Session over several in-process tasks (a ps task and a worker task): the
master places over the devices of all of them, a Recv pulls its tensor from the
task that sent it (recv_tensor), values equal a one-task session, and a failed step
writes nothing on any task -- also on a task that had already finished its part."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.task.task import LocalTask


def _tasks():
    return [LocalTask("worker", 0, {"CPU": 1}), LocalTask("ps", 0, {"CPU": 1})]


def _model(tf, on_tasks: bool):
    rng = np.random.RandomState(3)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.device("/job:ps/task:0" if on_tasks else "/cpu:0"):
        w = tf.Variable(rng.randn(4, 1).astype(np.float32), name="w")
        b = tf.Variable(np.zeros(1, np.float32), name="b")
        step = tf.Variable(0, name="global_step")
    with tf.device("/job:worker/task:0" if on_tasks else "/cpu:0"):
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return x, y, w, b, step, loss, train


def _train(sess, x, y, loss, train, steps=5):
    rng = np.random.RandomState(0)
    out = []
    for _ in range(steps):
        xv, yv = rng.rand(8, 4).astype(np.float32), rng.rand(8, 1).astype(np.float32)
        out.append(sess.run([loss, train], {x: xv, y: yv})[0])
    return out


def test_a_ps_and_a_worker_task_train_as_one_task_does():
    with fl.Graph().as_default():
        x, y, w, b, step, loss, train = _model(fl, False)
        with fl.Session() as s:
            s.run(fl.global_variables_initializer())
            want = _train(s, x, y, loss, train) + [s.run([w, b, step])]
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            x, y, w, b, step, loss, train = _model(fl, True)
            with fl.Session(tasks=tasks) as s:
                s.run(fl.global_variables_initializer())
                got = _train(s, x, y, loss, train) + [s.run([w, b, step])]
                sp = s._master.plan_for([x, y], [loss], [train.op if hasattr(train, "op") else train])
                assert {m["units"][0]["graph_def"]["node"][0]["device"].split("/device")[0] for m in sp.messages} == {
                    "/job:worker/replica:0/task:0", "/job:ps/replica:0/task:0"}
                assert any(m["remote_recvs"] for m in sp.messages) and any(m["remote_sends"] for m in sp.messages)
                assert s.placement(loss).device_of[w.op.name].name.startswith("/job:ps/")
        for a, g in zip(want[:-1], got[:-1]):
            np.testing.assert_allclose(g, a, rtol=1e-6)
        for a, g in zip(want[-1], got[-1]):
            np.testing.assert_allclose(g, a, rtol=1e-6)
        # The state lives on the tasks, not in the session: a new session sees it.
        with fl.Session(tasks=tasks, graph=w.graph) as s2:
            assert s2.run(step) == 5
        assert all(t.status()["running_steps"] == 0 for t in tasks)
        assert all(len(t.rendezvous) == 0 for t in tasks)
    finally:
        for t in tasks:
            t.close()


def test_a_step_that_fails_on_the_worker_writes_nothing_on_the_ps():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            with fl.device("/job:ps/task:0"):
                v = fl.Variable(10.0, name="v")
                bumped = fl.assign_add(v, 1.0)
            x = fl.placeholder(fl.float32, [], name="x")
            with fl.device("/job:worker/task:0"):
                checked = fl.check_numerics(bumped * x, "worker saw a NaN")
            with fl.Session(tasks=tasks) as s:
                s.run(v.initializer)
                assert s.run(checked, {x: 2.0}) == 22.0
                for _ in range(3):
                    with pytest.raises(errors.InvalidArgumentError, match="worker saw a NaN") as e:
                        s.run(checked, {x: np.nan})
                    assert e.value.op is checked.op  # the client's op
                    assert s.run(v) == 11.0  # the ps task finished its part, then rolled it back
                assert s.run(checked, {x: 1.0}) == 12.0
        assert all(not t._held for t in tasks)
    finally:
        for t in tasks:
            t.close()


def test_a_loop_on_one_task_runs_beside_a_step_over_several_and_so_does_one_across_tasks():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            with fl.device("/job:ps/task:0"):
                a = fl.constant(1.0)
            with fl.device("/job:worker/task:0"):  # `a` enters the loop's frame on the worker
                r = fl.while_loop(lambda i: i < 3.0, lambda i: i + a, [fl.constant(0.0)])

            def body(i):
                with fl.device("/job:ps/task:0"):
                    return i + a * 2.0  # inside the frame, on the ps

            with fl.device("/job:worker/task:0"):
                across = fl.while_loop(lambda i: i < 3.0, body, [fl.constant(0.0)])
            with fl.Session(tasks=tasks) as s:
                assert s.run(r) == 3.0
                assert s.run(across) == 4.0  # tests/runtime/task/test_loops_across_tasks.py has more
    finally:
        for t in tasks:
            t.close()


def _split_graph():
    """A placeholder times 3 on the ps, plus 1 on the worker: one transfer."""
    with fl.device("/job:ps/task:0"):
        p = fl.placeholder(fl.float32, [], name="p")
        a = p * 3.0
    with fl.device("/job:worker/task:0"):
        z = a + 1.0
    return p, z


def test_a_closed_peer_fails_the_step_naming_it():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            p, z = _split_graph()
            with fl.Session(tasks=tasks) as s:
                assert s.run(z, {p: 2.0}) == 7.0
                tasks[1].close()
                with pytest.raises(errors.UnavailableError, match="/job:ps/replica:0/task:0"):
                    s.run(z, {p: 2.0})
    finally:
        for t in tasks:
            t.close()


def test_a_pushed_transfer_is_handed_over_when_its_send_runs_and_not_pulled():
    # run_step's `push` (the sender) and `pushed` (the receiver), as a cluster's client
    # sends them (flowlab.distributed), on the in-process transport.
    from concurrent.futures import ThreadPoolExecutor

    worker, ps = tasks = _tasks()
    try:
        with fl.Graph().as_default():
            p, z = _split_graph()
            with fl.Session(tasks=tasks) as s:
                assert s.run(z, {p: 2.0}) == 7.0  # registered; pulled
                (handle,) = worker._handles
                (pull,) = worker.compiled(handle).remote_recvs
                key = pull["key"]

                def no_pull(message):
                    raise AssertionError("a pushed key was pulled")

                ps.recv_tensor = no_pull
                push = [{"key": key, "task": worker.name, "incarnation": worker.incarnation, "address": ""}]

                def step(step_id, worker_extra, ps_extra):
                    m = {"handle": handle, "step_id": step_id, "feeds": [np.float32(5.0)], "timeout_ms": 5000}
                    with ThreadPoolExecutor(2) as pool:
                        fw = pool.submit(worker.run_step, {**m, **worker_extra})
                        fp = pool.submit(ps.run_step, {**m, **ps_extra})
                        return fw.result(10)["values"], fp.result(10)["values"]

                got, _ = step(900001, {"pushed": [key]}, {"push": push})
                assert [v for v in got if v is not None] == [16.0]
                for t in tasks:
                    t.commit_step({"step_id": 900001})
                # Only keys of the step's transfers, with their receiver.
                with pytest.raises(errors.InvalidArgumentError, match="pushed key 'nope'"):
                    worker.run_step({"handle": handle, "step_id": 900002, "feeds": [np.float32(1.0)],
                                     "pushed": ["nope"]})
                with pytest.raises(errors.InvalidArgumentError, match="push entry"):
                    ps.run_step({"handle": handle, "step_id": 900003, "feeds": [np.float32(1.0)],
                                 "push": [{**push[0], "key": "nope"}]})
                with pytest.raises(errors.InvalidArgumentError, match="is not a key that partitions"):
                    worker.push_tensor({"handle": handle, "step_id": 900004, "key": "nope", "value": 1.0,
                                        "is_dead": False, "task": ps.name, "incarnation": ps.incarnation})
                # A push from another incarnation of the sender fails the receiver's step.
                assert worker.push_tensor({"handle": handle, "step_id": 900005, "key": key, "value": 1.0,
                                           "is_dead": False, "task": ps.name, "incarnation": 1}) == {
                    "accepted": False}
                with pytest.raises(errors.UnavailableError, match="restarted"):
                    worker.run_step({"handle": handle, "step_id": 900005, "feeds": [np.float32(1.0)],
                                     "timeout_ms": 5000, "pushed": [key]})
                del ps.recv_tensor
                assert s.run(z, {p: 1.0}) == 4.0
    finally:
        for t in tasks:
            t.close()
