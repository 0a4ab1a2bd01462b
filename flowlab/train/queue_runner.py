"""`tf.train.QueueRunner`: threads that keep a queue filled (paper section 3.1).

A QueueRunner holds a queue, a list of enqueue ops (one thread each), a close op and
a cancel op.  Each thread runs its enqueue op in a loop through a cached callable
until the coordinator asks to stop or the op fails.  A "queue closed" error
(OutOfRangeError by default: the upstream queue is drained) ends that thread quietly;
the last thread to end closes the queue, so consumers drain it and then see
OutOfRangeError.  Any other error is reported to the coordinator (or kept in
`exceptions_raised` and re-raised in the thread without one).  With a coordinator an
extra thread waits for the stop request and runs the cancel op, which closes the
queue and cancels the enqueues still blocked on it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flowlab import errors
from flowlab.graph.graph import GraphKeys, get_default_graph

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

_log = logging.getLogger("flowlab.train")


class QueueRunner:
    """Runs `enqueue_ops` in threads to fill `queue`."""

    def __init__(self, queue: Any = None, enqueue_ops: Any = None, close_op: Any = None,
                 cancel_op: Any = None, queue_closed_exception_types: Any = None,
                 queue_runner_def: Any = None, import_scope: Any = None) -> None:
        if queue_runner_def is not None:
            raise errors.UnimplementedError(None, None, "QueueRunner from a queue_runner_def")
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        if queue_closed_exception_types is None:
            queue_closed_exception_types = (errors.OutOfRangeError,)
        elif not isinstance(queue_closed_exception_types, (list, tuple)) or not all(
            isinstance(t, type) and issubclass(t, errors.OpError) for t in queue_closed_exception_types
        ):
            raise TypeError(
                "queue_closed_exception_types, when provided, must be a tuple of tf.error types, "
                f"but saw: {queue_closed_exception_types}"
            )
        self._queue_closed_exception_types = tuple(queue_closed_exception_types)
        self._lock = threading.Lock()
        self._runs_per_session: dict[Any, int] = {}
        self._exceptions_raised: list[BaseException] = []

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> list[Any]:
        return self._enqueue_ops

    @property
    def close_op(self) -> Any:
        return self._close_op

    @property
    def cancel_op(self) -> Any:
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type, ...]:
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Exceptions raised by threads started without a coordinator."""
        return self._exceptions_raised

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess: Any, enqueue_op: Any, coord: Any = None) -> None:
        decremented = False
        try:
            enqueue = sess.make_callable(enqueue_op)
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    # The upstream is exhausted: the last thread closes our queue.
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception as e:  # noqa: BLE001 - the session may be closing
                            _log.info("Ignored exception closing the queue: %s", e)
                    return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess: Any, cancel_op: Any, coord: Any) -> None:
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - the session may already be closed
            _log.info("Ignored exception while cancelling the queue: %s", e)

    def create_threads(self, sess: Any, coord: Any = None, daemon: bool = False,
                       start: bool = False) -> list[threading.Thread]:
        """Threads running the enqueue ops (plus a cancelling thread with `coord`).
        Returns [] while threads from an earlier call still run for `sess`."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(target=self._run, args=(sess, op, coord), name=f"QueueRunner:{self.name}:{i}")
            for i, op in enumerate(self._enqueue_ops)
        ]
        if coord is not None:
            threads.append(threading.Thread(
                target=self._close_on_stop, args=(sess, self._cancel_op, coord),
                name=f"QueueRunner:{self.name}:cancel"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Add `qr` to a graph collection (QUEUE_RUNNERS by default)."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess: Any = None, coord: Any = None, daemon: bool = True, start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> list[threading.Thread]:
    """Start the threads of every QueueRunner in `collection` of the session's graph."""
    if sess is None:
        from flowlab.runtime.session import get_default_session

        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    with sess.graph.as_default():
        threads = []
        for qr in sess.graph.get_collection(collection):
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
