"""random_ops: one run of random_normal / truncated_normal / random_uniform of 2**20
values, float32 and float64 -- flowlab beside TensorFlow 1.x graph mode (same seeds,
the same bits), timed in interleaved rounds (_rounds.py).

flowlab's float64 normals call the C library's log/sin/cos value by value (as
TensorFlow's kernel does) so that their bits do not depend on the CPU's vector units;
this is the figure that says what that costs.

    python benchmarks/random_ops.py [--calls N] [--rounds R] [--size N]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, tf_session_config  # noqa: E402
from _rounds import interleaved_ms, ratios  # noqa: E402


def step(tf: Any, cfg: Any, fn: str, dtype: str, size: int) -> Callable[[], Any]:
    g = tf.Graph()
    with g.as_default():
        y = getattr(tf, fn)([size], dtype=getattr(tf, dtype), seed=1)
    sess = tf.Session(graph=g, config=cfg)
    run = sess.make_callable(y)
    return run


def main() -> None:
    import flowlab as fl

    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--size", type=int, default=1 << 20)
    args = p.parse_args()
    tf1 = load_tf1()
    out: dict[str, Any] = {"size": args.size, "load_before": os.getloadavg()[0]}
    for fn in ("random_normal", "truncated_normal", "random_uniform"):
        for dtype in ("float32", "float64"):
            peers = {"flowlab": step(fl, None, fn, dtype, args.size)}
            if tf1 is not None:
                peers["tensorflow"] = step(tf1, tf_session_config(tf1), fn, dtype, args.size)
            case: dict[str, Any] = interleaved_ms(peers, args.calls, args.rounds)
            ratios(case, ["tensorflow"])
            out[f"{fn}_{dtype}"] = case
    out["load_after"] = os.getloadavg()[0]
    emit("random_ops", out)


if __name__ == "__main__":
    main()
