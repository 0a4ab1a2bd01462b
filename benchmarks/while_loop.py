"""while_loop: µs per iteration of a scalar loop (`i + 1 < n`), flowlab beside TensorFlow 1.x.

The loop is the smallest one: one int32 loop variable, `cond = i < n`, `body = i + 1`,
so the figure is the cost of the loop machinery itself (Enter, Merge, Switch,
LoopCond, Identity, NextIteration per iteration, plus the body's add and the
condition's compare).  TensorFlow runs its v1 control flow (Switch/Merge frames,
`disable_v2_behavior`), with the graph optimizer off so that it really loops.
Both sides run the same graph through a callable, n fed, in the same process.

Peers: `flowlab` (loops fused into one generated function, `runtime/task/loop_fusion.py`),
`flowlab_general` (the same loop on the general frame path, fusion switched off) and
`tensorflow_v1`.  They are timed in interleaved rounds (each round times every peer
in turn, so a burst of machine load is spread over all of them), by wall clock and by
CPU time of the process (TensorFlow's CPU time includes its executor threads').  Per
iteration = (step at n iterations - step at 0 iterations) / n, medians over rounds.

    python benchmarks/while_loop.py [--iters 1000 10000] [--rounds 7] [--calls N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.runtime.task import loop_fusion  # noqa: E402


def build(tf):
    n = tf.placeholder(tf.int32, [], name="n")
    i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
    return n, i


def make_step(tf, cfg):
    g = tf.Graph()
    with g.as_default():
        n, i = build(tf)
    sess = tf.Session(graph=g, config=cfg) if cfg is not None else tf.Session(graph=g)
    return sess, sess.make_callable(i, [n])


def _time(fn, value, calls: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per call over `calls` calls."""
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn(value)
    return ((time.perf_counter() - w0) / calls * 1e6, (time.process_time() - c0) / calls * 1e6)


def _fused(on: bool):
    def wrap(f):
        def call(v):
            loop_fusion.ENABLED = on
            try:
                return f(v)
            finally:
                loop_fusion.ENABLED = True
        return call
    return wrap


def bench(peers: dict[str, Any], iters: int, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    full, empty = np.int32(iters), np.int32(0)
    for name, f in peers.items():
        assert int(f(full)) == iters, name
        f(empty)
    samples: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": [], "wall0": [], "cpu0": []} for name in peers}
    for _ in range(rounds):
        for name, f in peers.items():
            w, c = _time(f, full, calls)
            w0, c0 = _time(f, empty, calls * 5)
            s = samples[name]
            s["wall"].append(w)
            s["cpu"].append(c)
            s["wall0"].append(w0)
            s["cpu0"].append(c0)
    out = {}
    for name, s in samples.items():
        out[name] = {
            "step_us": statistics.median(s["wall"]),
            "zero_iteration_step_us": statistics.median(s["wall0"]),
            "us_per_iteration": statistics.median((a - b) / iters for a, b in zip(s["wall"], s["wall0"])),
            "cpu_us_per_iteration": statistics.median((a - b) / iters for a, b in zip(s["cpu"], s["cpu0"])),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    tf1 = load_tf1()
    sess, f = make_step(fl, None)
    peers: dict[str, Any] = {"flowlab": _fused(True)(f), "flowlab_general": _fused(False)(f)}
    if tf1 is not None:
        tf1.disable_control_flow_v2()
        _, peers["tensorflow_v1"] = make_step(tf1, tf_session_config(tf1, optimizer_off=True))
    out: dict[str, object] = {}
    for iters in args.iters:
        calls = max(1, args.calls * 1000 // iters) if iters > 1000 else args.calls
        row: dict[str, Any] = bench(peers, iters, calls, args.rounds)
        if "tensorflow_v1" in row:
            tf_row = row["tensorflow_v1"]
            for name in ("flowlab", "flowlab_general"):
                row[f"ratio_{name}_over_tf"] = round(row[name]["us_per_iteration"] / tf_row["us_per_iteration"], 2)
                row[f"cpu_ratio_{name}_over_tf"] = round(
                    row[name]["cpu_us_per_iteration"] / tf_row["cpu_us_per_iteration"], 2)
        out[f"iterations_{iters}"] = row
    emit("while_loop", out)


if __name__ == "__main__":
    main()
