"""graphdef_export: how long a 2,000-op graph takes to become TensorFlow's GraphDef proto.

Builds a graph of about 2,000 ops (dense layers with biases and activations, their
variables and initializers, a loss) and times, median of repeats:
`as_graph_def(add_shapes=True)` (flowlab's JSON dict), `to_proto` (the dict -> the
`graph_pb2.GraphDef` message, what `FileWriter.add_graph` writes) and the whole
`to_proto(graph)` + `SerializeToString()`; TensorFlow's `as_graph_def(add_shapes=True)`
+ serialization of the same program beside it when installed.  Target: < 0.5 s.

    python benchmarks/graphdef_export.py [--ops 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.graph.graph_def_pb import to_proto  # noqa: E402


def build(tf, target_ops: int):
    g = tf.Graph()
    with g.as_default():
        h = tf.placeholder(tf.float32, [None, 16], name="x")
        i = 0
        while len(g.get_operations()) < target_ops:
            with tf.variable_scope(f"layer{i}"):
                w = tf.get_variable("w", [16, 16], initializer=tf.glorot_uniform_initializer())
                b = tf.get_variable("b", [16], initializer=tf.zeros_initializer())
                h = tf.nn.relu(tf.matmul(h, w) + b)
                h = tf.identity(tf.reshape(h, [-1, 16]) * 0.5, name="out")
            i += 1
        tf.reduce_mean(tf.square(h), name="loss")
    return g


def median_s(fn, repeats: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args()
    g = build(fl, a.ops)
    gd = g.as_graph_def(add_shapes=True)
    figures = {
        "ops": len(g.get_operations()),
        "flowlab_as_graph_def_s": median_s(lambda: g.as_graph_def(add_shapes=True), a.repeats),
        "flowlab_dict_to_proto_s": median_s(lambda: to_proto(gd), a.repeats),
        "flowlab_graph_to_proto_bytes_s": median_s(lambda: to_proto(g).SerializeToString(), a.repeats),
        "proto_bytes": len(to_proto(g).SerializeToString()),
        "target_s": 0.5,
    }
    tf1 = load_tf1()
    if tf1 is not None:
        tg = build(tf1, a.ops)
        figures["tensorflow_ops"] = len(tg.get_operations())
        figures["tensorflow_as_graph_def_bytes_s"] = median_s(
            lambda: tg.as_graph_def(add_shapes=True).SerializeToString(), a.repeats)
    emit("graphdef_export", figures)


if __name__ == "__main__":
    main()
