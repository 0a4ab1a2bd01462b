"""The docs' first recipe, as a user types it: `dask scheduler` and `dask worker
--name ps/0` processes, then `fl.distributed.Cluster(address)` and a session on it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import flowlab as fl
import flowlab.distributed as fd
from tests.distributed.conftest import stop_processes

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scheduler_and_named_workers_from_the_command_line(tmp_path):
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    log = open(tmp_path / "dask.log", "w")
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], env=env, stdout=log, stderr=log)]
    try:
        for name in ("ps/0", "worker/0"):
            procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--name", name, "--nthreads", "1",
                                           "--host", "127.0.0.1", "--no-dashboard"], env=env, stdout=log, stderr=log))
        from distributed import Client

        client = Client(address, timeout=60, set_as_default=False)
        client.wait_for_workers(2, timeout=60)
        with fd.Cluster(client) as cluster:
            assert cluster.cluster_spec.jobs == ["ps", "worker"]
            g = fl.Graph()
            with g.as_default():
                with fl.device("/job:ps/task:0"):
                    v = fl.Variable(np.arange(4, dtype=np.float32), name="v")
                with fl.device("/job:worker/task:0"):
                    doubled = v * 2.0
                with fl.Session(address, graph=g) as sess:
                    sess.run(v.initializer)
                    np.testing.assert_array_equal(sess.run(doubled), [0.0, 2.0, 4.0, 6.0])
        client.close()
    finally:
        stop_processes(procs)
        log.close()
