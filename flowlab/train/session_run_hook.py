"""`tf.train.SessionRunHook` and the values it exchanges with a MonitoredSession:
SessionRunArgs (what a hook adds to a run), SessionRunContext (the run being made; a
hook may `request_stop()`), SessionRunValues (what came back for the hook's fetches).

Call order, as in TensorFlow: `begin()` once before the graph is finalized,
`after_create_session(session, coord)` once per created session, then per run
`before_run(run_context)` -> SessionRunArgs or None and `after_run(run_context,
run_values)`, and `end(session)` when the MonitoredSession closes without an error.
"""

from __future__ import annotations

import collections
from typing import Any

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]


class SessionRunHook:
    """A hook into MonitoredSession's runs; every method is optional."""

    def begin(self) -> None:
        """Called once before the graph is finalized (add ops here)."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Called when a session has been created and initialized."""

    def before_run(self, run_context: SessionRunContext) -> Any:
        """Returns None or SessionRunArgs to add fetches / feeds to the coming run."""
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Called after each run with the results of this hook's fetches."""

    def end(self, session: Any) -> None:
        """Called when the MonitoredSession closes normally."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """Fetches (any structure), a feed_dict and RunOptions to add to the next run."""

    def __new__(cls, fetches: Any, feed_dict: Any = None, options: Any = None) -> SessionRunArgs:
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run being made (`original_args`, `session`) and the stop request."""

    def __init__(self, original_args: SessionRunArgs, session: Any) -> None:
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self) -> Any:
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Ask the MonitoredSession to stop after this run (should_stop() becomes True)."""
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """The values of a hook's fetches, and the run's options and metadata."""
