"""tf.train.Supervisor: defaults found in or added to the graph's collections, the
chief restoring or initializing, the standard services writing events TensorBoard's
own reader reads, checkpoints, and a replica waiting for its chief -- beside
TensorFlow's Supervisor where numbers are compared."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl


def _model(tf):
    x = tf.constant(np.array([[1.0, 2.0], [3.0, -1.0]], np.float32))
    w = tf.get_variable("w", initializer=np.array([[0.5], [-0.5]], np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    tf.summary.scalar("loss", loss)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return loss, train, step


def _train(tf, logdir, steps):
    with tf.Graph().as_default():
        loss, train, step = _model(tf)
        sv = tf.train.Supervisor(logdir=str(logdir), save_summaries_secs=3600, save_model_secs=3600)
        assert sv.global_step is step and sv.saver is not None and sv.summary_op is not None
        assert tf.get_default_graph().finalized
        losses = []
        with sv.managed_session() as sess:
            while not sv.should_stop() and len(losses) < steps:
                losses.append(float(sess.run([loss, train])[0]))
            final_step = int(sess.run(step))
        return losses, final_step, tf.train.latest_checkpoint(str(logdir))


def test_a_supervised_training_gives_tensorflows_numbers_and_resumes_from_its_checkpoint(tf1, tmp_path):
    expected, _, tf_ckpt = _train(tf1, tmp_path / "tf", 6)
    got, final, ckpt = _train(fl, tmp_path / "fl", 4)
    np.testing.assert_allclose(got, expected[:4], rtol=1e-6)
    # The checkpoint thread saves once at start, as TensorFlow's does: at step 0 unless
    # the first training steps win the race (TensorFlow's own saved at step 1 once under load).
    saved, tf_saved = (int(c.rpartition("model.ckpt-")[2]) for c in (ckpt, tf_ckpt))
    assert final == 4 and 0 <= saved <= 4 and 0 <= tf_saved <= 6
    again, final2, _ = _train(fl, tmp_path / "fl", 2)  # the chief restores that step's weights
    np.testing.assert_allclose(again, expected[saved:saved + 2], rtol=1e-6)
    assert final2 == saved + 2


def test_the_standard_services_write_events_tensorboard_reads(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with fl.Graph().as_default():
        loss, train, step = _model(fl)
        sv = fl.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=3600, save_model_secs=3600)
        with sv.managed_session() as sess:
            sess.run(train)
            sv.summary_computed(sess, sess.run(sv.summary_op))  # at the global step's value now: 1
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    losses = {e.step: e.value for e in acc.Scalars("loss")}
    assert set(losses) == {0, 1}  # the summary thread's run at start, then summary_computed
    assert "global_step/sec" in acc.Tags()["scalars"]
    assert acc.Graph() is not None and acc.MetaGraph() is not None
    assert (tmp_path / "graph.pbtxt").exists()


def test_a_replica_waits_until_its_chief_made_the_model_ready(tmp_path):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/cpu:0"):
            loss, train, step = _model(fl)
        chief = fl.train.Supervisor(is_chief=True, logdir=str(tmp_path), save_summaries_secs=0,
                                    save_model_secs=0, recovery_wait_secs=0.05)
    replica = fl.train.Supervisor(graph=g, is_chief=False, recovery_wait_secs=0.05)
    assert replica.summary_writer is None and replica.save_path is None  # only the chief writes
    # One process, one session each: the state is per session here, so the replica
    # waits on its own uninitialized session -- and gives up after max_wait_secs.
    with pytest.raises(fl.errors.DeadlineExceededError, match="Session was not ready"):
        replica.prepare_or_wait_for_session(max_wait_secs=0.3)
    with chief.managed_session() as sess:
        assert sess.run(step) == 0


def test_a_replica_refuses_a_variable_without_a_device():
    with fl.Graph().as_default():
        _model(fl)
        with pytest.raises(ValueError, match="all Variables must have their device set: w"):
            fl.train.Supervisor(is_chief=False)


def test_an_error_in_the_managed_body_stops_the_services_and_is_raised(tmp_path):
    with fl.Graph().as_default():
        _model(fl)
        sv = fl.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=3600, save_model_secs=3600)
        with pytest.raises(ZeroDivisionError):
            with sv.managed_session():
                raise ZeroDivisionError("in the training loop")
        assert sv.should_stop()


def test_a_looper_thread_calls_its_target_at_once_then_every_interval():
    # TensorFlow's LooperThread: the first call at start, not after one interval.
    coord = fl.train.Coordinator()
    called = threading.Event()
    fl.train.LooperThread.loop(coord, 3600, called.set)
    assert called.wait(10)
    coord.request_stop()
    coord.join()


def test_basic_train_loop_steps_until_the_supervisor_stops_and_retries_after_aborted(tmp_path):
    with fl.Graph().as_default():
        loss, train, step = _model(fl)
        sv = fl.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0, save_model_secs=0)
        calls = []

        def train_step(sess, scale, stop_after):
            calls.append(scale)
            if len(calls) == 2:
                raise fl.errors.AbortedError(None, None, "a server restarted")
            sess.run(train)
            if len(calls) >= stop_after:
                sv.request_stop()

        fl.train.basic_train_loop(sv, train_step, args=[2.0], kwargs={"stop_after": 4})
        assert calls == [2.0] * 4
        with sv.managed_session() as sess:
            assert sess.run(step) == 0  # no checkpoint was saved: a fresh model again


def test_a_monitored_session_closes_past_a_thread_that_ignores_the_stop():
    # TensorFlow's close joins with ignore_live_threads: a thread still blocked after
    # the grace period (a sync chief's queue runner in take_grad) is left behind.
    release = threading.Event()

    class Blocker(fl.train.SessionRunHook):
        def after_create_session(self, session, coord):
            t = threading.Thread(target=release.wait, args=(30,), daemon=True)
            coord.register_thread(t)
            t.start()

    with fl.Graph().as_default():
        _, train, _ = _model(fl)
        sess = fl.train.MonitoredSession(hooks=[Blocker()], stop_grace_period_secs=0.2)
        sess.run(train)
        sess.close()  # no "Coordinator stopped with threads still running"
        release.set()
