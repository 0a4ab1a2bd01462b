"""while_loop: µs per iteration of a scalar loop (`i + 1 < n`), flowlab beside TensorFlow 1.x.

The loop is the smallest one: one int32 loop variable, `cond = i < n`, `body = i + 1`,
so the figure is the cost of the loop machinery itself (Enter, Merge, Switch,
LoopCond, Identity, NextIteration per iteration, plus the body's add and the
condition's compare).  TensorFlow runs its v1 control flow (Switch/Merge frames,
`disable_v2_behavior`), with the graph optimizer off so that it really loops.
Both sides run the same graph through a callable, n fed, in the same process.

Peers: `flowlab` (loops fused into one generated function, `runtime/task/loop_fusion.py`),
`flowlab_general` (the same loop on the general frame path, fusion switched off) and
`tensorflow_v1`.  Across devices (`cross_device`): a loop `(i, x)` whose body computes
`x * 2 + 1` on /cpu:1 and `* 0.5` on /cpu:0 (a session with two CPU devices), beside
the same graph on one device; `flowlab_2dev` runs the partitions as one plan of
hand-offs with the loop fused (`runtime/task/handoffs.py`), `flowlab_2dev_general`
each partition on the frame path with Send/Recv per iteration (fusion off).  And
`dynamic_rnn`: a forward and gradient step of a BasicRNNCell(16), batch 4, 100 steps,
with the cell on /cpu:1 beside the same on one device (µs per step).  They are timed in interleaved rounds (each round times every peer
in turn, so a burst of machine load is spread over all of them), by wall clock and by
CPU time of the process (TensorFlow's CPU time includes its executor threads').  Per
iteration = (step at n iterations - step at 0 iterations) / n, medians over rounds.

    python benchmarks/while_loop.py [--iters 1000 10000] [--rounds 7] [--calls N] [--no-cross]
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


def build_split(tf, two: bool):
    """The cross-device loop: the body's arithmetic on /cpu:1 (or all on /cpu:0)."""
    n = tf.placeholder(tf.int32, [], name="n")

    def body(i, x):
        with tf.device("/cpu:1" if two else "/cpu:0"):
            y = x * 2.0 + 1.0
        with tf.device("/cpu:0"):
            return i + 1, y * 0.5

    with tf.device("/cpu:0"):
        i, x = tf.while_loop(lambda i, x: i < n, body, [tf.constant(0), tf.constant(1.0)])
    return n, i, x


def make_split_step(tf, cfg, two: bool):
    g = tf.Graph()
    with g.as_default():
        n, i, x = build_split(tf, two)
    sess = tf.Session(graph=g, config=cfg)
    f = sess.make_callable([i, x], [n])
    return sess, lambda v: f(v)[0]


def two_cpus(tf, base=None):
    cfg = base if base is not None else tf.ConfigProto()
    cfg.device_count["CPU"] = 2
    return cfg


def build_rnn(tf, two: bool):
    """A dynamic_rnn step (outputs and gradients) with its cell on /cpu:1 (or /cpu:0)."""
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(4, 100, 8).astype(np.float32))
    device = "/cpu:1" if two else "/cpu:0"

    if tf is fl:
        cells = fl.nn.rnn_cell
    else:  # Keras 3 dropped tf.compat.v1.nn.rnn_cell; the v1 cells live on here
        from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as cells  # type: ignore

    class Cell(cells.BasicRNNCell):
        def __call__(self, *a, **k):
            with tf.device(device):
                return super().__call__(*a, **k)

    with tf.device("/cpu:0"):
        out, _ = tf.nn.dynamic_rnn(Cell(16), x, dtype=tf.float32)
        loss = tf.reduce_sum(out)
        grads = tf.gradients(loss, tf.trainable_variables())
    return [loss] + grads


def make_rnn_step(tf, cfg, two: bool):
    g = tf.Graph()
    with g.as_default():
        fetches = build_rnn(tf, two)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)
    return sess, sess.make_callable(fetches)


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
    ap.add_argument("--no-cross", action="store_true", help="only the single-device loop")
    args = ap.parse_args()
    tf1 = load_tf1()
    sess, f = make_step(fl, None)
    peers: dict[str, Any] = {"flowlab": _fused(True)(f), "flowlab_general": _fused(False)(f)}
    if tf1 is not None:
        tf1.disable_control_flow_v2()
        _, peers["tensorflow_v1"] = make_step(tf1, tf_session_config(tf1, optimizer_off=True))
    out: dict[str, object] = {}
    if not args.no_cross:
        out["cross_device"] = cross_device(tf1, args.iters[0], args.calls, args.rounds)
        out["dynamic_rnn"] = rnn_across(tf1, args.rounds)
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


def cross_device(tf1, iters: int, calls: int, rounds: int) -> dict[str, Any]:
    """The split loop on two devices beside the same on one, interleaved."""
    keep = []
    peers: dict[str, Any] = {}
    for name, two in (("1dev", False), ("2dev", True)):
        sess, f = make_split_step(fl, two_cpus(fl), two)
        keep.append(sess)
        peers[f"flowlab_{name}"] = _fused(True)(f)
        peers[f"flowlab_{name}_general"] = _fused(False)(f)
        if tf1 is not None:
            sess, peers[f"tensorflow_v1_{name}"] = make_split_step(
                tf1, two_cpus(tf1, tf_session_config(tf1, optimizer_off=True)), two)
            keep.append(sess)
    row: dict[str, Any] = bench(peers, iters, calls, rounds)
    per = {k: v["us_per_iteration"] for k, v in row.items()}
    row["ratio_2dev_over_1dev"] = round(per["flowlab_2dev"] / per["flowlab_1dev"], 2)
    row["ratio_2dev_general_over_fused"] = round(per["flowlab_2dev_general"] / per["flowlab_2dev"], 1)
    if tf1 is not None:
        row["ratio_flowlab_2dev_over_tf_2dev"] = round(per["flowlab_2dev"] / per["tensorflow_v1_2dev"], 2)
    return row


def rnn_across(tf1, rounds: int) -> dict[str, Any]:
    """µs per dynamic_rnn step with the cell on /cpu:1 beside on one device."""
    keep = []
    peers: dict[str, Any] = {}
    for name, two in (("1dev", False), ("cell_on_cpu1", True)):
        sess, f = make_rnn_step(fl, two_cpus(fl), two)
        keep.append(sess)
        peers[f"flowlab_{name}"] = f
        if tf1 is not None:
            sess, peers[f"tensorflow_v1_{name}"] = make_rnn_step(tf1, two_cpus(tf1, tf_session_config(tf1)), two)
            keep.append(sess)
    for f in peers.values():
        f()
    samples: dict[str, list[float]] = {k: [] for k in peers}
    for _ in range(rounds):
        for name, f in peers.items():
            t0 = time.perf_counter()
            for _ in range(5):
                f()
            samples[name].append((time.perf_counter() - t0) / 5 * 1e6)
    row: dict[str, Any] = {k: {"step_us": round(statistics.median(v), 1)} for k, v in samples.items()}
    row["ratio_cell_on_cpu1_over_1dev"] = round(
        row["flowlab_cell_on_cpu1"]["step_us"] / row["flowlab_1dev"]["step_us"], 2)
    if tf1 is not None:
        row["tf_ratio_cell_on_cpu1_over_1dev"] = round(
            row["tensorflow_v1_cell_on_cpu1"]["step_us"] / row["tensorflow_v1_1dev"]["step_us"], 2)
    return row


if __name__ == "__main__":
    main()
