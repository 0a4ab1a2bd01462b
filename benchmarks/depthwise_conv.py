"""depthwise_conv: forward and backward (input and filter gradients) of one depthwise
3x3 convolution, MobileNet-sized: batch 16, 28x28x64, channel multiplier 1, SAME,
stride 1 and 2, float32 -- flowlab beside TensorFlow 1.x graph mode, same process,
same data, same number of threads, timed in interleaved rounds (_rounds.py).

    python benchmarks/depthwise_conv.py [--calls N] [--rounds R] [--threads T]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, tf_session_config  # noqa: E402
from _rounds import interleaved_ms, ratios  # noqa: E402

SHAPE = (16, 28, 28, 64)
FILTER = (3, 3, 64, 1)


def step(tf: Any, cfg: Any, stride: int) -> Callable[[], Any]:
    rng = np.random.default_rng(0)
    x_val = rng.standard_normal(SHAPE).astype(np.float32)
    f_val = (rng.standard_normal(FILTER) * 0.3).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, SHAPE)
        f = tf.constant(f_val)
        y = tf.nn.depthwise_conv2d(x, f, [1, stride, stride, 1], "SAME")
        gx, gf = tf.gradients(tf.reduce_sum(y * y), [x, f])
    sess = tf.Session(graph=g, config=cfg)
    run = sess.make_callable([y, gx, gf], [x])
    return lambda: run(x_val)


def main() -> None:
    from threadpoolctl import threadpool_limits

    import flowlab as fl

    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    threadpool_limits(args.threads)
    tf1 = load_tf1()
    out: dict[str, Any] = {"threads": args.threads, "load_before": os.getloadavg()[0]}
    for stride in (1, 2):
        peers = {"flowlab": step(fl, None, stride)}
        if tf1 is not None:
            cfg = tf_session_config(tf1)
            cfg.intra_op_parallelism_threads = args.threads
            peers["tensorflow"] = step(tf1, cfg, stride)
        a, b = (fn() for fn in peers.values()) if len(peers) == 2 else (None, None)
        if a is not None:
            out[f"stride{stride}_max_abs_diff"] = float(max(np.abs(u - v).max() for u, v in zip(a, b)))
        res: dict[str, Any] = interleaved_ms(peers, args.calls, args.rounds)
        ratios(res, ["tensorflow"])
        out[f"stride{stride}"] = res
    out["load_after"] = os.getloadavg()[0]
    emit("depthwise_conv", out)


if __name__ == "__main__":
    main()
