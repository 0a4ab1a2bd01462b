"""`profile(sess)`: trace every step a session runs inside a `with` block.

The profile installs a `StepStatsCollector` as the session's listener (chained with
any listener already there, which is restored on exit).  While a listener is set the
session runs steps on the dataflow executor, which publishes events; with none set,
steps take the straight-line path and pay nothing.  A callable from
`sess.make_callable` created before the block notices the listener when called and is
traced too.
"""

from __future__ import annotations

from typing import Any

from flowlab.profiler.summary import Summary, Table, summarize
from flowlab.profiler.trace import Trace, plural
from flowlab.runtime.client.step_stats import StepStatsCollector, session_resolver
from flowlab.runtime.task.events import chain_listeners

__all__ = ["Profile", "profile"]


class Profile:
    """The steps traced in a `with profile(sess):` block.

    `trace` holds every step; `steps` one Trace per step; `summary()` gives the median
    time per op over the steps, each device's busy fraction, the bytes moved, and the
    critical path of the median step.
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self.collector = StepStatsCollector(session_resolver(session))
        self._previous: Any = None
        self._trace: Trace | None = None
        self._active = False

    def __enter__(self) -> Profile:
        if self._active:
            raise RuntimeError("This profile is already collecting.")
        self._active = True
        self._trace = None
        self._previous = self.session.listener
        self.session.set_listener(chain_listeners(self.collector.listen, self._previous))
        return self

    def __exit__(self, *exc: Any) -> None:
        self.session.set_listener(self._previous)
        self._active = False

    @property
    def trace(self) -> Trace:
        """Every traced step (rebuilt while the block is still collecting)."""
        if self._trace is None or self._active:
            self._trace = Trace.from_step_stats(self.collector.step_stats())
        return self._trace

    @property
    def steps(self) -> list[Trace]:
        t = self.trace
        return [t.step(s) for s in t.steps]

    def summary(self, top: int = 10) -> Summary:
        """The trace's summary plus the devices' own memory figures (state held between
        steps, the largest step, bytes received) as they are now."""
        s = summarize(self.trace, top)
        rows = []
        for d in getattr(self.session, "devices", []):
            stats = d.memory_stats() if hasattr(d, "memory_stats") else {}
            if stats:
                rows.append([d.name, stats.get("bytes_in_use", 0), stats.get("peak_bytes_in_use", 0),
                             stats.get("bytes_received", 0)])
        if rows:
            s.tables["device_memory"] = Table(
                "Device memory (the devices' figures)",
                ["device", "bytes_in_use", "peak_bytes_in_use", "bytes_received"], rows)
        return s

    def __repr__(self) -> str:
        return f"<Profile of {plural(len(self.collector.step_ids()), 'step')}>\n{self.summary()!r}"

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()


def profile(session: Any) -> Profile:
    """Trace the steps `session` runs in a `with` block.

        with fl.profile(sess) as prof:
            for _ in range(10):
                sess.run(train_op, feed)
        prof.summary()            # median per op, busy fraction, critical path
        prof.trace.to_chrome("steps.json")

    Args:
      session: a flowlab Session.
    Returns:
      A `Profile` (a context manager).
    """
    return Profile(session)
