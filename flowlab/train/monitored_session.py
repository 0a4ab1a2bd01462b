"""`tf.train.MonitoredSession` and what it is made of: Scaffold (the init, ready and
local-init ops, summary op and saver, defaulted from the graph's collections, then the
graph finalized), SessionManager (a session restored from the latest checkpoint, or
initialized, then checked ready), ChiefSessionCreator, and the hook protocol of
flowlab.train.session_run_hook; plus SingularMonitoredSession and
MonitoredTrainingSession (the chief's checkpoint / summary / step-counter hooks).

A MonitoredSession starts the graph's queue runners under a Coordinator; `run` merges
the hooks' fetches and feeds into the caller's (a tensor fed twice is a RuntimeError)
and `should_stop()` turns True once a hook requested it or the coordinator stopped.
Leaving the `with` block on OutOfRangeError or StopIteration closes it normally (hooks'
`end()` run) and swallows the error.

Recovery (TensorFlow's `_RecoverableSession`): a run that fails with AbortedError or
UnavailableError -- a task of the cluster died, hung or restarted -- closes the
session and creates a new one through the same creator, which restores the latest
checkpoint (the chief) or waits until the model is ready again (a worker,
`WorkerSessionCreator`); queue runners start again and hooks see
`after_create_session` again; then the run is retried.  Creating a session retries
on the same errors, so training waits while the cluster replaces the task.
"""

from __future__ import annotations

import time
from typing import Any

from flowlab import errors
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.platform import tf_logging as logging
from flowlab.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = ["Scaffold", "SessionManager", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession"]

# What a lost or restarted task raises: the session is made again, not given up.
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)

USE_DEFAULT = object()
_RECREATE_WAIT_SECS = 0.5


class Scaffold:
    """The ops and saver a MonitoredSession needs to create and check a session."""

    def __init__(self, init_op: Any = None, init_feed_dict: Any = None, init_fn: Any = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, local_init_op: Any = None, summary_op: Any = None,
                 saver: Any = None, copy_from_scaffold: Any = None, local_init_feed_dict: Any = None) -> None:
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            init_op = init_op or copy_from_scaffold.init_op
            init_feed_dict = init_feed_dict or copy_from_scaffold.init_feed_dict
            init_fn = init_fn or copy_from_scaffold._user_init_fn
            ready_op = ready_op or copy_from_scaffold.ready_op
            ready_for_local_init_op = ready_for_local_init_op or copy_from_scaffold.ready_for_local_init_op
            local_init_op = local_init_op or copy_from_scaffold.local_init_op
            local_init_feed_dict = local_init_feed_dict or copy_from_scaffold.local_init_feed_dict
            summary_op = summary_op or copy_from_scaffold.summary_op
            saver = saver or copy_from_scaffold.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._local_init_feed_dict = local_init_op, local_init_feed_dict
        self._summary_op, self._saver = summary_op, saver

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Any) -> Any:
        """The one element of a collection, else a new default added to it."""
        elements = get_default_graph().get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f'More than one item in the collection "{collection_key}". Please indicate '
                                   f"which one to use by passing it to the tf.Scaffold constructor as:  "
                                   f"tf.Scaffold({arg_name}=item to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            get_default_graph().add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op() -> Any:
        from flowlab.ops.core_ops import group
        from flowlab.ops.variables import local_variables_initializer, tables_initializer
        from flowlab.train import resources

        return group(local_variables_initializer(), tables_initializer(),
                     resources.initialize_resources(resources.local_resources()))

    def finalize(self) -> Scaffold:
        """Fill in the defaults, build the saver and finalize the default graph."""
        from flowlab.ops import array_ops
        from flowlab.ops.core_ops import group
        from flowlab.ops.summary_ops import merge_all
        from flowlab.ops.variables import (
            global_variables,
            global_variables_initializer,
            report_uninitialized_variables,
        )
        from flowlab.train import resources

        # TensorFlow's defaults, op for op (so the graph a CheckpointSaverHook writes is its).
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP, lambda: group(
                global_variables_initializer(), resources.initialize_resources(resources.shared_resources()),
                get_default_graph().get_collection("saved_model_initializers")))
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", GraphKeys.READY_OP, lambda: array_ops.concat(
                [report_uninitialized_variables(), resources.report_uninitialized_resources()], 0))
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: array_ops.concat([report_uninitialized_variables(global_variables()),
                                          resources.report_uninitialized_resources(resources.shared_resources())], 0))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", GraphKeys.LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = _saver_or_default()
        self._saver.build()
        get_default_graph().finalize()
        logging.info("Graph was finalized.")
        return self

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)


def _saver_or_default() -> Any:
    from flowlab.train.saver import Saver

    savers = get_default_graph().get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one "
                               "to use by passing it to the constructor.")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    get_default_graph().add_to_collection(GraphKeys.SAVERS, saver)
    return saver


class SessionManager:
    """Creates sessions that are restored from a checkpoint or initialized, and ready."""

    def __init__(self, local_init_op: Any = None, ready_op: Any = None, ready_for_local_init_op: Any = None,
                 graph: Any = None, recovery_wait_secs: float = 30, local_init_run_options: Any = None,
                 local_init_feed_dict: Any = None) -> None:
        self._local_init_op, self._ready_op = local_init_op, ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_feed_dict = local_init_feed_dict

    def _restore_checkpoint(self, master: str, saver: Any, checkpoint_dir: str | None,
                            checkpoint_filename_with_path: str | None, wait_for_checkpoint: bool,
                            max_wait_secs: float, config: Any) -> tuple[Any, bool]:
        from flowlab.runtime.session import Session
        from flowlab.train.checkpoint_management import get_checkpoint_state

        sess = Session(master, graph=self._graph, config=config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        wait_time = 0.0
        ckpt = get_checkpoint_state(checkpoint_dir)
        while not ckpt or not ckpt.model_checkpoint_path:
            if wait_for_checkpoint and wait_time < max_wait_secs:
                logging.info("Waiting for checkpoint to be available.")
                time.sleep(self._recovery_wait_secs)
                wait_time += self._recovery_wait_secs
                ckpt = get_checkpoint_state(checkpoint_dir)
            else:
                return sess, False
        saver.restore(sess, ckpt.model_checkpoint_path)
        saver.recover_last_checkpoints(list(ckpt.all_model_checkpoint_paths))
        return sess, True

    def _uninitialized(self, sess: Any, op: Any) -> str | None:
        if op is None:
            return None
        names = sess.run(op)
        if names is None or len(names) == 0:
            return None
        return "Variables not initialized: " + ", ".join(
            n.decode() if isinstance(n, bytes) else str(n) for n in names)

    def prepare_session(self, master: str = "", init_op: Any = None, saver: Any = None,
                        checkpoint_dir: str | None = None, checkpoint_filename_with_path: str | None = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200, config: Any = None,
                        init_feed_dict: Any = None, init_fn: Any = None) -> Any:
        """A session restored from a checkpoint if there is one, else initialized."""
        sess, loaded = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                wait_for_checkpoint, max_wait_secs, config)
        if not loaded:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        if self._local_init_op is not None:
            msg = self._uninitialized(sess, self._ready_for_local_init_op)
            if msg is not None:
                raise RuntimeError(f"Init operations did not make model ready for local_init.  Init op: "
                                   f"{_name(init_op)}, init fn: {init_fn}, error: {msg}")
            sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict)
        msg = self._uninitialized(sess, self._ready_op)
        if msg is not None:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: {_name(init_op)}, init fn: "
                               f"{init_fn}, local_init_op: {_name(self._local_init_op)}, error: {msg}")
        return sess


    def wait_for_session(self, master: str = "", config: Any = None, max_wait_secs: float = float("inf")) -> Any:
        """A session once the model is ready (the chief initialized or restored it),
        polling every `recovery_wait_secs`; None after `max_wait_secs`."""
        from flowlab.runtime.session import Session

        start = time.time()
        while True:
            sess = Session(master, graph=self._graph, config=config)
            msg = None
            if self._local_init_op is not None:
                msg = self._uninitialized(sess, self._ready_for_local_init_op)
                if msg is None:
                    sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict)
            if msg is None:
                msg = self._uninitialized(sess, self._ready_op)
            if msg is None:
                return sess
            sess.close()
            if time.time() - start + self._recovery_wait_secs > max_wait_secs:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait_secs} secs: {msg}")
            logging.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
                         _name(self._ready_for_local_init_op), msg)
            time.sleep(self._recovery_wait_secs)


def _name(op: Any) -> str:
    return "None" if op is None else getattr(op, "name", str(op))


class SessionCreator:
    """Makes the session a MonitoredSession runs."""

    def create_session(self) -> Any:
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class ChiefSessionCreator(SessionCreator):
    """The chief's session: the scaffold finalized, then SessionManager.prepare_session."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 checkpoint_dir: str | None = None, checkpoint_filename_with_path: str | None = None) -> None:
        self._checkpoint_dir, self._checkpoint_filename_with_path = checkpoint_dir, checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config

    def create_session(self) -> Any:
        self._scaffold.finalize()
        manager = SessionManager(local_init_op=self._scaffold.local_init_op,
                                 local_init_feed_dict=self._scaffold.local_init_feed_dict,
                                 ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                                 ready_op=self._scaffold.ready_op, graph=get_default_graph())
        return manager.prepare_session(self._master, saver=self._scaffold.saver,
                                       checkpoint_dir=self._checkpoint_dir,
                                       checkpoint_filename_with_path=self._checkpoint_filename_with_path,
                                       config=self._config, init_op=self._scaffold.init_op,
                                       init_feed_dict=self._scaffold.init_feed_dict, init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(SessionCreator):
    """A non-chief worker's session: it waits until the chief made the model ready."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 max_wait_secs: float = 30 * 60) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master, self._config, self._max_wait_secs = master, config, max_wait_secs

    def create_session(self) -> Any:
        self._scaffold.finalize()
        manager = SessionManager(local_init_op=self._scaffold.local_init_op,
                                 local_init_feed_dict=self._scaffold.local_init_feed_dict,
                                 ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                                 ready_op=self._scaffold.ready_op, graph=get_default_graph(),
                                 recovery_wait_secs=_WORKER_POLL_SECS)
        return manager.wait_for_session(self._master, config=self._config, max_wait_secs=self._max_wait_secs)


# How often a waiting worker looks again (TensorFlow: 30 s; a notebook cluster is quicker).
_WORKER_POLL_SECS = 1.0


class MonitoredSession:
    """A session that initializes itself, runs hooks around each run and stops when
    asked to (see the module docstring).

    >>> with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=100)]) as sess:
    ...     while not sess.should_stop():
    ...         sess.run(train_op)
    """

    def __init__(self, session_creator: SessionCreator | None = None, hooks: Any = None,
                 stop_grace_period_secs: float = 120) -> None:
        self._graph_was_finalized = get_default_graph().finalized
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._graph = get_default_graph()
        self._stop_grace_period_secs = stop_grace_period_secs
        self._creator = session_creator or ChiefSessionCreator()
        self._should_stop = False
        self._closed = False
        self._create_session()

    def _create_session(self) -> None:
        """A session from the creator, retried while the cluster is missing a task; its
        queue runners started and the hooks told (see the module docstring)."""
        from flowlab.train.coordinator import Coordinator
        from flowlab.train.queue_runner import start_queue_runners

        while True:
            try:
                self._sess = self._creator.create_session()
                break
            except _PREEMPTION_ERRORS as e:
                logging.info("An error was raised while a session was being created. This may be due to a "
                             "preemption of a connected worker or parameter server. A new session will be "
                             "created. Error: %s", e)
                time.sleep(_RECREATE_WAIT_SECS)
        self._coord = Coordinator()
        start_queue_runners(sess=self._sess, coord=self._coord)
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)

    def _recover(self, error: BaseException) -> None:
        logging.info("An error was raised. This may be due to a preemption in a connected worker or "
                     "parameter server. The current session will be closed and a new session will be "
                     "created. Error: %s", error)
        try:
            self._coord.request_stop()
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
        except Exception:  # noqa: BLE001 - the old session's threads failed with the same error
            pass
        try:
            self._sess.close()
        except Exception:  # noqa: BLE001
            pass
        self._create_session()

    @property
    def graph(self) -> Any:
        return self._graph

    def _tf_sess(self) -> Any:
        return self._sess

    def should_stop(self) -> bool:
        return self._closed or self._should_stop or self._coord.should_stop()

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        """Runs `fetches` plus the hooks' requests; returns the caller's values."""
        if self._closed:
            raise RuntimeError("Run called even after should_stop requested.")
        while True:
            try:
                return self._run_once(fetches, feed_dict, options, run_metadata)
            except _PREEMPTION_ERRORS as e:
                self._recover(e)

    def _run_once(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        actual_fetches: dict[Any, Any] = {"caller": fetches}
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict), session=self._sess)
        feeds = self._call_hook_before_run(run_context, actual_fetches, feed_dict)
        outputs = self._sess.run(actual_fetches, feed_dict=feeds, options=options, run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(results=outputs.get(hook), options=options,
                                                         run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context: SessionRunContext, fetch_dict: dict[Any, Any],
                              user_feed_dict: Any) -> Any:
        hook_feeds: dict[Any, Any] = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is not None:
                if request.fetches is not None:
                    fetch_dict[hook] = request.fetches
                if request.feed_dict:
                    _raise_if_feeds_intersect(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                    hook_feeds.update(request.feed_dict)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(user_feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds

    def _close_internal(self, exception_type: Any = None) -> None:
        try:
            if not exception_type:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            try:
                self._coord.request_stop()
                # A thread still blocked (a sync chief's queue runner in take_grad) is
                # left behind after the grace period, as TensorFlow's close does.
                self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
            finally:
                self._sess.close()
                self._closed = True

    def close(self) -> None:
        self._close_internal()

    def __enter__(self) -> MonitoredSession:
        return self

    def __exit__(self, exception_type: Any, exception_value: Any, traceback: Any) -> bool:
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


def _raise_if_feeds_intersect(feeds1: Any, feeds2: Any, message: str) -> None:
    if any(any(k is j for j in feeds2) for k in feeds1):
        raise RuntimeError(message)


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession for one process: a ChiefSessionCreator from the arguments."""

    def __init__(self, hooks: Any = None, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 checkpoint_dir: str | None = None, stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: str | None = None) -> None:
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks=hooks, stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self) -> Any:
        """The underlying tf.Session."""
        return self._tf_sess()


def MonitoredTrainingSession(master: str = "", is_chief: bool = True, checkpoint_dir: str | None = None,  # noqa: N802
                             scaffold: Scaffold | None = None, hooks: Any = None, chief_only_hooks: Any = None,
                             save_checkpoint_secs: Any = USE_DEFAULT, save_summaries_steps: Any = USE_DEFAULT,
                             save_summaries_secs: Any = USE_DEFAULT, config: Any = None,
                             stop_grace_period_secs: float = 120, log_step_count_steps: int = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps: Any = USE_DEFAULT,
                             summary_dir: str | None = None, save_graph_def: bool = True) -> MonitoredSession:
    """A MonitoredSession for training: the chief restores or initializes, and (given
    `checkpoint_dir` / `summary_dir`) saves checkpoints every 600 s, summaries every
    100 steps and logs steps/sec, as TensorFlow's defaults."""
    from flowlab.train.basic_session_run_hooks import (
        CheckpointSaverHook,
        StepCounterHook,
        SummarySaverHook,
    )

    if not is_chief:
        worker = WorkerSessionCreator(scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=worker, hooks=hooks, stop_grace_period_secs=stop_grace_period_secs)
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold,
                                             save_graph_def=save_graph_def))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
