"""Figure 7's sparse curve with Zipf-skewed ids, as real vocabularies are: per-shard
load and step time when 1..3 workers each gather 32 rows from an embedding split over
two ps tasks, ids uniform or Zipf, partition strategy 'mod' or 'div'.

    python benchmarks/sparse_zipf.py [--table-mb 256] [--steps 60] [--workers 1,2,3]
        [--zipf-a 1.2] [--figure docs/figures/sparse_zipf.png] [--skip-tf]

Both systems run the same TF1 program on their own cluster of ps/0, ps/1 and
worker/0..2 (flowlab: a LocalCluster; TensorFlow: tf.distribute.Server processes;
both from benchmarks/distributed_steps.py): the table is
`get_variable(partitioner=fixed_size_partitioner(2))`, each worker client has its own
graph and session on /job:worker/task:i and runs `nn.embedding_lookup(table, ids,
partition_strategy=...)` with each Gather on its shard's task, k workers at once.

Printed: per system, distribution, strategy and k the median and p90 step ms; the
per-shard load, the share of the gathered ids (and of the distinct rows) that each
shard serves, counted with embedding_lookup's own routing rule (mod: id % P; div:
contiguous ranges, the first N % P shards one row longer) over every id the steps
fed; and the ratios Zipf / uniform and flowlab / TensorFlow.  With 'div' a Zipf
vocabulary sends nearly every lookup to the shard holding the low ids: the hot shard
the paper's uniform benchmark cannot show.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import _CHILD_RESULT, emit, load_tf1, save_figure  # noqa: E402
from backup_workers import FIGURES, ROOT  # noqa: E402
from distributed_steps import FlowlabCluster, TensorFlowCluster  # noqa: E402

import flowlab as fl  # noqa: E402

BATCH = 32
ROW = 256
SHARDS = 2


def draw_ids(dist: str, rows: int, rng: np.random.Generator, a: float) -> np.ndarray:
    if dist == "uniform":
        return rng.integers(0, rows, BATCH)
    out = np.empty(0, np.int64)
    while out.size < BATCH:                     # Zipf(a) over 1..inf, kept below `rows`
        z = rng.zipf(a, 2 * BATCH) - 1
        out = np.concatenate([out, z[z < rows]])
    return out[:BATCH].astype(np.int64)


def shard_of(ids: np.ndarray, rows: int, strategy: str) -> np.ndarray:
    """embedding_lookup's routing (TensorFlow's rule for both strategies)."""
    if strategy == "mod":
        return ids % SHARDS
    per, extras = rows // SHARDS, rows % SHARDS
    return np.maximum(ids // (per + 1), (ids - extras) // per)


def graph(tf: Any, rows: int, worker: int, strategy: str) -> tuple[Any, Any, Any, Any]:
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=SHARDS, worker_device=f"/job:worker/task:{worker}")):
            table = tf.get_variable("table", shape=[rows, ROW], dtype=tf.float32,
                                    initializer=tf.zeros_initializer(),
                                    partitioner=tf.fixed_size_partitioner(SHARDS), use_resource=False)
            ids = tf.placeholder(tf.int64, [BATCH], name="ids")
            out = tf.reduce_sum(tf.nn.embedding_lookup(table, ids, partition_strategy=strategy), 1)
        init = tf.global_variables_initializer()
    return g, out, init, ids


def run_config(tf: Any, system: Any, rows: int, k: int, dist: str, strategy: str, steps: int,
               a: float, initialized: dict[str, bool]) -> tuple[list[float], list[np.ndarray]]:
    sessions, graphs = [], []
    for w in range(k):
        g, out, init, ids = graph(tf, rows, w, strategy)
        s = tf.Session(system.target(w), graph=g)
        if not initialized.get("done"):
            s.run(init)                       # the table lives on ps/0, ps/1 from now on
            initialized["done"] = True
        sessions.append(s)
        graphs.append((out, ids))
    times: list[list[float]] = [[] for _ in range(k)]
    fed: list[list[np.ndarray]] = [[] for _ in range(k)]
    errs: list[BaseException] = []

    def client(i: int) -> None:
        rng = np.random.default_rng([i, k, len(dist), len(strategy)])
        out, ids = graphs[i]
        try:
            sessions[i].run(out, {ids: draw_ids(dist, rows, rng, a)})     # warm the plan
            for _ in range(steps):
                batch = draw_ids(dist, rows, rng, a)
                t0 = time.perf_counter()
                sessions[i].run(out, {ids: batch})
                times[i].append((time.perf_counter() - t0) * 1e3)
                fed[i].append(batch)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errs.append(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        s.close()
    if errs:
        raise errs[0]
    return [x for r in times for x in r], [b for r in fed for b in r]


def load(batches: list[np.ndarray], rows: int, strategy: str) -> dict[str, list[float]]:
    ids = np.concatenate(batches)
    shard = shard_of(ids, rows, strategy)
    uniq = np.unique(ids)
    ushard = shard_of(uniq, rows, strategy)
    return {"ids_share": [round(float(np.mean(shard == p)), 3) for p in range(SHARDS)],
            "distinct_rows_share": [round(float(np.mean(ushard == p)), 3) for p in range(SHARDS)]}


def draw(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.5))
    ks = result["workers"]
    styles = {"flowlab": "-", "tensorflow": "--"}
    for name in ("flowlab", "tensorflow"):
        if name not in result:
            continue
        for key, r in result[name].items():
            ax1.plot(ks, [x["median_ms"] for x in r], styles[name], marker="o", label=f"{name} {key}")
    ax1.set_xlabel("workers")
    ax1.set_ylabel("median step (ms)")
    ax1.set_title(f"gather {BATCH} rows from {result['table_mb']} MB over 2 ps")
    ax1.set_xticks(ks)
    ax1.legend(fontsize=6.5)
    labels, shares = [], []
    for key, sh in result["shard_load"].items():
        labels.append(key)
        shares.append(sh["ids_share"])
    x = np.arange(len(labels))
    shares_a = np.array(shares)
    ax2.bar(x - 0.2, shares_a[:, 0], 0.4, label="ps/0")
    ax2.bar(x + 0.2, shares_a[:, 1], 0.4, label="ps/1")
    ax2.set_xticks(x)
    ax2.set_xticklabels(labels, fontsize=8)
    ax2.set_ylabel("share of gathered ids")
    ax2.set_title("per-shard load")
    ax2.legend(fontsize=8)
    save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table-mb", type=int, default=256)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--workers", default="1,2,3")
    p.add_argument("--zipf-a", type=float, default=1.2)
    p.add_argument("--figure", default=os.path.join(FIGURES, "sparse_zipf.png"))
    p.add_argument("--skip-tf", action="store_true")
    args = p.parse_args()
    rows = args.table_mb * (1 << 20) // (ROW * 4)
    ks = [int(k) for k in args.workers.split(",")]
    configs = [(d, s) for d in ("uniform", "zipf") for s in ("mod", "div")]
    systems: list[tuple[str, Any, Any]] = [("flowlab", fl, FlowlabCluster)]
    tf1 = None if args.skip_tf else load_tf1()
    if tf1 is not None:
        systems.append(("tensorflow", tf1, TensorFlowCluster))
    result: dict[str, Any] = {"table_mb": args.table_mb, "rows": rows, "row_floats": ROW, "batch": BATCH,
                              "zipf_a": args.zipf_a, "workers": ks, "machine_load": os.getloadavg()[0]}
    fed_all: dict[str, list[np.ndarray]] = {}
    for name, tf, make in systems:
        system = make()
        if name == "tensorflow":
            time.sleep(2.0)                     # let the servers bind
        initialized: dict[str, bool] = {}
        rows_out: dict[str, list[dict[str, Any]]] = {}
        try:
            for dist, strategy in configs:
                key = f"{dist}/{strategy}"
                rows_out[key] = []
                for k in ks:
                    ms, fed = run_config(tf, system, rows, k, dist, strategy, args.steps, args.zipf_a, initialized)
                    rows_out[key].append({"workers": k, "median_ms": round(statistics.median(ms), 3),
                                          "p90_ms": round(float(np.percentile(ms, 90)), 3)})
                    fed_all.setdefault(key, []).extend(fed)
        finally:
            system.close()
        result[name] = rows_out
    result["shard_load"] = {key: load(b, rows, key.split("/")[1]) for key, b in fed_all.items()}
    for name, _, _ in systems:
        r = result[name]
        result[f"{name}_zipf_over_uniform"] = {
            s: [round(z["median_ms"] / u["median_ms"], 3) for z, u in zip(r[f"zipf/{s}"], r[f"uniform/{s}"])]
            for s in ("mod", "div")}
    if tf1 is not None:
        result["flowlab_over_tensorflow"] = {
            key: [round(a["median_ms"] / t["median_ms"], 3) for a, t in zip(result["flowlab"][key],
                                                                             result["tensorflow"][key])]
            for key in result["flowlab"]}
    if args.figure and not os.environ.get(_CHILD_RESULT):   # the oneDNN-off child run draws nothing
        draw(result, args.figure)
        result["figure"] = os.path.relpath(args.figure, ROOT)
    emit("sparse_zipf", result)


if __name__ == "__main__":
    main()
