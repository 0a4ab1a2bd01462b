"""Backup workers on a real Dask LocalCluster, between-graph: three worker clients,
each a thread with its own graph and MonitoredTrainingSession on /job:worker/task:i,
the variables on ps/0 (replica_device_setter), SyncReplicasOptimizer taking 2 of 3,
and worker 2 made a straggler by a StragglerHook with a 30 s delay.

Nothing waits for the straggler: the two fast workers make two updates while it is
still inside its wait (checked through the stragglers' log, not the clock), then
`Stragglers.stop()` ends the wait and its step runs with its old local step, so the
accumulator on ps/0 drops its gradient.  The loss is sum(x @ w), whose gradient x^T
does not depend on w, and the straggler's x is 100x the others': had its gradient
landed, w would show it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab.train.stragglers import StragglerHook, Stragglers

distributed = pytest.importorskip("flowlab.distributed")

TIMEOUT_MS = 20000
W0 = np.array([[0.5], [0.25]], np.float32)
X = np.array([[[1.0, 2.0]], [[3.0, -1.0]], [[100.0, 100.0]]], np.float32)


def test_two_of_three_workers_on_a_cluster_leave_the_straggler_behind():
    stragglers = Stragglers.slow_worker(2, delay_s=30.0)
    fast_round = threading.Barrier(2)
    slow_done = threading.Event()
    out: dict[int, dict] = {}
    errs: list[BaseException] = []

    def wait_until(cond, what):
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.01)

    def _steps(sess, i, train, x, gs, w, count, opts):
        if i == 2:
            token = sess.run(train, {x: X[i]}, options=opts)   # waits 30 s first
            out[i] = {"token": int(token)}
            slow_done.set()
            return
        # The straggler has read local step 0 and is waiting before its step.
        wait_until(lambda: stragglers.waiting() == {2: 0}, "the straggler's wait")
        tokens = []
        for _ in range(2):
            tokens.append(int(sess.run(train, {x: X[i]}, options=opts)))
            fast_round.wait(TIMEOUT_MS / 1000)
        out[i] = {"tokens": tokens, "gs": int(sess.run(gs)), "w": sess.run(w),
                  "count": int(sess.run(count)), "waiting": stragglers.waiting()}
        fast_round.wait(TIMEOUT_MS / 1000)
        if i == 0:
            stragglers.stop()
        assert slow_done.wait(TIMEOUT_MS / 1000)
        out[i].update(gs_after=int(sess.run(gs)), w_after=sess.run(w),
                      count_after=int(sess.run(count)))

    def worker(cluster, i):
        try:
            g = fl.Graph()
            with g.as_default():
                with fl.device(fl.train.replica_device_setter(
                        cluster=cluster.cluster_spec, worker_device=f"/job:worker/task:{i}")):
                    gs = fl.train.get_or_create_global_step()
                    w = fl.Variable(W0, name="w")
                    x = fl.placeholder(fl.float32, [1, 2])
                    opt = fl.train.SyncReplicasOptimizer(fl.train.GradientDescentOptimizer(1.0),
                                                         replicas_to_aggregate=2, total_num_replicas=3)
                    train = opt.minimize(fl.reduce_sum(fl.matmul(x, w)), global_step=gs)
                count = opt._accumulator_list[0][0].num_accumulated()
                hooks = [opt.make_session_run_hook(i == 0, num_tokens=0), StragglerHook(stragglers, worker=i)]
                opts = fl.RunOptions(timeout_in_ms=TIMEOUT_MS)
                sess = fl.train.MonitoredTrainingSession(
                    master=f"{cluster.target}/job:worker/task:{i}", is_chief=i == 0, hooks=hooks,
                    log_step_count_steps=0, max_wait_secs=60, stop_grace_period_secs=1)
                try:
                    _steps(sess, i, train, x, gs, w, count, opts)
                finally:
                    sess.close()  # the chief's sync queue runner, parked in take_grad, is left behind
        except BaseException as e:  # noqa: BLE001 - reported below
            errs.append(e)
            fast_round.abort()
            stragglers.stop()

    with distributed.LocalCluster(ps=1, worker=3) as cluster:
        threads = [threading.Thread(target=worker, args=(cluster, i)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
    assert not errs, errs
    expected = W0 - 2 * (X[0].T + X[1].T) / 2          # two updates of the fast workers' mean
    for i in (0, 1):
        o = out[i]
        assert o["gs"] == 2 and o["count"] == 0 and o["waiting"] == {2: 0}
        np.testing.assert_allclose(o["w"], expected, rtol=1e-6)
        # After the straggler's late step: no new update, nothing accumulated, w unchanged.
        assert o["gs_after"] == 2 and o["count_after"] == 0
        np.testing.assert_allclose(o["w_after"], expected, rtol=1e-6)
    assert sorted(out[0]["tokens"] + out[1]["tokens"]) == [1, 1, 1, 2]
    assert out[2]["token"] == 2
    (slow,) = [e for e in stragglers.events if e.worker == 2]
    assert slow.interrupted and slow.delay_s == 30.0
    # The fast workers' two training steps (their hooks' steps 0 and 1; later ones are
    # the reads) all began and ended inside the straggler's wait.
    fast = [e for e in stragglers.events if e.worker != 2 and e.step < 2]
    assert len(fast) == 4 and all(slow.start_seq < e.start_seq and e.end_seq < slow.end_seq for e in fast)
