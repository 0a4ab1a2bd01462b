"""stepper: how fast the Stepper reaches a planted NaN (target: under a second for a
500-op graph).

The graph is a chain of `--ops` elementwise ops on a float32 vector with a NaN planted
at 80% of the way (a sqrt of a negative number).  Figures: the Stepper with
`stop_on_nan_or_inf` from construction to the stop (cold: the plan is compiled first;
warm: the session already has it), the same step run whole by `Session.run` for scale,
and TensorFlow 1.x's way to find the first NaN (`add_check_numerics_ops`, then a run
that fails at the first CheckNumerics) when TensorFlow is installed.  The same chain
split over `--devices` CPUs is stepped partition by partition too (Send/Recv pairs
included).

    python benchmarks/stepper.py [--ops N] [--size N] [--devices N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.debug import Stepper  # noqa: E402


def build(tf, n: int, size: int, devices: int = 1):
    """The chain; with `devices` > 1, op i is pinned to /cpu:(i * devices // n), so the
    step has `devices` partitions joined by Send/Recv pairs."""
    x = tf.placeholder(tf.float32, [size], name="x")
    y = x
    plant = int(n * 0.8)
    for i in range(n):
        with tf.device(f"/cpu:{i * devices // n}" if devices > 1 else None):
            if i == plant:
                y = tf.sqrt(y - 1.0, name="planted")  # y is ~0.001 * i < 1 here: NaN
            else:
                y = y + 0.001
    return x, y


def _median_ms(fn, repeats: int = 7) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def bench_flowlab(n: int, size: int, devices: int = 1) -> dict[str, float]:
    g = fl.Graph()
    with g.as_default():
        x, y = build(fl, n, size, devices)
    sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": devices}))
    feed = {x: np.zeros(size, np.float32)}

    def to_nan() -> Stepper:
        st = Stepper(sess, y, feed, stop_on_nan_or_inf=True)
        st.continue_()
        return st

    t0 = time.perf_counter()
    st = to_nan()
    cold = (time.perf_counter() - t0) * 1e3
    assert st.stop.op == "planted", st.stop
    assert st.partitioned == (devices > 1)
    ops_run = len(st.ran())
    warm = _median_ms(to_nan)
    run = _median_ms(lambda: sess.run(y, feed))
    sess.close()
    return {
        "stepper_to_first_nan_cold_ms": cold,
        "stepper_to_first_nan_warm_ms": warm,
        "ops_run_before_stop": ops_run,
        "stepper_us_per_op": warm * 1e3 / ops_run,
        "session_run_whole_step_ms": run,
    }


def bench_tf(tf1, n: int, size: int) -> dict[str, float]:
    g = tf1.Graph()
    with g.as_default():
        x, y = build(tf1, n, size)
        check = tf1.add_check_numerics_ops()
    sess = tf1.Session(graph=g)
    feed = {x: np.zeros(size, np.float32)}

    def to_nan() -> str:
        try:
            sess.run([y, check], feed)
        except tf1.errors.InvalidArgumentError as e:
            return e.message
        raise AssertionError("no NaN found")

    t0 = time.perf_counter()
    msg = to_nan()
    cold = (time.perf_counter() - t0) * 1e3
    assert "planted" in msg, msg[:200]
    warm = _median_ms(to_nan)
    sess.close()
    return {"check_numerics_to_first_nan_cold_ms": cold, "check_numerics_to_first_nan_warm_ms": warm}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=500)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--devices", type=int, default=4,
                   help="also step the chain split over this many CPUs, partition by partition")
    args = p.parse_args()
    out: dict[str, object] = {"ops": args.ops, "size": args.size}
    out["flowlab"] = fl_fig = bench_flowlab(args.ops, args.size)
    out["target_met"] = fl_fig["stepper_to_first_nan_cold_ms"] < 1000.0
    if args.devices > 1:
        out[f"flowlab_{args.devices}_partitions"] = part = bench_flowlab(args.ops, args.size, args.devices)
        out["partitioned_target_met"] = part["stepper_to_first_nan_cold_ms"] < 1000.0
    tf1 = load_tf1()
    if tf1 is not None:
        out["tensorflow"] = tf_fig = bench_tf(tf1, args.ops, args.size)
        out["ratio_stepper_over_tf_check_numerics_warm"] = (
            fl_fig["stepper_to_first_nan_warm_ms"] / tf_fig["check_numerics_to_first_nan_warm_ms"]
        )
    emit("stepper", out)


if __name__ == "__main__":
    main()
