"""Clusters: TensorFlow's jobs and tasks on the workers of a Dask cluster.

A task is a Dask worker named `job/index` (`ps/0`, `worker/1`): `dask worker
tcp://scheduler:8786 --name ps/0`, a `SpecCluster` keyed by those names, a
dask-jobqueue or dask-kubernetes worker group named so, or `LocalCluster` here.
`Cluster(client_or_address)` attaches to such a deployment: it installs the task
server (a WorkerPlugin, flowlab.distributed.task_server) unless the workers already
run one -- a second client attaching must not wipe the first one's state -- and asks
each named worker for its task's status (name, incarnation, devices).

flowlab adds no scheduler, transport or cluster manager: the client's connection
pool reaches the workers, the scheduler only tells where they are.
"""

from __future__ import annotations

import logging
from typing import Any

from flowlab import errors
from flowlab.distributed.cluster_spec import ClusterSpec
from flowlab.distributed.events import clock_offset_us, now_us
from flowlab.distributed.remote_task import CONTROL_TIMEOUT_S, Connection, RemoteTask
from flowlab.distributed.task_server import (
    PLUGIN_NAME,
    TaskServer,
    has_task_server,
    parse_worker_name,
)

__all__ = ["Cluster", "LocalCluster", "cluster_for_target"]


class Cluster:
    """The tasks of an existing Dask deployment (see the module docstring).

    `client_or_address`: a `distributed.Client` (synchronous), a Dask cluster object
    (anything with `scheduler_address`), or a scheduler address ("tcp://host:8786").
    `device_count` and `threads_per_task` configure task servers this cluster
    installs (not ones already running).  `security`: a `distributed.Security` for
    the client this cluster opens (a "tls://" address); without it the client takes
    Dask's `distributed.comm.tls` config, as every Dask client does."""

    def __init__(self, client_or_address: Any, *, device_count: dict[str, int] | None = None,
                 threads_per_task: int = 1, timeout: float = 30.0, security: Any = None) -> None:
        from distributed import Client

        self._owns_client = not hasattr(client_or_address, "rpc") or not hasattr(client_or_address, "scheduler")
        if self._owns_client:
            self.client = Client(client_or_address, set_as_default=False, timeout=timeout, security=security)
        else:
            self.client = client_or_address
        self._connection = Connection(self.client)
        self._server = TaskServer(device_count, threads_per_task)
        self._tasks: dict[tuple[str, int], RemoteTask] = {}
        self._seen: dict[tuple[str, int], RemoteTask] = {}  # every task found so far, the latest
        self._workers: dict[str, Any] = {}
        self._closed = False
        self.refresh(install=True)
        _clusters[self.scheduler_address] = self

    # --- what the cluster has --------------------------------------------------------
    @property
    def scheduler_address(self) -> str:
        return str(self.client.scheduler.address)

    @property
    def target(self) -> str:
        """What `tf.Session(target)` takes to run on this cluster."""
        return self.scheduler_address

    @property
    def dashboard_link(self) -> str:
        return str(self.client.dashboard_link)

    @property
    def cluster_spec(self) -> ClusterSpec:
        jobs: dict[str, dict[int, str]] = {}
        for (job, index), t in sorted(self._tasks.items()):
            jobs.setdefault(job, {})[index] = t.address
        return ClusterSpec(jobs)

    def task(self, job: str, index: int = 0) -> RemoteTask:
        """The task `/job:<job>/task:<index>`; ValueError listing the workers found
        when no worker has that name."""
        t = self._tasks.get((job, index))
        if t is None:
            found = ", ".join(f"{name!r} at {addr}" for addr, name in sorted(self._workers.items())) or "none"
            raise ValueError(
                f"The cluster at {self.scheduler_address} has no task {job}/{index}: no Dask worker is named "
                f"'{job}/{index}'. Workers found: {found}. Start one with `dask worker {self.scheduler_address} "
                f"--name {job}/{index}`.")
        return t

    def session_tasks(self, default: tuple[str, int] | None = None) -> list[RemoteTask]:
        """Every task, the session's own first: where ops nobody placed run (TensorFlow
        places them on the task of the session's target).  `default`: that task;
        otherwise chief/0, else worker/0, else the first."""
        self.refresh()
        # A task seen before and gone now (its worker died and has not come back) stays
        # in the list, lost: a step that needs it fails with UnavailableError (and a
        # MonitoredSession waits for it), a step that does not runs without it.
        tasks = {**self._seen, **self._tasks}
        keys = sorted(tasks)
        if not keys:
            raise errors.UnavailableError(
                None, None, f"The cluster at {self.scheduler_address} has no flowlab tasks: no worker named "
                "'job/index' runs the task server.")
        key: tuple[str, int] = default or next((k for k in (("chief", 0), ("worker", 0)) if k in tasks), keys[0])
        if key not in tasks:
            self.task(*key)  # the error that lists the workers found
        return [tasks[key]] + [tasks[k] for k in keys if k != key]

    def refresh(self, install: bool = False) -> None:
        """Look up the workers again (a restarted worker has a new address and a new
        task incarnation) and, with `install`, start the task servers unless some
        worker runs one (installing replaces them all: their state would be lost)."""
        # A worker whose comm resets mid-broadcast (one still starting or leaving)
        # answers with its exception instead of failing the lookup; it gets the
        # plugin when it (re)joins.
        if install and not any(v is True for v in self.client.run(has_task_server, on_error="return").values()):
            # Installed on every worker now and on every worker that joins or restarts.
            self.client.register_plugin(self._server, name=PLUGIN_NAME)
        self._connection.sync(self._refresh())

    async def _refresh(self) -> None:
        import asyncio

        info = await self.client.scheduler.identity()
        workers = {addr: w.get("name") for addr, w in info.get("workers", {}).items()}
        self._workers = workers
        named: dict[str, tuple[str, int]] = {}
        for addr, name in workers.items():
            parsed = parse_worker_name(name)
            if parsed is not None:
                named[addr] = parsed

        async def status(addr: str) -> Any:
            sent = now_us()
            try:
                reply = await asyncio.wait_for(
                    self.client.rpc(addr).flowlab_status(message={}), CONTROL_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - a worker that does not answer is left out
                return None
            r = reply.get("reply") if isinstance(reply, dict) else None
            if r is not None:
                r["clock_offset_us"] = clock_offset_us(sent, float(r.get("clock_us", sent)), now_us(),
                                                       r.get("boot_id"))
            return r

        replies = dict(zip(named, await asyncio.gather(*(status(a) for a in named))))
        tasks: dict[tuple[str, int], RemoteTask] = {}
        for addr, key in named.items():
            r = replies.get(addr)
            if r is None:
                continue
            old = self._tasks.get(key)
            if old is not None and old.address == addr and old.incarnation == r["incarnation"] and not old.lost:
                tasks[key] = old
            else:
                tasks[key] = RemoteTask(self._connection, addr, r, r["clock_offset_us"])
        for key, old in self._seen.items():
            if key not in tasks:
                old.lost = True
        self._tasks = tasks
        self._seen.update(tasks)

    def reset(self, containers: list[str] | None = None) -> None:
        """`tf.Session.reset` on this cluster: drop the state of every task."""
        for t in self._tasks.values():
            t.reset(containers)

    # --- lifetime --------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if _clusters.get(self.scheduler_address) is self:
            del _clusters[self.scheduler_address]
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        jobs = ", ".join(f"{j}: {len(v)}" for j, v in self.cluster_spec.as_dict().items())
        return f"<{type(self).__name__} {self.scheduler_address} ({jobs})>"


class LocalCluster(Cluster):
    """A Dask cluster on this machine whose workers are the tasks: `ps` parameter
    servers `ps/0`...,  `worker` workers `worker/0`..., (and `chief` chiefs), each a
    separate process (a Dask Nanny restarts it if it dies) with `threads_per_task`
    threads, all on 127.0.0.1.  Use as a context manager, or `close()` it.
    `security`: a `distributed.Security` with certificates for the scheduler, worker
    and client roles; the scheduler and the workers then listen on tls:// addresses.

    It is a Dask `SpecCluster` -- the class Dask's own LocalCluster is built on -- so
    that the workers carry TensorFlow's task names."""

    def __init__(self, ps: int = 1, worker: int = 2, threads_per_task: int = 1, *, chief: int = 0,
                 device_count: dict[str, int] | None = None, memory_limit: str | int = "auto",
                 silence_logs: int = logging.WARNING, dashboard: bool = True, security: Any = None) -> None:
        from distributed import Client, Nanny, Scheduler, SpecCluster

        names = ([f"chief/{i}" for i in range(chief)] + [f"ps/{i}" for i in range(ps)]
                 + [f"worker/{i}" for i in range(worker)])
        if not names:
            raise ValueError("A LocalCluster needs at least one task (ps, worker or chief).")
        # Certificates mean TLS: a Security alone does not change the protocol in Dask.
        protocol = {} if security is None else {"protocol": "tls://", "security": security}
        options = {"nthreads": threads_per_task, "host": "127.0.0.1", "memory_limit": memory_limit,
                   "dashboard": False, "silence_logs": silence_logs, **protocol}
        self.dask_cluster = SpecCluster(
            workers={n: {"cls": Nanny, "options": dict(options)} for n in names},
            scheduler={"cls": Scheduler, "options": {
                "host": "127.0.0.1", "dashboard_address": "127.0.0.1:0" if dashboard else None, **protocol}},
            silence_logs=silence_logs, name="flowlab", security=security)
        try:
            client = Client(self.dask_cluster, set_as_default=False, security=security)
            super().__init__(client, device_count=device_count, threads_per_task=threads_per_task)
            self._owns_client = True
        except BaseException:
            self.dask_cluster.close()
            raise

    def close(self) -> None:
        if self._closed:
            return
        super().close()
        self.dask_cluster.close()


# Clusters this process attached to, by scheduler address: `tf.Session("tcp://...")`
# and a Server's target reuse them rather than opening a client per session.
_clusters: dict[str, Cluster] = {}


def cluster_for_target(target: Any) -> list[RemoteTask] | None:
    """The Session target resolver: a Cluster, a scheduler address, or an address with
    the session's task ("tcp://host:8786/job:worker/task:1")."""
    if isinstance(target, Cluster):
        return target.session_tasks()
    if not isinstance(target, str) or "://" not in target:
        return None
    address, default = target, None
    if "/job:" in target:
        address, _, rest = target.partition("/job:")
        job, _, index = rest.partition("/task:")
        default = (job, int(index or 0))
    cluster = _clusters.get(address)
    if cluster is None or cluster._closed:
        cluster = Cluster(address)
    return cluster.session_tasks(default)
