"""Failures on a real cluster: a SIGKILLed worker, a SIGSTOPped one, and training
that goes on from the last checkpoint.  Each test has its own LocalCluster."""

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

pytestmark = pytest.mark.slow


def blocking_step_graph():
    """A step that updates ps/0 and then waits on a queue on worker/1 (forever)."""
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.Variable(1.0, name="v")
        with fl.device("/job:worker/task:1"):
            q = fl.FIFOQueue(1, fl.float32, name="q")
            waited = q.dequeue()
            size = q.size()
        with fl.device("/job:ps/task:0"):
            bumped = v.assign_add(10.0)
            with fl.control_dependencies([bumped]):
                step = fl.identity(waited) + 1.0
    return g, v, step, size


def test_a_killed_worker_fails_the_step_at_once_and_the_others_roll_back():
    with fd.LocalCluster(ps=1, worker=2) as cluster:
        g, v, step, size = blocking_step_graph()
        with fl.Session(cluster, graph=g) as sess:
            sess.run(v.initializer)
            victim = cluster.task("worker", 1)
            pid = worker_pid(cluster, "worker", 1)
            threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
            start = time.monotonic()
            with pytest.raises(fl.errors.UnavailableError) as e:
                sess.run(step)
            assert time.monotonic() - start < 1.0 + 5.0
            assert "/job:worker/replica:0/task:1" in str(e.value) and victim.address in str(e.value)
            assert sess.run(v) == 1.0  # ps/0's write was rolled back
            # The session's task is lost for good: it fails at once, saying what to do.
            with pytest.raises(fl.errors.UnavailableError, match="is gone: its worker died or restarted. A new session"):
                sess.run(step)
        # A new session runs what does not need the lost task at once, and fails fast
        # (UnavailableError, what MonitoredSession waits on) what does.
        with fl.Session(cluster, graph=g) as sess:
            assert sess.run(v) == 1.0  # ps/0 kept its state
        # The Nanny restarts the worker: a new incarnation, a new address, no state.
        deadline = time.monotonic() + 60
        while True:
            with fl.Session(cluster, graph=g) as sess:
                try:
                    assert sess.run(size) == 0  # a new queue on the new worker/1
                    break
                except fl.errors.UnavailableError:
                    assert time.monotonic() < deadline, "worker/1 did not come back"
                    time.sleep(0.5)
        assert cluster.task("worker", 1).incarnation != victim.incarnation


def test_a_stopped_worker_fails_the_step_within_the_heartbeat_deadline():
    with fd.LocalCluster(ps=1, worker=2) as cluster:
        g, v, step, size = blocking_step_graph()
        with fl.Session(cluster, graph=g) as sess:
            sess.run(v.initializer)
            pid = worker_pid(cluster, "worker", 1)
            threading.Timer(0.5, os.kill, (pid, signal.SIGSTOP)).start()
            start = time.monotonic()
            try:
                with pytest.raises(fl.errors.UnavailableError, match=r"task:1 at tcp://.*did not answer status"):
                    sess.run(step)
                elapsed = time.monotonic() - start
            finally:
                os.kill(pid, signal.SIGCONT)
            assert elapsed < 0.5 + 6.0
            assert sess.run(v) == 1.0


def _model():
    w = fl.get_variable("w", initializer=np.array([[0.3], [-0.2]], np.float32))
    x = fl.constant([[1.0, 2.0], [0.5, -1.0]])
    y = fl.constant([[1.0], [-1.0]])
    loss = fl.reduce_mean(fl.square(fl.matmul(x, w) - y))
    step = fl.train.get_or_create_global_step()
    train = fl.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
    return w, step, train


def _train(target, checkpoint_dir, last_step, kill=None):
    """Train to `last_step` under MonitoredTrainingSession, checkpointing every 5
    steps; `kill(step)` is called after each step.  Returns (w, global step, steps run)."""
    g = fl.Graph()
    with g.as_default():
        with fl.device(fl.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
            w, step, train = _model()
        hooks = [fl.train.StopAtStepHook(last_step=last_step)]
        runs = 0
        with fl.train.MonitoredTrainingSession(master=target, checkpoint_dir=checkpoint_dir, hooks=hooks,
                                               save_checkpoint_steps=5, save_summaries_steps=None,
                                               log_step_count_steps=0) as sess:
            while not sess.should_stop():
                _, s = sess.run([train, step])
                runs += 1
                if kill is not None:
                    kill(s)
        with fl.Session(target, graph=g) as plain:
            return plain.run(w), plain.run(step), runs


def test_training_goes_on_from_the_last_checkpoint_after_a_worker_is_killed(tmp_path):
    with fd.LocalCluster(ps=1, worker=1) as cluster:
        reference_w, reference_step, _ = _train(cluster.target, str(tmp_path / "reference"), 20)
        fl.Session.reset(cluster)
        killed_at: list[float] = []

        def kill(step):
            if step == 12 and not killed_at:
                killed_at.append(time.monotonic())
                os.kill(worker_pid(cluster, "worker", 0), signal.SIGKILL)

        w, step, runs = _train(cluster.target, str(tmp_path / "killed"), 20, kill)
        assert killed_at
        assert step == reference_step == 20
        # The run that fetched step 12 (the value before its update: ps/0 sends it as
        # TensorFlow's servers do) left the global step at 13; steps 11-13 ran again
        # from the checkpoint of step 10, giving the same numbers.
        np.testing.assert_allclose(w, reference_w, rtol=1e-6)
        assert runs == 20 + 3
        ckpt = fl.train.latest_checkpoint(str(tmp_path / "killed"))
        assert ckpt is not None and ckpt.endswith("-20")


def test_a_local_cluster_closes_with_no_process_left():
    with fd.LocalCluster(ps=1, worker=2) as cluster:
        pids = [worker_pid(cluster, job, i) for job, i in (("ps", 0), ("worker", 0), ("worker", 1))]
        for pid in pids:
            os.kill(pid, 0)  # alive
    deadline = time.monotonic() + 10
    for pid in pids:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            try:  # a zombie that is not ours to reap still counts as gone
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ", 1)[1].startswith("Z"):
                        break
            except OSError:
                break
            assert time.monotonic() < deadline, f"worker process {pid} outlived the cluster"
            time.sleep(0.1)
