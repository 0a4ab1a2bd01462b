"""figure2_pipeline: the paper's Figure 2 input pipeline, built with queues and with
tf.data, each training a linear model to the end of its epochs -- flowlab beside
TensorFlow 1.x graph mode in the same process.

The pipeline of notebooks/06-input-pipeline.ipynb, larger: CSV files of `x,y` rows ->
reader steps (lines without the header) -> parsing (`decode_csv`) -> preprocessing
(features [x, x^2]) -> a shuffling buffer -> minibatches -> SGD steps.
- `queues`: `string_input_producer(num_epochs)` -> `TextLineReader` -> a
  `RandomShuffleQueue` filled by two queue-runner threads -> `dequeue_up_to(batch)`,
  trained until OutOfRangeError (TF1's queue pipeline, section 3 of the paper);
- `tf_data`: `from_tensor_slices(files).flat_map(TextLineDataset.skip(1))
  .map(parse, num_parallel_calls=2).shuffle(...).repeat(epochs).batch(...).prefetch(2)`,
  the same stages as dataflow ops (a map per line: `decode_csv` of one line is not an
  element-wise function, so flowlab runs it once per element);
- `tf_data_batch_first`: the same with `batch` before the parsing map, as TensorFlow's
  performance guide advises (`decode_csv` parses a whole batch of lines at once).
Figures are examples per second over whole runs (each run reads every epoch), medians
over `--rounds` rounds in which the ways take turns; `*_ratio` is TensorFlow's rate
over flowlab's (above 1: TensorFlow is faster).

    python benchmarks/figure2_pipeline.py [--files N] [--rows N] [--epochs N] [--batch N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402


def write_files(directory: str, files: int, rows: int) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for k in range(files):
        path = os.path.join(directory, f"part{k}.csv")
        with open(path, "w") as f:
            f.write("x,y\n" + "".join(f"{x:.5f},{2 * x + 1:.5f}\n" for x in rng.uniform(-1, 1, rows)))
        paths.append(path)
    return paths


def _train_ops(tf: Any, bx: Any, by: Any) -> Any:
    w = tf.Variable(tf.zeros([2]), name="w")
    b = tf.Variable(0.0, name="b")
    err = tf.reduce_sum(bx * w, axis=1) + b - by
    n = tf.cast(tf.shape(err)[0], tf.float32)
    return tf.group(tf.assign_sub(w, 0.3 * tf.reduce_sum(bx * tf.expand_dims(err, 1), axis=0) / n),
                    tf.assign_sub(b, 0.3 * tf.reduce_sum(err) / n)), b


def queues(tf: Any, cfg: Any, files: list[str], epochs: int, batch: int) -> tuple[int, float]:
    """Steps run and the final bias, training from the queue pipeline to its end."""
    g = tf.Graph()
    with g.as_default():
        filenames = tf.train.string_input_producer(files, num_epochs=epochs, seed=1)
        _, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
        x, y = tf.decode_csv(line, record_defaults=[[0.0], [0.0]])
        examples = tf.RandomShuffleQueue(2000, 200, [tf.float32, tf.float32], shapes=[[2], []], seed=2)
        tf.train.add_queue_runner(tf.train.QueueRunner(examples, [examples.enqueue([tf.stack([x, x * x]), y])] * 2))
        bx, by = examples.dequeue_up_to(batch)
        train, b = _train_ops(tf, bx, by)
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
    with tf.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        steps = 0
        try:
            while True:
                sess.run(train)
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
        return steps, float(sess.run(b))


def tf_data(tf: Any, cfg: Any, files: list[str], epochs: int, batch: int,
            batch_first: bool = False) -> tuple[int, float]:
    g = tf.Graph()
    with g.as_default():
        def parse(line: Any) -> Any:
            x, y = tf.io.decode_csv(line, record_defaults=[[0.0], [0.0]])
            return tf.stack([x, x * x], axis=-1), y

        ds = (tf.data.Dataset.from_tensor_slices(files)
              .flat_map(lambda f: tf.data.TextLineDataset(f).skip(1)))
        if batch_first:
            ds = ds.shuffle(2000, seed=2).repeat(epochs).batch(batch).map(parse, num_parallel_calls=2)
        else:
            ds = ds.map(parse, num_parallel_calls=2).shuffle(2000, seed=2).repeat(epochs).batch(batch)
        bx, by = tf.data.make_one_shot_iterator(ds.prefetch(2)).get_next()
        train, b = _train_ops(tf, bx, by)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        steps = 0
        try:
            while True:
                sess.run(train)
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        return steps, float(sess.run(b))


WAYS = {"queues": queues, "tf_data": tf_data,
        "tf_data_batch_first": lambda tf, cfg, f, e, b: tf_data(tf, cfg, f, e, b, batch_first=True)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--rows", type=int, default=1000, help="rows per file")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    examples = args.files * args.rows * args.epochs
    figures: dict[str, Any] = {"files": args.files, "rows": args.rows, "epochs": args.epochs,
                               "batch": args.batch, "rounds": args.rounds, "examples": examples,
                               "load_before": os.getloadavg()[0]}
    tf1 = load_tf1()
    peers: dict[str, tuple[Any, Any]] = {"flowlab": (fl, None)}
    if tf1 is not None:
        peers["tensorflow"] = (tf1, tf_session_config(tf1))
    rates: dict[str, dict[str, list[float]]] = {p: {w: [] for w in WAYS} for p in peers}
    biases: dict[str, dict[str, float]] = {p: {} for p in peers}
    with tempfile.TemporaryDirectory() as d:
        files = write_files(d, args.files, args.rows)
        for _ in range(args.rounds):
            for way, run in WAYS.items():
                for peer, (tf, cfg) in peers.items():
                    t0 = time.perf_counter()
                    steps, b = run(tf, cfg, files, args.epochs, args.batch)
                    rates[peer][way].append(examples / (time.perf_counter() - t0))
                    assert steps == -(-examples // args.batch) or way == "queues", (peer, way, steps)
                    biases[peer][way] = round(b, 4)
    for peer in peers:
        figures[peer] = {f"{way}_examples_per_s": round(statistics.median(r)) for way, r in rates[peer].items()}
        figures[peer]["final_bias"] = biases[peer]  # the model learns y = 2x + 1: b -> 1
    if "tensorflow" in figures:
        figures["tensorflow_over_flowlab"] = {
            way: round(figures["tensorflow"][f"{way}_examples_per_s"] / figures["flowlab"][f"{way}_examples_per_s"], 2)
            for way in WAYS}
    figures["load_after"] = os.getloadavg()[0]
    emit("figure2_pipeline", figures)


if __name__ == "__main__":
    main()
