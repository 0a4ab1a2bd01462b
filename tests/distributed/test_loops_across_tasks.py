"""While loops whose frames span the tasks of a real Dask LocalCluster (ps/0 and
worker/0, separate processes): each iteration's transfer is pulled over Dask comm
when its Recv runs, with keys both processes derive from frame names and
iterations.  Values, gradients and training steps equal TensorFlow's with every op
on one CPU; an error in the middle of a loop rolls back both tasks; a SIGKILLed ps
in the middle of a loop fails the step within seconds with UnavailableError naming
the task and its address, and the worker's writes of that step are undone."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import flowlab as fl
import flowlab.distributed as fd
from tests.distributed.conftest import worker_pid
from tests.runtime.task.test_loops_across_tasks import (
    WORKER,
    _cond_in_body,
    _endless_loop,
    _gather_each_iteration,
    _nested,
    _poisoned_loop,
    _rnn,
    _same,
    _split,
)


@pytest.fixture(scope="module")
def cluster():
    with fd.LocalCluster(ps=1, worker=1) as c:
        yield c


@pytest.fixture
def fresh(cluster):
    """Every test starts and ends with no state on the tasks (it persists between
    sessions, as on TensorFlow's servers)."""
    fl.Session.reset(cluster.target)
    yield cluster
    fl.Session.reset(cluster.target)


def _left_on_tasks(dask_worker):
    """What a worker's task still keeps of finished steps: rendezvous tables and values
    waiting for pulls (the dead loop values not waited for are bounded, see
    LocalTask._hold, and dropped when a commit comes)."""
    task = dask_worker.plugins["flowlab-task-server"].task
    return [len(task.rendezvous), len(task._unpulled)]


def _clean(cluster):
    left = cluster.client.run(_left_on_tasks)
    assert all(v == [0, 0] for v in left.values()), left


def _on_cluster(cluster, tf1, build, steps):
    g = fl.Graph()
    with g.as_default():
        fetches = build(fl)
        init = fl.global_variables_initializer() if fl.global_variables() else None
    with fl.Session(cluster, graph=g) as s:
        if init is not None:
            s.run(init)
        got = [s.run(fetches) for _ in range(steps)]
    _clean(cluster)
    tf1.disable_control_flow_v2()
    fetches = build(tf1)
    with tf1.Session() as s:
        if tf1.global_variables():
            s.run(tf1.global_variables_initializer())
        want = [s.run(fetches) for _ in range(steps)]
    return got, want


@pytest.mark.parametrize("build", [_split, _nested, _cond_in_body, _gather_each_iteration],
                         ids=["split", "nested", "cond", "gather"])
def test_a_loop_across_tasks_equals_tensorflow(build, fresh, tf1):
    got, want = _on_cluster(fresh, tf1, build, steps=2)
    _same(got, want)


def test_a_dynamic_rnn_whose_cell_is_on_the_ps_its_gradients_and_training_steps(fresh, tf1):
    got, want = _on_cluster(fresh, tf1, lambda tf: _rnn(tf, False), steps=1)
    _same(got, want, rtol=1e-4)
    fl.Session.reset(fresh.target)
    tf1.reset_default_graph()
    got, want = _on_cluster(fresh, tf1, lambda tf: _rnn(tf, True), steps=3)
    _same(got, want, rtol=1e-4)


def test_an_error_inside_the_body_on_the_ps_rolls_back_both_tasks(fresh):
    g = fl.Graph()
    with g.as_default():
        v, w, bad_at, n = _poisoned_loop()
    with fl.Session(fresh, graph=g) as s:
        s.run([v.initializer, w.initializer])
        assert s.run(n, {bad_at: -1}) == 5
        assert s.run([v, w]) == [5.0, 15.0]
        with pytest.raises(fl.errors.InvalidArgumentError, match="ps saw a NaN"):
            s.run(n, {bad_at: 2})
        assert s.run([v, w]) == [5.0, 15.0]
        _clean(fresh)
        assert s.run(n, {bad_at: -1}) == 5
        assert s.run([v, w]) == [10.0, 55.0]


@pytest.mark.slow
def test_a_killed_ps_mid_loop_fails_the_step_naming_it_and_the_worker_rolls_back():
    with fd.LocalCluster(ps=1, worker=1) as cluster:
        g = fl.Graph()
        with g.as_default():
            w, n = _endless_loop()  # runs until stopped
        victim = cluster.task("ps", 0)
        with fl.Session(f"{cluster.target}/job:worker/task:0", graph=g) as s:
            s.run(w.initializer)
            pid = worker_pid(cluster, "ps", 0)
            threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
            start = time.monotonic()
            with pytest.raises(fl.errors.UnavailableError) as e:
                s.run(n)
            assert time.monotonic() - start < 1.0 + 5.0
            assert "/job:ps/replica:0/task:0" in str(e.value) and victim.address in str(e.value)
        g2 = fl.Graph()
        with g2.as_default():
            with fl.device(WORKER):
                w2 = fl.Variable(0.0, name="w")  # the same variable, by name, on worker/0
        with fl.Session(f"{cluster.target}/job:worker/task:0", graph=g2) as s:
            assert s.run(w2) == 0.0  # the loop's increments of the failed step are gone
        addr = cluster.task("worker", 0).address
        assert cluster.client.run(_left_on_tasks, workers=[addr])[addr] == [0, 0]


def test_a_served_task_pulls_each_loop_key_over_comm_and_keeps_no_callback_of_done_pulls():
    import asyncio

    from flowlab.distributed.task_server import ServedTask
    from flowlab.kernels.sendrecv_kernels import make_key
    from flowlab.runtime.interface import values_to_wire
    from flowlab.runtime.task.step import Step

    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    asked: list[str] = []

    class Peer:
        async def flowlab_recv_tensor(self, message):
            asked.append(message["key"])
            return {"reply": {"value": values_to_wire([np.float32(len(asked))])[0], "is_dead": False},
                    "incarnation": 7}

    task = ServedTask("worker", 0, {"CPU": 1}, 1, loop, lambda address: Peer())
    try:
        step = Step(None, None, 3)
        table = task.rendezvous.find_or_create(3)
        src = "/job:ps/replica:0/task:0/device:CPU:0"
        keys = [make_key(src, 1, task.devices[0].name, "edge_2_b", 99, i) for i in range(5)]
        got: list[float] = []
        done = threading.Semaphore(0)
        for k in keys:
            table.recv(k, lambda v, e: (got.append(float(v)), done.release()))
            task._pull_key(step, 0, {"task": "/job:ps/replica:0/task:0", "incarnation": 7,
                                     "address": "tcp://127.0.0.1:1"}, k)
            assert done.acquire(timeout=10)
        assert asked == keys and got == [1.0, 2.0, 3.0, 4.0, 5.0]
        deadline = time.monotonic() + 5
        while step.get_cancellation()._callbacks and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not step.get_cancellation()._callbacks
    finally:
        task.close()
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()
