"""while_loop: µs per iteration of a scalar loop (`i + 1 < n`), flowlab beside TensorFlow 1.x.

The loop is the smallest one: one int32 loop variable, `cond = i < n`, `body = i + 1`,
so the figure is the cost of the loop machinery itself (Enter, Merge, Switch,
LoopCond, Identity, NextIteration per iteration, plus the body's add and the
condition's compare).  TensorFlow runs its v1 control flow (Switch/Merge frames,
`disable_v2_behavior`), with the graph optimizer off so that it really loops.
Both sides run the same graph through a callable, n fed, in the same process.

    python benchmarks/while_loop.py [--iters 1000 10000] [--calls N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402


def build(tf):
    n = tf.placeholder(tf.int32, [], name="n")
    i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
    return n, i


def bench(tf, cfg, iters: int, calls: int) -> dict[str, float]:
    g = tf.Graph()
    with g.as_default():
        n, i = build(tf)
    sess = tf.Session(graph=g, config=cfg) if cfg is not None else tf.Session(graph=g)
    f = sess.make_callable(i, [n])
    value = np.int32(iters)
    assert int(f(value)) == iters
    us = per_call_us(lambda: f(value), calls, repeats=5)
    empty = per_call_us(lambda: f(np.int32(0)), calls * 5, repeats=5)
    sess.close()
    return {"step_us": us, "zero_iteration_step_us": empty,
            "us_per_iteration": (us - empty) / iters}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    tf1 = load_tf1()
    out: dict[str, object] = {}
    for iters in args.iters:
        calls = max(1, args.calls * 1000 // iters) if iters > 1000 else args.calls
        row: dict[str, object] = {"flowlab": bench(fl, None, iters, calls)}
        if tf1 is not None:
            tf1.disable_control_flow_v2()
            row["tensorflow_v1"] = bench(tf1, tf_session_config(tf1, optimizer_off=True), iters, calls)
            row["ratio_flowlab_over_tf"] = round(
                row["flowlab"]["us_per_iteration"] / row["tensorflow_v1"]["us_per_iteration"], 2)
        out[f"iterations_{iters}"] = row
    emit("while_loop", out)


if __name__ == "__main__":
    main()
