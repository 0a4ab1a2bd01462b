"""The executor's frame path: loops (paper section 3.4; TensorFlow's executor).

A plan with an Enter op runs here.  Every op belongs statically to a *frame*: the
root frame, or the loop named by the `frame_name` of the Enter ops feeding it
(`frame_analysis.analyze`: Enter's consumers are in the child frame, Exit's in the parent, any other
op's in its own).  At run time a frame has *instances* (one per loop execution: an
inner loop gets a new instance in each outer iteration) and each instance has
*iterations*; an `_Iteration` holds that iteration's values, pending counts and dead
marks, so values are keyed by (frame instance, iteration) (`frame_state`).

Rules (as in TensorFlow; applied by `frame_state.FramePropagation`):
* Enter sends its value into iteration 0 of the child instance (creating it); a
  constant Enter's value is given to every iteration, present and future.
* NextIteration sends its value to iteration i+1 of the same instance, creating it;
  at most `parallel_iterations` iterations are alive at once, later ones wait
  (`next_roots`) until the oldest finishes.  A dead NextIteration stops there.
* Exit sends its live value to the parent iteration; a dead Exit in the newest
  iteration is remembered and its deadness reaches the parent only when the whole
  frame instance is done (a loop that never ran, e.g. in an untaken branch).
* Merge is ready when its control inputs are done and either one live data input
  arrived (it forwards it and its index) or every data input is dead.  Any other op
  with a dead input is dead: not run, its outputs dead, except ControlTrigger.
* An iteration is done when it has no op in flight, no live child frame, and its
  predecessor is done (iteration 0: every Enter of the frame has arrived); it is then
  deleted, and a frame instance with no iteration and no pending Enter is deleted:
  memory does not grow with the number of iterations.
* Each new iteration checks the step's deadline and cancellation, so that a runaway
  loop ends with DeadlineExceededError or CancelledError.

The fused path: a frame of the shape `while_loop` builds, with synchronous ops only
(`loop_fusion`), runs each instance as one generated function once its Enters have
all arrived, when no listener watches the step (events and the Stepper need the
general path), every Enter is live (a loop in an untaken branch is the general
path's business) and the pool has nothing to overlap (at most one expensive kernel
per iteration, or no pool).  The instance never makes an `_Iteration`; its Exits'
values go to the parent iteration when it ends.  An instance still collecting its
Enters when nothing else can run (nothing ready, nothing in flight) falls back to
the general path, which can start iteration 0 with some Enters missing.

Kernels registered with `step=True` receive, on this path, a `FrameStep`: the step
itself plus `frame_name`, `frame_id` (unique per frame instance, e.g.
"while/ctx;0;inner/ctx") and `iteration`; `flowlab.kernels.registry.frame_of(step)`
reads them on either path.  Events carry the frame name and the iteration.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.runtime.task import loop_fusion
from flowlab.runtime.task.executor import (
    _CANCEL,
    Execution,
    Listener,
    collect_fetches,
)
from flowlab.runtime.task.fp_errors import enter_quiet, exit_quiet, quietly
from flowlab.runtime.task.frame_analysis import (
    _EXIT,
    _INDEX,
    _MERGE,
    _NEXT,
    _NORMAL,
    _SWITCH,
    _TRIGGER,
    _Entry,
    _FrameInfo,
    analyze,
)
from flowlab.runtime.task.frame_state import FramePropagation, FrameStep, _Frame, _Iteration
from flowlab.runtime.task.loop_fusion import FusedLoop, fusion_for
from flowlab.runtime.task.plan import Plan, PlanNode, op_error
from flowlab.runtime.task.step import Step

__all__ = ["FrameExecution", "FrameStep"]

_ids = itertools.count()


class _Stop(Exception):
    """A fused loop stops: the step failed (deadline or cancellation) meanwhile."""


class FrameExecution(FramePropagation, Execution):
    """An `Execution` of a plan with loops; same driving API (see the executor)."""

    def __init__(
        self,
        plan: Plan,
        step: Step,
        feed_values: list[Any],
        listener: Listener | None = None,
        pool: Any = None,
        deadline: float | None = None,
        completions: Any = None,
    ) -> None:
        import queue

        self.plan = plan
        self.step = step
        self.listener = listener
        self.pool = pool
        self.deadline = deadline if deadline is not None else step.deadline
        self.completions = queue.SimpleQueue() if completions is None else completions
        self.outstanding = 0
        self.error: errors.OpError | None = None
        self.completed = 0
        self._cancel_token: int | None = None
        self.analysis = analyze(plan)
        self.root = _Frame(self.analysis.root, None, 1)
        self.root_it = self.root.iterations[0]
        vals = self.root_it.values
        for s, v in zip(self.analysis.feed_local, feed_values):
            vals[s] = v
        self.ready: deque[tuple[_Entry, _Iteration, bool]] = deque()
        self._inflight: dict[int, tuple[_Entry, _Iteration]] = {}
        self._started = False
        self._fusing: list[_Frame] = []

    # --- driving ------------------------------------------------------------------
    def start(self) -> None:
        Execution.start(self)
        if self._started:
            return
        self._started = True
        it = self.root_it
        entries = self.root.info.entries
        for k in self.root.info.roots:
            self.ready.append((entries[k], it, False))
        it.outstanding += len(self.root.info.roots)

    # Read-only here: the values live per iteration.
    @property
    def values(self) -> list[Any]:  # type: ignore[override]
        """The root frame's values (what is left of a finished step; loop iterations
        are gone by then)."""
        return self.root_it.values

    def ready_nodes(self) -> list[PlanNode]:
        return [e.node for e, _, _ in self.ready]

    def run(self) -> list[Any]:
        token = enter_quiet()
        try:
            self.start()
            while True:
                self.advance()
                if self.error is not None or self.outstanding == 0:
                    break
                self._wait_for_completion()
            return self.finish()
        finally:
            exit_quiet(token)

    def run_one(self, index: int | None = None) -> PlanNode:
        if index is None:
            item = self.ready.popleft()
        else:
            item = next(t for t in self.ready if t[0].index == index)
            self.ready.remove(item)
        self._process(*item)
        self._unfuse_if_stalled()
        return item[0].node

    def advance(self) -> None:
        """Run ready nodes until none is ready (or an error); never waits."""
        self._advance()
        while self._unfuse_if_stalled():
            self._advance()

    def _advance(self) -> None:
        if self.listener is not None:
            while self.ready and self.error is None:
                self._process(*self.ready.popleft())
            return
        ready = self.ready
        popleft = ready.popleft
        append = ready.append
        step = self.step
        while ready:
            e, it, dead = popleft()
            kind = e.kind
            if dead or e.special or (it.dead is not None and e.local in it.dead):
                self._process(e, it, True if dead else it.dead is not None and e.local in it.dead)
                if self.error is not None:
                    return
                continue
            # The common cases inline: a live synchronous op, a live Merge, a live
            # NextIteration.  Outputs go to this iteration; consumers may get ready.
            values = it.values
            if kind == _NORMAL:
                mode = e.mode
                try:
                    if mode == 1:  # Identity, LoopCond: the input itself
                        r = values[e.in_slots[0]]
                        if e.reads is not None:
                            r = r.read()
                    elif mode == 2:
                        a, b = e.in_slots
                        r = e.fn(e.ctx, values[a], values[b])
                    elif mode == 3:
                        r = e.fn(e.ctx, values[e.in_slots[0]])
                    elif mode == 4:
                        r = e.fn(e.ctx)
                    else:
                        if e.reads is None:
                            args = [values[s] for s in e.in_slots]
                        else:
                            args = [values[s].read() if r else values[s] for s, r in zip(e.in_slots, e.reads)]
                        if e.needs_step:
                            f = it.frame
                            st = FrameStep(step, f.info.name, f.fid, it.num) if f.fid else step
                            r = e.fn(e.ctx, st, *args)
                        else:
                            r = e.fn(e.ctx, *args)
                except Exception as exc:
                    self._fail(op_error(exc, e.node.op, e.ctx.device.name), e.node)
                    return
                if e.single:
                    s = e.outs[0]
                    if s >= 0:
                        values[s] = r
                    if r is DEAD:
                        self._after(e, it, (r,), False)
                        continue
                    outs: Any = None
                else:
                    if not e.nouts:
                        r = ()  # NoOp and other ops without outputs return None
                    if not self._store(e, it, r):
                        return
                    for o in r:
                        if o is DEAD:
                            break
                    else:
                        outs = r
                        o = None
                    if o is DEAD:
                        self._after(e, it, r, False)
                        continue
            elif kind == _SWITCH and e.switch_cons is not None:
                s = e.in_slots[0]
                data = values[s].read() if e.reads and e.reads[0] else values[s]
                k = 1 if values[e.in_slots[1]] else 0
                s, s1 = e.outs[k], e.outs[1 - k]
                if s >= 0:
                    values[s] = data
                if s1 >= 0:
                    values[s1] = DEAD
                pending = it.pending
                entries = it.entries
                n_ready = -1
                for c in e.switch_cons[k]:
                    p = pending[c] - 1
                    pending[c] = p
                    if p == 0:
                        append((entries[c], it, False))
                        n_ready += 1
                for c in e.ctrl_cons:
                    p = pending[c] - 1
                    pending[c] = p
                    if p == 0:
                        append((entries[c], it, False))
                        n_ready += 1
                dead_side = e.switch_cons[1 - k]
                if dead_side:
                    dset = it.dead
                    if dset is None:
                        dset = it.dead = set()
                    for c in dead_side:
                        p = pending[c] - 1
                        pending[c] = p
                        ce = entries[c]
                        if p == 0 and ce.kind == _EXIT:
                            # A dead Exit runs nothing: the newest iteration remembers it.
                            if it.num == it.frame.iteration_count:
                                it.frame.dead_exits.append(ce)
                            continue
                        dset.add(c)
                        if p == 0:
                            append((ce, it, True))
                            n_ready += 1
                if n_ready:
                    it.outstanding += n_ready
                if it.outstanding == 0 and it.frame.fid:
                    self._cleanup(it.frame, it)
                continue
            elif kind == _MERGE:
                v, j = it.merge_in.pop(e.local)
                s, s1 = e.outs
                if s >= 0:
                    values[s] = v
                if s1 >= 0:
                    values[s1] = _INDEX[j] if j < 16 else np.int32(j)
                outs = None
            elif kind == _NEXT:
                s = e.in_slots[0]
                v = values[s].read() if e.reads else values[s]
                frame = it.frame
                nxt = frame.iterations.get(it.num + 1)
                if nxt is None and it.num == frame.iteration_count:
                    if frame.num_outstanding >= frame.max_parallel:
                        frame.next_roots.append((e, v))
                    else:
                        nxt = self._new_iteration(frame)
                if nxt is not None:
                    self._activate1(e, nxt, v)
                it.outstanding -= 1
                if it.outstanding == 0:
                    self._cleanup(frame, it)
                if self.error is not None:
                    return
                continue
            else:
                self._process(e, it, False)
                if self.error is not None:
                    return
                continue
            # Propagate within the iteration (no output is dead).
            pending = it.pending
            entries = it.entries
            n_ready = 0
            for c in e.cons:
                p = pending[c] - 1
                pending[c] = p
                if p == 0:
                    append((entries[c], it, False))
                    n_ready += 1
            if e.merge_cons:
                n_ready += self._to_merges(e, it, outs, False)
            n_ready -= 1
            if n_ready:
                it.outstanding += n_ready
            if it.outstanding == 0 and it.frame.fid:
                self._cleanup(it.frame, it)

    # --- fused loops ----------------------------------------------------------------
    def _fusion(self, info: _FrameInfo) -> FusedLoop | None:
        """The compiled loop for a new instance of frame `info`, if it may run fused."""
        if not loop_fusion.ENABLED:
            return None
        fz = info.fusion or fusion_for(self.analysis, info)
        if not isinstance(fz, FusedLoop) or (fz.num_expensive > 1 and self.pool is not None):
            return None
        return fz

    def _run_fused(self, frame: _Frame) -> None:
        """Run the fused instance `frame`, whose Enters have all arrived, to its end;
        its Exits' values go to the parent iteration and the instance is deleted."""
        self._fusing.remove(frame)
        fz = frame.fused
        args: list[Any] = [None] * len(fz.enter_pos)
        for e, v in frame.arrived:
            if v is DEAD:
                self._unfuse(frame)
                return
            args[fz.enter_pos[e.index]] = v
        frame.arrived = []
        try:
            n, exits = fz.fn(self.step, frame.fid, self._chk, *args)
        except _Stop:
            return
        except Exception as exc:
            x = fz.entry_for(exc)
            if x is None:  # not an op's line: a fault of the generated code itself
                self._fail(errors.InternalError(None, None, f"fused loop '{frame.info.name}': {exc!r}"))
            else:
                self._fail(op_error(exc, x.node.op, x.ctx.device.name), x.node)
            return
        self.completed += fz.ops_cond * (n + 1) + fz.ops_body * n + len(exits)
        parent_it = frame.parent_it
        assert parent_it is not None and parent_it.children is not None
        del parent_it.children[frame.info.name]
        parent_it.outstanding_frames -= 1
        for x, v in zip(fz.exits, exits):
            self._activate1(x, parent_it, v)

    def _chk(self) -> None:
        """A fused loop's periodic check of the deadline and cancellation."""
        self._check_alive()
        if self.error is not None:
            raise _Stop

    def _unfuse(self, frame: _Frame) -> None:
        """Hand fused instance `frame` to the general path, with the Enters it has."""
        if frame in self._fusing:
            self._fusing.remove(frame)
        frame.fused = None
        frame.iterations[0] = _Iteration(frame, 0)
        arrived, frame.arrived = frame.arrived, []
        frame.num_pending_inputs += len(arrived)
        for e, v in arrived:
            self._enter(frame, e, (v,), v is DEAD)

    def _unfuse_if_stalled(self) -> bool:
        """Nothing can run and nothing is in flight, yet an instance waits for an
        Enter: only the general path can go on (it starts iteration 0 without it)."""
        if not self._fusing or self.ready or self.outstanding or self.error is not None:
            return False
        for frame in list(self._fusing):
            self._unfuse(frame)
        return True

    # --- one node -----------------------------------------------------------------
    def _process(self, e: _Entry, it: _Iteration, dead: bool) -> None:
        listener = self.listener
        if not dead and it.dead is not None and e.local in it.dead:
            dead = True
        kind = e.kind
        if kind == _MERGE:
            if dead:
                outs: Any = (DEAD, DEAD)
            else:
                v, j = it.merge_in.pop(e.local)
                outs = (v, _INDEX[j] if j < 16 else np.int32(j))
            if listener is not None:
                listener(self._fevent("op_dead" if dead else "op_start", e, it))
                if not dead:
                    listener(self._fevent("op_end", e, it, outs))
            self._store(e, it, outs)
            self._after(e, it, outs, dead)
            return
        values = it.values
        args = []
        for s, r in zip(e.in_slots, e.reads or itertools.repeat(False)):
            v = values[s]
            if v is DEAD:
                dead = True
            elif r:
                v = v.read()
            args.append(v)
        # A dead _Send still runs: the other device's Recv waits for the dead value.
        if dead and kind != _TRIGGER and e.node.op.type not in ("_Send", "_HostSend"):
            if listener is not None:
                listener(self._fevent("op_dead", e, it))
            outs = (DEAD,) * e.nouts
            self._store(e, it, outs)
            self._after(e, it, outs, True)
            return
        if listener is not None:
            listener(self._fevent("op_start", e, it))
        kdef = e.node.kernel
        step: Any = self.step
        f = it.frame
        if e.needs_step and f.fid:
            step = FrameStep(self.step, f.info.name, f.fid, it.num)
        if kdef.asynchronous:
            self.outstanding += 1
            token = next(_ids)
            self._inflight[token] = (e, it)

            def done(outputs: Any = None, error: BaseException | None = None) -> None:
                self.completions.put((self, token, outputs, error))

            try:
                e.fn(e.ctx, step, done, *args)
            except Exception as exc:
                self.outstanding -= 1
                self._inflight.pop(token, None)
                self._fail(op_error(exc, e.node.op, e.ctx.device.name), e.node)
            return
        if kdef.expensive and self.pool is not None and (self.ready or self.outstanding):
            self.outstanding += 1
            token = next(_ids)
            self._inflight[token] = (e, it)

            @quietly
            def work() -> None:
                try:
                    r = e.fn(e.ctx, step, *args) if e.needs_step else e.fn(e.ctx, *args)
                    self.completions.put((self, token, r, None))
                except BaseException as exc:
                    self.completions.put((self, token, None, exc))

            self.pool.submit(work)
            return
        try:
            r = e.fn(e.ctx, step, *args) if e.needs_step else e.fn(e.ctx, *args)
        except Exception as exc:
            self._fail(op_error(exc, e.node.op, e.ctx.device.name), e.node)
            return
        self._finish_kernel(e, it, r)

    def _finish_kernel(self, e: _Entry, it: _Iteration, r: Any) -> None:
        outs = (r,) if e.single else (() if e.nouts == 0 else r)
        if self.listener is not None:
            self.listener(self._fevent("op_end", e, it, outs))
        if e.single:
            if e.outs[0] >= 0 and e.kind in (_NORMAL, _SWITCH):
                it.values[e.outs[0]] = r
        elif not self._store(e, it, outs):
            return
        # A Recv of a dead value is dead itself (TensorFlow's is_output_dead): its
        # control consumers are dead too.
        self._after(e, it, outs, e.single and r is DEAD and e.kind == _NORMAL)

    # --- completions and the end ----------------------------------------------------
    def on_completion(self, item: Any) -> None:
        _, token, outputs, error = item
        if token is _CANCEL:
            Execution.on_completion(self, item)
            return
        if self.error is not None:
            return
        self.outstanding -= 1
        e, it = self._inflight.pop(token)
        if error is not None:
            self._fail(op_error(error, e.node.op, e.ctx.device.name), e.node)
            return
        self._finish_kernel(e, it, outputs)

    def finish(self) -> list[Any]:
        self.step.get_cancellation().deregister(self._cancel_token)
        if self.error is not None:
            self.step.rollback()
            raise self.error
        try:
            return collect_fetches(
                self.plan, self.root_it.values, self.analysis.fetch_local, self.analysis.feed_local
            )
        except errors.InvalidArgumentError:
            self.step.rollback()  # a dead fetch: the loop's writes do not stand
            raise

    def _deadline_error(self) -> errors.OpError:
        waiting = [e.name for e, _ in self._inflight.values()]
        return errors.DeadlineExceededError(
            None, None,
            "Timed out waiting for the step to finish (RunOptions.timeout_in_ms)"
            + (f"; still waiting on: {', '.join(waiting[:5])}" if waiting else "") + ".",
        )

