"""Injected stragglers: delay each worker's step by a seeded draw from a heavy-tailed
distribution, or make one worker slow, so that synchronous replication with backup
workers (paper section 4.4, figure 8c) can be studied on one machine where the
workers' compute cannot run in parallel.  TensorFlow has no name for this; it is
flowlab's own (`flowlab.train.stragglers`).

State: a `Stragglers` object holds the delay model (a distribution, its parameters
and a seed, or a fixed slow worker), a stop event, and a log of every delay it served
(`events`).  Invariants: the delay of (worker, step) depends only on the model and the
seed, never on thread timing, so two runs of an experiment inject the same delays; a
delay never burns CPU (it is a wait on an event, which releases the GIL and the core);
after `stop()` (or a Coordinator's stop request) every current and future delay ends
at once and is logged as interrupted.

Where the delay happens, and why there.  A step is delayed in the client that drives
the worker, just before its `session.run`: `StragglerHook.before_run` for a
MonitoredSession (between-graph replication: one client per worker), or
`Stragglers.sleep(worker, step)` in a hand-written loop (in-graph replication: one
thread per replica over one session; `run_replicas` drives such threads).  Placing a sleep *op* on the worker's task was
the alternative, and it is worse here: a kernel that sleeps holds one of the task's
executor threads (a LocalCluster task has one), so it would also stall the ps-side
work colocated there, and a Dask worker process can only run kernels registered by the
modules it imports.  Delaying the run has the effect that matters to the coordination
under study: the straggler's gradient reaches the accumulators late, still tagged with
the local step it read before the delay, so an accumulator that has moved on drops it,
and its next token comes late.

Example::

    stragglers = tf.train.stragglers.Stragglers.lognormal(median_s=0.02, sigma=1.0, seed=3)
    hooks = [opt.make_session_run_hook(is_chief),
             tf.train.stragglers.StragglerHook(stragglers, worker=task_index)]
    with tf.train.MonitoredTrainingSession(master=target, is_chief=is_chief, hooks=hooks) as s:
        while not s.should_stop():
            s.run(train_op)
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from flowlab.train.coordinator import Coordinator
from flowlab.train.session_run_hook import SessionRunContext, SessionRunHook

__all__ = ["Stragglers", "StragglerEvent", "StragglerHook", "ReplicaStep", "run_replicas"]

_DISTRIBUTIONS = ("lognormal", "pareto", "exponential", "constant", "slow_worker")


@dataclass(frozen=True)
class StragglerEvent:
    """One served delay: which worker and step, the delay drawn, the order in which
    its wait began and ended among all events of its `Stragglers` (`start_seq`,
    `end_seq`: a shared counter, so tests can assert orderings without clocks), its
    monotonic start and end times, and whether `stop()` cut it short."""

    worker: int
    step: int
    delay_s: float
    start_seq: int
    end_seq: int
    started: float
    ended: float
    interrupted: bool


class Stragglers:
    """A delay model for the workers' steps.  Build one with a class method
    (`lognormal`, `pareto`, `exponential`, `constant`, `slow_worker`); `delay(worker,
    step)` gives the seconds to wait, `sleep(worker, step)` waits them.

    >>> s = Stragglers.pareto(scale_s=0.01, alpha=1.5, seed=0)
    >>> s.delay(1, 7) == s.delay(1, 7)          # a pure function of (seed, worker, step)
    True
    >>> Stragglers.slow_worker(2, delay_s=0.5, base_s=0.01).delay(2, 0)
    0.5
    """

    def __init__(self, distribution: str, *, seed: int = 0, base_s: float = 0.0,
                 params: dict[str, float] | None = None, max_delay_s: float | None = None) -> None:
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"Stragglers: unknown distribution {distribution!r}; "
                             f"use one of {', '.join(_DISTRIBUTIONS)}")
        params = dict(params or {})
        _check_nonnegative("base_s", base_s)
        for k, v in params.items():
            if k != "worker":
                _check_nonnegative(k, v)
        if max_delay_s is not None and not max_delay_s > 0:
            raise ValueError(f"Stragglers: max_delay_s must be positive, got {max_delay_s}")
        self.distribution = distribution
        self.seed = int(seed)
        self.base_s = float(base_s)
        self.params = params
        self.max_delay_s = max_delay_s
        self.events: list[StragglerEvent] = []
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._stop = threading.Event()
        self._waiting: dict[int, int] = {}

    # --- the models ---------------------------------------------------------------------
    @classmethod
    def lognormal(cls, median_s: float, sigma: float = 1.0, *, seed: int = 0, base_s: float = 0.0,
                  max_delay_s: float | None = None) -> Stragglers:
        """base_s + median_s * exp(sigma * N(0, 1)): a heavy right tail for sigma ~ 1."""
        return cls("lognormal", seed=seed, base_s=base_s, params={"median_s": median_s, "sigma": sigma},
                   max_delay_s=max_delay_s)

    @classmethod
    def pareto(cls, scale_s: float, alpha: float = 1.5, *, seed: int = 0, base_s: float = 0.0,
               max_delay_s: float | None = None) -> Stragglers:
        """base_s + scale_s * (Pareto(alpha) - 1) as NumPy draws it (a Lomax tail:
        infinite variance for alpha <= 2); `max_delay_s` caps a draw."""
        if not alpha > 0:
            raise ValueError(f"Stragglers.pareto: alpha must be positive, got {alpha}")
        return cls("pareto", seed=seed, base_s=base_s, params={"scale_s": scale_s, "alpha": alpha},
                   max_delay_s=max_delay_s)

    @classmethod
    def exponential(cls, mean_s: float, *, seed: int = 0, base_s: float = 0.0,
                    max_delay_s: float | None = None) -> Stragglers:
        """base_s + Exponential(mean_s): a light tail, for comparison."""
        return cls("exponential", seed=seed, base_s=base_s, params={"mean_s": mean_s},
                   max_delay_s=max_delay_s)

    @classmethod
    def constant(cls, delay_s: float) -> Stragglers:
        """Every worker waits `delay_s` every step (no stragglers, a paced step)."""
        return cls("constant", base_s=delay_s)

    @classmethod
    def slow_worker(cls, worker: int, delay_s: float, *, base_s: float = 0.0) -> Stragglers:
        """Worker `worker` waits `delay_s` every step, the others `base_s`."""
        if int(worker) != worker or worker < 0:
            raise ValueError(f"Stragglers.slow_worker: worker must be a task index >= 0, got {worker!r}")
        return cls("slow_worker", base_s=base_s, params={"worker": int(worker), "delay_s": delay_s})

    # --- draws and waits ----------------------------------------------------------------
    def delay(self, worker: int, step: int) -> float:
        """The seconds worker `worker` waits before its step `step` (a pure function of
        the model, the seed, the worker and the step)."""
        if worker < 0 or step < 0:
            raise ValueError(f"Stragglers.delay: worker and step must be >= 0, got worker={worker}, step={step}")
        p, d = self.params, self.distribution
        if d == "constant":
            return self.base_s
        if d == "slow_worker":
            return float(p["delay_s"]) if worker == p["worker"] else self.base_s
        rng = np.random.default_rng([self.seed, int(worker), int(step)])
        if d == "lognormal":
            extra = p["median_s"] * float(np.exp(p["sigma"] * rng.standard_normal()))
        elif d == "pareto":
            extra = p["scale_s"] * float(rng.pareto(p["alpha"]))
        else:
            extra = float(rng.exponential(p["mean_s"]))
        if self.max_delay_s is not None:
            extra = min(extra, self.max_delay_s)
        return self.base_s + extra

    def delays(self, num_workers: int, num_steps: int) -> np.ndarray:
        """The [num_workers, num_steps] table of delays this model serves."""
        return np.array([[self.delay(w, s) for s in range(num_steps)] for w in range(num_workers)])

    def sleep(self, worker: int, step: int, coord: Any = None) -> StragglerEvent:
        """Wait worker `worker`'s delay for step `step` without using the CPU; returns
        early when `stop()` is called or `coord` (a tf.train.Coordinator) is asked to
        stop.  The served delay is appended to `events` and returned."""
        d = self.delay(worker, step)
        with self._lock:
            start_seq = next(self._seq)
            self._waiting[worker] = step
        started = time.monotonic()
        interrupted = self._wait(d, coord)
        ended = time.monotonic()
        with self._lock:
            ev = StragglerEvent(worker, step, d, start_seq, next(self._seq), started, ended, interrupted)
            self._waiting.pop(worker, None)
            self.events.append(ev)
        return ev

    def _wait(self, d: float, coord: Any) -> bool:
        deadline = time.monotonic() + d
        while True:
            if self._stop.is_set() or (coord is not None and coord.should_stop()):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            # Wake every 50 ms to see a Coordinator's stop request; stop() wakes at once.
            self._stop.wait(min(left, 0.05) if coord is not None else left)

    def waiting(self) -> dict[int, int]:
        """The workers waiting now, each with the step it waits before."""
        with self._lock:
            return dict(self._waiting)

    def stop(self) -> None:
        """End every current and future wait at once (the end of an experiment)."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return (f"Stragglers({self.distribution}, base_s={self.base_s}"
                + (f", {params}" if params else "") + f", seed={self.seed})")


def _check_nonnegative(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and value >= 0 and np.isfinite(value)):
        raise ValueError(f"Stragglers: {name} must be a finite number >= 0, got {value!r}")


class StragglerHook(SessionRunHook):
    """Delays each run of a MonitoredSession by `stragglers.delay(worker, k)`, k
    counting this hook's runs from 0: the between-graph way to make task `worker` a
    straggler.  The wait ends early on the session's Coordinator stop request or on
    `stragglers.stop()`."""

    def __init__(self, stragglers: Stragglers, worker: int) -> None:
        if not isinstance(stragglers, Stragglers):
            raise TypeError(f"StragglerHook: stragglers must be a Stragglers, got {type(stragglers).__name__}")
        if int(worker) != worker or worker < 0:
            raise ValueError(f"StragglerHook: worker must be a task index >= 0, got {worker!r}")
        self._stragglers = stragglers
        self._worker = int(worker)
        self._step = 0
        self._coord: Any = None

    def after_create_session(self, session: Any, coord: Any) -> None:
        self._coord = coord

    def before_run(self, run_context: SessionRunContext) -> Any:
        self._stragglers.sleep(self._worker, self._step, self._coord)
        self._step += 1
        return None


@dataclass(frozen=True)
class ReplicaStep:
    """One finished step of a replica driven by `run_replicas`: the replica, its step
    number, the monotonic time its run returned, and what the run returned."""

    replica: int
    step: int
    ended: float
    result: Any


def run_replicas(steps: list[Callable[[int], Any]], stragglers: Stragglers,
                 until: Callable[[], bool], release: Callable[[], Any] | None = None,
                 timeout_s: float = 120.0, poll_s: float = 0.005) -> list[ReplicaStep]:
    """Drive in-graph replicas under injected stragglers: one thread per replica runs
    `steps[i](k)` (typically `sess.run(train_op_i, feed_k)`) for k = 0, 1, ..., each
    after `stragglers.sleep(i, k)`, until `until()` (polled every `poll_s`) turns true.
    Then the replicas stop starting steps, their waits are cut short, and `release()`
    runs once, to free replicas parked on the token queue (for SyncReplicasOptimizer,
    enqueue one token per replica: `opt.get_init_tokens_op(n)`).  Returns every
    finished step in the order they ended; the first error in any replica is raised.

    Synchronous replicas must run until a global step rather than for a number of
    their own steps: once some replicas have stopped, those left may never gather m
    fresh gradients, and would wait for a token forever.
    """
    coord = Coordinator()
    log: list[ReplicaStep] = []
    lock = threading.Lock()
    errs: list[BaseException] = []

    def loop(i: int) -> None:
        k = 0
        try:
            while not coord.should_stop():
                stragglers.sleep(i, k, coord)
                if coord.should_stop():
                    break
                out = steps[i](k)
                with lock:
                    log.append(ReplicaStep(i, k, time.monotonic(), out))
                k += 1
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller's thread
            errs.append(e)
            coord.request_stop()

    threads = [threading.Thread(target=loop, args=(i,), daemon=True, name=f"replica-{i}")
               for i in range(len(steps))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    try:
        while not errs and not until():
            if time.monotonic() > deadline:
                raise TimeoutError(f"run_replicas: the stop condition did not hold within {timeout_s} s "
                                   f"({len(log)} replica steps finished); are enough replicas running to "
                                   "make an update?")
            time.sleep(poll_s)
    finally:
        coord.request_stop()
        if release is not None and not errs:
            release()
        for t in threads:
            t.join(timeout_s)
    if errs:
        raise errs[0]
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        raise TimeoutError(f"run_replicas: {', '.join(alive)} still running after the release; "
                           "give release= an op that frees every replica parked on a queue")
    with lock:
        return sorted(log, key=lambda s: s.ended)
