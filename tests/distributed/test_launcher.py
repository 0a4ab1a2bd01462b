"""TF1 launcher scripts (one process per task, tf.train.Server) run unchanged but
for their import line, and give the numbers TensorFlow's own servers give."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PROGRAM = Path(__file__).parent / "programs" / "ps_worker.py"
ROOT = Path(__file__).resolve().parents[2]


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def launch(impl: str, workers: int, tmp_path: Path, last_step: int) -> list[dict]:
    ports = free_ports(1 + workers)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("FLOWLAB_SCHEDULER", None)

    def start(job: str, index: int, out: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(PROGRAM), impl, job, str(index), json.dumps(cluster), str(out),
                                 str(last_step)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    outs = [tmp_path / f"{impl}-worker{i}.json" for i in range(workers)]
    ps = start("ps", 0, tmp_path / "ps.json")
    procs = [start("worker", i, outs[i]) for i in range(workers)]
    try:
        for p in procs:
            out, _ = p.communicate(timeout=240)
            assert p.returncode == 0, out.decode(errors="replace")[-3000:]
    finally:
        for p in [*procs, ps]:
            if p.poll() is None:
                p.kill()
                p.wait(30)
    return [json.loads(o.read_text()) for o in outs]


@pytest.mark.tf
def test_one_worker_launcher_gives_tensorflows_numbers(tmp_path):
    pytest.importorskip("tensorflow")
    (expected,) = launch("tensorflow", 1, tmp_path, 15)
    (actual,) = launch("flowlab", 1, tmp_path, 15)
    assert actual["losses"] == pytest.approx(expected["losses"], rel=1e-6, abs=1e-7)
    # The global step fetched beside the train op: nothing orders its read on ps/0 against
    # the update, so step i prints i (ps/0 sent it first, as it mostly does) or i + 1
    # (TensorFlow's own servers printed 13 at step 12 once under load).
    for steps in (actual["steps"], expected["steps"]):
        assert len(steps) == 15 and all(s in (i, i + 1) for i, s in enumerate(steps)), steps


def test_two_workers_share_the_ps_state_between_graphs(tmp_path):
    a, b = launch("flowlab", 2, tmp_path, 30)
    # Both ran against one global step on ps/0 until it reached 30 (each fetch is the
    # value before that run's update, as TensorFlow's servers send it).  The two read it
    # concurrently, and StopAtStepHook reads it through its own op, so the last fetched
    # values may stop short of 29 by one per worker (seen once: 28, with the step at 30).
    assert a["steps"] and b["steps"]
    assert max(a["steps"] + b["steps"]) >= 30 - 2
    assert len(a["steps"]) + len(b["steps"]) >= 30
    assert a["losses"][-1] < a["losses"][0]
