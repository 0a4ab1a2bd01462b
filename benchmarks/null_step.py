"""null_step: the cost of a cached step that fetches `assign_add` on a scalar variable.

Measures `Session.run` and `Session.make_callable` for flowlab and, when installed,
TensorFlow 1.x graph mode (tf.compat.v1), in the same process.  Also checks that
100,000 cached steps do not grow resident memory.

    python benchmarks/null_step.py [--calls N] [--memory-steps N]
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402


def bench(tf, cfg, calls: int) -> dict[str, float]:
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(0.0, name="v")
        inc = tf.assign_add(v, 1.0)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)
    run_us = per_call_us(lambda: sess.run(inc), calls)
    f = sess.make_callable(inc)
    callable_us = per_call_us(f, calls)
    total = float(sess.run(v))
    sess.close()
    return {"run_us": run_us, "make_callable_us": callable_us, "final_value": total}


def rss_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_check(steps: int) -> dict[str, float]:
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(0.0, name="v")
        inc = fl.assign_add(v, 1.0)
        init = fl.global_variables_initializer()
    with fl.Session(graph=g) as sess:
        sess.run(init)
        f = sess.make_callable(inc)
        for _ in range(10_000):  # warm up allocator pools
            sess.run(inc)
            f()
        before = rss_kib()
        for _ in range(steps // 2):
            sess.run(inc)
            f()
        after = rss_kib()
        value = float(sess.run(v))
    return {"steps": steps, "rss_before_kib": before, "rss_after_kib": after,
            "rss_growth_kib": after - before, "value": value}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--memory-steps", type=int, default=100_000)
    args = p.parse_args()
    out: dict[str, object] = {"flowlab": bench(fl, None, args.calls)}
    tf1 = load_tf1()
    if tf1 is not None:
        out["tensorflow"] = bench(tf1, tf_session_config(tf1), args.calls)
        t, f = out["tensorflow"], out["flowlab"]
        out["ratio_run_tf_over_flowlab"] = t["run_us"] / f["run_us"]  # type: ignore[index]
        out["ratio_callable_tf_over_flowlab"] = t["make_callable_us"] / f["make_callable_us"]  # type: ignore[index]
    if args.memory_steps:
        out["memory"] = memory_check(args.memory_steps)
    emit("null_step", out)


if __name__ == "__main__":
    main()
