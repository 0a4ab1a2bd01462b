"""tf.train.MonitoredSession and its pieces (Scaffold, SessionManager,
ChiefSessionCreator, SingularMonitoredSession, MonitoredTrainingSession,
SessionRunHook / SessionRunArgs / SessionRunContext / SessionRunValues and the stock
hooks): the same training loops run under TensorFlow and flowlab, compared by the
values the loops and hooks saw and the files they wrote."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import flowlab as fl


def _model(tf: Any) -> tuple[Any, Any, Any, Any]:
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder_with_default(tf.constant(1.0), [])
    v = tf.Variable(0.0, name="v")
    train = tf.group(tf.assign_add(v, x), tf.assign_add(gs, 1))
    return gs, x, v, train


def _recording_hook(tf: Any, log: list[Any], v: Any) -> Any:
    class Recorder(tf.train.SessionRunHook):
        def begin(self) -> None:
            log.append("begin")

        def after_create_session(self, session: Any, coord: Any) -> None:
            log.append(("created", float(session.run(v))))

        def before_run(self, run_context: Any) -> Any:
            assert isinstance(run_context, tf.train.SessionRunContext)
            log.append(("before", type(run_context.original_args).__name__))
            return tf.train.SessionRunArgs({"v": v})

        def after_run(self, run_context: Any, run_values: Any) -> None:
            assert isinstance(run_values, tf.train.SessionRunValues)
            log.append(("after", float(run_values.results["v"])))
            if run_values.results["v"] >= 20:
                run_context.request_stop()

        def end(self, session: Any) -> None:
            log.append(("end", float(session.run(v))))

    return Recorder()


def _loop(tf: Any) -> list[Any]:
    log: list[Any] = []
    with tf.Graph().as_default():
        gs, x, v, train = _model(tf)
        final = tf.train.FinalOpsHook(v * 10)
        feeds = tf.train.FeedFnHook(lambda: {x: 2.0})
        hooks = [tf.train.StopAtStepHook(num_steps=6), _recording_hook(tf, log, v), final, feeds]
        with tf.train.MonitoredSession(session_creator=tf.train.ChiefSessionCreator(), hooks=hooks) as sess:
            while not sess.should_stop():
                log.append(("ran", sess.run(train)))
        log.append(("final", float(final.final_ops_values)))
        log.append(sess.should_stop())
    return log


def test_monitored_session_hooks(tf1: Any) -> None:
    assert _loop(tf1) == _loop(fl)


def test_stop_by_hook_request_and_out_of_range(tf1: Any) -> None:
    def run(tf: Any) -> Any:
        with tf.Graph().as_default():
            gs, x, v, train = _model(tf)
            seen = []
            with tf.train.SingularMonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
                raw = sess.raw_session()
                while not sess.should_stop():
                    sess.run(train)
                    seen.append(float(raw.run(v)))
        got = []
        with tf.Graph().as_default():
            it = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices([4, 5, 6])).get_next()
            with tf.train.MonitoredSession() as sess:  # OutOfRangeError ends the block quietly
                while True:
                    got.append(int(sess.run(it)))
            closed = sess.should_stop()
        return seen, got, closed

    assert run(tf1) == run(fl)


def test_nan_tensor_hook(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            loss = tf.constant(np.nan)
            with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training."):
                with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
                    sess.run(loss)
            with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss, fail_on_nan_loss=False)]) as sess:
                sess.run(loss)
                assert sess.should_stop()


def test_logging_tensor_hook_and_timer(tf1: Any) -> None:
    def run(tf: Any) -> Any:
        seen: list[Any] = []
        with tf.Graph().as_default():
            gs, x, v, train = _model(tf)
            hook = tf.train.LoggingTensorHook({"v": v, "step": gs}, every_n_iter=2,
                                              formatter=lambda d: seen.append(sorted((k, float(x)) for k, x in d.items()))
                                              or "logged")
            with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=5)]) as sess:
                while not sess.should_stop():
                    sess.run(train)
        timer = tf.train.SecondOrStepTimer(every_steps=3)
        trig = [timer.should_trigger_for_step(s) for s in range(1)]
        timer.update_last_triggered_step(0)
        trig += [timer.should_trigger_for_step(s) for s in (0, 1, 2, 3, 4)]
        return seen, trig, timer.last_triggered_step()

    assert run(tf1) == run(fl)
    for tf in (tf1, fl):
        with pytest.raises(ValueError, match="Either every_secs or every_steps"):
            tf.train.SecondOrStepTimer()


def _ckpt_once(tf: Any, root: str) -> Any:
    with tf.Graph().as_default():
        gs, x, v, train = _model(tf)
        listener_log: list[Any] = []

        class Listener(tf.train.CheckpointSaverListener):
            def after_save(self, session: Any, step: int) -> None:
                listener_log.append(step)

        hooks = [tf.train.StopAtStepHook(num_steps=5)]
        chief = [tf.train.CheckpointSaverHook(root, save_steps=2, listeners=[Listener()])]
        with tf.train.MonitoredTrainingSession(checkpoint_dir=root, hooks=hooks, chief_only_hooks=chief,
                                               save_checkpoint_secs=None, save_summaries_steps=None,
                                               log_step_count_steps=None) as sess:
            start = float(sess.run(v))
            while not sess.should_stop():
                sess.run(train)
        return start, listener_log, os.path.basename(tf.train.latest_checkpoint(root))


def _ckpt_run(tf: Any, root: str) -> Any:
    out = [_ckpt_once(tf, root), _ckpt_once(tf, root)]  # the second run restores the first's checkpoint
    files = sorted(f for f in os.listdir(root) if not f.startswith("events"))
    return out, files


def test_checkpoint_saver_hook_and_restore(tf1: Any, tmp_path: Any) -> None:
    a, b = str(tmp_path / "tf"), str(tmp_path / "fl")
    assert _ckpt_run(tf1, a) == _ckpt_run(fl, b)


def test_training_session_summaries(tf1: Any, tmp_path: Any) -> None:
    def run(tf: Any, root: str) -> Any:
        with tf.Graph().as_default():
            gs, x, v, train = _model(tf)
            tf.summary.scalar("v", v)
            with tf.train.MonitoredTrainingSession(checkpoint_dir=root, save_summaries_steps=2,
                                                   log_step_count_steps=2, save_checkpoint_steps=100) as sess:
                for _ in range(5):
                    sess.run(train)
        tags = []
        for f in sorted(os.listdir(root)):
            if f.startswith("events"):
                for e in tf.train.summary_iterator(os.path.join(root, f)):
                    for val in e.summary.value:
                        if val.tag == "v":
                            tags.append((e.step, val.tag, round(val.simple_value, 4)))
                    if e.HasField("session_log"):
                        tags.append((e.step, "session_log", e.session_log.status))
        return tags

    assert run(tf1, str(tmp_path / "tf")) == run(fl, str(tmp_path / "fl"))


def test_scaffold_and_session_manager(tf1: Any) -> None:
    def run(tf: Any) -> Any:
        with tf.Graph().as_default():
            v = tf.Variable(3.0, name="w")
            loc = tf.Variable(1.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
            assign = tf.assign(v, 5.0)
            scaffold = tf.train.Scaffold(init_fn=lambda s, sess: sess.run(assign))
            scaffold.finalize()
            kinds = [scaffold.init_op.type, scaffold.local_init_op.type, scaffold.ready_op.dtype.name,
                     scaffold.ready_for_local_init_op.dtype.name, scaffold.summary_op is None,
                     type(scaffold.saver).__name__, tf.get_default_graph().finalized]
            sm = tf.train.SessionManager(local_init_op=scaffold.local_init_op, ready_op=scaffold.ready_op,
                                         ready_for_local_init_op=scaffold.ready_for_local_init_op)
            sess = sm.prepare_session("", init_op=scaffold.init_op, init_fn=scaffold.init_fn)
            vals = sess.run([v, loc])
            sess.close()
            sm2 = tf.train.SessionManager(ready_op=scaffold.ready_op)
            try:
                sm2.prepare_session("", init_op=scaffold.local_init_op)
            except RuntimeError as e:
                err = str(e).split("error: ")[-1]
            return kinds, [float(x) for x in vals], err

    assert run(tf1) == run(fl)


def test_hook_errors(tf1: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
                tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=1)])
        with pytest.raises(ValueError, match="One of num_steps or last_step must be specified"):
            tf.train.StopAtStepHook()
        _double_feed(tf)


def _double_feed(tf: Any) -> None:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        hooks = [tf.train.FeedFnHook(lambda: {x: 1.0}), tf.train.FeedFnHook(lambda: {x: 2.0})]
        with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks."):
            with tf.train.MonitoredSession(hooks=hooks) as sess:
                sess.run(x)


def _direct_hooks(tf: Any, root: str) -> Any:
    with tf.Graph().as_default():
        gs, x, v, train = _model(tf)
        summ = tf.summary.scalar("v", v)

        class Creator(tf.train.SessionCreator):
            def create_session(self) -> Any:
                return tf.train.ChiefSessionCreator().create_session()

        hooks = [tf.train.GlobalStepWaiterHook(wait_until_step=0),
                 tf.train.StepCounterHook(every_n_steps=2, output_dir=root),
                 tf.train.SummarySaverHook(save_steps=2, output_dir=root, summary_op=summ),
                 tf.train.StopAtStepHook(last_step=4)]
        with tf.train.MonitoredSession(session_creator=Creator(), hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(train)
    seen = []
    for f in sorted(os.listdir(root)):
        for e in tf.train.summary_iterator(os.path.join(root, f)):
            seen += [(e.step, val.tag) for val in e.summary.value if val.tag == "v"]
    return seen


def test_direct_summary_and_step_hooks(tf1: Any, tmp_path: Any) -> None:
    assert _direct_hooks(tf1, str(tmp_path / "tf")) == _direct_hooks(fl, str(tmp_path / "fl"))
