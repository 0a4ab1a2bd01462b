"""Figure 9's shape: full versus sampled softmax throughput of a small language model
as the parameter-server tasks go 1 -> 2 -> 4.

    python benchmarks/sampled_softmax_ps.py [--ps 1,2,4] [--steps 30] [--batch 128]
        [--dim 64] [--num-sampled 64] [--figure docs/figures/sampled_softmax_ps.png]
        [--skip-tf]

The corpus is the docstrings of Python's own standard library (every module, class and
function docstring that `ast` finds under `sysconfig.get_paths()["stdlib"]`, tests
left out): real English text that ships with every Python, nothing downloaded.  Its
lower-cased words make the vocabulary (about 9,500 words); the model predicts the next
word from the current one: an embedding [V, dim] and softmax weights [V, dim] plus
biases, each split over the ps tasks by `fixed_size_partitioner(P)`, Adagrad.

- full: the logits of all V words, each shard's part computed on its own ps task
  (a MatMul colocated with the shard), concatenated on the worker, and the gradients
  colocated with their ops (`colocate_gradients_with_ops=True`), so the dense
  [V/P, dim] gradient is made and applied on the ps that holds the shard;
- sampled: `nn.sampled_softmax_loss` over the partitioned weights with
  `--num-sampled` log-uniform candidates: only the sampled rows cross, as sparse
  (IndexedSlices) updates.

One worker client drives the steps (the ps tasks are what varies); printed per system
and P: words per second (median of the steps) for both, and the ratio sampled / full.
TensorFlow runs the same program on tf.distribute.Server processes with the same
ClusterSpec shape, in the same run; ratios flowlab / TensorFlow are printed too.  On a
2-core machine the ps tasks cannot add compute, so the full softmax cannot speed up
with P here as it does in the paper; what does show is the gap between the two and
how each pays for more tasks.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import _CHILD_RESULT, emit, load_tf1, save_figure  # noqa: E402
from backup_workers import FIGURES, ROOT  # noqa: E402
from distributed_steps import _TF_SERVER, free_ports  # noqa: E402

import flowlab as fl  # noqa: E402


def corpus() -> tuple[list[str], np.ndarray]:
    """The vocabulary (most frequent first) and the corpus as word ids."""
    root = sysconfig.get_paths()["stdlib"]
    docs = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in ("site-packages", "test", "tests", "idle_test"))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            try:
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    s = ast.get_docstring(node)
                    if s:
                        docs.append(s)
    words = re.findall(r"[a-z]+", " ".join(docs).lower())
    vocab = [w for w, _ in collections.Counter(words).most_common()]
    index = {w: i for i, w in enumerate(vocab)}
    return vocab, np.array([index[w] for w in words], np.int64)


def build(tf: Any, vocab: int, ps: int, dim: int, mode: str, num_sampled: int) -> dict[str, Any]:
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        with tf.device(tf.train.replica_device_setter(ps_tasks=ps, worker_device="/job:worker/task:0")):
            part = tf.fixed_size_partitioner(ps)
            emb = tf.get_variable("emb", [vocab, dim], initializer=tf.random_uniform_initializer(-0.1, 0.1),
                                  partitioner=part, use_resource=False)
            sm_w = tf.get_variable("sm_w", [vocab, dim], initializer=tf.truncated_normal_initializer(stddev=0.05),
                                   partitioner=part, use_resource=False)
            sm_b = tf.get_variable("sm_b", [vocab], initializer=tf.zeros_initializer(), use_resource=False)
            x = tf.placeholder(tf.int64, [None], name="x")
            y = tf.placeholder(tf.int64, [None], name="y")
            h = tf.nn.embedding_lookup(emb, x)
            if mode == "full":
                shards = list(sm_w)
                logits_parts = []
                for shard in shards:
                    with tf.device(shard.device):
                        logits_parts.append(tf.matmul(h, shard, transpose_b=True))
                logits = tf.concat(logits_parts, 1) + sm_b
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            else:
                loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(
                    weights=sm_w, biases=sm_b, labels=tf.reshape(y, [-1, 1]), inputs=h,
                    num_sampled=num_sampled, num_classes=vocab))
            gs = tf.train.get_or_create_global_step()
            train = tf.train.AdagradOptimizer(0.2).minimize(loss, global_step=gs,
                                                            colocate_gradients_with_ops=True)
        init = tf.global_variables_initializer()
    return {"graph": g, "train": train, "loss": loss, "x": x, "y": y, "init": init}


class _TensorFlowServers:
    """tf.distribute.Server processes for ps/0..P-1 and worker/0 on 127.0.0.1."""

    def __init__(self, ps: int) -> None:
        ports = free_ports(ps + 1)
        self.spec = {"ps": [f"127.0.0.1:{p}" for p in ports[:ps]], "worker": [f"127.0.0.1:{ports[ps]}"]}
        self.procs = [subprocess.Popen([sys.executable, "-c", _TF_SERVER, json.dumps(self.spec), job, str(i)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                      for job in ("ps", "worker") for i in range(len(self.spec[job]))]
        time.sleep(2.0)

    def target(self) -> str:
        return "grpc://" + self.spec["worker"][0]

    def close(self) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


class _FlowlabCluster:
    def __init__(self, ps: int) -> None:
        import flowlab.distributed as fd

        self.cluster = fd.LocalCluster(ps=ps, worker=1)

    def target(self) -> str:
        return f"{self.cluster.target}/job:worker/task:0"

    def close(self) -> None:
        self.cluster.close()


def words_per_s(tf: Any, target: str, model: dict[str, Any], ids: np.ndarray, steps: int, batch: int
                ) -> tuple[float, float, float]:
    rng = np.random.default_rng(0)
    with tf.Session(target, graph=model["graph"]) as s:
        s.run(model["init"])

        def feed() -> dict[Any, np.ndarray]:
            at = rng.integers(0, len(ids) - 1, batch)
            return {model["x"]: ids[at], model["y"]: ids[at + 1]}

        first = float(s.run([model["train"], model["loss"]], feed())[1])
        s.run(model["train"], feed())
        times = []
        for _ in range(steps):
            f = feed()
            t0 = time.perf_counter()
            s.run(model["train"], f)
            times.append(time.perf_counter() - t0)
        last = float(s.run(model["loss"], feed()))
    return batch / statistics.median(times), first, last


def draw(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ps = result["ps"]
    for name, ls in (("flowlab", "-"), ("tensorflow", "--")):
        if name not in result:
            continue
        for mode, marker in (("full", "o"), ("sampled", "s")):
            ax.plot(ps, [r[f"{mode}_words_per_s"] for r in result[name]], ls, marker=marker,
                    label=f"{name} {mode}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ps)
    ax.set_xticklabels([str(p) for p in ps])
    ax.set_yscale("log")
    ax.set_xlabel("parameter-server tasks")
    ax.set_ylabel("words / second")
    ax.set_title(f"next-word model, V = {result['vocab']}, dim {result['dim']}", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ps", default="1,2,4")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--num-sampled", type=int, default=64)
    p.add_argument("--figure", default=os.path.join(FIGURES, "sampled_softmax_ps.png"))
    p.add_argument("--skip-tf", action="store_true")
    args = p.parse_args()
    vocab, ids = corpus()
    ps_list = [int(v) for v in args.ps.split(",")]
    systems: list[tuple[str, Any, Any]] = [("flowlab", fl, _FlowlabCluster)]
    tf1 = None if args.skip_tf else load_tf1()
    if tf1 is not None:
        systems.append(("tensorflow", tf1, _TensorFlowServers))
    result: dict[str, Any] = {"corpus": "Python standard library docstrings", "corpus_words": int(len(ids)),
                              "vocab": len(vocab), "dim": args.dim, "batch": args.batch,
                              "num_sampled": args.num_sampled, "ps": ps_list, "machine_load": os.getloadavg()[0]}
    for name, _, _ in systems:
        result[name] = []
    for ps in ps_list:
        for name, tf, make in systems:
            cluster = make(ps)
            try:
                row: dict[str, Any] = {"ps": ps}
                for mode in ("full", "sampled"):
                    model = build(tf, len(vocab), ps, args.dim, mode, args.num_sampled)
                    wps, first, last = words_per_s(tf, cluster.target(), model, ids, args.steps, args.batch)
                    row[f"{mode}_words_per_s"] = round(wps, 1)
                    row[f"{mode}_loss_first_last"] = [round(first, 3), round(last, 3)]
                    if name == "tensorflow":
                        tf.Session.reset(cluster.target())
                row["sampled_over_full"] = round(row["sampled_words_per_s"] / row["full_words_per_s"], 2)
                result[name].append(row)
            finally:
                cluster.close()
    if tf1 is not None:
        result["flowlab_over_tensorflow_words_per_s"] = [
            {m: round(a[f"{m}_words_per_s"] / t[f"{m}_words_per_s"], 3) for m in ("full", "sampled")}
            for a, t in zip(result["flowlab"], result["tensorflow"])]
    if args.figure and not os.environ.get(_CHILD_RESULT):   # the oneDNN-off child run draws nothing
        draw(result, args.figure)
        result["figure"] = os.path.relpath(args.figure, ROOT)
    emit("sampled_softmax_ps", result)


if __name__ == "__main__":
    main()
