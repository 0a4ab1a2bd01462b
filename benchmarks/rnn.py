"""rnn: dynamic_rnn (a while loop over TensorArrays) versus static_rnn (the cell
unrolled T times) -- an LSTM of 128 units, batch 32, 32 input features, one SGD
training step (forward + backward + update) per call, float32, across sequence lengths
10, 50, 100, 200; flowlab beside TensorFlow 1.x graph mode (when installed), same
process, same data.

Figures per length and kind: graph build seconds, step ms, and (flowlab) the peak of
NumPy memory allocated during one step, from tracemalloc.  `crossover` is the shortest
length from which dynamic_rnn's step is at least as fast as static_rnn's (None when it
never is in the range).

    python benchmarks/rnn.py [--steps N] [--lengths 10,50,100,200] [--threads 1] [--no-tf]

`--threads` bounds NumPy's BLAS and TensorFlow's intra-op pool alike: on a small shared
machine a default multi-threaded BLAS made one 32x160 @ 160x512 product 50 ms instead
of 0.35 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402

UNITS, BATCH, DEPTH = 128, 32, 32


def _cells(tf: Any) -> Any:
    if tf is fl:
        return fl.nn.rnn_cell
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl  # type: ignore

    return rnn_cell_impl


def build(tf: Any, kind: str, length: int) -> tuple[Any, Any, Any, Any]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [BATCH, length, DEPTH])
        cell = _cells(tf).BasicLSTMCell(UNITS)
        if kind == "dynamic":
            out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
            last = out[:, -1]
        else:
            outs, _ = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32)
            last = outs[-1]
        loss = tf.reduce_mean(tf.square(last))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, train, init


def bench(tf: Any, cfg: Any, kind: str, length: int, steps: int, memory: bool) -> dict[str, Any]:
    xv = np.random.default_rng(0).standard_normal((BATCH, length, DEPTH)).astype(np.float32)
    t0 = time.perf_counter()
    g, x, train, init = build(tf, kind, length)
    built = time.perf_counter() - t0
    sess = tf.Session(graph=g, config=cfg) if cfg is not None else tf.Session(graph=g)
    sess.run(init)
    step = sess.make_callable(train, [x])
    step(xv)
    res: dict[str, Any] = {"build_s": round(built, 3), "ops": len(g.get_operations())}
    res["step_ms"] = round(per_call_us(lambda: step(xv), steps, repeats=3) / 1000.0, 2)
    if memory:
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        step(xv)
        res["peak_mib"] = round((tracemalloc.get_traced_memory()[1] - base) / 2**20, 1)
        tracemalloc.stop()
    sess.close()
    return res


def _safe(fn: Any, *args: Any) -> dict[str, Any]:
    """The figures, or the error that stopped this configuration."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - reported in the JSON instead
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}


def crossover(rows: dict[int, dict[str, Any]]) -> int | None:
    for length in sorted(rows):
        r = rows[length]
        if "dynamic_over_static" in r and r["dynamic"]["step_ms"] <= r["static"]["step_ms"]:
            return length
    return None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--lengths", default="10,50,100,200")
    p.add_argument("--threads", type=int, default=1, help="BLAS / intra-op threads of each")
    p.add_argument("--no-tf", action="store_true")
    args = p.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    lengths = [int(s) for s in args.lengths.split(",")]
    peers: list[tuple[str, Any, Any, bool]] = [("flowlab", fl, None, True)]
    tf1 = None if args.no_tf else load_tf1()
    if tf1 is not None:
        cfg = tf_session_config(tf1)
        cfg.intra_op_parallelism_threads = args.threads
        peers.append(("tensorflow", tf1, cfg, False))
    out: dict[str, Any] = {"units": UNITS, "batch": BATCH, "depth": DEPTH,
                           "threads": args.threads, "load_before": os.getloadavg()[0]}
    for name, tf, cfg, memory in peers:
        rows: dict[int, dict[str, Any]] = {}
        for length in lengths:
            rows[length] = {kind: _safe(bench, tf, cfg, kind, length, args.steps, memory)
                            for kind in ("static", "dynamic")}
            if all("step_ms" in rows[length][k] for k in ("static", "dynamic")):
                rows[length]["dynamic_over_static"] = round(
                    rows[length]["dynamic"]["step_ms"] / rows[length]["static"]["step_ms"], 2)
        out[name] = {"by_length": rows, "crossover": crossover(rows)}
    if tf1 is not None:
        ratios: dict[str, dict[str, float]] = {}
        for kind in ("static", "dynamic"):
            for n in lengths:
                a = out["flowlab"]["by_length"][n][kind]
                b = out["tensorflow"]["by_length"][n][kind]
                if "step_ms" in a and "step_ms" in b:
                    ratios.setdefault(kind, {})[str(n)] = round(a["step_ms"] / b["step_ms"], 2)
        out["flowlab_over_tf"] = ratios
    out["load_after"] = os.getloadavg()[0]
    emit("rnn", out)


if __name__ == "__main__":
    main()
