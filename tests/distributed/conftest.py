"""A real Dask LocalCluster (separate worker processes on 127.0.0.1) for the module;
tests that kill a worker start their own."""

from __future__ import annotations

import pytest

import flowlab.distributed as fd


@pytest.fixture(scope="module")
def cluster():
    with fd.LocalCluster(ps=1, worker=2) as c:
        yield c


def worker_pid(cluster, job: str, index: int) -> int:
    """The process id of the Dask worker running task job/index."""
    import os

    addr = cluster.task(job, index).address
    return cluster.client.run(os.getpid, workers=[addr])[addr]


def stop_processes(procs) -> None:
    """Terminate processes this test started (last first), kill any still there after
    30 s in all."""
    import subprocess
    import time

    for p in reversed(procs):
        p.terminate()
    deadline = time.monotonic() + 30
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
