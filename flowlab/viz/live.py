"""Executor events to a live view, batched and throttled (at most `rate` updates a second).

A `LiveBridge` is a session listener (`Session.set_listener`, chained with the one
already there, as the profiler does).  Its listening side runs on the executor's
threads and does almost nothing: it appends `(kind, node name, bytes)` to a list
(one `list.append`, atomic under the GIL).  A flusher thread wakes `rate` times a
second at most, swaps the list for a fresh one, folds the batch into "running now",
"finished since the last update" and "bytes moved per Recv", and hands that one
message to `send`.  So a step of 10,000 ops costs 10,000 appends, not 10,000 messages,
and the browser gets at most ~15 small updates a second however fast the loop runs
(15, not 30: on 2 cores the browser drawing 30 a second cost the loop 5-7%, measured).

The bridge also takes whole-step records (`take_records`): with it attached, the
executor keeps its fast straight-line path for plain steps (with a traced twin) and
hands one `StepRecords` per step, instead of falling back to two events per op.

Sampling: any listener makes a step slower (the executor builds events or records).
When steps are faster than updates (a training loop of 1 ms steps), watching every
one would cost the loop that much for nothing the eye can see, so once a step is seen
the bridge takes itself off the session (`set_listener` back to the listener it found)
and the flusher puts it back at its next tick: at most ~`rate` steps a second are
watched, the others run exactly as without a view.  A slow step (longer than a tick)
is watched whole, op by op.

State: `pending` (events not yet sent, owned by the listening threads until swapped),
`running` (names started and not finished, owned by the flusher), `steps` (steps
watched), `_sampled` (a step was seen since the last tick).
Invariant: `send` is called only from the flusher thread, never from the executor's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from flowlab.runtime.task.events import ExecEvent, LoopRecords, StepRecords, chain_listeners
from flowlab.viz.model import RECV_TYPES, SEND_TYPES

_TRANSFER = SEND_TYPES | RECV_TYPES


def nbytes_of(value: Any) -> int | None:
    """The bytes of a value (an ndarray's `nbytes`), or None when it has none."""
    n = getattr(value, "nbytes", None)
    return int(n) if isinstance(n, int) else None


class LiveBridge:
    """Listen to a session's steps and send throttled summaries.

    Args:
      session: a flowlab Session (anything with `set_listener` and `listener`).
      send: called from the flusher thread with each update, a dict
        `{"t": "live", "run": [names], "done": [names], "bytes": {recv name: n},
        "steps": int, "idle": bool, "step_us": the watched step's time from its first
        event to its latest (µs), or None}`.
      rate: the most updates a second.
      idle_after: seconds without events after which one last update says `idle`.
      sample: watch at most about one step per update: after a step, the bridge takes
        itself off the session until the flusher's next tick (see the module docstring).
      on_value: called as `on_value(name, outputs)` on the executor's thread when the
        op named by the `watched` attribute (None: none) finishes, for that op only.
    """

    def __init__(self, session: Any, send: Callable[[dict[str, Any]], None], *, rate: float = 15.0,
                 idle_after: float = 0.4, on_value: Callable[[str, Any], None] | None = None,
                 sample: bool = True) -> None:
        self.session = session
        self.send = send
        self.period = 1.0 / rate
        self.idle_after = idle_after
        self.on_value = on_value
        self.sample = sample
        self.watched: str | None = None  # the op whose outputs go to on_value
        self.pending: list[tuple[str, str, int | None]] = []
        self.running: set[str] = set()
        self.steps = 0
        self.sent = 0
        self._step_id = -1
        self._sampled = False  # a step started since the last update
        # The watched step's first and latest event times (µs): its measured time so far.
        self._t0: float | None = None
        self._t1: float | None = None
        self._stop = threading.Event()
        self._previous: Any = None
        self._listener: Any = None
        self._thread: threading.Thread | None = None

    # --- listening side (executor threads) ------------------------------------------
    def listen(self, ev: ExecEvent) -> None:
        """A session listener: one append per event."""
        kind = ev.kind
        if ev.step_id != self._step_id:
            self._step_id = ev.step_id
            self._t0 = ev.time_us
            self.pending.append(("step", "", None))
            if self._sampled and self.sample:
                self._detach()  # this step is watched to its end; the next ones are not
            self._sampled = True
        self._t1 = ev.time_us
        if kind == "op_end":
            nb = None
            if ev.op_type in _TRANSFER and ev.info:
                nb = nbytes_of(ev.info[0]) if ev.op_type in RECV_TYPES else None
            self.pending.append(("e", ev.node, nb))
            if ev.node == self.watched and self.on_value is not None:
                self.on_value(ev.node, ev.info)
        elif kind == "op_start":
            self.pending.append(("s", ev.node, None))
        elif kind in ("op_dead", "error"):
            self.pending.append(("e", ev.node, None))

    def take_records(self, rec: StepRecords | LoopRecords) -> None:
        """A whole straight-line step: every op that ran is finished.  Or iterations of
        a fused loop in a step otherwise seen as events: its ops that ran, once each."""
        if isinstance(rec, LoopRecords):
            self._take_loop(rec)
            return
        watched = self.watched
        nodes = rec.nodes
        for k in range(rec.ran):
            name = nodes[k].op.name
            self.pending.append(("e", name, None))
            if watched == name and self.on_value is not None and rec.outputs is not None:
                self.on_value(name, rec.outputs[rec.out_start[k]:rec.out_start[k + 1]])
        if rec.ran and len(rec.times_ns) > rec.ran:
            self._t0, self._t1 = rec.times_ns[0] / 1e3, rec.times_ns[rec.ran] / 1e3
        self.pending.append(("step", "", None))
        if self.sample:
            self._detach()  # until the next update: the steps between are not watched

    def _take_loop(self, rec: LoopRecords) -> None:
        lay = rec.layout
        rows = rec.rows
        # A final batch ends with the last iteration's row (laid out as `lay.last`).
        full_rows = rows[:-1] if rec.final and rec.partial is None else rows
        pending = self.pending
        if full_rows or rec.partial is not None:
            pending.extend(("e", c[0].op.name, None) for c in lay.full)
        if len(full_rows) < len(rows):
            pending.extend(("e", c[0].op.name, None) for c in lay.last)
        if rec.final and rec.exits is not None:
            pending.extend(("e", x.node.op.name, None) for x in lay.exits)
        watched = self.watched
        if watched is not None and self.on_value is not None and full_rows:
            row = full_rows[-1]
            for node, _t0, _t1, outs, _flag, _switch in lay.full:
                if node.op.name == watched:
                    self.on_value(watched, tuple(lay.consts[-1 - j] if j < 0 else row[j] for j in outs))
        if rows:
            self._t1 = rows[-1][0] / 1e3

    # --- lifetime -------------------------------------------------------------------
    def start(self) -> None:
        """Attach to the session (chained with its listener) and start the flusher."""
        if self._thread is not None:
            return
        self._previous = self.session.listener
        self._listener = chain_listeners(self._previous, _Listener(self))
        self.session.set_listener(self._listener)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="flowlab-live", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Detach from the session (putting back the listener it had) and stop."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=2)
        self._thread = None
        self._detach()

    def _detach(self) -> None:
        # Only our own chain is taken off: if someone chained after us, theirs stays.
        if self.session.listener is self._listener:
            self.session.set_listener(self._previous)

    def _reattach(self) -> None:
        if self.session.listener is self._previous and self._listener is not None:
            self.session.set_listener(self._listener)
        self._sampled = False

    @property
    def active(self) -> bool:
        return self._thread is not None

    # --- flusher --------------------------------------------------------------------
    def _run(self) -> None:
        last_event = 0.0
        idle_sent = True
        while not self._stop.wait(self.period):
            self._reattach()
            if not self.pending:
                if not idle_sent and time.monotonic() - last_event > self.idle_after:
                    self.running.clear()
                    self._send({"t": "live", "run": [], "done": [], "bytes": {},
                                "steps": self.steps, "idle": True})
                    idle_sent = True
                continue
            batch, self.pending = self.pending, []
            last_event = time.monotonic()
            idle_sent = False
            self._send(self.fold(batch))

    def fold(self, batch: list[tuple[str, str, int | None]]) -> dict[str, Any]:
        """One update from a batch of events (see the class docstring)."""
        done: dict[str, None] = {}
        nbytes: dict[str, int] = {}
        running = self.running
        for kind, name, nb in batch:
            if kind == "s":
                running.add(name)
            elif kind == "e":
                running.discard(name)
                done[name] = None
                if nb is not None:
                    nbytes[name] = nbytes.get(name, 0) + nb
            else:
                self.steps += 1
        t0, t1 = self._t0, self._t1
        return {"t": "live", "run": sorted(running), "done": list(done), "bytes": nbytes,
                "steps": self.steps, "idle": False,
                "step_us": round(t1 - t0, 1) if t0 is not None and t1 is not None and t1 >= t0 else None}

    def _send(self, msg: dict[str, Any]) -> None:
        try:
            self.send(msg)
            self.sent += 1
        except Exception:  # noqa: BLE001 - a closed comm: the view is gone, stop watching
            self._stop.set()


class _Listener:
    """The callable handed to the session: events and whole-step records."""

    __slots__ = ("bridge", "take_records")

    def __init__(self, bridge: LiveBridge) -> None:
        self.bridge = bridge
        self.take_records = bridge.take_records

    def __call__(self, ev: ExecEvent) -> None:
        self.bridge.listen(ev)
