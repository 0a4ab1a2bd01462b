"""The task server: one flowlab task per Dask worker, serving the task interface.

`TaskServer` is a Dask `WorkerPlugin` (installed on every worker of a cluster by
`Client.register_plugin`, and again on a worker that restarts).  On a worker named
`job/index` (`ps/0`, `worker/1`) it starts a task named `/job:ps/replica:0/task:0`
that owns that worker's flowlab devices, and adds the task interface's calls to
the worker's comm handlers as `flowlab_<call>` (`flowlab_run_step`, ...), plus
`flowlab_reset` (TensorFlow's `Session.reset`: drop the state of containers).  The
master in the client calls them directly over Dask's connection pools, never
through the scheduler or Dask tasks.

Threads: the handlers run on the worker's event loop and only wait there.  Steps
and registrations run on the task's own thread pool (never the loop, never Dask's
executor, never its offload thread), so a long kernel never delays a heartbeat.
RecvTensor is asynchronous on the loop: a peer's pull waits on an asyncio future
that the producing Send resolves; this task's own pulls from peers are coroutines
on the loop too, not threads.  The task's thread policy
(flowlab.runtime.thread_policy) gives it `threads_per_task` executor threads, one
thread per kernel and one BLAS thread per call, so its threads never exceed what the
worker was given and OpenBLAS never spin-waits against a busy neighbour.

State lives on the task, not on a session: variables and queues stay between steps
and between sessions (and clients) until `flowlab_reset` or the worker ends, as on a
TensorFlow server.  A restarted worker is a new task with a new incarnation and no
state; every reply carries the incarnation so a master notices.

Every message is checked (flowlab.distributed.wire) before it is acted on; a bad
one gets an InvalidArgumentError reply and changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from flowlab import errors
from flowlab.distributed.events import EventRecorder, boot_id, now_us
from flowlab.distributed.forwarding import (
    Forwarded,
    forwardable_keys,
    passive_values,
    to_wire_values,
)
from flowlab.distributed.functions import install
from flowlab.distributed.wire import check_message, from_wire, owned, to_wire
from flowlab.kernels.sendrecv_kernels import DEAD
from flowlab.runtime.interface import (
    error_from_message,
    error_to_message,
    values_from_wire,
    values_to_wire,
)
from flowlab.runtime.task.step import Step
from flowlab.runtime.task.task import LocalTask

__all__ = ["TaskServer", "ServedTask", "parse_worker_name"]

logger = logging.getLogger("flowlab.distributed")

PLUGIN_NAME = "flowlab-task-server"
CALLS = ("register_partitions", "run_step", "recv_tensor", "push_tensor", "abort_step", "commit_step",
         "deregister_partitions", "status", "reset", "step_events")
PUSH_TIMEOUT_S = 30.0  # a push is one write; a receiver that takes longer is gone


def has_task_server(dask_worker: Any) -> bool:
    """Whether this worker runs the task server (`Client.run` calls it on workers)."""
    return PLUGIN_NAME in getattr(dask_worker, "plugins", {})


def parse_worker_name(name: Any) -> tuple[str, int] | None:
    """("ps", 0) for a Dask worker named "ps/0"; None for a name of another form."""
    if not isinstance(name, str) or name.count("/") != 1:
        return None
    job, _, index = name.partition("/")
    if not job or not index.isdigit():
        return None
    return job, int(index)


def _cancel(fut: Any) -> None:
    fut.cancel()


class ServedTask(LocalTask):
    """A LocalTask whose peers are other workers: pulls go over Dask's comm."""

    def __init__(self, job: str, task_index: int, device_count: dict[str, int] | None, inter_op_threads: int,
                 loop: asyncio.AbstractEventLoop, rpc: Any, intra_op_threads: int = 1) -> None:
        super().__init__(job, task_index, device_count, inter_op_threads, intra_op_threads)
        self._loop = loop
        self._rpc = rpc
        self._functions_lock = threading.Lock()
        # Per running step, its pushes to other tasks (futures on the loop, touched
        # only there): run_step replies once they are written.
        self._pushes: dict[int, list[asyncio.Future[None]]] = {}

    def push(self, entry: dict[str, Any], step: Step, value: Any) -> None:
        """Hand a pushed key's value to its receiver over Dask's comm: one message that
        asks for no reply, written from the loop."""
        message = {"handle": entry["handle"], "step_id": step.step_id, "key": entry["key"],
                   "value": None if value is DEAD else values_to_wire([value])[0], "is_dead": value is DEAD,
                   "task": self.name, "incarnation": self.incarnation}

        def start() -> None:
            fut = asyncio.ensure_future(self._push_remote(entry, message))
            self._pushes.setdefault(step.step_id, []).append(fut)

        self._loop.call_soon_threadsafe(start)

    async def _push_remote(self, entry: dict[str, Any], message: dict[str, Any]) -> None:
        address = entry.get("address")
        try:
            await asyncio.wait_for(self._rpc(address).flowlab_push_tensor(message=to_wire(message), reply=False),
                                   PUSH_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - this task's run_step fails with it, naming the receiver
            raise errors.UnavailableError(
                None, None, f"Pushing '{entry['key']}' to {entry['task']} at {address} failed: "
                f"{type(e).__name__}: {e}") from None

    def take_pushes(self, step_id: int) -> list[asyncio.Future[None]]:
        """The pushes step `step_id` started here (on the loop, after the step ran)."""
        return self._pushes.pop(step_id, [])

    def start_pulls(self, pulls: list[dict[str, Any]], step: Step, timeout_ms: int, watched: bool = False) -> None:
        table = None
        for pull in pulls:
            if pull.get("forward") and not watched:  # the client pulls it (flowlab.distributed.forwarding)
                table = table or self.rendezvous.find_or_create(step.step_id)
                table.send(pull["key"], Forwarded(pull))
                continue
            self.start_pull(pull, step, timeout_ms)

    def start_pull(self, pull: dict[str, Any], step: Step, timeout_ms: int) -> None:
        """One key's pull, a coroutine on the worker's loop (a Recv inside a loop asks
        for each iteration's key this way when it runs)."""
        fut = asyncio.run_coroutine_threadsafe(self._pull_remote(pull, step, timeout_ms), self._loop)
        cm = step.get_cancellation()
        token = cm.register(functools.partial(_cancel, fut))
        if token is None:  # the step is cancelled already
            fut.cancel()
        else:  # a loop pulls once per iteration: done pulls leave nothing registered
            fut.add_done_callback(lambda _: cm.deregister(token))

    def _pull_key(self, step: Step, timeout_ms: int, pull: dict[str, Any], key: str) -> None:
        # A Recv inside a loop asked for `key`: over Dask comm, as any other pull.
        self.start_pull({**pull, "key": key}, step, timeout_ms)

    async def _pull_remote(self, pull: dict[str, Any], step: Step, timeout_ms: int) -> None:
        table = self.rendezvous.find_or_create(step.step_id)
        address = pull.get("address")
        try:
            call = self._rpc(address).flowlab_recv_tensor(
                message=to_wire({"step_id": step.step_id, "key": pull["key"], "timeout_ms": timeout_ms}))
            reply = await (asyncio.wait_for(call, timeout_ms / 1000.0) if timeout_ms > 0 else call)
            if "error" in reply:
                raise error_from_message(reply["error"])
            if reply.get("incarnation") != pull.get("incarnation"):
                raise errors.UnavailableError(
                    None, None, f"Task {pull['task']} at {address} restarted (a new incarnation): its "
                    "state is gone; the step cannot take its tensors.")
            r = reply["reply"]
            table.send(pull["key"], DEAD if r["is_dead"] else owned(values_from_wire([r["value"]]), str(address))[0])
        except asyncio.CancelledError:
            return
        except Exception as e:  # noqa: BLE001 - the step fails with it, naming the peer
            if isinstance(e, asyncio.TimeoutError):
                e = errors.DeadlineExceededError(
                    None, None, f"RecvTensor of '{pull['key']}' from {pull['task']} at {address} timed out "
                    f"after {timeout_ms} ms.")
            elif not isinstance(e, errors.OpError):
                e = errors.UnavailableError(
                    None, None, f"RecvTensor from {pull['task']} at {address} failed: {type(e).__name__}: {e}")
            step.get_cancellation().cancel(e)

    def register_partitions(self, message: dict[str, Any]) -> dict[str, Any]:
        """With the bodies of the functions the units call (flowlab.distributed.functions)."""
        with self._functions_lock:
            kept = install(message.get("library") or [])
            reply = super().register_partitions(message)
        reg = self.compiled(message["handle"])
        forwarded = forwardable_keys(message["units"], reg.remote_recvs)
        for pull in reg.remote_recvs:
            if pull["key"] in forwarded:
                pull.update(forward=True, fetch=forwarded[pull["key"]])
        del kept  # the imported ops hold the functions they call now
        passive = None
        if forwarded and not reg.remote_sends and not reg.loop_pulls:
            pulls = {p["key"]: p for p in reg.remote_recvs}
            passive = passive_values(message["units"], forwarded, pulls, int(message["num_fetches"]))
        # The client asks each producer for these with its run_step (`deliver`), and
        # need not call this task at all for an unwatched step when it is `passive`.
        # `pulls`: the root-frame keys this task takes itself, which the client has
        # their producers push instead (run_step's `push` and `pushed`).
        own = [{"key": p["key"], "task": p["task"], "incarnation": p["incarnation"]}
               for p in reg.remote_recvs if not p.get("forward")]
        return {**reply, "forwarded": [p for p in reg.remote_recvs if p.get("forward")], "passive": passive,
                "pulls": own}

    def abort_step(self, message: dict[str, Any]) -> dict[str, Any]:
        out = super().abort_step(message)
        # A step that never ran here may still have peers' pulls waiting on its table.
        self.rendezvous.cleanup(int(message["step_id"]), errors.AbortedError(
            None, None, str(message.get("reason") or "Step aborted.")))
        return out

    def reset(self, containers: list[str] | None) -> dict[str, Any]:
        """Drop the state of `containers` (all of it when None) on every device."""
        for d in self.devices:
            if containers is None:
                d.resources.clear()
            else:
                for c in containers:
                    d.resources.clear(c)
        return {"reset": True}


class TaskServer(WorkerPlugin):
    """The WorkerPlugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, device_count: dict[str, int] | None = None, threads_per_task: int = 1,
                 step_threads: int = 64) -> None:
        self.device_count = dict(device_count) if device_count else None
        self.threads_per_task = max(1, int(threads_per_task))
        self.step_threads = step_threads
        self.task: ServedTask | None = None
        self._watched: dict[int, EventRecorder] = {}  # running watched steps, by step id

    async def setup(self, worker: Any) -> None:
        parsed = parse_worker_name(worker.name)
        if parsed is None:
            worker.log_event("flowlab", {"action": "skipped", "worker": str(worker.name),
                                         "why": "its name is not 'job/index'"})
            return
        from flowlab.runtime import thread_policy

        # The task's share of the cores: `threads_per_task` executor threads, each
        # kernel on one thread, one BLAS thread per call (flowlab.runtime.thread_policy),
        # for the life of the worker.
        policy = thread_policy.choose(intra_op=1, inter_op=self.threads_per_task)
        self._limits = policy.limit_process()
        loop = asyncio.get_running_loop()
        job, index = parsed
        self.task = ServedTask(job, index, self.device_count, self.threads_per_task, loop, worker.rpc,
                               intra_op_threads=policy.intra_op_threads)
        # Steps wait (queues, Recvs): a pool wider than the cores, so waiting steps
        # never starve running ones; BLAS and the op pool bound the compute.
        self._pool = ThreadPoolExecutor(self.step_threads, f"flowlab-{job}-{index}")
        self._loop = loop
        self._address = str(worker.address)
        for call in CALLS:
            worker.handlers[f"flowlab_{call}"] = self._handler(call)
        worker.log_event("flowlab", {"action": "ready", "worker": worker.name, "task": self.task.name,
                                     "incarnation": self.task.incarnation, "address": worker.address})

    async def teardown(self, worker: Any) -> None:
        for call in CALLS:
            worker.handlers.pop(f"flowlab_{call}", None)
        if self.task is not None:
            self.task.close()
            self._pool.shutdown(wait=False)
            self._limits.restore_original_limits()
            self.task = None

    # --- the handlers --------------------------------------------------------------
    def _handler(self, call: str) -> Any:
        async def handler(message: Any = None) -> dict[str, Any]:
            return await self._handle(call, message)

        handler.__name__ = handler.__qualname__ = f"flowlab_{call}"
        return handler

    async def _handle(self, call: str, message: Any = None) -> dict[str, Any]:
        task = self.task
        if task is None:
            return {"error": error_to_message(errors.UnavailableError(
                None, None, "The flowlab task server on this worker has stopped.")), "incarnation": None}
        try:
            m = check_message(call, from_wire(message if message is not None else {}))
            reply = await getattr(self, f"_{call}")(task, m)
            return {"reply": to_wire(reply), "incarnation": task.incarnation}
        except Exception as e:  # noqa: BLE001 - every failure is a reply, never a crash
            if isinstance(e, (ValueError, TypeError, KeyError)):  # a message that does not make sense
                e = errors.InvalidArgumentError(None, None, f"{call} on {task.name}: {e}")
            elif not isinstance(e, errors.OpError):
                logger.exception("flowlab task server: %s failed", call)
                e = errors.InternalError(None, None, f"{call} failed on {task.name}: {type(e).__name__}: {e}")
            return {"error": error_to_message(e), "incarnation": task.incarnation}

    def _in_pool(self, fn: Any, *args: Any) -> Any:
        return self._loop.run_in_executor(self._pool, functools.partial(fn, *args))

    async def _register_partitions(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        return await self._in_pool(task.register_partitions, m)

    async def _run_step(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        for done in m.get("commit") or []:  # earlier steps the master saw succeed everywhere
            task.commit_step({"step_id": int(done)})
        traced = bool(m.get("trace"))
        recorder = EventRecorder() if traced else None
        step_id = int(m["step_id"])
        if recorder is not None:
            self._watched[step_id] = recorder
        try:
            values = await self._in_pool(task.run, m["handle"], step_id, values_from_wire(m["feeds"]),
                                         int(m.get("timeout_ms") or 0), recorder, traced, m.get("push"),
                                         m.get("pushed"))
        finally:
            self._watched.pop(step_id, None)
            pushes = task.take_pushes(step_id)
        if pushes:  # written by now, as a rule; a receiver that is gone fails the step here
            await asyncio.gather(*pushes)
        # held: this task keeps an undo log of the step until it is committed.
        reply: dict[str, Any] = {"values": to_wire_values(values_to_wire(values)),
                                 "held": task.awaits_commit(step_id)}
        if m.get("deliver"):  # fetches another task only passes on (flowlab.distributed.forwarding)
            reply["delivered"] = {key: await self._recv_tensor(task, {"step_id": step_id, "key": key})
                                  for key in m["deliver"]}
        if recorder is not None:
            reply["events"] = recorder.take()  # those not streamed already (step_events)
        return reply

    async def _step_events(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        """The events a watched step still running here has recorded since the last
        call: the client streams them to its listeners while the step runs."""
        recorder = self._watched.get(int(m["step_id"]))
        return {"rows": [] if recorder is None else recorder.take(), "running": recorder is not None}

    async def _recv_tensor(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        step_id, key = int(m["step_id"]), str(m["key"])
        if task.dead_after_step(step_id, key):
            return {"value": None, "is_dead": True}
        loop = self._loop
        fut: asyncio.Future[Any] = loop.create_future()

        def arrived(value: Any, error: BaseException | None) -> None:
            def settle() -> None:
                if not fut.done():
                    fut.set_exception(error) if error is not None else fut.set_result(value)
            loop.call_soon_threadsafe(settle)

        task.table_for_peer(step_id, key).recv(key, arrived)
        timeout = int(m.get("timeout_ms") or 0)
        try:
            value = await (asyncio.wait_for(fut, timeout / 1000.0) if timeout > 0 else fut)
        except TimeoutError:
            task.drop_if_not_running(step_id)
            raise errors.DeadlineExceededError(
                None, None, f"RecvTensor of '{key}' on {task.name} timed out after {timeout} ms.") from None
        task._pulled(step_id, key)
        dead = value is DEAD
        # A NumPy scalar keeps its type ({"scalar": 0-d array}), as a step's values do.
        return {"value": None if dead else values_to_wire([value])[0], "is_dead": dead}

    async def _push_tensor(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        """A value a peer's step sent here (its run_step's `push`).  The push asks for
        no reply: what goes wrong is logged, and the step here fails by its deadline,
        or by the master's abort when the sender's step fails."""
        try:
            if not m["is_dead"]:
                m = {**m, "value": owned(values_from_wire([m.get("value")]), self._address)[0]}
            return task.push_tensor(m)
        except Exception as e:  # noqa: BLE001 - nobody waits for a reply: the step fails here
            if not isinstance(e, errors.OpError):
                e = errors.InvalidArgumentError(None, None, f"push_tensor on {task.name}: {type(e).__name__}: {e}")
            logger.warning("flowlab task server: a push to %s was refused: %s", task.name, e.message)
            table = task.rendezvous.for_peer(int(m["step_id"]))
            if table is not None:  # the step's Recvs fail with it (its master then aborts it)
                table.abort(e)
            raise e from None

    async def _abort_step(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        return task.abort_step(m)

    async def _commit_step(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        return task.commit_step(m)

    async def _deregister_partitions(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        return task.deregister_partitions(m)

    async def _status(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        # With the task's clock, so the client can put its events on its own clock.
        return {**task.status(m), "clock_us": now_us(), "boot_id": boot_id()}

    async def _reset(self, task: ServedTask, m: dict[str, Any]) -> dict[str, Any]:
        containers = m.get("containers")
        return task.reset(None if containers is None else [str(c) for c in containers])
