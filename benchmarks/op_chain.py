"""op_chain: per-op executor overhead on 1000 chained scalar adds.

flowlab (straight-line plan and the dataflow executor), TensorFlow 1.x with its graph
optimizer off (so it really runs 1000 ops), and the same adds by hand in NumPy.

    python benchmarks/op_chain.py [--ops N] [--calls N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402


def build(tf, n: int):
    x = tf.placeholder(tf.float32, [], name="x")
    y = x
    for _ in range(n):
        y = tf.add(y, 1.0)
    return x, y


def bench_module(tf, cfg, n: int, calls: int) -> dict[str, float]:
    g = tf.Graph()
    with g.as_default():
        x, y = build(tf, n)
    sess = tf.Session(graph=g, config=cfg)
    f = sess.make_callable(y, [x])
    value = np.float32(0.0)
    assert float(f(value)) == float(n)
    us = per_call_us(lambda: f(value), calls)
    sess.close()
    return {"step_us": us, "us_per_op": us / n}


def bench_dataflow(n: int, calls: int, listener: bool) -> dict[str, float]:
    """The same chain on flowlab's dataflow executor (the path taken by plans with
    control flow or several asynchronous ops), with or without an event listener."""
    from flowlab.runtime.executor import Execution
    from flowlab.runtime.step import Step

    g = fl.Graph()
    with g.as_default():
        x, y = build(fl, n)
    sess = fl.Session(graph=g)
    plan = sess._plan_for([x], [y], [])
    events = (lambda e: None) if listener else None
    value = np.float32(0.0)

    def step() -> object:
        return Execution(plan, Step(sess), [value], events).run()

    assert float(step()[0]) == float(n)
    us = per_call_us(step, calls)
    sess.close()
    return {"step_us": us, "us_per_op": us / n}


def bench_numpy(n: int, calls: int) -> dict[str, float]:
    one = np.float32(1.0)

    def chain() -> np.float32:
        y = np.float32(0.0)
        for _ in range(n):
            y = np.add(y, one)
        return y

    us = per_call_us(chain, calls)
    return {"step_us": us, "us_per_op": us / n}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--calls", type=int, default=200)
    args = p.parse_args()
    out: dict[str, object] = {
        "ops": args.ops,
        "flowlab": bench_module(fl, None, args.ops, args.calls),
        "flowlab_dataflow_executor": bench_dataflow(args.ops, max(20, args.calls // 5), listener=False),
        "flowlab_dataflow_with_listener": bench_dataflow(args.ops, max(20, args.calls // 5), listener=True),
        "numpy_by_hand": bench_numpy(args.ops, args.calls),
    }
    tf1 = load_tf1()
    if tf1 is not None:
        out["tensorflow_optimizer_off"] = bench_module(tf1, tf_session_config(tf1, optimizer_off=True), args.ops, args.calls)
        out["ratio_flowlab_over_tf_per_op"] = (
            out["flowlab"]["us_per_op"] / out["tensorflow_optimizer_off"]["us_per_op"]  # type: ignore[index]
        )
    emit("op_chain", out)


if __name__ == "__main__":
    main()
