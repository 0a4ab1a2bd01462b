"""Figure 8c of the TensorFlow paper on one machine: synchronous training with n
aggregated replicas and 0..4 backup workers under injected stragglers.

    python benchmarks/backup_workers.py [--n 4] [--backups 0,1,2,3,4] [--updates 40]
        [--distribution pareto] [--median-ms 20] [--alpha 1.0] [--base-ms 20]
        [--seed 0] [--figure docs/figures/backup_workers.png] [--no-peer]

Each configuration runs in-graph replication in one process: n + b replica threads
over one session, each with its own `SyncReplicasOptimizer(replicas_to_aggregate=n,
total_num_replicas=n + b)` training softmax regression on scikit-learn's digits, each
waiting its injected delay (`flowlab.train.stragglers`, a seeded draw per (replica,
step)) before every step.  The delay stands for the replica's compute, so the
coordination is what is measured, not how two cores share eight replicas' work.

Printed per system and b: the step time, the mean time per update (the time between
the first and the last timed global step, seen when replicas get the new token,
divided by the updates between them; the first `--warmup` updates are left out) and
the median and 90th percentile of the single intervals; the normalized speedup t(0) /
t(b) x n / (n + b) with t the mean step time (the paper's: the speedup over no backups
divided by the extra workers it costs; the mean, because throughput is what backups
buy: with a heavy tail the median interval hides the long steps that dominate the
time); and the order-statistic model of the same delays (the mean over steps of the
n-th smallest of n + b delays: what an ideal coordinator, with free updates, would
achieve).  TensorFlow's tf.compat.v1 runs the same program
with the same delays in the same run, as the peer; ratios are flowlab / TensorFlow.
The figure (PNG) draws both panels of figure 8c for both systems.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import _CHILD_RESULT, emit, load_tf1, save_figure  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.train.stragglers import Stragglers, run_replicas  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "docs", "figures")


def digits(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (shipped in the package), scaled to [0, 1] as
    notebooks/02-training.ipynb does, flattened, split 1500 / 297 with a fixed seed."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32).reshape(len(d.images), 64)
    y = d.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    return x[:1500], y[:1500], x[1500:], y[1500:]


def build(tf: Any, replicas: int, mode: str, aggregate: int, lr: float = 0.5) -> dict[str, Any]:
    """Softmax regression on digits with `replicas` replicas in one graph.  mode
    'sync': SyncReplicasOptimizer(aggregate of replicas); 'async': plain SGD per replica
    on the shared variables (each apply increments the global step)."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(np.zeros([64, 10], np.float32), name="w")
        b = tf.Variable(np.zeros([10], np.float32), name="b")
        trains, xs, ys, opts = [], [], [], []
        for i in range(replicas):
            x = tf.placeholder(tf.float32, [None, 64], name=f"x{i}")
            y = tf.placeholder(tf.int32, [None], name=f"y{i}")
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=tf.matmul(x, w) + b))
            opt = tf.train.GradientDescentOptimizer(lr)
            if mode == "sync":
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=aggregate,
                                                     total_num_replicas=replicas)
            trains.append(opt.minimize(loss, global_step=gs))
            xs.append(x)
            ys.append(y)
            opts.append(opt)
        ex = tf.placeholder(tf.float32, [None, 64], name="eval_x")
        ey = tf.placeholder(tf.int32, [None], name="eval_y")
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(tf.matmul(ex, w) + b, 1, output_type=tf.int32),
                                                   ey), tf.float32))
        hooks, release = [], None
        if mode == "sync":
            hooks = [o.make_session_run_hook(i == 0, num_tokens=0) for i, o in enumerate(opts)]
            for h in hooks:
                h.begin()
            release = opts[0].get_init_tokens_op(replicas)
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
    return {"graph": g, "gs": gs, "trains": trains, "xs": xs, "ys": ys, "hooks": hooks,
            "release": release, "init": init, "accuracy": accuracy, "eval": (ex, ey)}


def open_session(tf: Any, model: dict[str, Any]) -> tuple[Any, Any]:
    sess = tf.Session(graph=model["graph"])
    sess.run(model["init"])
    coord = tf.train.Coordinator()
    for h in model["hooks"]:
        h.after_create_session(sess, coord)
    return sess, coord


def close_session(sess: Any, coord: Any) -> None:
    coord.request_stop()
    sess.close()
    coord.join(stop_grace_period_secs=5, ignore_live_threads=True)


def batches(x: np.ndarray, y: np.ndarray, replica: int, batch: int) -> Any:
    """Replica `replica`'s k-th batch: a deterministic walk over the training set."""
    def feed(k: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([replica, k])
        idx = rng.integers(0, len(x), size=batch)
        return x[idx], y[idx]
    return feed


def drive(tf: Any, model: dict[str, Any], stragglers: Stragglers, until: Any, data: Any,
          batch: int = 32, timeout_s: float = 300.0, poll_s: float = 0.005) -> tuple[list[Any], Any, Any]:
    """Run every replica of `model` under `stragglers` until `until(sess)`; returns the
    replica log, and the open session and coordinator (the caller closes them)."""
    x, y = data
    sess, coord = open_session(tf, model)
    feeds = [batches(x, y, i, batch) for i in range(len(model["trains"]))]

    def step(i: int) -> Any:
        train, xi, yi, feed = model["trains"][i], model["xs"][i], model["ys"][i], feeds[i]

        def run(k: int) -> Any:
            bx, by = feed(k)
            return sess.run(train, {xi: bx, yi: by})
        return run

    release = (lambda: sess.run(model["release"])) if model["release"] is not None else None
    try:
        log = run_replicas([step(i) for i in range(len(model["trains"]))], stragglers,
                           until=lambda: until(sess), release=release, timeout_s=timeout_s, poll_s=poll_s)
    except BaseException:
        close_session(sess, coord)
        raise
    return log, sess, coord


def update_times(log: list[Any]) -> list[float]:
    """When each global step first appeared as a token a replica took (sync runs
    return the token: the step the replica computes its next gradient at)."""
    first: dict[int, float] = {}
    for s in log:
        v = int(s.result)
        if v > 0 and v not in first:
            first[v] = s.ended
    return [first[v] for v in sorted(first)]


def stragglers_from(args: argparse.Namespace) -> Stragglers:
    base = args.base_ms / 1000
    if args.distribution == "lognormal":
        return Stragglers.lognormal(args.median_ms / 1000, args.sigma, seed=args.seed, base_s=base)
    if args.distribution == "pareto":
        return Stragglers.pareto(args.median_ms / 1000, args.alpha, seed=args.seed, base_s=base,
                                 max_delay_s=args.max_ms / 1000)
    if args.distribution == "slow_worker":
        return Stragglers.slow_worker(0, args.median_ms / 1000, base_s=base)
    return Stragglers.exponential(args.median_ms / 1000, seed=args.seed, base_s=base)


def one(tf: Any, n: int, b: int, args: argparse.Namespace, data: Any) -> dict[str, Any]:
    model = build(tf, n + b, "sync", n)
    gs = model["gs"]
    log, sess, coord = drive(tf, model, stragglers_from(args),
                             until=lambda s: int(s.run(gs)) >= args.updates + args.warmup, data=data)
    close_session(sess, coord)
    times = update_times(log)[args.warmup:]
    steps = np.diff(times) * 1000
    return {"mean_step_ms": round(float((times[-1] - times[0]) / (len(times) - 1) * 1000), 2),
            "median_step_ms": round(float(np.median(steps)), 2),
            "p90_step_ms": round(float(np.percentile(steps, 90)), 2),
            "updates_timed": len(steps), "replica_steps": len(log)}


def order_statistic_ms(s: Stragglers, n: int, b: int, steps: int) -> float:
    """The mean over steps of the n-th smallest of n + b delays (the ideal)."""
    table = s.delays(n + b, steps)
    return float(np.mean(np.sort(table, axis=0)[n - 1])) * 1000


def draw(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bs = result["backups"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for name, style in (("flowlab", "o-"), ("tensorflow", "s--")):
        if name not in result:
            continue
        ax1.plot(bs, [r["mean_step_ms"] for r in result[name]], style, label=f"{name} mean")
        ax1.plot(bs, [r["median_step_ms"] for r in result[name]], style, alpha=0.4, label=f"{name} median")
        ax2.plot(bs, [r["normalized_speedup"] for r in result[name]], style, label=name)
    ax1.plot(bs, result["order_statistic_ms"], ":", color="gray", label="n-th of n+b delays")
    ax1.set_xlabel("backup workers b")
    ax1.set_ylabel("step time (ms)")
    ax1.set_title(f"step time, n = {result['n']} aggregated")
    ax2.axhline(1.0, color="gray", lw=0.5)
    ax2.set_xlabel("backup workers b")
    ax2.set_ylabel("t(0)/t(b) x n/(n+b)")
    ax2.set_title("normalized speedup")
    for ax in (ax1, ax2):
        ax.set_xticks(bs)
        ax.legend(fontsize=8)
    fig.suptitle(f"Backup workers under {result['stragglers']}", fontsize=9)
    save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4, help="gradients aggregated per update")
    p.add_argument("--backups", default="0,1,2,3,4")
    p.add_argument("--updates", type=int, default=30, help="updates timed per configuration")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--distribution", default="pareto",
                   choices=["lognormal", "pareto", "exponential", "slow_worker"])
    p.add_argument("--median-ms", type=float, default=20.0, help="lognormal median / pareto or exp scale")
    p.add_argument("--sigma", type=float, default=1.5)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--max-ms", type=float, default=1000.0)
    p.add_argument("--base-ms", type=float, default=20.0, help="every step's fixed delay")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--figure", default=os.path.join(FIGURES, "backup_workers.png"))
    p.add_argument("--no-peer", action="store_true")
    args = p.parse_args()
    backups = [int(v) for v in args.backups.split(",")]
    data = digits()[:2]
    systems: dict[str, Any] = {"flowlab": fl}
    tf1 = None if args.no_peer else load_tf1()
    if tf1 is not None:
        systems["tensorflow"] = tf1
    s = stragglers_from(args)
    result: dict[str, Any] = {"n": args.n, "backups": backups, "stragglers": repr(s),
                              "updates": args.updates, "machine_load": os.getloadavg()[0]}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
    for b in backups:
        for name, tf in systems.items():   # alternate systems per b: load bursts hit both
            rows[name].append(one(tf, args.n, b, args, data))
    for name, rs in rows.items():
        t0 = rs[0]["mean_step_ms"]
        for b, r in zip(backups, rs):
            r["b"] = b
            r["normalized_speedup"] = round(t0 / r["mean_step_ms"] * args.n / (args.n + b), 3)
        result[name] = rs
    result["order_statistic_ms"] = [round(order_statistic_ms(s, args.n, b, 400), 2) for b in backups]
    t0 = result["order_statistic_ms"][0]
    result["order_statistic_normalized_speedup"] = [
        round(t0 / t * args.n / (args.n + b), 3) for t, b in zip(result["order_statistic_ms"], backups)]
    if "tensorflow" in rows:
        result["step_time_ratio_flowlab_over_tensorflow"] = [
            round(a["mean_step_ms"] / t["mean_step_ms"], 3) for a, t in zip(rows["flowlab"], rows["tensorflow"])]
    fl_rows = rows["flowlab"]
    best = max(fl_rows, key=lambda r: r["normalized_speedup"])
    result["flowlab_normalized_speedup_peak_b"] = best["b"]
    if args.figure and not os.environ.get(_CHILD_RESULT):   # the oneDNN-off child run draws nothing
        draw(result, args.figure)
        result["figure"] = os.path.relpath(args.figure, ROOT)
    emit("backup_workers", result)


if __name__ == "__main__":
    main()
