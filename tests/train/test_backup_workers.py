"""Backup workers, in-graph: with m of n replicas aggregated, the global step never
waits for the slowest n - m, and a straggler's late gradient is dropped as stale.

One graph, one session; each replica is a thread with its own SyncReplicasOptimizer
(own local step) whose loop waits its injected delay (flowlab.train.stragglers) before
each `sess.run(train)`.  Replica 2 is a fixed slow worker with a 30 s delay; nothing
here waits for it: the assertions are on orderings (who was still waiting when the
updates happened), on the global step, the accumulators' counts and the variable
values, and the slow worker's wait is ended by `Stragglers.stop()`.

The loss is sum(x @ w), whose gradient x^T does not depend on w, so which update a
gradient lands in does not change the final values: an accepted gradient shows as
its x in w, a dropped one does not show at all.  The slow replica's x is 100x the
others', so had its gradient landed, w would say so.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab.train.stragglers import Stragglers, run_replicas

TIMEOUT_MS = 20000
W0 = np.array([[0.5], [0.25]], np.float32)
X = np.array([[[1.0, 2.0]], [[3.0, -1.0]], [[100.0, 100.0]]], np.float32)


def _graph(m, n, w0=W0):
    gs = fl.train.get_or_create_global_step()
    w = fl.Variable(w0, name="w")
    replicas = []
    for i in range(n):
        x = fl.placeholder(fl.float32, [1, w0.shape[0]], name=f"x{i}")
        opt = fl.train.SyncReplicasOptimizer(fl.train.GradientDescentOptimizer(1.0),
                                             replicas_to_aggregate=m, total_num_replicas=n)
        train = opt.minimize(fl.reduce_sum(fl.matmul(x, w)), global_step=gs)
        replicas.append((opt, train, x))
    hooks = [opt.make_session_run_hook(i == 0, num_tokens=0) for i, (opt, _, _) in enumerate(replicas)]
    for h in hooks:
        h.begin()
    count = replicas[0][0]._accumulator_list[0][0].num_accumulated()
    local_steps = [opt._local_step for opt, _, _ in replicas]
    return gs, w, replicas, hooks, count, local_steps


def _wait_until(cond, what):
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


class _Replicas:
    """Threads running replica i's `steps[i]` steps, each after its injected delay;
    `barrier` (when given) makes the fast replicas 0 and 1 go round by round."""

    def __init__(self, sess, replicas, stragglers, coord, steps, barrier=None, xs=X):
        self.errors, self.done = [], []
        self.threads = [threading.Thread(target=self._loop, args=(sess, replicas[i], i, k, stragglers,
                                                                  coord, barrier, xs[i]))
                        for i, k in enumerate(steps) if k]

    def _loop(self, sess, replica, i, steps, stragglers, coord, barrier, x_value):
        _, train, x = replica
        opts = fl.RunOptions(timeout_in_ms=TIMEOUT_MS)
        try:
            for k in range(steps):
                stragglers.sleep(i, k, coord)
                sess.run(train, {x: x_value}, options=opts)
                self.done.append((i, k))
                if barrier is not None and i < 2:
                    barrier.wait(TIMEOUT_MS / 1000)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)

    def start(self, *which):
        for t in (self.threads[j] for j in which):
            t.start()

    def join(self, *which):
        for t in (self.threads[j] for j in which):
            t.join(TIMEOUT_MS / 1000 + 5)
            assert not t.is_alive()
        assert not self.errors, self.errors


def _session(g, hooks):
    coord = fl.train.Coordinator()
    with g.as_default():
        init = [fl.global_variables_initializer(), fl.local_variables_initializer()]
    sess = fl.Session(graph=g)
    sess.run(init)
    for h in hooks:
        h.after_create_session(sess, coord)
    return sess, coord


def _close(sess, coord):
    coord.request_stop()
    sess.close()
    coord.join(stop_grace_period_secs=10, ignore_live_threads=True)


def test_two_of_three_never_wait_for_the_slow_worker_and_drop_its_gradient():
    g = fl.Graph()
    with g.as_default():
        gs, w, replicas, hooks, count, local_steps = _graph(m=2, n=3)
    stragglers = Stragglers.slow_worker(2, delay_s=30.0)
    sess, coord = _session(g, hooks)
    try:
        run = _Replicas(sess, replicas, stragglers, coord, steps=[2, 2, 1], barrier=threading.Barrier(2))
        run.start(2)                                   # the slow worker reads local step 0 ...
        _wait_until(lambda: stragglers.waiting() == {2: 0}, "the slow worker's wait")
        run.start(0, 1)                                # ... and waits while the others train
        run.join(0, 1)
        # Two updates, each the mean of the fast replicas' gradients, all while the slow
        # worker was still inside its 30 s wait.
        assert sorted(run.done) == [(0, 0), (0, 1), (1, 0), (1, 1)]
        assert stragglers.waiting() == {2: 0}
        assert int(sess.run(gs)) == 2 and int(sess.run(count)) == 0
        np.testing.assert_allclose(sess.run(w), W0 - 2 * (X[0].T + X[1].T) / 2, rtol=1e-6)
        # The slow worker's step now runs: its gradient (local step 0 < global step 2)
        # is dropped by the accumulator, and it takes a current token.
        stragglers.stop()
        run.join(2)
        (slow,) = [e for e in stragglers.events if e.worker == 2]
        assert slow.interrupted and slow.delay_s == 30.0
        assert all(e.end_seq < slow.end_seq for e in stragglers.events if e.worker != 2)
        assert int(sess.run(gs)) == 2 and int(sess.run(count)) == 0
        np.testing.assert_allclose(sess.run(w), W0 - 2 * (X[0].T + X[1].T) / 2, rtol=1e-6)
        # Each update hands out n = 3 tokens for 2 takers, so in round 2 one fast replica
        # took round 1's spare token (step 1), the other and the slow one a step-2 token.
        steps = [int(v) for v in sess.run(local_steps)]
        assert sorted(steps[:2]) == [1, 2] and steps[2] == 2
    finally:
        _close(sess, coord)


def test_without_a_backup_the_update_waits_for_the_slow_worker():
    g = fl.Graph()
    with g.as_default():
        gs, w, replicas, hooks, count, local_steps = _graph(m=3, n=3)
    stragglers = Stragglers.slow_worker(2, delay_s=30.0)
    sess, coord = _session(g, hooks)
    try:
        run = _Replicas(sess, replicas, stragglers, coord, steps=[1, 1, 1])
        run.start(2)
        _wait_until(lambda: stragglers.waiting() == {2: 0}, "the slow worker's wait")
        run.start(0, 1)
        # Both fast gradients are in; the update needs the third, so the fast replicas
        # stay blocked on the token queue.
        _wait_until(lambda: int(sess.run(count)) == 2, "the fast replicas' gradients")
        assert int(sess.run(gs)) == 0 and run.done == [] and stragglers.waiting() == {2: 0}
        stragglers.stop()
        run.join(0, 1, 2)
        # The slow gradient was not stale (local step 0 = global step 0): it is in.
        assert int(sess.run(gs)) == 1 and int(sess.run(count)) == 0
        assert sorted(run.done) == [(0, 0), (1, 0), (2, 0)]
        np.testing.assert_allclose(sess.run(w), W0 - (X[0].T + X[1].T + X[2].T) / 3, rtol=1e-5)
    finally:
        _close(sess, coord)


def test_heavy_tailed_stragglers_every_update_averages_the_gradients_it_took():
    """n = 4 replicas, m = 3, lognormal delays, driven by run_replicas until the global
    step reaches 5.  Replica i's gradient is the one-hot e_i, so the mean of any set of
    gradients sums to 1 over w's entries: the total drop of w is exactly the number of
    updates, and no entry moved by more than its replica's steps / m (a dropped
    gradient never lands, an accepted one lands once)."""
    n, m, target = 4, 3, 5
    w0 = np.zeros([n, 1], np.float32)
    xs = np.eye(n, dtype=np.float32)[:, None, :]
    g = fl.Graph()
    with g.as_default():
        gs, w, replicas, hooks, count, local_steps = _graph(m=m, n=n, w0=w0)
        release = replicas[0][0].get_init_tokens_op(n)
    stragglers = Stragglers.lognormal(median_s=0.002, sigma=1.5, seed=4, max_delay_s=0.05)
    sess, coord = _session(g, hooks)
    opts = fl.RunOptions(timeout_in_ms=TIMEOUT_MS)
    try:
        steps = [lambda k, i=i: sess.run(replicas[i][1], {replicas[i][2]: xs[i]}, options=opts)
                 for i in range(n)]
        log = run_replicas(steps, stragglers, until=lambda: int(sess.run(gs)) >= target,
                           release=lambda: sess.run(release), timeout_s=TIMEOUT_MS / 1000)
        updates, left = int(sess.run(gs)), int(sess.run(count))
        drop = (w0 - sess.run(w))[:, 0]
        assert updates >= target and 0 <= left <= m - 1
        np.testing.assert_allclose(drop.sum(), updates, rtol=1e-5)
        per_replica = np.bincount([s.replica for s in log], minlength=n)
        assert np.all(drop >= 0) and np.all(drop <= per_replica / m + 1e-6)
        # A run returns the token it took: the global step it may compute the next
        # gradient at; tokens only ever hold steps that existed.
        assert all(0 <= int(s.result) <= updates for s in log)
        assert [s.ended for s in log] == sorted(s.ended for s in log)
        served = {(e.worker, e.step) for e in stragglers.events}
        assert {(s.replica, s.step) for s in log} <= served
    finally:
        _close(sess, coord)


def test_run_replicas_reports_a_replica_error_and_a_stuck_run():
    def boom(k):
        raise ValueError("replica 1 broke")

    with pytest.raises(ValueError, match="replica 1 broke"):
        run_replicas([lambda k: k, boom], Stragglers.constant(0.0), until=lambda: False, timeout_s=10)
    with pytest.raises(TimeoutError, match="did not hold within 0.2 s"):
        run_replicas([lambda k: k], Stragglers.constant(0.01), until=lambda: False, timeout_s=0.2)
