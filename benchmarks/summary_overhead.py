"""summary_overhead: what logging a scalar and a histogram every step adds to training.

A 200-step loop trains a two-layer MLP (batch 64, 784 -> 256 -> 10, SGD) three ways,
interleaved over rounds so that machine noise hits each alike; median wall time of
each way:

- "plain": `sess.run(train, feed)`;
- "computed": `sess.run([train, merged], feed)`, `merged` holding
  `tf.summary.scalar("loss")` and `tf.summary.histogram` of the first layer's weights
  (200,704 values): the summary ops' own cost, in the step;
- "written": the same + `writer.add_summary(s, step)`, through a FileWriter whose
  background thread writes and flushes (flush_secs=120, max_queue=10, TensorFlow's
  defaults);
- TensorFlow 1.x doing the same, when installed.

`writing_overhead_pct` = written / computed - 1: what writing the events adds
(the issue's target: at most 5%); `total_overhead_pct` = written / plain - 1 also
counts building the histogram in the step, which costs TensorFlow about as much.

    python benchmarks/summary_overhead.py [--steps 200] [--rounds 5] [--flowlab-only]

`--flowlab-only` leaves TensorFlow out of the process (importing it changes the
process's thread pools, which on a small shared machine slows flowlab's steps).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1  # noqa: E402

import flowlab as fl  # noqa: E402


def setup(tf, logdir: str):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w1 = tf.Variable(tf.random_normal([784, 256], stddev=0.05), name="w1")
        w2 = tf.Variable(tf.random_normal([256, 10], stddev=0.05), name="w2")
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        tf.summary.scalar("loss", loss)
        tf.summary.histogram("w1", w1)
        merged = tf.summary.merge_all()
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    writer = tf.summary.FileWriter(logdir, g)
    return sess, x, y, train, merged, writer


def loop(tf, state, steps: int, mode: str, batches) -> float:
    sess, x, y, train, merged, writer = state
    t0 = time.perf_counter()
    for step in range(steps):
        bx, by = batches[step % len(batches)]
        if mode == "plain":
            sess.run(train, {x: bx, y: by})
        else:
            _, s = sess.run([train, merged], {x: bx, y: by})
            if mode == "written":
                writer.add_summary(s, step)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--flowlab-only", action="store_true")
    a = p.parse_args()
    rs = np.random.RandomState(0)
    batches = [(rs.rand(64, 784).astype(np.float32), rs.randint(0, 10, 64)) for _ in range(10)]
    peers = {"flowlab": fl}
    tf1 = None if a.flowlab_only else load_tf1()
    if tf1 is not None:
        peers["tensorflow"] = tf1
    figures = {"steps": a.steps, "rounds": a.rounds}
    with tempfile.TemporaryDirectory() as d:
        for name, tf in peers.items():
            state = setup(tf, f"{d}/{name}")
            for mode in ("plain", "computed", "written"):
                loop(tf, state, 20, mode, batches)  # warm: plans cached, first flush done
            times: dict[str, list[float]] = {"plain": [], "computed": [], "written": []}
            for _ in range(a.rounds):
                for mode in times:
                    times[mode].append(loop(tf, state, a.steps, mode, batches))
            state[-1].close()
            state[0].close()
            med = {m: statistics.median(v) for m, v in times.items()}
            figures[name] = {
                **{f"{m}_s": v for m, v in med.items()},
                "writing_overhead_pct": 100 * (med["written"] / med["computed"] - 1),
                "total_overhead_pct": 100 * (med["written"] / med["plain"] - 1),
                "all_s": times,
            }
    emit("summary_overhead", figures)


if __name__ == "__main__":
    main()
