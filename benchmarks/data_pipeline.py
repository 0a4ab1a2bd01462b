"""data_pipeline: does a tf.data pipeline keep the MLP benchmark's step fed?

The training step of benchmarks/mlp_train.py (784-512-512-10 ReLU MLP, batch 128,
Adam, float32), fed three ways, flowlab beside TensorFlow 1.x graph mode in the same
process:
- `feed_us`: batches fed from NumPy arrays through `make_callable` (the batches are
  sliced beforehand: the step pays for the feed only);
- `pipeline_us`: `get_next()` of `from_tensor_slices((x, y)).shuffle(2048, seed)
  .batch(128, drop_remainder=True).map(scale, num_parallel_calls=2).prefetch(2)`
  wired into the model (no feeds): map after batch, as TensorFlow's performance
  guide advises (one function call per batch);
- `pipeline_elementwise_us`: the same with the map before the batch, as TF1 tutorials
  write it (`shuffle.map.batch`); flowlab runs an element-wise function like this one
  once per batch (flowlab.data.vectorize), TensorFlow once per element in C++;
- `pipeline_per_element_us`: the map before the batch with a function flowlab does not
  vectorize (each row scaled by its own maximum: a reduction), so it runs once per
  element (128 calls per step);
- `pipeline_alone_us`: a step that only fetches `get_next()` of the first pipeline
  (what producing a batch costs when nothing else runs).
`*_ratio` is pipeline / feed; issue 22's target is <= 1.1 for map + shuffle + batch +
prefetch (pipeline_elementwise_ratio).
Figures are medians of µs per step over single steps, the ways taking turns.

    python benchmarks/data_pipeline.py [--steps N] [--rounds R] [--rows N] [--threads T]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, tf_session_config  # noqa: E402
from mlp_train import BATCH, SIZES, data  # noqa: E402

import flowlab as fl  # noqa: E402


def dataset(rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (rows, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], rows).astype(np.int32)
    return x, y


def model(tf: Any, x: Any, y: Any) -> list[Any]:
    _, _, ws = data()
    h = x
    for i, w0 in enumerate(ws):
        w = tf.Variable(w0)
        b = tf.Variable(tf.zeros([w0.shape[1]]))
        h = tf.matmul(h, w) + b
        if i < len(ws) - 1:
            h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
    return [tf.train.AdamOptimizer(1e-3).minimize(loss), loss]


def fed_step(tf: Any, cfg: Any, xs: np.ndarray, ys: np.ndarray) -> Any:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, SIZES[0]])
        y = tf.placeholder(tf.int32, [None])
        fetches = model(tf, x, y)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)
    run = sess.make_callable(fetches, [x, y])
    batches = [((xs[i:i + BATCH] / np.float32(255.0)).astype(np.float32), ys[i:i + BATCH])
               for i in range(0, len(xs) - BATCH + 1, BATCH)]
    pos = [0]

    def step() -> None:
        bx, by = batches[pos[0] % len(batches)]
        pos[0] += 1
        run(bx, by)

    return step


def pipeline_step(tf: Any, cfg: Any, xs: np.ndarray, ys: np.ndarray, elementwise: bool,
                  alone: bool = False, per_row: bool = False) -> Any:
    g = tf.Graph()
    with g.as_default():
        def scale(a: Any, b: Any) -> Any:
            if per_row:
                return a / tf.reduce_max(a), b
            return a / 255.0, b

        ds = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(2048, seed=7)
        if elementwise:
            ds = ds.map(scale, num_parallel_calls=2).batch(BATCH, drop_remainder=True)
        else:
            ds = ds.batch(BATCH, drop_remainder=True).map(scale, num_parallel_calls=2)
        ds = ds.repeat().prefetch(2)
        x, y = tf.data.make_one_shot_iterator(ds).get_next()
        fetches = model(tf, x, y)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)
    run = sess.make_callable([x, y] if alone else fetches)
    return lambda: run()


def bench(tf: Any, cfg: Any, steps: int, rows: int, rounds: int) -> dict[str, float]:
    """Median µs of one step of each way of feeding.  The ways take turns step by step
    (a burst of load on a shared machine hits all of them alike) and the median of
    `steps * rounds` single steps ignores the bursts."""
    xs, ys = dataset(rows)
    ways = {"feed_us": fed_step(tf, cfg, xs, ys),
            "pipeline_us": pipeline_step(tf, cfg, xs, ys, False),
            "pipeline_elementwise_us": pipeline_step(tf, cfg, xs, ys, True),
            "pipeline_per_element_us": pipeline_step(tf, cfg, xs, ys, True, per_row=True),
            "pipeline_alone_us": pipeline_step(tf, cfg, xs, ys, False, alone=True)}
    samples: dict[str, list[float]] = {k: [] for k in ways}
    for fn in ways.values():
        fn()
    for _ in range(steps * rounds):
        for k, fn in ways.items():
            t0 = time.perf_counter()
            fn()
            samples[k].append((time.perf_counter() - t0) * 1e6)
    out = {k: round(statistics.median(v), 1) for k, v in samples.items()}
    out["pipeline_ratio"] = round(out["pipeline_us"] / out["feed_us"], 3)
    out["pipeline_elementwise_ratio"] = round(out["pipeline_elementwise_us"] / out["feed_us"], 3)
    out["pipeline_per_element_ratio"] = round(out["pipeline_per_element_us"] / out["feed_us"], 3)
    return out


def main() -> None:
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20, help="steps per way per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=8192)
    # One BLAS thread by default: the producer thread needs a core too, and on a shared
    # two-core machine two OpenBLAS threads spinning for each other made the plain fed
    # step 7x slower (116 ms instead of 16 ms) and the ratios noise.
    ap.add_argument("--threads", type=int, default=1, help="BLAS / intra-op threads of each")
    args = ap.parse_args()
    threadpool_limits(args.threads)  # NumPy's BLAS, as benchmarks/mlp_train.py
    figures: dict[str, Any] = {"steps": args.steps, "rounds": args.rounds, "rows": args.rows,
                               "batch": BATCH, "threads": args.threads,
                               "load_before": os.getloadavg()[0]}
    figures["flowlab"] = bench(fl, None, args.steps, args.rows, args.rounds)
    tf1 = load_tf1()
    if tf1 is not None:
        cfg = tf_session_config(tf1)
        cfg.intra_op_parallelism_threads = args.threads
        figures["tensorflow"] = bench(tf1, cfg, args.steps, args.rows, args.rounds)
    figures["load_after"] = os.getloadavg()[0]
    emit("data_pipeline", figures)


if __name__ == "__main__":
    main()
