"""distributed_steps: the paper's Figure 7 on loopback -- flowlab on a Dask
LocalCluster beside TensorFlow's own distributed runtime (tf.compat.v1 servers,
gRPC, one subprocess per task) in the same run.

    python benchmarks/distributed_steps.py [--steps 200] [--rounds 3] [--workers 1,2,3]
                                           [--dense-mb 100] [--sparse-gib 1,8] [--skip-tf]

Figures, per system (ms; median and p90 over all steps of all rounds):

* `null_<k>w`: k clients at once (threads, one session each, on worker/0..k-1), each
  step fetching a scalar variable held by ps/0 through its worker (ps -> worker ->
  client): the cost of a step that does nothing; with `cpu_ms_per_step`, the CPU
  every process of the system (the client's and each server's) spent per step;
* `dense`: one client fetching a `--dense-mb` MB float32 variable of ps/0 through
  worker/0 (`identity(v)` there: TensorFlow relays it ps -> worker -> client; a flowlab
  worker only passes it on, so it goes from ps/0 to the client once,
  flowlab/distributed/forwarding.py); with its throughput in GB/s;
* `sparse_<n>gib`: one client gathering 32 random rows of 1024 floats from an
  n-GiB embedding split over ps/0 and ps/1 (`fixed_size_partitioner(2)`,
  `embedding_lookup`, each Gather on its shard's task); the step should not depend
  on the table's size.

Each system runs in its own cluster (flowlab: LocalCluster with 2 ps and 3 workers,
1 thread each; TensorFlow: the same ClusterSpec as tf.distribute.Server processes),
one after the other per figure and round, so neither shares the machine with the
other's idle servers more than it must.  Tables are zero-initialized.  Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import emit, load_tf1  # noqa: E402

ROW = 1024
BATCH = 32


def summary(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"median_ms": statistics.median(s), "p90_ms": s[int(0.9 * (len(s) - 1))], "steps": len(s)}


# --- the programs (the same text for both systems) ------------------------------------
def null_graph(tf: Any, worker: int) -> tuple[Any, Any, Any]:
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.get_variable("null_v", initializer=np.float32(1.0), use_resource=False)
        with tf.device(f"/job:worker/task:{worker}"):
            fetched = tf.identity(v)
    return g, fetched, v.initializer


def dense_graph(tf: Any, mb: int) -> tuple[Any, Any, Any]:
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.get_variable("dense_v", shape=[mb * (1 << 20) // 4], dtype=tf.float32,
                                initializer=tf.zeros_initializer(), use_resource=False)
        with tf.device("/job:worker/task:0"):
            fetched = tf.identity(v)
    return g, fetched, v.initializer


def sparse_graph(tf: Any, gib: float) -> tuple[Any, Any, Any, Any]:
    rows = int(gib * (1 << 30)) // (ROW * 4)
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
            table = tf.get_variable("table", shape=[rows, ROW], dtype=tf.float32,
                                    initializer=tf.zeros_initializer(),
                                    partitioner=tf.fixed_size_partitioner(2), use_resource=False)
            ids = tf.placeholder(tf.int64, [BATCH], name="ids")
            rows_out = tf.nn.embedding_lookup(table, ids)
        init = tf.global_variables_initializer()
    return g, rows_out, init, (ids, rows)


# --- the systems -------------------------------------------------------------------
def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


_TF_SERVER = """
import os, sys, json
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
tf.distribute.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name=sys.argv[2],
                     task_index=int(sys.argv[3]), config=cfg).join()
"""


class TensorFlowCluster:
    """tf.distribute.Server processes for ps/0, ps/1, worker/0..2 on 127.0.0.1."""

    def __init__(self) -> None:
        ports = free_ports(5)
        self.spec = {"ps": [f"127.0.0.1:{p}" for p in ports[:2]], "worker": [f"127.0.0.1:{p}" for p in ports[2:]]}
        self.procs = [subprocess.Popen([sys.executable, "-c", _TF_SERVER, json.dumps(self.spec), job, str(i)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                      for job in ("ps", "worker") for i in range(len(self.spec[job]))]

    def target(self, worker: int) -> str:
        return "grpc://" + self.spec["worker"][worker]

    def cpu_s(self) -> float:
        """CPU seconds used so far by this process (the client) and every server."""
        import psutil

        total = time.process_time()
        for p in self.procs:
            t = psutil.Process(p.pid).cpu_times()
            total += t.user + t.system
        return total

    def close(self) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


class FlowlabCluster:
    def __init__(self) -> None:
        import flowlab.distributed as fd

        t0 = time.perf_counter()
        self.cluster = fd.LocalCluster(ps=2, worker=3)
        self.start_s = time.perf_counter() - t0

    def target(self, worker: int) -> str:
        return f"{self.cluster.target}/job:worker/task:{worker}"

    def cpu_s(self) -> float:
        """CPU seconds used so far by this process (the client, and the LocalCluster's
        scheduler and nannies) and every worker process."""
        return time.process_time() + sum(self.cluster.client.run(time.process_time).values())

    def close(self) -> None:
        self.cluster.close()


def timed(run: Callable[[], Any], steps: int) -> list[float]:
    run()
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        run()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def null_steps(tf: Any, system: Any, k: int, steps: int) -> list[float]:
    sessions, fetches = [], []
    for w in range(k):
        g, fetched, init = null_graph(tf, w)
        s = tf.Session(system.target(w), graph=g)
        s.run(init)
        sessions.append(s)
        fetches.append(fetched)
    results: list[list[float]] = [[] for _ in range(k)]
    threads = [threading.Thread(target=lambda i=i: results[i].extend(
        timed(lambda: sessions[i].run(fetches[i]), steps))) for i in range(k)]
    cpu0 = system.cpu_s()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # CPU of every process of the system per step (each client also ran one warm-up step).
    system.cpu_ms_per_step.setdefault(f"null_{k}w", []).append((system.cpu_s() - cpu0) * 1e3 / (k * (steps + 1)))
    for s in sessions:
        s.close()
    return [x for r in results for x in r]


def dense_steps(tf: Any, system: Any, mb: int, steps: int) -> list[float]:
    g, fetched, init = dense_graph(tf, mb)
    with tf.Session(system.target(0), graph=g) as s:
        s.run(init)
        return timed(lambda: s.run(fetched), steps)


def sparse_steps(tf: Any, system: Any, gib: float, steps: int) -> list[float]:
    g, out, init, (ids, rows) = sparse_graph(tf, gib)
    rng = np.random.default_rng(0)
    with tf.Session(system.target(0), graph=g) as s:
        s.run(init)
        result = timed(lambda: s.run(out, {ids: rng.integers(0, rows, BATCH)}), steps)
    # State outlives sessions on both systems: drop the table before the next size.
    tf.Session.reset(system.target(0))
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", default="1,2,3")
    p.add_argument("--dense-mb", type=int, default=100)
    p.add_argument("--dense-steps", type=int, default=10)
    p.add_argument("--sparse-gib", default="1,8")
    p.add_argument("--skip-tf", action="store_true")
    a = p.parse_args()
    import flowlab as fl

    tf1 = None if a.skip_tf else load_tf1()
    systems: dict[str, tuple[Any, Callable[[], Any]]] = {"flowlab": (fl, FlowlabCluster)}
    if tf1 is not None:
        systems["tensorflow"] = (tf1, TensorFlowCluster)
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in systems}
    cpu_per_step: dict[str, dict[str, list[float]]] = {name: {} for name in systems}
    extra: dict[str, Any] = {}
    figures: list[tuple[str, Callable[[Any, Any], list[float]]]] = []
    for k in (int(x) for x in a.workers.split(",") if x):
        figures.append((f"null_{k}w", lambda tf, sys_, k=k: null_steps(tf, sys_, k, a.steps)))
    if a.dense_mb:
        figures.append(("dense", lambda tf, sys_: dense_steps(tf, sys_, a.dense_mb, a.dense_steps)))
    for gib in (float(x) for x in a.sparse_gib.split(",") if x):
        figures.append((f"sparse_{gib:g}gib", lambda tf, sys_, gib=gib: sparse_steps(tf, sys_, gib, a.steps)))
    for _ in range(a.rounds):
        for name, (tf, make) in systems.items():
            system = make()
            system.cpu_ms_per_step = cpu_per_step[name]
            if name == "flowlab":
                extra.setdefault("flowlab_cluster_start_s", []).append(system.start_s)
            else:
                time.sleep(3.0)  # the servers start listening
            try:
                for fig, run in figures:
                    samples[name].setdefault(fig, []).extend(run(tf, system))
            finally:
                t0 = time.perf_counter()
                system.close()
                if name == "flowlab":
                    extra.setdefault("flowlab_cluster_close_s", []).append(time.perf_counter() - t0)
    out: dict[str, Any] = {"config": vars(a)}
    for name, figs in samples.items():
        out[name] = {fig: summary(s) for fig, s in figs.items()}
        for fig, cpu in cpu_per_step[name].items():
            out[name][fig]["cpu_ms_per_step"] = statistics.median(cpu)
        if "dense" in out[name]:
            out[name]["dense"]["GB_per_s"] = a.dense_mb * (1 << 20) / 1e9 / (out[name]["dense"]["median_ms"] / 1e3)
    if "tensorflow" in out:
        out["ratios_flowlab_over_tensorflow"] = {
            fig: out["flowlab"][fig]["median_ms"] / out["tensorflow"][fig]["median_ms"] for fig in out["flowlab"]}
    out.update({k: statistics.median(v) for k, v in extra.items()})
    emit("distributed_steps", out)


if __name__ == "__main__":
    main()
