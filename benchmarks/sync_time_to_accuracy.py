"""Time to a target accuracy for asynchronous, synchronous and synchronous-with-backups
training under injected stragglers: the comparison the TensorFlow paper argues for in
section 4.4 but does not plot.

    python benchmarks/sync_time_to_accuracy.py [--n 4] [--backups 1,2] [--target 0.92]
        [--distribution pareto] [--median-ms 20] [--alpha 1.0] [--base-ms 20] [--seed 0]
        [--figure docs/figures/sync_time_to_accuracy.png] [--no-peer]

Softmax regression on scikit-learn's digits (1500 training images, 297 held out),
batch 32 per replica step, SGD with learning rate 0.5, in-graph replication in one
process (benchmarks/backup_workers.py builds the model and drives the replicas):

- async: n replicas, each applying its own gradient to the shared variables
  (Hogwild!, no coordination: a straggler never holds anyone up, but its gradient
  lands late, computed on old parameters);
- sync: SyncReplicasOptimizer taking all n gradients per update;
- sync+b: n + b replicas, n gradients taken per update, b backups.

Every replica waits a seeded heavy-tailed delay before each step (the same draws for
every mode: `flowlab.train.stragglers`).  The held-out accuracy is polled every
`--poll-ms`; printed per mode and system: the seconds to reach `--target`, the global
steps (updates) and the gradients computed by then.  TensorFlow's tf.compat.v1 runs
the same program in the same run as the peer.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import _CHILD_RESULT, emit, load_tf1, save_figure  # noqa: E402
from backup_workers import FIGURES, ROOT, build, close_session, digits, drive, stragglers_from  # noqa: E402

import flowlab as fl  # noqa: E402


def one(tf: Any, mode: str, n: int, b: int, args: argparse.Namespace, data: Any) -> dict[str, Any]:
    xtr, ytr, xte, yte = data
    model = build(tf, n + b, mode, n)
    ex, ey = model["eval"]
    curve: list[tuple[float, float]] = []
    t0 = [0.0]

    def reached(sess: Any) -> bool:
        now = time.monotonic()
        if not curve:
            t0[0] = now
        elif now - curve[-1][0] - t0[0] < args.poll_ms / 1000:
            return False
        acc = float(sess.run(model["accuracy"], {ex: xte, ey: yte}))
        curve.append((now - t0[0], acc))
        return acc >= args.target or now - t0[0] > args.max_s

    log, sess, coord = drive(tf, model, stragglers_from(args), until=reached, data=(xtr, ytr),
                             timeout_s=args.max_s + 60, poll_s=0.002)
    try:
        updates = int(sess.run(model["gs"]))
    finally:
        close_session(sess, coord)
    ok = curve[-1][1] >= args.target
    return {"mode": mode if mode == "async" else ("sync" if b == 0 else f"sync+{b}"),
            "replicas": n + b, "reached": ok,
            "time_to_target_s": round(curve[-1][0], 3) if ok else None,
            "accuracy": round(curve[-1][1], 4), "updates": updates, "gradients": len(log),
            "curve": [(round(t, 3), round(a, 4)) for t, a in curve]}


def draw(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [k for k in ("flowlab", "tensorflow") if k in result]
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        for r in result[name]:
            t, a = zip(*r["curve"])
            ax.plot(t, a, label=f"{r['mode']} ({r['replicas']} replicas)")
        ax.axhline(result["target"], color="gray", lw=0.6, ls=":")
        ax.set_xlabel("seconds")
        ax.set_ylabel("held-out accuracy")
        ax.set_ylim(0.5, 1.0)
        ax.set_title(name)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Digits, softmax regression, under {result['stragglers']}", fontsize=9)
    save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--backups", default="1,2")
    p.add_argument("--target", type=float, default=0.92)
    p.add_argument("--poll-ms", type=float, default=20.0)
    p.add_argument("--max-s", type=float, default=60.0, help="give up on a mode after this long")
    p.add_argument("--distribution", default="pareto",
                   choices=["lognormal", "pareto", "exponential", "slow_worker"])
    p.add_argument("--median-ms", type=float, default=20.0, help="lognormal median / pareto or exp scale")
    p.add_argument("--sigma", type=float, default=1.5)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--max-ms", type=float, default=1000.0)
    p.add_argument("--base-ms", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--figure", default=os.path.join(FIGURES, "sync_time_to_accuracy.png"))
    p.add_argument("--no-peer", action="store_true")
    args = p.parse_args()
    data = digits()
    systems: dict[str, Any] = {"flowlab": fl}
    tf1 = None if args.no_peer else load_tf1()
    if tf1 is not None:
        systems["tensorflow"] = tf1
    modes = [("async", 0), ("sync", 0)] + [("sync", int(b)) for b in args.backups.split(",") if b]
    result: dict[str, Any] = {"n": args.n, "target": args.target, "stragglers": repr(stragglers_from(args)),
                              "machine_load": os.getloadavg()[0]}
    for name in systems:
        result[name] = []
    for mode, b in modes:
        for name, tf in systems.items():
            result[name].append(one(tf, mode, args.n, b, args, data))
    if "tensorflow" in systems:
        result["time_ratio_flowlab_over_tensorflow"] = {
            a["mode"]: (round(a["time_to_target_s"] / t["time_to_target_s"], 3)
                        if a["reached"] and t["reached"] else None)
            for a, t in zip(result["flowlab"], result["tensorflow"])}
    if args.figure and not os.environ.get(_CHILD_RESULT):   # the oneDNN-off child run draws nothing
        draw(result, args.figure)
        result["figure"] = os.path.relpath(args.figure, ROOT)
    emit("sync_time_to_accuracy", result)


if __name__ == "__main__":
    main()
