"""The executor's frame path: loops (paper section 3.4; TensorFlow's executor).

A plan with an Enter op runs here.  Every op belongs statically to a *frame*: the
root frame, or the loop named by the `frame_name` of the Enter ops feeding it
(`frame_analysis.analyze`: Enter's consumers are in the child frame, Exit's in the parent, any other
op's in its own).  At run time a frame has *instances* (one per loop execution: an
inner loop gets a new instance in each outer iteration) and each instance has
*iterations*; an `_Iteration` holds that iteration's values, pending counts and dead
marks, so values are keyed by (frame instance, iteration).

Rules (as in TensorFlow):
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

Kernels registered with `step=True` receive, on this path, a `FrameStep`: the step
itself plus `frame_name`, `frame_id` (unique per frame instance, e.g.
"while/ctx;0;inner/ctx") and `iteration`; `flowlab.kernels.registry.frame_of(step)`
reads them on either path.  Events carry the frame name and the iteration.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.runtime.executor import (
    _CANCEL,
    ExecEvent,
    Execution,
    Listener,
    _now_us,
    collect_fetches,
)
from flowlab.runtime.fp_errors import enter_quiet, exit_quiet, quietly
from flowlab.runtime.frame_analysis import (
    _ENTER,
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
from flowlab.runtime.plan import Plan, PlanNode, op_error
from flowlab.runtime.step import Step


class FrameStep:
    """The step as a kernel inside a loop sees it: the `Step` (attributes forwarded)
    plus where this invocation runs."""

    __slots__ = ("_step", "frame_name", "frame_id", "iteration")

    def __init__(self, step: Step, frame_name: str, frame_id: str, iteration: int) -> None:
        self._step = step
        self.frame_name = frame_name
        self.frame_id = frame_id
        self.iteration = iteration

    def __getattr__(self, name: str) -> Any:
        return getattr(self._step, name)


# --- run-time state -------------------------------------------------------------------
class _Frame:
    """One instance of a frame: a loop execution."""

    __slots__ = ("info", "parent_it", "iterations", "iteration_count", "num_outstanding",
                 "max_parallel", "num_pending_inputs", "next_roots", "invs", "dead_exits", "fid")

    def __init__(self, info: _FrameInfo, parent_it: _Iteration | None, max_parallel: int) -> None:
        self.info = info
        self.parent_it = parent_it
        self.iterations: dict[int, _Iteration] = {}
        self.iteration_count = 0
        self.num_outstanding = 1
        self.max_parallel = max(1, max_parallel)
        self.num_pending_inputs = info.num_enters
        self.next_roots: list[tuple[_Entry, Any]] = []
        self.invs: list[tuple[_Entry, Any]] = []
        self.dead_exits: list[_Entry] = []
        if parent_it is None:
            self.fid = ""
        else:
            pf = parent_it.frame.fid
            self.fid = f"{pf};{parent_it.num};{info.name}" if pf else f"{parent_it.num};{info.name}"
        self.iterations[0] = _Iteration(self, 0)


class _Iteration:
    __slots__ = ("frame", "num", "values", "pending", "dead", "merge_in", "mdead",
                 "outstanding", "outstanding_frames", "children", "entries")

    def __init__(self, frame: _Frame, num: int) -> None:
        info = frame.info
        self.frame = frame
        self.num = num
        self.values: list[Any] = [None] * info.num_slots
        self.pending = info.pending[:]
        self.dead: set[int] | None = None
        self.merge_in: dict[int, tuple[Any, int]] = {}
        self.mdead: dict[int, int] | None = None
        self.outstanding = 0
        self.outstanding_frames = 0
        self.children: dict[str, _Frame] | None = None
        self.entries = info.entries


_ids = itertools.count()


class FrameExecution(Execution):
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
        return item[0].node

    def advance(self) -> None:
        """Run ready nodes until none is ready (or an error); never waits."""
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
        if dead and kind != _TRIGGER:
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
        self._after(e, it, outs, False)

    def _store(self, e: _Entry, it: _Iteration, outs: Any) -> bool:
        """Write a normal/merge node's outputs into its iteration's values."""
        if len(outs) != e.nouts:
            self._fail(op_error(errors.InternalError(
                None, None, f"kernel returned {len(outs)} outputs, expected {e.nouts}"
            ), e.node.op, e.ctx.device.name), e.node)
            return False
        if e.kind in (_NORMAL, _MERGE, _TRIGGER, _SWITCH):
            values = it.values
            for s, v in zip(e.outs, outs):
                if s >= 0:
                    values[s] = v
        return True

    def _after(self, e: _Entry, it: _Iteration, outs: Any, dead: bool) -> None:
        """Propagate a finished node's outputs (by kind) and account for it."""
        self.completed += 1
        kind = e.kind
        frame = it.frame
        if kind == _ENTER:
            child = self._child(e, it)
            value = outs[0]
            if e.constant and not dead:
                child.invs.append((e, value))
                for cit in list(child.iterations.values()):
                    self._activate(e, cit, outs, False)
            else:
                self._activate(e, child.iterations[0], outs, dead)
            child.num_pending_inputs -= 1
            it0 = child.iterations.get(0)
            if it0 is not None and it0.outstanding == 0:
                self._cleanup(child, it0)
        elif kind == _EXIT:
            if dead:
                if it.num == frame.iteration_count:
                    frame.dead_exits.append(e)
            else:
                self._activate(e, frame.parent_it, outs, False)  # type: ignore[arg-type]
        elif kind == _NEXT:
            if not dead:
                nxt = frame.iterations.get(it.num + 1)
                if nxt is not None:
                    self._activate(e, nxt, outs, False)
                elif it.num == frame.iteration_count:
                    if frame.num_outstanding >= frame.max_parallel:
                        frame.next_roots.append((e, outs[0]))
                    else:
                        self._new_iteration(frame)
                        self._activate(e, frame.iterations[frame.iteration_count], outs, False)
        else:
            self._activate(e, it, outs, dead, values_written=True)
        it.outstanding -= 1
        if it.outstanding == 0 and frame.fid:
            self._cleanup(frame, it)

    def _activate(self, e: _Entry, it: _Iteration, outs: Any, dead: bool, values_written: bool = False) -> None:
        """Deliver `e`'s outputs to its consumers in iteration `it` (of its output frame)."""
        if not values_written:
            values = it.values
            for s, v in zip(e.outs, outs):
                if s >= 0:
                    values[s] = v
        pending = it.pending
        entries = it.entries
        ready = self.ready
        n_ready = 0
        any_dead = dead
        if not dead:
            for o in outs:
                if o is DEAD:
                    any_dead = True
                    break
        if any_dead:
            if it.dead is None:
                it.dead = set()
            values = it.values
            for c, slots in e.reader_cons:
                if dead or any(values[s] is DEAD for s in slots):
                    it.dead.add(c)
            if dead:
                it.dead.update(e.ctrl_cons)
        for c in e.data_cons:
            p = pending[c] - 1
            pending[c] = p
            if p == 0:
                ready.append((entries[c], it, c in it.dead if any_dead else False))  # type: ignore[operator]
                n_ready += 1
        for c in e.ctrl_cons:
            p = pending[c] - 1
            pending[c] = p
            if p == 0:
                ready.append((entries[c], it, c in it.dead if any_dead else False))  # type: ignore[operator]
                n_ready += 1
        if e.merge_cons:
            n_ready += self._to_merges(e, it, outs, dead)
        it.outstanding += n_ready

    def _to_merges(self, e: _Entry, it: _Iteration, outs: Any, dead: bool) -> int:
        pending = it.pending
        entries = it.entries
        n_ready = 0
        for c, positions, is_ctrl in e.merge_cons:
            ready_now = False
            mdead = False
            for j, s in positions:
                v = it.values[s]
                if dead or v is DEAD or v is None:
                    if it.mdead is None:
                        it.mdead = {}
                    cnt = it.mdead.get(c, 0) + 1
                    it.mdead[c] = cnt
                    mdead = cnt == it.frame.info.merge_ninputs[c]
                    ready_now = ready_now or (pending[c] == 1 and mdead)
                else:
                    count = pending[c]
                    if count & 1:
                        it.merge_in[c] = (v, j)
                        pending[c] = count & ~1
                        ready_now = ready_now or count == 1
            if is_ctrl:
                pending[c] -= 2
                count = pending[c]
                mdead = (it.mdead or {}).get(c, 0) == it.frame.info.merge_ninputs[c]
                ready_now = ready_now or count == 0 or (count == 1 and mdead)
            if ready_now:
                live = c in it.merge_in
                self.ready.append((entries[c], it, not live))
                n_ready += 1
        return n_ready

    # --- frames and iterations ----------------------------------------------------
    def _child(self, e: _Entry, it: _Iteration) -> _Frame:
        info = e.out_info
        children = it.children
        if children is None:
            children = it.children = {}
        child = children.get(info.name)
        if child is None:
            child = _Frame(info, it, int(e.node.op.get_attr("parallel_iterations")))
            children[info.name] = child
            it.outstanding_frames += 1
            if self.listener is not None:
                self.listener(self._fevent("frame_enter", e, child.iterations[0]))
        return child

    def _new_iteration(self, frame: _Frame) -> _Iteration:
        n = frame.iteration_count = frame.iteration_count + 1
        if not n & 15:
            self._check_alive()
        new = _Iteration(frame, n)
        frame.iterations[n] = new
        frame.num_outstanding += 1
        if frame.dead_exits:
            frame.dead_exits = []
        if frame.next_roots:
            roots, frame.next_roots = frame.next_roots, []
            for e, v in roots:
                self._activate1(e, new, v)
        for e, v in frame.invs:
            self._activate1(e, new, v)
        return new

    def _activate1(self, e: _Entry, it: _Iteration, v: Any) -> None:
        """`_activate` of one live value (NextIteration, a loop invariant)."""
        s = e.outs[0]
        if s >= 0:
            it.values[s] = v
        pending = it.pending
        entries = it.entries
        append = self.ready.append
        n_ready = 0
        for c in e.cons:
            p = pending[c] - 1
            pending[c] = p
            if p == 0:
                append((entries[c], it, False))
                n_ready += 1
        m1 = e.merge1
        if m1 is not None:
            # The loop's back edge: a live value into one input of one Merge.
            c, j = m1
            count = pending[c]
            if count & 1:
                it.merge_in[c] = (v, j)
                pending[c] = count - 1
                if count == 1:
                    append((entries[c], it, False))
                    n_ready += 1
        elif e.merge_cons:
            n_ready += self._to_merges(e, it, None, False)
        it.outstanding += n_ready

    def _check_alive(self) -> None:
        cm = self.step.cancellation
        if cm is not None and cm.cancelled and self.error is None:
            reason = cm.reason
            self._fail(reason if isinstance(reason, errors.OpError) else errors.CancelledError(
                None, None, "The step was cancelled (the session was closed or another op failed)."
            ))
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self._fail(self._deadline_error())

    def _cleanup(self, frame: _Frame, it: _Iteration) -> None:
        """Delete the finished iterations from `it` on, then the frame if it is done;
        a finished frame may finish its parent's iteration in turn."""
        while True:
            n = it.num
            iterations = frame.iterations
            while n <= frame.iteration_count:
                cur = iterations.get(n)
                if cur is None or cur.outstanding or cur.outstanding_frames:
                    break
                if n == 0:
                    if frame.num_pending_inputs:
                        break
                elif n - 1 in iterations:
                    break
                del iterations[n]
                frame.num_outstanding -= 1
                n += 1
                if frame.next_roots:
                    self._new_iteration(frame)
            if frame.num_pending_inputs or frame.num_outstanding:
                return
            # The frame instance is done: dead exits reach the parent, then it goes.
            parent_it = frame.parent_it
            assert parent_it is not None
            for x in frame.dead_exits:
                self._activate(x, parent_it, (DEAD,) * x.nouts, True)
            frame.dead_exits = []
            del parent_it.children[frame.info.name]  # type: ignore[union-attr]
            parent_it.outstanding_frames -= 1
            if self.listener is not None:
                self.listener(ExecEvent("frame_exit", self.step.step_id, frame.info.name, "",
                                        "", _now_us(), threading.get_ident(), None,
                                        frame.info.name, frame.iteration_count))
            frame, it = parent_it.frame, parent_it
            if not frame.fid or it.outstanding:
                return

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

    def _fevent(self, kind: str, e: _Entry, it: _Iteration, info: Any = None) -> ExecEvent:
        node = e.node
        op = node.op
        return ExecEvent(
            kind, self.step.step_id, op.name, op.type, node.ctx.device.name,
            _now_us(), threading.get_ident(), info, it.frame.info.name, it.num, op,
        )
