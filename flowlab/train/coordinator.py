"""`tf.train.Coordinator`: stop a set of threads together and report their errors.

State: a stop event, the first exception reported with `request_stop(ex)` (later ones
are ignored, as are exceptions of the "clean stop" types, OutOfRangeError by default),
and the registered threads.  `join` waits until every thread has finished or a stop
was requested, gives live threads a grace period, then re-raises the recorded
exception, or raises RuntimeError naming the threads that did not stop.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from flowlab import errors

__all__ = ["Coordinator", "LooperThread"]


class Coordinator:
    """A coordinator for threads (input pipelines, checkpointing loops).

        coord = Coordinator()
        threads = start_queue_runners(sess, coord)
        try:
            while not coord.should_stop():
                sess.run(train_op)
        except errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
    """

    def __init__(self, clean_stop_exception_types: Any = None) -> None:
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: Any = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex: Any) -> Any:
        """`ex` as exc_info, or None when it is a clean stop."""
        if isinstance(ex, tuple):
            ex2 = ex[1]
        else:
            ex2 = ex
            ex = (type(ex), ex, ex.__traceback__)
        if isinstance(ex2, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex: Any = None) -> None:
        """Ask the threads to stop; `ex` (an exception or exc_info) is re-raised by
        `join` if it is the first one reported."""
        with self._lock:
            ex = self._filter_exception(ex) if ex is not None else None
            if self._joined:
                if ex is not None and isinstance(ex, tuple):
                    # A thread failing after join returned: nobody will see it otherwise.
                    if self._exc_info_to_raise is None:
                        self._exc_info_to_raise = ex
                return
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    self._exc_info_to_raise = ex
                self._stop_event.set()

    def clear_stop(self) -> None:
        """Forget the stop request and the recorded exception (to restart threads)."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """Request a stop (reporting the exception) if the block raises."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - reported to join, as TensorFlow does
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Wait until a stop is requested; True if it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Any = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        """Wait for the threads (and the registered ones) to stop; re-raise the first
        reported exception; RuntimeError if some outlive the grace period."""
        with self._lock:
            if threads is None:
                threads = self._registered_threads
            else:
                threads = self._registered_threads.union(set(threads))
            threads = list(threads)
        # Wait until every thread is done or a stop was requested.
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.01):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            exc_info = self._exc_info_to_raise
        if exc_info:
            raise exc_info[1].with_traceback(exc_info[2])
        if stragglers and not ignore_live_threads:
            raise RuntimeError(
                "Coordinator stopped with threads still running: " + " ".join(stragglers)
            )

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the recorded exception now, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                ex = self._exc_info_to_raise
                raise ex[1].with_traceback(ex[2])


class LooperThread(threading.Thread):
    """Calls `target(*args)` every `timer_interval_secs` (or back to back when None)
    until the coordinator stops; exceptions stop the coordinator."""

    def __init__(self, coord: Coordinator, timer_interval_secs: float | None, target: Any = None,
                 args: Any = None, kwargs: Any = None) -> None:
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target_fn = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord: Coordinator, timer_interval_secs: float | None, target: Any, args: Any = None,
             kwargs: Any = None) -> LooperThread:
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.monotonic()  # the first call at once, as TensorFlow's
                while not self._coord.wait_for_stop(max(0.0, next_time - time.monotonic())):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once before the loop."""

    def stop_loop(self) -> None:
        """Called once after the loop."""

    def run_loop(self) -> None:
        if self._target_fn:
            self._target_fn(*self._args, **self._kwargs)
