"""`tf.train.Supervisor`: TensorFlow 1.x's older training wrapper, which the classic
distributed scripts use (`mnist_replica.py`: `sv.prepare_or_wait_for_session(
server.target)`, `with sv.managed_session(...)`).

A Supervisor gathers what a training program needs around one session: the ops that
initialize the model or say it is ready (found in the graph's collections, else
made and added to them, as TensorFlow does), a Saver, the merged summaries and the
global step.  It then finalizes the graph.  The chief prepares the session through
a `SessionManager`, restoring the latest checkpoint of `logdir` or initializing the
model.  It writes the graph into `logdir` and starts the standard services: threads
that write summaries and steps per second every `save_summaries_secs` and save a
checkpoint every `save_model_secs`.  Any other replica waits until the chief has
made the model ready.  Every supervisor starts the graph's queue runners.  The
services are `LooperThread`s of the supervisor's Coordinator, so `stop()` (or
leaving `managed_session`) ends them and the queue runners together, and closes the
summary writer with a STOP session log.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.platform import tf_logging as logging
from flowlab.train.coordinator import Coordinator, LooperThread
from flowlab.train.monitored_session import SessionManager
from flowlab.train.training_util import global_step as _global_step_value

__all__ = ["Supervisor"]


class _UseDefault:
    def __repr__(self) -> str:
        return "Supervisor.USE_DEFAULT"


class Supervisor:
    """See the module docstring; arguments and defaults as TensorFlow 1.x's."""

    USE_DEFAULT: Any = _UseDefault()

    def __init__(self, graph: Any = None, ready_op: Any = USE_DEFAULT, ready_for_local_init_op: Any = USE_DEFAULT,
                 is_chief: bool = True, init_op: Any = USE_DEFAULT, init_feed_dict: Any = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None, summary_op: Any = USE_DEFAULT,
                 saver: Any = USE_DEFAULT, global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30, stop_grace_secs: float = 120,
                 checkpoint_basename: str = "model.ckpt", session_manager: Any = None,
                 summary_writer: Any = USE_DEFAULT, init_fn: Any = None, local_init_run_options: Any = None) -> None:
        graph = graph if graph is not None else get_default_graph()
        with graph.as_default():
            self._ready_op = self._default(ready_op, GraphKeys.READY_OP, _report_uninitialized)
            self._ready_for_local_init_op = self._default(ready_for_local_init_op,
                                                          GraphKeys.READY_FOR_LOCAL_INIT_OP, None)
            self._init_op = self._default(init_op, GraphKeys.INIT_OP, _global_init)
            self._init_feed_dict = init_feed_dict
            self._local_init_op = self._default(local_init_op, GraphKeys.LOCAL_INIT_OP, _local_init)
            self._saver = self._default(saver, GraphKeys.SAVERS, _saver)
            self._summary_op = self._default(summary_op, GraphKeys.SUMMARY_OP, _merged_summaries)
            self._global_step = self._default(global_step, GraphKeys.GLOBAL_STEP, _global_step_tensor)
        self._graph = graph
        self._is_chief = bool(is_chief)
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._logdir: str | None = None
        self._save_summaries_secs: float | None = None
        self._save_model_secs: float | None = None
        self._save_path: str | None = None
        self._summary_writer: Any = None
        self._graph_added_to_summary = False
        if self._is_chief:  # only the chief writes: events, the graph, checkpoints
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                if logdir:
                    from flowlab.summary import FileWriter

                    self._summary_writer = FileWriter(logdir)
            else:
                self._summary_writer = summary_writer
        self._session_manager = session_manager if session_manager is not None else SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
            recovery_wait_secs=recovery_wait_secs, local_init_run_options=local_init_run_options)
        if not self._is_chief:
            for op in graph.get_operations():
                if op.type in ("Variable", "VariableV2") and not op.device:
                    raise ValueError(f"When using replicas, all Variables must have their device set: {op.name} "
                                     "has none (build the model under tf.device(tf.train.replica_device_setter(...))).")
        graph.finalize()

    @staticmethod
    def _default(given: Any, key: str, make: Any) -> Any:
        """`given`, or for USE_DEFAULT the first of collection `key`, else `make()`
        added to it (None when `make` is None or makes nothing)."""
        if given is not Supervisor.USE_DEFAULT:
            return given
        found = get_default_graph().get_collection(key)
        if found:
            if len(found) > 1:
                logging.info("Found %d %s operations. Returning the first one.", len(found), key)
            return found[0]
        value = make() if make is not None else None
        if value is not None:
            get_default_graph().add_to_collection(key, value)
        return value

    # --- what it holds, as TensorFlow names it --------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # --- sessions --------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master: str = "", config: Any = None, wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200, start_standard_services: bool = True) -> Any:
        """The chief: a session restored from `logdir`'s latest checkpoint or
        initialized, with the standard services started; another replica: a
        session once the chief has made the model ready.  Both start the queue
        runners (with `start_standard_services`)."""
        self._coord.clear_stop()
        if self._summary_writer is not None:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                logging.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            logging.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config: Any = None, start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Any]:
        """A session for the `with` body; on leaving, the services and queue
        runners stop and the session closes.  An exception in the body stops the
        coordinator and is re-raised by `stop()` -- except OutOfRangeError, which
        ends training quietly (Coordinator's clean-stop errors)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, raised by stop()
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    with contextlib.suppress(Exception):
                        sess.close()

    def _write_graph(self) -> None:
        if self._logdir:
            from flowlab.train import write_graph

            write_graph(self._graph.as_graph_def(add_shapes=True), self._logdir, "graph.pbtxt")
        if self._summary_writer is not None and not self._graph_added_to_summary:
            from flowlab.train.meta_graph import export_meta_graph

            self._summary_writer.add_graph(self._graph)
            self._summary_writer.add_meta_graph(export_meta_graph(
                graph=self._graph, saver_def=self._saver.saver_def if self._saver is not None else None))
            self._graph_added_to_summary = True

    # --- the services ------------------------------------------------------------------
    def start_standard_services(self, sess: Any) -> list[LooperThread] | None:
        """Start the summary, steps-per-second and checkpoint threads (the chief
        only; without a `logdir` none: a warning)."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. "
                               "Because only chief supervisors can write events.")
        if not self._logdir:
            logging.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        from flowlab.summary import SessionLog

        if self._global_step is not None and self._summary_writer is not None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 _global_step_value(sess, self._global_step))
        threads: list[LooperThread] = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def start_queue_runners(self, sess: Any, queue_runners: Any = None) -> list[Any]:
        """Start `queue_runners` (default: the graph's QUEUE_RUNNERS collection) on
        the supervisor's coordinator; their threads."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads: list[Any] = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs: float | None, target: Any, args: Any = None, kwargs: Any = None
             ) -> LooperThread:
        """A started thread calling `target` every `timer_interval_secs` (back to
        back for None) until a stop is requested."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def stop(self, threads: Any = None, close_summary_writer: bool = True, ignore_live_threads: bool = False) -> None:
        """Stop the services, the queue runners and `loop` threads and join them (it
        does not close the session); re-raises an exception reported to the
        coordinator."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer is not None:
                from flowlab.summary import SessionLog

                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return bool(self._coord.should_stop())

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Any, summary: Any, global_step: Any = None) -> None:
        """Write `summary` (a Summary or its serialized bytes) at `global_step`
        (default: the global step's value now)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = _global_step_value(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    # TensorFlow's CamelCase aliases.
    PrepareSession = prepare_or_wait_for_session
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    RequestStop = request_stop
    Loop = loop
    ShouldStop = should_stop
    StopOnException = stop_on_exception
    WaitForStop = wait_for_stop
    SummaryComputed = summary_computed


# --- defaults, made in the supervisor's graph -------------------------------------------
def _report_uninitialized() -> Any:
    from flowlab.ops.variables import report_uninitialized_variables

    return report_uninitialized_variables()


def _global_init() -> Any:
    from flowlab.ops.variables import global_variables_initializer

    return global_variables_initializer()


def _local_init() -> Any:
    from flowlab.ops.core_ops import group
    from flowlab.ops.variables import local_variables_initializer, tables_initializer

    return group(local_variables_initializer(), tables_initializer())


def _saver() -> Any:
    from flowlab.ops.variables import global_variables
    from flowlab.train.saver import Saver

    return Saver() if global_variables() else None


def _merged_summaries() -> Any:
    from flowlab.summary import merge_all

    return merge_all()


def _global_step_tensor() -> Any:
    """The graph's `global_step:0` when it is an integer tensor (TensorFlow's rule)."""
    try:
        gs = get_default_graph().get_tensor_by_name("global_step:0")
    except (KeyError, ValueError):
        return None
    if gs.dtype.base_dtype.name in ("int32", "int64"):
        return gs
    logging.warning("Found 'global_step' is not an int type: %s", gs.dtype)
    return None


# --- the standard services ------------------------------------------------------------
class _SummaryThread(LooperThread):
    """Runs the summary op every `save_summaries_secs` and writes what it gives."""

    def __init__(self, sv: Supervisor, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer is not None:
            logging.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    """Writes `<global_step>/sec`, the steps taken per second since the last write."""

    def __init__(self, sv: Supervisor, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._counter = sv.global_step
        self._tag = f"{self._counter.op.name}/sec"
        self._last_time, self._last_step = 0.0, 0

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = _global_step_value(self._sess, self._counter)

    def run_loop(self) -> None:
        from flowlab.summary import Summary

        step = _global_step_value(self._sess, self._counter)
        now = time.time()
        elapsed, added = now - self._last_time, step - self._last_step
        self._last_time, self._last_step = now, step
        rate = added / elapsed if elapsed > 0 else float("inf")
        if self._sv.summary_writer is not None:
            self._sv.summary_writer.add_summary(Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]),
                                                step)


class _CheckpointThread(LooperThread):
    """Saves the model every `save_model_secs`, noting it in the event file."""

    def __init__(self, sv: Supervisor, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        from flowlab.summary import SessionLog

        logging.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer is not None and self._sv.global_step is not None:
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path),
                _global_step_value(self._sess, self._sv.global_step))
