"""TensorFlow 1.x's stock SessionRunHooks, with its triggering rules: StopAtStepHook,
NanTensorHook (NanLossDuringTrainingError), LoggingTensorHook, CheckpointSaverHook
(with CheckpointSaverListener), StepCounterHook (steps/sec logged, and written as the
"global_step/sec" summary when given a directory), FinalOpsHook, FeedFnHook and
GlobalStepWaiterHook, and SecondOrStepTimer, the every-N-steps-or-seconds rule they share.

A hook that needs the global step raises RuntimeError in `begin()` when the graph has
none, as in TensorFlow.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from flowlab.platform import tf_logging as logging
from flowlab.train import training_util
from flowlab.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["SecondOrStepTimer", "StopAtStepHook", "NanLossDuringTrainingError", "NanTensorHook",
           "LoggingTensorHook", "CheckpointSaverListener", "CheckpointSaverHook", "StepCounterHook",
           "FinalOpsHook", "FeedFnHook", "GlobalStepWaiterHook", "SummarySaverHook"]


class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        self.reset()
        self._every_secs, self._every_steps = every_secs, every_steps
        if self._every_secs is None and self._every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if self._every_secs is not None and self._every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        if self._every_steps is not None and step >= self._last_triggered_step + self._every_steps:
            return True
        return False

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        now = time.time()
        if self._last_triggered_time is None:
            elapsed: tuple[float | None, int | None] = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


def _global_step_tensor(hook: str) -> Any:
    """The global step read the hooks fetch (TensorFlow's `global_step/add`: the step
    before the run's increment)."""
    t = training_util._get_or_create_global_step_read()
    if t is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return t


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step` (or `num_steps` more)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self) -> None:
        self._global_step_tensor = _global_step_tensor("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context: Any) -> Any:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        # The fetched value is the step before this run's increment; read it again to
        # know whether the run did increment it.
        if run_values.results + 1 >= self._last_step:
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        # TensorFlow's sentence first, then where to look.
        return ("NaN loss during training. Find the op that made it: flowlab.debug.Stepper(sess, fetches, "
                "feed_dict, stop_on_nan_or_inf=True).continue_(); a learning rate too high or "
                "log(softmax(...)) instead of tf.nn.sparse_softmax_cross_entropy_with_logits are the usual "
                "causes.")


class NanTensorHook(SessionRunHook):
    """Fails (or requests a stop) when `loss_tensor` is NaN."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True) -> None:
        self._loss_tensor, self._fail_on_nan_loss = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context: Any) -> Any:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if np.isnan(run_values.results):
            failure_message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(failure_message)
                raise NanLossDuringTrainingError
            logging.warning(failure_message)
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a dict or list of tensors / names) every N steps or
    seconds, and at the end if `at_end`."""

    def __init__(self, tensors: Any, every_n_iter: int | None = None, every_n_secs: float | None = None,
                 at_end: bool = False, formatter: Any = None) -> None:
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors.keys())
        self._tensors = tensors
        self._formatter = formatter
        self._timer = SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter) \
            if not only_log_at_end else None
        self._log_at_end = at_end

    def begin(self) -> None:
        from flowlab.graph.graph import get_default_graph

        if self._timer is not None:
            self._timer.reset()
        self._iter_count = 0
        g = get_default_graph()
        self._current_tensors = {tag: g.as_graph_element(t) if isinstance(t, str) else t
                                 for tag, t in self._tensors.items()}

    def before_run(self, run_context: Any) -> Any:
        self._should_trigger = self._timer is not None and self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, tensor_values: dict[str, Any]) -> None:
        original = np.get_printoptions()
        np.set_printoptions(suppress=True)
        try:
            elapsed = self._timer.update_last_triggered_step(self._iter_count)[0] if self._timer else None
            if self._formatter:
                logging.info(self._formatter(tensor_values))
            else:
                stats = [f"{tag} = {tensor_values[tag]}" for tag in self._tag_order]
                if elapsed is not None:
                    logging.info("%s (%.3f sec)", ", ".join(stats), elapsed)
                else:
                    logging.info("%s", ", ".join(stats))
        finally:
            np.set_printoptions(**original)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session: Any) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class CheckpointSaverListener:
    """Called around each save of a CheckpointSaverHook; `after_save` returning True
    requests a stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> Any:
        pass

    def end(self, session: Any, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves `<checkpoint_dir>/<checkpoint_basename>-<step>` when the session is created,
    every `save_secs` seconds or `save_steps` steps, and at the end."""

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None, save_steps: int | None = None,
                 saver: Any = None, checkpoint_basename: str = "model.ckpt", scaffold: Any = None,
                 listeners: Any = None, save_graph_def: bool = True) -> None:
        logging.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver, self._scaffold = saver, scaffold
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        from flowlab.summary import FileWriterCache

        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step_tensor("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        from flowlab.graph.graph import get_default_graph
        from flowlab.train import write_graph
        from flowlab.train.meta_graph import export_meta_graph

        global_step = int(session.run(self._global_step_tensor))
        if self._save_graph_def:
            # Written now, not in begin(): other hooks may still add ops in theirs.
            graph = get_default_graph()
            write_graph(graph, self._checkpoint_dir, "graph.pbtxt")
            self._summary_writer.add_graph(graph)
            self._summary_writer.add_meta_graph(export_meta_graph(saver_def=self._get_saver().saver_def))
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context: Any) -> Any:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + 1):
            global_step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session: Any, step: int) -> bool:
        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        from flowlab.summary import SessionLog

        self._get_saver().save(session, self._save_path, global_step=step, write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. listener: %s", listener)
                should_stop = True
        return should_stop

    def _get_saver(self) -> Any:
        from flowlab.graph.graph import GraphKeys, get_default_graph

        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {GraphKeys.SAVERS}. Please add a saver to the collection "
                               "or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one "
                               "to use by passing it to the constructor.")
        self._saver = savers[0]
        return savers[0]


class StepCounterHook(SessionRunHook):
    """Logs the global steps per second every N steps or seconds (and writes the
    "global_step/sec" summary to `output_dir` or `summary_writer` when given)."""

    def __init__(self, every_n_steps: int = 100, every_n_secs: float | None = None, output_dir: str | None = None,
                 summary_writer: Any = None) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._summary_tag = "global_step/sec"

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            from flowlab.summary import FileWriterCache

            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_tensor("StepCounter")

    def before_run(self, run_context: Any) -> Any:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + 1):
            global_step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    steps_per_sec = elapsed_steps / elapsed_time if elapsed_time > 0 else float("inf")
                    if self._summary_writer is not None:
                        from flowlab.summary import Summary

                        summary = Summary(value=[Summary.Value(tag=self._summary_tag, simple_value=steps_per_sec)])
                        self._summary_writer.add_summary(summary, global_step)
                    logging.info("%s: %g", self._summary_tag, steps_per_sec)


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` when the session ends; their values in `final_ops_values`."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: Any = None) -> None:
        self._final_ops, self._final_ops_feed_dict = final_ops, final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self) -> Any:
        return self._final_ops_values

    def end(self, session: Any) -> None:
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)


class FeedFnHook(SessionRunHook):
    """Feeds `feed_fn()` (a feed_dict) into every run."""

    def __init__(self, feed_fn: Any) -> None:
        self.feed_fn = feed_fn

    def before_run(self, run_context: Any) -> Any:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Delays runs until the global step reaches `wait_until_step` (another worker
    advances it)."""

    def __init__(self, wait_until_step: int) -> None:
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step_tensor = _global_step_tensor("GlobalStepWaiterHook")

    def before_run(self, run_context: Any) -> Any:
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = int(run_context.session.run(self._global_step_tensor))
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                logging.info("Waiting for global step %d before starting training. Current step is %d.",
                             self._wait_until_step, current_step)
                last_logged_step = current_step
            time.sleep(0.5)


class SummarySaverHook(SessionRunHook):
    """Writes the summary op's result (`summary_op`, or the scaffold's) every N steps or
    seconds, with a SessionLog START event first, to `output_dir` or `summary_writer`."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None, output_dir: str | None = None,
                 summary_writer: Any = None, scaffold: Any = None, summary_op: Any = None) -> None:
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._summary_writer, self._output_dir = summary_op, summary_writer, output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            from flowlab.summary import FileWriterCache

            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step: int | None = None
        self._global_step_tensor = _global_step_tensor("SummarySaverHook")

    def _get_summary_op(self) -> Any:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]

    def before_run(self, run_context: Any) -> Any:
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests: dict[str, Any] = {"global_step": self._global_step_tensor}
        if self._request_summary and self._get_summary_op() is not None:
            requests["summary"] = self._get_summary_op()
        return SessionRunArgs(requests)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        from flowlab.summary import SessionLog

        if not self._summary_writer:
            return
        global_step = run_values.results["global_step"] + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session: Any = None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()
