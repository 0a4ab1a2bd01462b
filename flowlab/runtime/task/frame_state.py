"""Frame instances and iterations of the executor's frame path, and how values move
between them (TensorFlow's rules; `flowlab.runtime.task.frames` drives them).

State: a `_Frame` is one instance of a loop frame (one loop execution; an inner loop
gets a new instance in each outer iteration), keyed by its parent iteration and frame
name; it holds its live `_Iteration`s, each with its values, pending counts, dead
marks, Merge inputs, ops in flight and live child frames.

`FramePropagation` is the part of `FrameExecution` that applies the rules: a
finished op's outputs go to its consumers by kind (`_after`: Enter into iteration 0
of the child instance, or every iteration for a constant Enter; Exit to the parent
iteration, a dead one only remembered in the newest iteration; NextIteration into
iteration i+1, created when fewer than `parallel_iterations` are alive, deferred in
`next_roots` otherwise; any other op within its iteration), Merges take their first
live input or die when all inputs are dead (`_to_merges`), and finished iterations
and frame instances are deleted (`_cleanup`), so memory is bounded by
`parallel_iterations`, not by the trip count.  It expects the execution's `ready`
queue, `step`, `deadline`, `listener`, `error` and `_fail`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.runtime.task.events import ExecEvent, _now_us
from flowlab.runtime.task.frame_analysis import (
    _ENTER,
    _EXIT,
    _MERGE,
    _NEXT,
    _NORMAL,
    _SWITCH,
    _TRIGGER,
    _Entry,
    _FrameInfo,
)
from flowlab.runtime.task.plan import op_error
from flowlab.runtime.task.step import Step


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
                 "max_parallel", "num_pending_inputs", "next_roots", "invs", "dead_exits", "fid",
                 "fused", "arrived")

    def __init__(self, info: _FrameInfo, parent_it: _Iteration | None, max_parallel: int,
                 fused: Any = None) -> None:
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
        # A fused loop (`loop_fusion`) collects its Enters' values and runs at once when
        # the last arrives: no iteration is made unless it falls back to this path.
        self.fused = fused
        self.arrived: list[tuple[_Entry, Any]] = []
        if fused is None:
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


class FramePropagation:
    """Delivering values between the iterations and frame instances of a step (mixed
    into `FrameExecution`)."""

    ready: Any
    step: Any
    deadline: float | None
    listener: Any
    error: errors.OpError | None
    completed: int

    _fail: Any  # Execution._fail(error, node)
    _deadline_error: Any
    # The fused path (frames.py): whether and how a frame instance runs as one call.
    _fusion: Any  # (frame info) -> FusedLoop | None
    _run_fused: Any  # (frame instance whose Enters have all arrived) -> None
    _fusing: list[_Frame]  # instances collecting their Enters

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
            child = self._child(e, it, dead)
            if child.fused is None:
                self._enter(child, e, outs, dead)
            else:
                child.arrived.append((e, outs[0]))
                child.num_pending_inputs -= 1
                if not child.num_pending_inputs:
                    self._run_fused(child)
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

    def _enter(self, child: _Frame, e: _Entry, outs: Any, dead: bool) -> None:
        """An Enter's value into its frame instance `child`."""
        if e.constant and not dead:
            child.invs.append((e, outs[0]))
            for cit in list(child.iterations.values()):
                self._activate(e, cit, outs, False)
        else:
            self._activate(e, child.iterations[0], outs, dead)
        child.num_pending_inputs -= 1
        it0 = child.iterations.get(0)
        if it0 is not None and it0.outstanding == 0:
            self._cleanup(child, it0)

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
                    # A dead Enter into a loop's Merge: its back edge never reaches
                    # iteration 0, so the Merge is dead (and everything after it runs
                    # dead, inner loops' Enters included, so their instances finish).
                    mdead = cnt == it.frame.info.merge_ninputs[c] or (dead and e.kind == _ENTER)
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
    def _child(self, e: _Entry, it: _Iteration, dead: bool = False) -> _Frame:
        info = e.out_info
        children = it.children
        if children is None:
            children = it.children = {}
        child = children.get(info.name)
        if child is None:
            # A loop entered dead (an untaken branch) is the general path's business.
            fused = self._fusion(info) if self.listener is None and not dead else None
            child = _Frame(info, it, int(e.node.op.get_attr("parallel_iterations")), fused)
            if fused is not None:
                self._fusing.append(child)
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
            if frame.iteration_count == 0:
                # A loop that never ran (dead Enters: an untaken branch) ran no Exit:
                # each is dead in the parent, so that a device waiting for one learns it.
                pvals = parent_it.values
                for x in frame.info.entries:
                    if x.kind == _EXIT and x.outs[0] >= 0 and pvals[x.outs[0]] is None \
                            and x not in frame.dead_exits:
                        frame.dead_exits.append(x)
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


    def _fevent(self, kind: str, e: _Entry, it: _Iteration, info: Any = None) -> ExecEvent:
        node = e.node
        op = node.op
        return ExecEvent(
            kind, self.step.step_id, op.name, op.type, node.ctx.device.name,
            _now_us(), threading.get_ident(), info, it.frame.info.name, it.num, op,
        )
