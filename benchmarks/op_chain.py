"""op_chain: per-op executor overhead on 1000 chained scalar adds.

flowlab (straight-line plan and the dataflow executor), TensorFlow 1.x with its graph
optimizer off (so it really runs 1000 ops), and the same adds by hand in NumPy.

The graph optimizer's figures: both chains with the optimizer on and off, in flowlab
(OptimizerOptions.L0) and in TensorFlow (L0 and Grappler off):
* `add_chain`: y = x + 1 + 1 ... (CSE merges the 1000 equal constants into one;
  TensorFlow's arithmetic optimizer may also regroup the adds);
* `foldable_chain`: y = x + c0 * 2 + c1 * 2 ... (constant folding removes the 1000
  multiplies).

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


def build_foldable(tf, n: int):
    x = tf.placeholder(tf.float32, [], name="x")
    y = x
    for i in range(n):
        y = tf.add(y, tf.multiply(tf.constant(float(i % 7)), 2.0))
    return x, y


def _expected_foldable(n: int) -> float:
    return float(sum(2.0 * (i % 7) for i in range(n)))


def bench_module(tf, cfg, n: int, calls: int, builder=build, expected=None) -> dict[str, float]:
    g = tf.Graph()
    with g.as_default():
        x, y = builder(tf, n)
    sess = tf.Session(graph=g, config=cfg)
    f = sess.make_callable(y, [x])
    value = np.float32(0.0)
    assert float(f(value)) == (float(n) if expected is None else expected)
    us = per_call_us(lambda: f(value), calls)
    sess.close()
    return {"step_us": us, "us_per_op": us / n}


def fl_config(optimizer_off: bool):
    if not optimizer_off:
        return None
    return fl.ConfigProto(graph_options=fl.GraphOptions(
        optimizer_options=fl.OptimizerOptions(opt_level=fl.OptimizerOptions.L0)))


def optimizer_figures(tf1, n: int, calls: int) -> dict[str, object]:
    """Step time of both chains with each system's optimizer on and off (us_per_op is
    per add of the source program)."""
    out: dict[str, object] = {}
    for chain, builder, expected in (
        ("add_chain", build, float(n)),
        ("foldable_chain", build_foldable, _expected_foldable(n)),
    ):
        fig: dict[str, object] = {}
        for off in (False, True):
            tag = "off" if off else "on"
            fig[f"flowlab_optimizer_{tag}"] = bench_module(fl, fl_config(off), n, calls, builder, expected)
            if tf1 is not None:
                fig[f"tensorflow_optimizer_{tag}"] = bench_module(
                    tf1, tf_session_config(tf1, optimizer_off=off), n, calls, builder, expected
                )
        on, off_ = fig["flowlab_optimizer_on"]["step_us"], fig["flowlab_optimizer_off"]["step_us"]  # type: ignore[index]
        fig["flowlab_speedup_from_optimizer"] = off_ / on
        if tf1 is not None:
            fig["ratio_flowlab_over_tf_optimizer_on"] = on / fig["tensorflow_optimizer_on"]["step_us"]  # type: ignore[index]
            fig["ratio_flowlab_over_tf_optimizer_off"] = off_ / fig["tensorflow_optimizer_off"]["step_us"]  # type: ignore[index]
        out[chain] = fig
    return out


def bench_dataflow(n: int, calls: int, listener: bool) -> dict[str, float]:
    """The same chain on flowlab's dataflow executor (the path taken by plans with
    control flow or several asynchronous ops), with or without an event listener."""
    from flowlab.runtime.task.executor import Execution
    from flowlab.runtime.task.step import Step

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
    out["graph_optimizer"] = optimizer_figures(tf1, args.ops, max(20, args.calls // 2))
    emit("op_chain", out)


if __name__ == "__main__":
    main()
