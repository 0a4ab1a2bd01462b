"""An in-process task: devices and their state, registered partitions, running steps.

`LocalTask` answers the task interface (flowlab.runtime.interface) inside the
client's process; the local Session is a master plus one of these.  What it keeps:

* its devices (`local_devices`: the virtual CPUs of `device_count`, the GPUs CuPy
  finds), whose resource managers hold every variable, queue and iterator of the
  task -- state outlives steps and registrations, and goes with `close()`;
* per registered handle, the compiled form of the partitions it was sent
  (flowlab.runtime.task.partitioned_plan): imported from GraphDef JSON, compiled
  once, read-only, shared by concurrent steps;
* per running step (by the master's step id): its `Step` (undo log, cancellation,
  deadline) and its rendezvous table, dropped when the step ends.

Running a step picks a path as the session always did: a plan whose ops are all
plain kernels runs as its generated straight-line function (several partitions of
one task as one fused function); anything else (waiting kernels, control flow, a
listener, a trace, a pool with two or more expensive kernels) on the dataflow
executor.  Both give the same values.  A step that fails rolls back every write it
made on this task before the error leaves `run`; `abort_step` cancels a running one.

Threads: the task's `ThreadPolicy` (flowlab.runtime.thread_policy, from ConfigProto's
inter-op and intra-op thread counts) is in force while a step with an expensive kernel
(a GEMM, a convolution) runs: one BLAS thread per call, the intra-op threads sharing
large GEMMs.  Steps of small ops only skip it (two library calls would be a visible
share of a step of microseconds).

In-process calls pass arrays without copying and raise the kernels' own errors (with
their op); listeners receive the executor's events directly.  Over a network the
same calls carry the interface's messages (errors as `error_to_message`).
"""

from __future__ import annotations

import collections
import functools
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from flowlab import errors
from flowlab.kernels.sendrecv_kernels import DEAD, LocalRendezvous, key_prefix
from flowlab.runtime import thread_policy
from flowlab.runtime.interface import DeviceAttributes, as_lists
from flowlab.runtime.task import peers
from flowlab.runtime.task.device import Device, local_devices
from flowlab.runtime.task.executor import Execution, Listener
from flowlab.runtime.task.partitioned_plan import PartitionedPlan, compile_units, run_partitioned
from flowlab.runtime.task.plan import Plan, run_straight_line
from flowlab.runtime.task.registration import import_unit
from flowlab.runtime.task.rendezvous import RendezvousManager
from flowlab.runtime.task.step import Step

__all__ = ["LocalTask", "Registered"]

# Finished steps whose unpulled dead loop values a late pull may still ask for.
_MAX_DEAD_STEPS = 256


@dataclass
class Registered:
    """What a task keeps per handle: the compiled plan and how its feeds and fetches
    map onto the step's lists (None: the identity, the common case)."""

    plan: Plan | PartitionedPlan
    num_fetches: int
    feed_index: list[int] | None
    fetch_index: list[int] | None
    # An unwatched step may run a generated straight-line function: a single plan's
    # (plain kernels only, none that waits) or the partitions' fused one.
    fast: bool = False
    # Transfers with other tasks: keys this task pulls ({"key", "task", "incarnation"})
    # and keys other tasks pull from it.
    remote_recvs: list[dict[str, Any]] = field(default_factory=list)
    remote_sends: list[str] = field(default_factory=list)
    # Transfers from other tasks inside a loop: one key per frame and iteration, pulled
    # when its Recv runs (by key prefix, `sendrecv_kernels.key_prefix`).
    loop_pulls: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The prefixes of `remote_sends`: a finished step keeps every value of them that
    # waits for a pull, whatever its frame and iteration.
    send_prefixes: frozenset[str] = frozenset()
    two_phase: bool = False  # a finished step's writes wait for commit_step or abort_step

    def fetched(self, values: list[Any]) -> list[Any]:
        """A single plan's fetch values at their positions in the step's fetch list."""
        if self.fetch_index is None:
            return values
        out: list[Any] = [None] * self.num_fetches
        for i, v in zip(self.fetch_index, values):
            out[i] = v
        return out


class LocalTask:
    """One task of this process (see the module docstring)."""

    def __init__(self, job: str = "localhost", task_index: int = 0, device_count: dict[str, int] | None = None,
                 inter_op_threads: int = 0, intra_op_threads: int = 0) -> None:
        self.name = f"/job:{job}/replica:0/task:{task_index}"
        self.threads = thread_policy.choose(intra_op_threads, inter_op_threads,
                                            blas_limit=thread_policy.current_blas_threads())
        self.devices: list[Device] = local_devices(device_count, job, task_index)
        self._device_of = {d.name: d for d in self.devices}
        # secrets, not random: a session must leave the program's seeded `random` stream alone
        self.incarnation = secrets.randbits(63)
        self._handles: dict[str, Registered] = {}
        self._handles_lock = threading.Lock()
        self.rendezvous = RendezvousManager()
        self._active: dict[int, Step] = {}
        self._active_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(inter_op_threads, "flowlab-op") if inter_op_threads > 1 else None
        self._closed = False
        self._with_peers: set[int] = set()  # running steps that other tasks run parts of
        # Per finished step: the keys other tasks have yet to pull (its table waits for them).
        self._unpulled: dict[int, set[str]] = {}
        self._unpulled_lock = threading.Lock()
        # Per finished step: dead values of loop iterations it sent that nobody had
        # pulled (see `_hold`), answered DEAD should a pull still come.  Bounded.
        self._dead_sent: collections.OrderedDict[int, set[str]] = collections.OrderedDict()
        # Two-phase steps that finished here, their undo logs kept for commit or abort.
        self._held: dict[int, Step] = {}
        peers.register(self)

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the interface ------------------------------------------------------------
    def register_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        message = as_lists(message)
        debug = message.get("debug_info") or {}
        units = [import_unit(u, self._device_of, debug) for u in message["units"]]
        num_fetches = int(message["num_fetches"])
        pulls = list(message.get("remote_recvs") or [])
        # Keys in the step's root frame are pulled at step start (overlapping compute);
        # a loop's, one per iteration, when their Recv runs.
        remote_recvs = [p for p in pulls if not p.get("in_loop")]
        loop_pulls = {key_prefix(str(p["key"])): p for p in pulls if p.get("in_loop")}
        remote_sends = [str(k) for k in message.get("remote_sends") or []]
        plan = compile_units(units, int(message["graph_version"]), num_fetches,
                             list(message.get("pairs") or []), message.get("sequence"),
                             with_peers=bool(pulls or remote_sends or message.get("two_phase")))
        if isinstance(plan, Plan):
            u = units[0]
            n_feeds = int(message.get("num_feeds", len(u.feed_index)))
            feed_index = None if u.feed_index == list(range(n_feeds)) else u.feed_index
            fetch_index = None if u.fetch_index == list(range(num_fetches)) else u.fetch_index
            reg = Registered(plan, num_fetches, feed_index, fetch_index,
                             self.straight(plan, None, False) and not plan.has_async)
        else:
            reg = Registered(plan, num_fetches, None, None,
                             plan.fused is not None and self.straight(plan.fused, None, False),
                             remote_recvs, remote_sends, loop_pulls=loop_pulls,
                             send_prefixes=frozenset(key_prefix(k) for k in remote_sends),
                             two_phase=bool(message.get("two_phase")))
        with self._handles_lock:
            self._handles[message["handle"]] = reg
        return {"handle": message["handle"], "task": self.name, "incarnation": self.incarnation}

    def run_step(self, message: dict[str, Any]) -> dict[str, Any]:
        values = self.run(message["handle"], int(message["step_id"]), list(message.get("feeds") or []),
                          int(message.get("timeout_ms") or 0), traced=bool(message.get("trace")),
                          push=message.get("push"), pushed=message.get("pushed"))
        return {"values": values}

    def push_tensor(self, message: dict[str, Any]) -> dict[str, Any]:
        """A value another task sent into step `step_id` here without being asked (its
        run_step's `push`), for a key this task's `handle` receives in its root frame
        and was told (`pushed`) not to pull.  {"accepted": False} when the step has
        ended here already (a late push of a failed step); a push from another
        incarnation of the sender than the registered one fails the step here with
        UnavailableError."""
        step_id, key = int(message["step_id"]), str(message["key"])
        reg = self._handles.get(str(message["handle"]))
        pull = None if reg is None else next((p for p in reg.remote_recvs if p["key"] == key), None)
        if pull is None or pull["task"] != message.get("task"):
            raise errors.InvalidArgumentError(
                None, None, f"push_tensor on {self.name}: '{key}' is not a key that partitions "
                f"'{message['handle']}' receive from {message.get('task')}.")
        table = self.rendezvous.for_peer(step_id)
        if table is None:
            return {"accepted": False}
        if message.get("incarnation") != pull["incarnation"]:
            table.abort(errors.UnavailableError(
                None, None, f"Task {pull['task']} restarted (a new incarnation): its state is gone; the step "
                f"cannot take its tensor '{key}'."))
            return {"accepted": False}
        try:
            table.send(key, DEAD if message["is_dead"] else message["value"])
        except errors.OpError:  # the step was aborted here meanwhile
            return {"accepted": False}
        return {"accepted": True}

    def recv_tensor(self, message: dict[str, Any]) -> dict[str, Any]:
        """The value a Send of this task gave `key` in step `step_id`, waiting for it
        up to `timeout_ms` (0: until the step ends)."""
        step_id = int(message["step_id"])
        if self.dead_after_step(step_id, str(message["key"])):
            return {"value": None, "is_dead": True}
        table = self.table_for_peer(step_id, str(message["key"]))
        got: dict[str, Any] = {}
        done = threading.Event()

        def callback(value: Any, error: BaseException | None) -> None:
            got["value"], got["error"] = value, error
            done.set()

        table.recv(str(message["key"]), callback)
        timeout = int(message.get("timeout_ms") or 0)
        if not done.wait(timeout / 1000.0 if timeout > 0 else None):
            self.drop_if_not_running(step_id)
            raise errors.DeadlineExceededError(
                None, None, f"RecvTensor of '{message['key']}' on {self.name} timed out after {timeout} ms.")
        if got["error"] is not None:
            raise got["error"]
        self._pulled(int(message["step_id"]), str(message["key"]))
        dead = got["value"] is DEAD
        return {"value": None if dead else got["value"], "is_dead": dead}

    def abort_step(self, message: dict[str, Any]) -> dict[str, Any]:
        step_id = int(message["step_id"])
        reason = errors.AbortedError(None, None, str(message.get("reason") or "Step aborted."))
        with self._active_lock:
            step = self._active.get(step_id)
            finished = self._held.pop(step_id, None)
        with self._unpulled_lock:
            held = self._unpulled.pop(step_id, None) is not None
            self._dead_sent.pop(step_id, None)
        if held:  # finished, its values waiting for pulls that will not come
            self.rendezvous.cleanup(step_id, reason)
        if finished is not None:  # a two-phase step that succeeded here: undo its writes
            finished.rollback()
            return {"aborted": True}
        if step is None:
            return {"aborted": False}
        step.get_cancellation().cancel(reason)
        return {"aborted": True}

    def commit_step(self, message: dict[str, Any]) -> dict[str, Any]:
        """The master saw every task of a two-phase step succeed: its writes stay."""
        step_id = int(message["step_id"])
        if self._dead_sent:  # every task finished the step: no pull of it will come
            with self._unpulled_lock:
                self._dead_sent.pop(step_id, None)
        with self._active_lock:
            return {"committed": self._held.pop(step_id, None) is not None}

    def awaits_commit(self, step_id: int) -> bool:
        """Whether a finished two-phase step left an undo log here (it wrote something)
        that waits for commit_step or abort_step."""
        with self._active_lock:
            step = self._held.get(step_id)
        if step is not None and not step.has_writes():
            with self._active_lock:
                self._held.pop(step_id, None)
            return False
        return step is not None

    def deregister_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._handles_lock:
            return {"deregistered": self._handles.pop(message["handle"], None) is not None}

    def status(self, message: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._active_lock:
            running = len(self._active)
        return {
            "task": self.name, "incarnation": self.incarnation,
            "devices": [self.device_attributes(d).to_message() for d in self.devices],
            "handles": len(self._handles), "running_steps": running,
        }

    @staticmethod
    def device_attributes(d: Device) -> DeviceAttributes:
        return DeviceAttributes(d.name, d.device_type, d.memory_limit_bytes, d.incarnation)

    # --- running (the in-process form of run_step) ----------------------------------
    def compiled(self, handle: str) -> Registered:
        return self._handles[handle]

    def runner(self, handle: str) -> Callable[[list[Any]], list[Any]] | None:
        """For a client in this process: `handle`'s unwatched step as one call,
        `runner(feeds) -> values` (None when the step cannot take the fast path).
        The same as `run(handle, step_id, feeds)` without its per-call decisions:
        what a cached step costs is mostly those (docs/runtime.md)."""
        reg = self._handles[handle]
        plan = reg.plan
        if not (reg.fast and type(plan) is Plan and reg.feed_index is None and reg.fetch_index is None):
            return None
        task = self
        if plan.num_expensive:
            policy, enter, leave = self.threads, thread_policy.enter, thread_policy.leave

            def run_fast_limited(feeds: list[Any]) -> list[Any]:
                if task._closed:
                    raise errors.UnavailableError(None, None, f"Task {task.name} is closed: its state is gone.")
                enter(policy)
                try:
                    return run_straight_line(plan, Step(), feeds)  # type: ignore[arg-type]
                finally:
                    leave()

            return run_fast_limited

        def run_fast(feeds: list[Any]) -> list[Any]:
            if task._closed:
                raise errors.UnavailableError(None, None, f"Task {task.name} is closed: its state is gone.")
            return run_straight_line(plan, Step(), feeds)  # type: ignore[arg-type]

        return run_fast

    def run(self, handle: str, step_id: int, feeds: list[Any], timeout_ms: int = 0,
            listener: Listener | None = None, traced: bool = False, push: list[dict[str, Any]] | None = None,
            pushed: list[str] | None = None) -> list[Any]:
        """One step of `handle`: this task's fetch values at their positions in the
        step's fetch list (None where a feed or another task answers).

        `push`: keys this task sends to other tasks ({"key", "task", "incarnation",
        "address"}: the receiver) that it hands over as soon as their Send runs
        (`push_tensor`), instead of keeping them for the receiver's pull; `pushed`:
        keys this task receives that way, so it does not pull them.  A step then
        costs one message per transfer instead of a request and its reply."""
        if self._closed:
            raise errors.UnavailableError(None, None, f"Task {self.name} is closed: its state is gone.")
        reg = self._handles.get(handle)
        if reg is None:
            raise errors.NotFoundError(
                None, None, f"Partitions '{handle}' are not registered on {self.name} (deregistered, or "
                "the task restarted): register them again.")
        if push or pushed:
            self._check_pushes(reg, push or [], pushed or [])
            push = [{**e, "handle": handle} for e in push or ()]
        if not reg.plan.num_expensive:
            return self._run(reg, step_id, feeds, timeout_ms, listener, traced, push, pushed)
        thread_policy.enter(self.threads)
        try:
            return self._run(reg, step_id, feeds, timeout_ms, listener, traced, push, pushed)
        finally:
            thread_policy.leave()

    def _check_pushes(self, reg: Registered, push: list[dict[str, Any]], pushed: list[str]) -> None:
        """InvalidArgumentError unless `push` names root-frame keys this task sends to
        other tasks and `pushed` root-frame keys it receives from them."""
        sends, recvs = set(reg.remote_sends), {p["key"] for p in reg.remote_recvs}
        for entry in push:
            if not isinstance(entry, dict) or entry.get("key") not in sends or not entry.get("task"):
                raise errors.InvalidArgumentError(
                    None, None, f"run_step on {self.name}: push entry {entry!r} is not a key this task sends to "
                    "another task in this step, with its receiver.")
        for key in pushed:
            if key not in recvs:
                raise errors.InvalidArgumentError(
                    None, None, f"run_step on {self.name}: pushed key '{key}' is not a key this task receives "
                    "from another task in this step.")

    def _run(self, reg: Registered, step_id: int, feeds: list[Any], timeout_ms: int,
             listener: Listener | None, traced: bool, push: list[dict[str, Any]] | None = None,
             pushed: list[str] | None = None) -> list[Any]:
        plan = reg.plan
        if type(plan) is PartitionedPlan:
            return self._run_partitioned(reg, plan, step_id, feeds, timeout_ms, listener, traced, push, pushed)
        assert isinstance(plan, Plan)
        if reg.feed_index is not None:
            feeds = [feeds[j] for j in reg.feed_index]
        straight = self.straight(plan, listener, traced)
        if straight and not plan.has_async:
            return reg.fetched(run_straight_line(plan, Step(None, None, step_id), feeds))
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms and timeout_ms > 0 else None
        step = Step(None, deadline, step_id)
        self._enter(step)
        try:
            if straight:  # may wait (a queue): registered so that close() can cancel it
                return reg.fetched(run_straight_line(plan, step, feeds))
            return reg.fetched(Execution(plan, step, feeds, listener, self._pool, deadline).run())
        finally:
            self._leave(step)

    def _run_partitioned(self, reg: Registered, plan: PartitionedPlan, step_id: int, feeds: list[Any],
                         timeout_ms: int, listener: Listener | None, traced: bool,
                         push: list[dict[str, Any]] | None = None, pushed: list[str] | None = None) -> list[Any]:
        """Unwatched, and when the plan has one, the fused straight-line function (its
        Recvs never wait: the step's own table is enough).  Otherwise every partition
        an Execution of one Step, whose table in the task's rendezvous manager is
        dropped at the end."""
        fused = plan.fused
        if fused is not None and self.straight(fused, listener, traced):
            step = Step(None, None, step_id)
            step.rendezvous = LocalRendezvous(step_id)
            vals = run_straight_line(fused, step, [feeds[j] for j in plan.fused_feed_index])
            out: list[Any] = [None] * plan.num_fetches
            for i, v in zip(fused.fetch_positions, vals):  # type: ignore[attr-defined]
                out[i] = v
            return out
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms and timeout_ms > 0 else None
        step = Step(None, deadline, step_id)
        rdv = step.rendezvous = self.rendezvous.find_or_create(step_id)
        step.get_cancellation().register(lambda: rdv.abort(errors.CancelledError(
            None, None, "A Recv was cancelled: the step was aborted (an op failed, the deadline "
            "passed or the session was closed)."
        )))
        if reg.loop_pulls:
            rdv.pull_on_demand(reg.loop_pulls, functools.partial(self._pull_key, step, timeout_ms))
        self._enter(step)
        peered = reg.two_phase
        if peered:
            self._with_peers.add(step_id)
        ok = False
        try:
            for entry in push or ():  # handed over when its Send runs
                rdv.recv(entry["key"], functools.partial(self._sent, entry, step))
            pulls = reg.remote_recvs
            if pushed:
                skip = set(pushed)
                pulls = [p for p in pulls if p["key"] not in skip]
            if pulls:
                self.start_pulls(pulls, step, timeout_ms, listener is not None or traced)
            out = run_partitioned(plan, step, feeds, listener, self._pool, deadline)
            ok = True
            if reg.two_phase:
                with self._active_lock:
                    self._held[step_id] = step
            return out
        finally:
            if peered:
                self._with_peers.discard(step_id)
            self._leave(step)
            if not (ok and reg.remote_sends and self._hold(step_id, reg.send_prefixes)):
                self.rendezvous.cleanup(step_id)

    def _sent(self, entry: dict[str, Any], step: Step, value: Any, error: BaseException | None) -> None:
        """The Send of a pushed key ran (`error`: the step's table was aborted first)."""
        if error is None:
            self.push(entry, step, value)

    def push(self, entry: dict[str, Any], step: Step, value: Any) -> None:
        """Hand `value` of `entry["key"]` to its receiving task (`push_tensor`); in one
        process the receiver is called at once, and a failure fails this step."""
        try:
            peer = peers.find(entry["task"], entry["incarnation"])
            peer.push_tensor({"handle": entry["handle"], "step_id": step.step_id, "key": entry["key"],
                              "value": None if value is DEAD else value, "is_dead": value is DEAD,
                              "task": self.name, "incarnation": self.incarnation})
        except errors.OpError as e:
            step.get_cancellation().cancel(e)

    def start_pulls(self, pulls: list[dict[str, Any]], step: Step, timeout_ms: int, watched: bool = False) -> None:
        """Start taking the keys other tasks send into `step` (RecvTensor), without
        waiting: in one process a thread per key calls the peer; a task server over a
        network (flowlab.distributed) pulls on its event loop instead, and may leave a
        fetch it only passes on to the client when the step is not `watched`."""
        for pull in pulls:
            self.start_pull(pull, step, timeout_ms)

    def start_pull(self, pull: dict[str, Any], step: Step, timeout_ms: int) -> None:
        """Start taking one key another task sends into `step`, without waiting."""
        threading.Thread(target=self._pull, args=(pull, step, timeout_ms), daemon=True,
                         name=f"flowlab-pull-{step.step_id}").start()

    def _pull_key(self, step: Step, timeout_ms: int, pull: dict[str, Any], key: str) -> None:
        """A Recv inside a loop asked for `key` (one frame and iteration of `pull`'s
        transfer).  In one process the peer's table calls back with the value: a thread
        per key would cost more than the iteration (starting one waits for the GIL
        hand-off; a 100-iteration loop took 4-5 ms an iteration that way).  The step's
        deadline and cancellation still end the wait: they abort this step's table."""
        table = self.rendezvous.find_or_create(step.step_id)
        try:
            peer = peers.find(pull["task"], pull["incarnation"])
            if peer.dead_after_step(step.step_id, key):  # see `_hold`
                table.send(key, DEAD)
                return
            theirs = peer.table_for_peer(step.step_id, key)
        except errors.OpError as e:
            step.get_cancellation().cancel(e)
            return

        def arrived(value: Any, error: BaseException | None) -> None:
            if error is not None:
                if peer.closed:  # it went away during the step
                    error = errors.UnavailableError(
                        None, None, f"Task {pull['task']} (incarnation {pull['incarnation']}) was closed during "
                        f"the step: RecvTensor of '{key}' failed: {getattr(error, 'message', error)}")
                step.get_cancellation().cancel(error)
                return
            peer._pulled(step.step_id, key)
            try:
                table.send(key, value)
            except errors.OpError as e:  # this step was aborted meanwhile
                step.get_cancellation().cancel(e)

        theirs.recv(key, arrived)

    def _pull(self, pull: dict[str, Any], step: Step, timeout_ms: int) -> None:
        """Take a key another task sends into this step's table (RecvTensor); a failure
        fails the step here, naming the peer."""
        table = self.rendezvous.find_or_create(step.step_id)
        peer = None
        try:
            peer = peers.find(pull["task"], pull["incarnation"])
            r = peer.recv_tensor({"step_id": step.step_id, "key": pull["key"], "timeout_ms": timeout_ms})
            table.send(pull["key"], DEAD if r["is_dead"] else r["value"])
        except Exception as e:  # noqa: BLE001 - the step fails with it
            if peer is not None and peer.closed:  # it went away during the step (mid-loop)
                e = errors.UnavailableError(
                    None, None, f"Task {pull['task']} (incarnation {pull['incarnation']}) was closed during the "
                    f"step: RecvTensor of '{pull['key']}' failed: {getattr(e, 'message', e)}")
            elif not isinstance(e, errors.OpError):
                e = errors.UnavailableError(None, None, f"RecvTensor from {pull['task']} failed: {e}")
            step.get_cancellation().cancel(e)

    def table_for_peer(self, step_id: int, key: str) -> LocalRendezvous:
        """The table a peer's pull of `key` waits on; CancelledError when the step has
        already ended here (its receiver's step is failing, or it would not ask)."""
        table = self.rendezvous.for_peer(step_id)
        if table is None:
            raise errors.CancelledError(
                None, None, f"RecvTensor of '{key}': step {step_id} has already ended on {self.name}.")
        return table

    def drop_if_not_running(self, step_id: int) -> None:
        """After a peer's pull timed out: the table it made, if no step of it runs or
        waits for pulls here, goes (its waiter with it)."""
        with self._active_lock:
            running = step_id in self._active
        with self._unpulled_lock:
            held = step_id in self._unpulled
        if not running and not held:
            self.rendezvous.cleanup(step_id, errors.DeadlineExceededError(
                None, None, f"A RecvTensor on {self.name} timed out."))

    def _hold(self, step_id: int, prefixes: frozenset[str]) -> bool:
        """Keep a finished step's table until other tasks have pulled its keys of
        `prefixes` (True: root-frame keys and every iteration's inside loops), or not at
        all when they already have (False).

        A dead value sent inside a loop may never be pulled: a loop in the last (dead)
        iteration of an outer loop, or in an untaken branch, is dead on every task, and
        a task whose Recvs of it are dead skips them.  Such values are not waited for;
        a pull that still comes for one is answered DEAD (`dead_after_step`)."""
        table = self.rendezvous.find_or_create(step_id)
        with self._unpulled_lock:
            left = table.held(prefixes)
            dead = {k for k, v in left.items() if v is DEAD and not k.endswith(";0:0")}
            if dead:
                self._dead_sent[step_id] = dead
                while len(self._dead_sent) > _MAX_DEAD_STEPS:
                    self._dead_sent.popitem(last=False)
            live = left.keys() - dead
            if not live:
                return False
            self._unpulled[step_id] = set(live)
            return True

    def dead_after_step(self, step_id: int, key: str) -> bool:
        """Whether `key` is a dead loop value of a finished step that was not waited for."""
        if not self._dead_sent:
            return False
        with self._unpulled_lock:
            keys = self._dead_sent.get(step_id)
            if keys is None or key not in keys:
                return False
            keys.discard(key)
            if not keys:
                del self._dead_sent[step_id]
            return True

    def _pulled(self, step_id: int, key: str) -> None:
        with self._unpulled_lock:
            left = self._unpulled.get(step_id)
            if left is None:
                return
            left.discard(key)
            if left:
                return
            del self._unpulled[step_id]
        self.rendezvous.cleanup(step_id)

    def straight(self, plan: Plan, listener: Listener | None, traced: bool) -> bool:
        """Whether a step of `plan` may take the generated straight-line path: nobody
        watches its ops, and no op pool should overlap its expensive kernels."""
        return (
            plan.straight_line is not None and listener is None and not traced
            and not (self._pool is not None and plan.num_expensive >= 2)
        )

    def _enter(self, step: Step) -> None:
        with self._active_lock:
            self._active[step.step_id] = step
        if self._closed:  # closed while this step was starting
            self._leave(step)
            raise errors.CancelledError(None, None, "Session has been closed.")

    def _leave(self, step: Step) -> None:
        with self._active_lock:
            self._active.pop(step.step_id, None)

    # --- lifetime (in-process: the task lives as long as its session) --------------
    def close(self) -> None:
        """Cancel running steps and release all state (variables, queues)."""
        if self._closed:
            return
        self._closed = True
        with self._active_lock:
            steps = list(self._active.values())
        for s in steps:
            if s.step_id in self._with_peers:
                # Other tasks run the rest of this step: for them this task is gone, as a
                # killed server is (the session raises the first error that is not a
                # cancellation, so this is what the client sees, naming the task).
                reason: errors.OpError = errors.UnavailableError(
                    None, None, f"Task {self.name} (incarnation {self.incarnation}) was closed during the step.")
            else:
                reason = errors.CancelledError(None, None, "Session has been closed.")
            s.get_cancellation().cancel(reason)
        for d in self.devices:
            d.resources.clear()
        with self._handles_lock:
            self._handles.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def __del__(self) -> None:
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
        except Exception:
            pass
