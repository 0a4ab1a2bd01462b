"""The real TensorBoard server reads a flowlab logdir: scalars and the graph through
its HTTP API (bound to 127.0.0.1, on a free port, stopped by its PID)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import config_pb2, graph_pb2

import flowlab as fl

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def _tensorboard_command() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    return [exe] if os.path.exists(exe) else [shutil.which("tensorboard") or "tensorboard"]


def test_tensorboard_serves_flowlab_scalars_and_graph(tmp_path):
    logdir = tmp_path / "logs"
    with fl.Graph().as_default():
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        y = fl.reduce_sum(x * 2.0, name="total")
        s = fl.summary.scalar("loss", y)
        with fl.Session() as sess, fl.summary.FileWriter(str(logdir / "run1"), sess.graph) as w:
            for i in range(3):
                w.add_summary(sess.run(s, {x: [[i, 1.0, 2.0]]}), i)
            md = fl.RunMetadata()
            sess.run(s, {x: [[0.0, 1.0, 2.0]]}, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE),
                     run_metadata=md)
            w.add_run_metadata(md, "step3", 3)
    port = _free_port()
    log = open(tmp_path / "tensorboard.log", "wb")  # a file, not a pipe nobody drains
    proc = subprocess.Popen(
        _tensorboard_command() + ["--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        tags = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                tags = json.loads(_get(f"{base}/data/plugin/scalars/tags"))
                if tags.get("run1"):
                    break
            except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
                pass
            time.sleep(0.5)
        assert tags is not None and "loss" in tags.get("run1", {}), (
            tags, proc.poll(), (tmp_path / "tensorboard.log").read_text()[-2000:])
        rows = json.loads(_get(f"{base}/data/plugin/scalars/scalars?tag=loss&run=run1"))
        assert [(step, value) for _, step, value in rows] == [(0, 6.0), (1, 8.0), (2, 10.0)]
        info = json.loads(_get(f"{base}/data/plugin/graphs/info"))
        assert info["run1"]["run_graph"] is True
        graph = text_format.Parse(_get(f"{base}/data/plugin/graphs/graph?run=run1").decode(), graph_pb2.GraphDef())
        nodes = {n.name: n for n in graph.node}
        assert nodes["total"].op == "Sum" and nodes["loss"].op == "ScalarSummary"
        assert [d.size for d in nodes["x"].attr["_output_shapes"].list.shape[0].dim] == [-1, 3]
        assert info["run1"]["tags"]["step3"]["profile"] is True
        md_text = _get(f"{base}/data/plugin/graphs/run_metadata?run=run1&tag=step3").decode()
        served = text_format.Parse(md_text, config_pb2.RunMetadata())
        timed = {n.node_name for d in served.step_stats.dev_stats for n in d.node_stats}
        assert {"total", "loss"} <= timed  # per-node compute times for the graph dashboard
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
