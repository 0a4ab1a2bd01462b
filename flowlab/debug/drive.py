"""What a Stepper drives: the executions of one step, run one op at a time.

Two shapes, one interface (`Drive`):

* one queue (`Drive.one_queue`): `Session.start_execution`'s single Execution of the
  step's placed ops -- a multi-device step without its Send/Recv pairs;
* per partition (`Drive.per_partition`): one Execution per device partition of the
  step's `PartitionedPlan`, with the partitions' `_Send`/`_Recv` ops, one Step, one
  shared completion queue and the step's rendezvous table, as `run_partitioned` and
  `run_executions` drive a step -- only here a command runs one chosen op.

A `_Recv` is *held back* until the Stepper has run its `_Send`: the executor would
start it at once (it has no inputs) and let it wait, which shows nothing; held back,
it becomes ready when its value is there, so a transfer reads as two steps.  Running a
Recv whose value was sent completes at once; `pump()` applies such completions.

Everything here reaches into the session (`_plan_for`, `_convert_feeds`,
`_rendezvous`, `_stepped`): it is what `Session.start_execution` does for one
Execution, done for several (see docs/notes/seeing-a-step.md).
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any

from flowlab import errors
from flowlab.runtime.client.fetches import FetchMapper
from flowlab.runtime.task.executor import Execution
from flowlab.runtime.task.plan import PlanNode, fed_fetch_value
from flowlab.runtime.task.step import Step

_RECVS = frozenset({"_Recv", "_HostRecv"})


class Drive:
    """The executions of one step and how to advance them one op at a time.

    `node_of[name] = (k, node)` for every op of every execution (`execs[k]`), `devices`
    the devices they run on, `send_of[recv name] = send name` for the step's transfers."""

    def __init__(self, execs: list[Execution], mapper: FetchMapper,
                 finish: Callable[[], list[Any]], cleanup: Callable[[], None] | None = None,
                 send_of: dict[str, str] | None = None) -> None:
        self.execs = execs
        self.mapper = mapper
        self._finish = finish
        self._cleanup = cleanup
        self.send_of = send_of or {}
        self.node_of: dict[str, tuple[int, PlanNode]] = {}
        for k, ex in enumerate(execs):
            for n in ex.plan.nodes:
                self.node_of[n.op.name] = (k, n)
        # The devices the step's ops run on, in partition order.
        self.devices = list(dict.fromkeys(n.ctx.device.name for _, n in self.node_of.values()))
        # How often each Send ran and each Recv started (in a loop, once per iteration):
        # a Recv is released while its Send ran more often than it started.
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.completions = execs[0].completions
        self.step = execs[0].step

    @property
    def partitioned(self) -> bool:
        return len(self.execs) > 1 or bool(self.send_of)

    # --- construction -------------------------------------------------------------
    @classmethod
    def one_queue(cls, sess: Any, fetches: Any, feed_dict: Any, listener: Any) -> Drive:
        ex, mapper = sess.start_execution(fetches, feed_dict, listener=listener)
        return cls([ex], mapper, lambda: ex.finish())

    @classmethod
    def per_partition(cls, sess: Any, fetches: Any, feed_dict: Any, listener: Any) -> Drive | None:
        """One Execution per partition of the step, or None when the step has one
        partition (then `one_queue` is the same thing)."""
        from flowlab.runtime.task.partitioned_plan import PartitionedPlan

        sess._check_open()
        mapper = FetchMapper(sess.graph, fetches)
        feed_tensors, feed_values = sess._convert_feeds(feed_dict)
        pplan = sess._plan_for(feed_tensors, mapper.tensors, mapper.targets)
        if not isinstance(pplan, PartitionedPlan):
            return None
        step = Step(sess)
        rdv = step.rendezvous = sess._rendezvous.find_or_create(step.step_id)
        cm = step.get_cancellation()
        cm.register(lambda: rdv.abort(errors.CancelledError(
            None, None, "A Recv was cancelled: the step was aborted (by the Stepper, an op "
            "that failed, or the session's close)."
        )))
        with sess._steps_lock:
            sess._stepped.add(step)  # Session.close cancels it
        shared: queue.SimpleQueue[Any] = queue.SimpleQueue()
        execs = [
            Execution(part.plan, step, [feed_values[j] for j in part.feed_index], listener,  # type: ignore[arg-type]
                      completions=shared)
            for part in pplan.partitions
        ]

        def finish() -> list[Any]:
            out: list[Any] = [None] * pplan.num_fetches
            for part, ex in zip(pplan.partitions, execs):
                for i, v in zip(part.fetch_index, ex.finish()):
                    out[i] = v
            for i, j in pplan.fed_fetches:
                out[i] = fed_fetch_value(feed_values[j])
            return out

        return cls(execs, mapper, finish,
                   cleanup=lambda: sess._rendezvous.cleanup(step.step_id),
                   send_of={pair["recv_op"]: pair["send_op"] for pair in pplan.pairs})

    # --- state --------------------------------------------------------------------
    def start(self) -> None:
        for ex in self.execs:
            ex.start()

    @property
    def error(self) -> errors.OpError | None:
        return next((ex.error for ex in self.execs if ex.error is not None), None)

    @property
    def outstanding(self) -> int:
        return sum(ex.outstanding for ex in self.execs)

    @property
    def done(self) -> bool:
        """Nothing left to run (or an execution failed)."""
        return self.error is not None or all(not ex.ready and not ex.outstanding for ex in self.execs)

    def held(self, node: PlanNode) -> bool:
        """A Recv whose Send has not run yet (in this iteration, in a loop)."""
        name = node.op.name
        send = self.send_of.get(name)
        return send is not None and self.sent.get(send, 0) <= self.received.get(name, 0)

    def runnable(self) -> list[tuple[int, PlanNode]]:
        """(execution, op) for the ready ops that may run now, per execution the next
        first."""
        return [(k, n) for k, ex in enumerate(self.execs) for n in ex.ready_nodes() if not self.held(n)]

    def waiting(self) -> list[PlanNode]:
        """The Recvs held back until their Send runs."""
        return [n for ex in self.execs for n in ex.ready_nodes() if self.held(n)]

    # --- commands -----------------------------------------------------------------
    def run(self, k: int, node: PlanNode) -> None:
        """Run one ready op of execution k, then apply what completed at once."""
        # A plan index (the frame path takes one too: the first ready item of that node).
        self.execs[k].run_one(node.index)
        name = node.op.name
        if node.op.type in ("_Send", "_HostSend"):
            self.sent[name] = self.sent.get(name, 0) + 1
        elif name in self.send_of:
            self.received[name] = self.received.get(name, 0) + 1
        self.pump(block=False)

    def pump(self, block: bool) -> bool:
        """Apply one completion (an asynchronous op finished, or a cancellation) and
        then any others already queued; with `block`, wait for the first.  Returns
        whether one was applied."""
        applied = False
        while True:
            try:
                item = self.completions.get() if block and not applied else self.completions.get_nowait()
            except queue.Empty:
                return applied
            item[0].on_completion(item)
            applied = True

    def finish(self) -> list[Any]:
        """The fetched values in the step's fetch order; raises the step's error (its
        variable writes undone once).  Drops the step's rendezvous table."""
        try:
            err = self.error
            if err is not None and len(self.execs) > 1:
                cm = self.step.get_cancellation()
                for ex in self.execs:
                    cm.deregister(ex._cancel_token)
                    if ex.error is None:
                        ex.error = err  # the others stop where they are
                self.step.rollback()
                reason = cm.reason
                raise reason if isinstance(reason, errors.OpError) else err
            return self._finish()
        finally:
            self._close()

    def abort(self, reason: errors.OpError) -> None:
        """Cancel the step (blocked ops give up) and undo its variable writes."""
        cm = self.step.get_cancellation()
        for ex in self.execs:
            cm.deregister(ex._cancel_token)
        cm.cancel(reason)
        self.step.rollback()
        self._close()

    def _close(self) -> None:
        if self._cleanup is not None:
            cleanup, self._cleanup = self._cleanup, None
            cleanup()

