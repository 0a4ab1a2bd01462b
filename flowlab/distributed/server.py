"""`tf.train.Server`: this process becomes one task of a cluster, as a Dask worker.

A TensorFlow 1.x launcher starts one process per task, each with the same
ClusterSpec and its own job name and index:

    server = tf.train.Server(cluster, job_name="worker", task_index=1)
    if job_name == "ps":
        server.join()
    else:
        with tf.train.MonitoredTrainingSession(master=server.target, ...) as sess: ...

Here each `Server` starts a Dask worker named `job/index` inside this process (on
an event loop of its own, in a background thread) with the flowlab task server, so
the same script runs with only its import line changed.  The worker listens on the
host and port the ClusterSpec gives this task.

Where the Dask scheduler is (in this order):

1. the environment variable `FLOWLAB_SCHEDULER` (`tcp://host:8786`), for an external
   scheduler (`dask scheduler`, a deployment's);
2. otherwise the cluster's first task -- `chief/0`, else `ps/0`, else task 0 of the
   first job in sorted order -- hosts it: that task's Server starts a Dask scheduler
   at the task's address from the ClusterSpec (its own worker takes a free port),
   and every other task connects there.  Losing that process loses the scheduler; use
   (1) where that matters.

The comm scheme is Dask's: `protocol=None` or TensorFlow's `"grpc"` take Dask's
configured default (`distributed.comm.default-scheme`, `tcp` unless set), and
`protocol="tls"` (or `"tcp"`) names one.  With `tls`, the certificates come from Dask's
`distributed.comm.tls` settings, as for `dask scheduler --protocol tls` (docs/
distributed.md, "Security"); the scheduler a task hosts and every worker then speak
only TLS.

`server.target` is the scheduler address with this task (`tcp://h:2222/job:worker/
task:1`): a Session on it places ops that ask for no device on this task, as
TensorFlow's servers do.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from flowlab.distributed.cluster_spec import ClusterSpec

__all__ = ["Server"]


def _host_port(address: str) -> tuple[str, int]:
    address = address.split("://", 1)[-1]
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"A task address must be 'host:port', got {address!r}.")
    return host, int(port)


def comm_scheme(protocol: str | None) -> str:
    """The Dask comm scheme of a Server's `protocol` (see the module docstring)."""
    if protocol in (None, "grpc"):
        import dask.config

        return str(dask.config.get("distributed.comm.default-scheme", "tcp"))
    if protocol in ("tcp", "tls"):
        return protocol
    raise ValueError(
        f"protocol {protocol!r} is not one a flowlab Server speaks: use 'grpc' (Dask's configured "
        "default scheme), 'tcp' or 'tls' (Dask's TLS, with certificates from its distributed.comm.tls "
        "settings).")


def scheduler_task(spec: ClusterSpec) -> tuple[str, int]:
    """The task whose address hosts the scheduler when none is given (see above)."""
    for job in ("chief", "ps"):
        if job in spec.jobs and spec.task_indices(job):
            return job, spec.task_indices(job)[0]
    job = spec.jobs[0]
    return job, spec.task_indices(job)[0]


class Server:
    """One task of `server_or_cluster_def`, started as a Dask worker in this process."""

    def __init__(self, server_or_cluster_def: Any, job_name: str | None = None, task_index: int | None = None,
                 protocol: str | None = None, config: Any = None, start: bool = True) -> None:
        spec = ClusterSpec(server_or_cluster_def)
        if not spec:
            raise ValueError("A Server needs a cluster with at least one job.")
        if job_name is None:
            if len(spec.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`: the cluster has several jobs.")
            job_name = spec.jobs[0]
        if task_index is None:
            indices = spec.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError("Must specify an explicit `task_index`: the job has several tasks.")
            task_index = indices[0]
        self._address = spec.task_address(job_name, task_index)  # ValueError when absent, as TensorFlow's
        self.cluster_spec = spec
        self.job_name, self.task_index = job_name, int(task_index)
        self._config = config
        device_count = getattr(config, "device_count", None) or None
        self._device_count = dict(device_count) if device_count else None
        self._scheme = scheme = comm_scheme(protocol)
        external = os.environ.get("FLOWLAB_SCHEDULER")
        self._hosts_scheduler = external is None and scheduler_task(spec) == (job_name, self.task_index)
        if external:
            self._scheduler_address = external if "://" in external else f"{scheme}://{external}"
        else:
            host, port = _host_port(spec.task_address(*scheduler_task(spec)))
            self._scheduler_address = f"{scheme}://{host}:{port}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduler: Any = None
        self._worker: Any = None
        if start:
            self.start()

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True, protocol: str | None = None) -> Server:
        """A one-task cluster on a free port of 127.0.0.1 (`tf.train.Server.create_local_server`)."""
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return Server({"localhost": [f"127.0.0.1:{port}"]}, job_name="localhost", task_index=0, config=config,
                      start=start, protocol=protocol)

    @property
    def target(self) -> str:
        """What `tf.Session(server.target)` takes: the scheduler and this task."""
        return f"{self._scheduler_address}/job:{self.job_name}/task:{self.task_index}"

    @property
    def server_def(self) -> dict[str, Any]:
        return {"cluster": self.cluster_spec.as_dict(), "job_name": self.job_name, "task_index": self.task_index,
                "protocol": self._scheme}

    def start(self) -> None:
        """Start the worker (and the scheduler, on the task that hosts it)."""
        if self._worker is not None:
            return
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True,
                         name=f"flowlab-server-{self.job_name}-{self.task_index}").start()
        self._loop = loop
        asyncio.run_coroutine_threadsafe(self._start(), loop).result()

    async def _start(self) -> None:
        from distributed import Scheduler, Worker

        from flowlab.distributed.task_server import TaskServer

        host, port = _host_port(self._address)
        if self._hosts_scheduler:
            self._scheduler = await Scheduler(host=host, port=port, protocol=self._scheme, dashboard_address=None)
            port = 0  # the scheduler has the task's port; the worker takes another
        threads = int(getattr(self._config, "intra_op_parallelism_threads", 0) or 1)
        self._worker = await Worker(
            self._scheduler_address, name=f"{self.job_name}/{self.task_index}", nthreads=1, host=host, port=port,
            protocol=self._scheme,
            dashboard=False, plugins=(TaskServer(self._device_count, threads),))

    def join(self) -> None:
        """Block until this task's worker ends (a ps task's main loop)."""
        if self._worker is None or self._loop is None:
            raise RuntimeError("The server was not started.")
        asyncio.run_coroutine_threadsafe(self._worker.finished(), self._loop).result()

    def stop(self) -> None:
        """Stop the worker (and the scheduler it hosts)."""
        if self._loop is None:
            return

        async def stop() -> None:
            if self._worker is not None:
                await self._worker.close()
            if self._scheduler is not None:
                await self._scheduler.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._worker = self._scheduler = self._loop = None
