"""The dataflow executor: runs a plan by pending counts (paper section 3.2).

State of one `Execution`: a value per slot, a pending-input count per node, a
dead flag per node, a ready queue, and a completion queue fed by asynchronous
kernels and pool threads.  Invariants: a node becomes ready exactly once, when its
count reaches zero; a dead input makes a node dead (its outputs are the `DEAD` value)
unless it is a control-flow op, which sees `DEAD` and decides itself (Merge forwards
its live input).  The first error cancels the step: registered cancellation
callbacks run (blocked Recvs and queue waits give up), variable writes are undone,
and the error names the op, its type, its device and where it was defined.

Policy: small kernels run inline on the calling thread; kernels registered as
`expensive` run on the session's pool when it has more than one thread and other
work is ready.  Asynchronous kernels never park a thread here: they call `done`.

The executor can also be driven one op at a time (`start`, `ready_nodes`,
`run_one`), which the Stepper uses, and publishes `ExecEvent`s (`runtime/task/events.py`,
re-exported here) to a listener; with no
listener attached, no event is built.  When every listener takes records (a
`take_records` attribute, as the StepStats collector's), `run()` runs a plan that has
a straight-line function through its traced twin instead and hands the listener one
`StepRecords` after the step: one clock read per op, no event objects.

Several executions of one step (one per device partition) are driven together on one
thread by `run_executions(executions)`:

    execs = [Execution(plan_k, step, feeds_k, listener, pool, deadline,
                       completions=shared) for ...]      # one shared SimpleQueue
    results = run_executions(execs)    # a list of fetched values per execution

It starts them, `advance()`s each (run what is ready, never wait), then waits on the
shared completion queue (items carry the execution they belong to) and hands each
item to its execution's `on_completion(item)`, until all have finished.  The step's
deadline bounds the waits.  The first error fails all of them (they share one `Step`:
one cancellation, one undo log, replayed once) and is the one raised.
`Execution.run()` remains the single-partition path.

Plans with loops (an Enter op) run on the frame path (`flowlab.runtime.task.frames`):
constructing an `Execution` of such a plan gives a `FrameExecution`, with the same
driving API; values are kept per (frame, iteration) there.  When every listener takes
records, it is `loop_recording.recording_class()`'s: fused loops run their recording twins
and hand `LoopRecords` to the listener, the other ops publish events.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.runtime.task.events import ExecEvent, Listener, StepRecords, _now_us, chain_listeners
from flowlab.runtime.task.fp_errors import enter_quiet, exit_quiet, quietly
from flowlab.runtime.task.plan import (
    Plan,
    PlanNode,
    TracedLine,
    fed_fetch_value,
    fetch_value,
    op_error,
)
from flowlab.runtime.task.step import Step

__all__ = [
    "ExecEvent", "Listener", "StepRecords", "chain_listeners", "collect_fetches", "Execution",
    "run_executions",
]


_CANCEL = object()


def collect_fetches(plan: Plan, values: list[Any], slots: list[int], fed_slots: list[int]) -> list[Any]:
    """The fetched values of a finished step, as Session.run returns them, read from
    `values` at `slots` (`fed_slots`: slots holding fed values).  A dead or never
    computed fetch is an InvalidArgumentError naming the tensor."""
    out = []
    fed = set(fed_slots)
    for slot, ref, name in zip(slots, plan.fetch_refs, plan.fetch_names):
        v = values[slot]
        if v is DEAD or v is None:
            raise errors.InvalidArgumentError(
                None, None, f"Fetched tensor '{name}' is dead: it was produced on a branch "
                "that was not taken." if v is DEAD else
                f"Fetched tensor '{name}' was never computed (it depends on a loop that did not run)."
            )
        if slot in fed:
            out.append(fed_fetch_value(v))
        else:
            out.append(fetch_value(v.read() if ref else v))
    return out


class Execution:
    """One step of a plan through the dataflow path."""

    def __new__(cls, plan: Plan, *args: Any, **kwargs: Any) -> Execution:
        if cls is Execution and plan.has_control_flow and _needs_frames(plan):
            from flowlab.runtime.task import loop_fusion
            from flowlab.runtime.task.frames import FrameExecution

            cls = FrameExecution
            listener = args[2] if len(args) > 2 else kwargs.get("listener")
            if loop_fusion.ENABLED and getattr(listener, "take_records", None) is not None:
                # Every listener takes records: fused loops record themselves.
                from flowlab.runtime.task.loop_recording import recording_class

                cls = recording_class()
        return object.__new__(cls)

    def __init__(
        self,
        plan: Plan,
        step: Step,
        feed_values: list[Any],
        listener: Listener | None = None,
        pool: Any = None,
        deadline: float | None = None,
        completions: queue.SimpleQueue[Any] | None = None,
    ) -> None:
        self.plan = plan
        self.step = step
        self.listener = listener
        self.pool = pool
        self.deadline = deadline
        self.values: list[Any] = [None] * plan.num_slots
        for slot, v in zip(plan.feed_slots, feed_values):
            self.values[slot] = v
        if plan.feed_to_device is not None:
            for slot, move in zip(plan.feed_slots, plan.feed_to_device):
                if move is not None:
                    self.values[slot] = move(self.values[slot])
        self.pending = list(plan.initial_pending)
        self.dead = [False] * len(plan.nodes)
        self.done_nodes = [False] * len(plan.nodes)
        # Plan indices here; the frame path queues (entry, iteration, ...) instead.
        self.ready: deque[Any] = deque(i for i, p in enumerate(self.pending) if p == 0)
        # Items: (execution, node index or _CANCEL, outputs, error).
        self.completions: queue.SimpleQueue[Any] = queue.SimpleQueue() if completions is None else completions
        self.outstanding = 0
        self.error: errors.OpError | None = None
        self.completed = 0
        self._cancel_token: int | None = None
        # A dead value arrived (a Recv of an untaken branch, in a partition without
        # control-flow ops): the plain loops, which assume none, are off from then on.
        self.saw_dead = False

    # --- driving ------------------------------------------------------------------
    def start(self) -> None:
        cm = self.step.get_cancellation()
        self._cancel_token = cm.register(lambda: self.completions.put((self, _CANCEL, None, None)))
        if self._cancel_token is None:
            self._fail(errors.CancelledError(None, None, "The step was cancelled before it started."))

    def ready_nodes(self) -> list[PlanNode]:
        return [self.plan.nodes[i] for i in self.ready]

    @property
    def finished(self) -> bool:
        return self.error is not None or (not self.ready and self.outstanding == 0)

    def run(self) -> list[Any]:
        """Run to the end; returns the fetched values (as Session.run returns them)."""
        token = enter_quiet()
        try:
            self.start()
            take = getattr(self.listener, "take_records", None)
            # A listener that must see a step's ops while it runs (a task server streams
            # them to the client) takes loop records only (`whole_steps` False).
            if take is not None and getattr(take, "whole_steps", True) and self.error is None \
                    and (self.pool is None or self.plan.num_expensive < 2):
                # Every listener takes records: the straight-line path, recording.
                line = self.plan.traced_line()
                if line is not None:
                    return self._run_traced_line(line, take)
            plain = not self.plan.has_control_flow
            traced = self.listener is not None
            while True:
                if plain and not self.saw_dead:
                    if traced:
                        self._run_plain_traced()
                    else:
                        self._run_plain()
                while self.ready and self.error is None:
                    self.run_one()
                if self.error is not None or self.outstanding == 0:
                    break
                self._wait_for_completion()
            return self.finish()
        finally:
            exit_quiet(token)

    def _run_traced_line(self, traced: TracedLine, take: Callable[[StepRecords], None]) -> list[Any]:
        """The step through the plan's traced straight-line function; its records go to
        `take` after the step (on failure too, up to and including the op that failed)."""
        plan = self.plan
        step = self.step
        n = len(traced.order)
        times = [0] * (n + 1)
        rec = StepRecords(step.step_id, threading.get_ident(), traced.order, times, traced.out_start, n)
        try:
            fetched, rec.outputs = traced.fn(step, [self.values[s] for s in plan.feed_slots], times)
        except Exception as e:
            end = time.perf_counter_ns()
            pos, names = traced.failed_at(e)
            if pos is None:  # not an op's line (reading a fetched variable, ...): as is
                error: BaseException = e
            else:
                node = traced.order[pos]
                error = rec.error = op_error(e, node.op, node.ctx.device.name)
                rec.ran, rec.error_ns = pos, end
            rec.outputs = tuple(names.get(x) for x in traced.out_names[:traced.out_start[rec.ran]])
            try:
                take(rec)
            finally:
                rec.outputs = None
            self.step.get_cancellation().deregister(self._cancel_token)
            self.step.rollback()
            if error is e:
                raise
            self.error = error  # type: ignore[assignment]
            raise error from e
        try:
            take(rec)
        finally:
            rec.outputs = None  # no activation outlives the step
        self.completed = len(plan.nodes)
        self.step.get_cancellation().deregister(self._cancel_token)
        return fetched

    def advance(self) -> None:
        """Run ready nodes until none is ready (or an error); never waits."""
        if not self.plan.has_control_flow and not self.saw_dead:
            if self.listener is None:
                self._run_plain()
            else:
                self._run_plain_traced()
        while self.ready and self.error is None:
            self.run_one()

    def _run_plain(self) -> None:
        """The propagation loop for plans without control flow and without a listener:
        no value can be dead, so a ready synchronous node is one kernel call and a few
        list updates.  Asynchronous and pooled nodes go through `_execute`."""
        table = self.plan.dataflow_table()
        nodes = self.plan.nodes
        values = self.values
        pending = self.pending
        ready = self.ready
        popleft = ready.popleft
        append = ready.append
        done_nodes = self.done_nodes
        step = self.step
        completed = 0
        try:
            while ready:
                i = popleft()
                fn, ctx, needs_step, special, slots, reads, outs, consumers, single = table[i]
                if special:
                    self._execute(nodes[i])
                    if self.error is not None or self.saw_dead:
                        return
                    continue
                if reads:
                    args = [values[s].read() if r else values[s] for s, r in zip(slots, reads)]
                else:
                    args = [values[s] for s in slots]
                try:
                    res = fn(ctx, step, *args) if needs_step else fn(ctx, *args)
                    if single:
                        if outs[0] >= 0:
                            values[outs[0]] = res
                    elif outs:
                        if len(res) != len(outs):
                            raise errors.InternalError(
                                None, None, f"kernel returned {len(res)} outputs, expected {len(outs)}"
                            )
                        for slot, v in zip(outs, res):
                            if slot >= 0:
                                values[slot] = v
                except Exception as e:
                    self._fail(op_error(e, nodes[i].op, ctx.device.name), nodes[i])
                    return
                done_nodes[i] = True
                completed += 1
                for c in consumers:
                    p = pending[c] - 1
                    pending[c] = p
                    if p == 0:
                        append(c)
        finally:
            self.completed += completed

    def _run_plain_traced(self) -> None:
        """`_run_plain` with a listener: the same loop, publishing op_start before and
        op_end (outputs in `info`) after each kernel -- the events `_execute` builds,
        with the per-node work cut to two clock reads and two event constructions."""
        table = self.plan.dataflow_table()
        nodes = self.plan.nodes
        values = self.values
        pending = self.pending
        ready = self.ready
        popleft = ready.popleft
        append = ready.append
        done_nodes = self.done_nodes
        step = self.step
        listener = self.listener
        assert listener is not None  # the traced loop runs only when a listener watches
        step_id = step.step_id
        thread = threading.get_ident()
        clock = time.perf_counter_ns
        Event = ExecEvent
        completed = 0
        try:
            while ready:
                i = popleft()
                fn, ctx, needs_step, special, slots, reads, outs, consumers, single = table[i]
                if special:
                    self._execute(nodes[i])
                    if self.error is not None or self.saw_dead:
                        return
                    continue
                if reads:
                    args = [values[s].read() if r else values[s] for s, r in zip(slots, reads)]
                else:
                    args = [values[s] for s in slots]
                op = nodes[i].op
                name = op.name
                op_type = op.type
                device = ctx.device.name
                listener(Event("op_start", step_id, name, op_type, device, clock() / 1000.0,
                               thread, None, "", 0, op))
                try:
                    res = fn(ctx, step, *args) if needs_step else fn(ctx, *args)
                    if single:
                        if outs[0] >= 0:
                            values[outs[0]] = res
                        res = (res,)
                    elif outs:
                        if len(res) != len(outs):
                            raise errors.InternalError(
                                None, None, f"kernel returned {len(res)} outputs, expected {len(outs)}"
                            )
                        for slot, v in zip(outs, res):
                            if slot >= 0:
                                values[slot] = v
                    else:
                        res = ()
                except Exception as e:
                    self._fail(op_error(e, op, device), nodes[i])
                    return
                listener(Event("op_end", step_id, name, op_type, device, clock() / 1000.0,
                               thread, res, "", 0, op))
                done_nodes[i] = True
                completed += 1
                for c in consumers:
                    p = pending[c] - 1
                    pending[c] = p
                    if p == 0:
                        append(c)
        finally:
            self.completed += completed

    def run_one(self, index: int | None = None) -> PlanNode:
        """Run one ready node (the first, or the one with plan index `index`)."""
        if index is None:
            i = self.ready.popleft()
        else:
            self.ready.remove(index)
            i = index
        node = self.plan.nodes[i]
        self._execute(node)
        return node

    def wait_one(self) -> None:
        """Block until one outstanding asynchronous kernel completes."""
        if self.outstanding:
            self._wait_for_completion()

    def finish(self) -> list[Any]:
        """Collect the fetches (or raise the step's error, after undoing its writes)."""
        self.step.get_cancellation().deregister(self._cancel_token)
        if self.error is None and self.completed != len(self.plan.nodes):
            stuck = [n.op.name for n in self.plan.nodes if not self.done_nodes[n.index]]
            self._fail(errors.InternalError(
                None, None, f"The step ended with {len(stuck)} ops not run, e.g. '{stuck[0]}'."
            ))
        if self.error is not None:
            self.step.rollback()
            raise self.error
        return collect_fetches(self.plan, self.values, self.plan.fetch_slots, self.plan.feed_slots)

    # --- one node -----------------------------------------------------------------
    def _execute(self, node: PlanNode) -> None:
        values = self.values
        is_cf = self.plan.has_control_flow and node.op.op_def is not None and node.op.op_def.is_control_flow
        dead = self.dead[node.index]
        args = []
        for slot, read in node.inputs:
            v = values[slot]
            if v is DEAD:
                dead = True
                args.append(v)
            else:
                args.append(v.read() if read else v)
        listener = self.listener
        if dead and not is_cf:
            if listener is not None:
                listener(self._event("op_dead", node))
            self._complete(node, [DEAD] * node.num_outputs, True)
            return
        kdef = node.kernel
        if listener is not None:
            listener(self._event("op_start", node))
        if kdef.asynchronous:
            self.outstanding += 1
            idx = node.index

            def done(outputs: Any = None, error: BaseException | None = None) -> None:
                self.completions.put((self, idx, outputs, error))

            try:
                kdef.fn(node.ctx, self.step, done, *args)
            except Exception as e:  # a kernel that fails before going asynchronous
                self.outstanding -= 1
                self._fail(op_error(e, node.op, node.ctx.device.name), node)
            return
        if kdef.expensive and self.pool is not None and (self.ready or self.outstanding):
            self.outstanding += 1
            idx = node.index

            @quietly
            def work() -> None:
                try:
                    r = kdef.fn(node.ctx, self.step, *args) if kdef.needs_step else kdef.fn(node.ctx, *args)
                    self.completions.put((self, idx, r, None))
                except BaseException as e:
                    self.completions.put((self, idx, None, e))

            self.pool.submit(work)
            return
        try:
            r = kdef.fn(node.ctx, self.step, *args) if kdef.needs_step else kdef.fn(node.ctx, *args)
        except Exception as e:
            self._fail(op_error(e, node.op, node.ctx.device.name), node)
            return
        self._complete_result(node, r)

    def _complete_result(self, node: PlanNode, r: Any) -> None:
        if node.num_outputs == 0:
            outs: Any = ()
        elif node.single_output:
            outs = (r,)
        else:
            outs = r
            if len(outs) != node.num_outputs:
                self._fail(op_error(errors.InternalError(
                    None, None, f"kernel returned {len(outs)} outputs, expected {node.num_outputs}"
                ), node.op, node.ctx.device.name), node)
                return
        dead = any(o is DEAD for o in outs)
        if self.listener is not None:
            self.listener(self._event("op_end", node, outs))
        self._complete(node, outs, dead)

    def _complete(self, node: PlanNode, outs: Any, dead: bool) -> None:
        values = self.values
        for slot, v in zip(node.outputs, outs):
            if slot >= 0:
                values[slot] = v
        self.done_nodes[node.index] = True
        self.completed += 1
        pending = self.pending
        if dead:
            self.saw_dead = True
        all_dead = dead and all(o is DEAD for o in outs)
        for c in node.consumers:
            if all_dead:
                # Control edges from a dead op carry death too (as in TensorFlow).
                self.dead[c] = self.dead[c] or not self._reads_any_output(c, node)
            p = pending[c] - 1
            pending[c] = p
            if p == 0:
                self.ready.append(c)

    def _reads_any_output(self, consumer: int, producer: PlanNode) -> bool:
        slots = {s for s in producer.outputs if s >= 0}
        return any(s in slots for s, _ in self.plan.nodes[consumer].inputs)

    def _wait_for_completion(self) -> None:
        timeout = None
        if self.deadline is not None:
            timeout = self.deadline - time.monotonic()
            if timeout <= 0:
                self._fail(self._deadline_error())
                return
        try:
            item = self.completions.get(timeout=timeout)
        except queue.Empty:
            self._fail(self._deadline_error())
            return
        self.on_completion(item)

    def on_completion(self, item: Any) -> None:
        """Apply one completion `(execution, node index, outputs, error)` (or a
        cancellation) taken from the completion queue; `item[0]` must be `self`."""
        _, idx, outputs, error = item
        if idx is _CANCEL:
            reason = self.step.get_cancellation().reason
            self._fail(reason if isinstance(reason, errors.OpError) else errors.CancelledError(
                None, None, "The step was cancelled (the session was closed or another op failed)."
            ))
            return
        if self.error is not None:
            return  # a completion that arrived after this execution failed
        self.outstanding -= 1
        node = self.plan.nodes[idx]
        if error is not None:
            self._fail(op_error(error, node.op, node.ctx.device.name), node)
            return
        self._complete_result(node, outputs)

    def _deadline_error(self) -> errors.OpError:
        waiting = [n.op.name for n in self.plan.nodes if not self.done_nodes[n.index] and self.pending[n.index] == 0]
        return errors.DeadlineExceededError(
            None, None,
            "Timed out waiting for the step to finish (RunOptions.timeout_in_ms)"
            + (f"; still waiting on: {', '.join(waiting[:5])}" if waiting else "") + ".",
        )

    def _fail(self, err: errors.OpError, node: PlanNode | None = None) -> None:
        if self.error is None:
            self.error = err
            if self.listener is not None and node is not None:
                self.listener(self._event("error", node, err))
            self.step.get_cancellation().cancel(err)

    def _event(self, kind: str, node: PlanNode, info: Any = None) -> ExecEvent:
        op = node.op
        return ExecEvent(
            kind, self.step.step_id, op.name, op.type, node.ctx.device.name,
            _now_us(), threading.get_ident(), info, "", 0, op,
        )


def _needs_frames(plan: Plan) -> bool:
    """Whether `plan` has a loop (an Enter op): it then runs on the frame path."""
    flag = plan.__dict__.get("_needs_frames")
    if flag is None:
        flag = any(n.op.type in ("Enter", "RefEnter") for n in plan.nodes)
        plan.__dict__["_needs_frames"] = flag
    return flag


def run_executions(executions: list[Execution]) -> list[list[Any]]:
    """Drive several executions of one step (one per partition) to the end on this
    thread.  They must share one `Step` and one completion queue (the `completions`
    argument).  Returns each execution's fetched values, in order; raises the step's
    first error after every execution has stopped, its variable writes undone once.
    """
    if not executions:
        return []
    shared = executions[0].completions
    if any(ex.completions is not shared for ex in executions):
        raise ValueError("run_executions: the executions must share one completion queue")
    step = executions[0].step
    token = enter_quiet()
    try:
        for ex in executions:
            ex.start()
        deadline = step.deadline
        if deadline is None:
            deadline = min((ex.deadline for ex in executions if ex.deadline is not None), default=None)
        while True:
            for ex in executions:
                if ex.error is None:
                    ex.advance()
            failed = next((ex for ex in executions if ex.error is not None), None)
            if failed is not None or all(ex.finished for ex in executions):
                break
            timeout = None if deadline is None else deadline - time.monotonic()
            try:
                if timeout is not None and timeout <= 0:
                    raise queue.Empty
                item = shared.get(timeout=timeout)
            except queue.Empty:
                waiting = next(ex for ex in executions if not ex.finished)
                waiting._fail(waiting._deadline_error())
                break
            item[0].on_completion(item)
        cm = step.get_cancellation()
        error: BaseException | None = None
        if any(ex.error is not None for ex in executions):
            reason = cm.reason
            error = reason if isinstance(reason, errors.OpError) else next(
                ex.error for ex in executions if ex.error is not None
            )
            for ex in executions:  # the others stop where they are
                if ex.error is None:
                    ex.error = error
        results = []
        for ex in executions:
            cm.deregister(ex._cancel_token)
        if error is not None:
            step.rollback()
            raise error
        for ex in executions:
            results.append(ex.finish())
        return results
    finally:
        exit_quiet(token)
