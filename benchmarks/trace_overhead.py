"""trace_overhead: what tracing costs on the mlp_train step (784-512-512-10 MLP, batch
128, Adam) -- untraced, traced per step (FULL_TRACE + RunMetadata, StepStats filled
after every step), and inside `fl.profile(sess)` (events recorded, the trace built once
at the end) -- beside TensorFlow's own FULL_TRACE cost on the same model.

The untraced step takes the straight-line path; a traced one runs on the dataflow
executor, so the dataflow executor with no listener is measured too, to split the
cost into "another execution path" and "recording events".

    python benchmarks/trace_overhead.py [--steps N]
"""

from __future__ import annotations

import os

# One BLAS thread: CPU time then measures the step's work, and the figures do not
# depend on how many cores other processes leave free.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402
from mlp_train import build  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.runtime.step_stats import StepStatsCollector  # noqa: E402


def _interleaved(fns: dict[str, object], steps: int, rounds: int = 7) -> dict[str, float]:
    """Median over `rounds` of the mean ms per step of each function, the functions
    taking turns within a round so that machine noise hits them alike.  CPU time of
    the process (`time.process_time`; BLAS runs on one thread here), which a busy
    shared machine disturbs far less than wall time."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for f in fns.values():
        f()  # type: ignore[operator]
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.process_time()
            for _ in range(steps):
                f()  # type: ignore[operator]
            samples[k].append((time.process_time() - t0) / steps * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def _replay(events: list[object]) -> None:
    listen = StepStatsCollector().listen
    for ev in events:
        listen(ev)


def bench_flowlab(steps: int) -> dict[str, object]:
    from flowlab.runtime.executor import Execution
    from flowlab.runtime.fetches import FetchMapper
    from flowlab.runtime.step import Step

    g, init, fetches, feed = build(fl)
    sess = fl.Session(graph=g)
    sess.run(init)
    feeds = list(feed)
    vals = list(feed.values())
    straight = sess.make_callable(fetches, feeds)
    full = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)
    off = fl.RunOptions()

    def untraced_callable():
        return straight(*vals)

    def untraced_run():
        return sess.run(fetches, feed)

    def no_trace_options():
        return sess.run(fetches, feed, options=off, run_metadata=fl.RunMetadata())

    mapper = FetchMapper(g, fetches)
    plan = sess._plan_for(feeds, mapper.tensors, mapper.targets)

    def dataflow():
        return Execution(plan, Step(sess), vals).run()

    def dataflow_noop_listener():
        return Execution(plan, Step(sess), vals, lambda ev: None).run()

    def dataflow_collector():
        return Execution(plan, Step(sess), vals, StepStatsCollector().listen).run()

    def traced_run():
        md = fl.RunMetadata()
        sess.run(fetches, feed, options=full, run_metadata=md)
        return md

    prof = fl.profile(sess)

    def in_profile():
        with prof:  # entering and leaving only swaps the session's listener
            return sess.run(fetches, feed)

    ms = _interleaved({
        "untraced_callable_ms": untraced_callable, "untraced_run_ms": untraced_run,
        "no_trace_options_ms": no_trace_options, "dataflow_no_listener_ms": dataflow,
        "dataflow_noop_listener_ms": dataflow_noop_listener,
        "dataflow_collector_ms": dataflow_collector,
        "traced_run_metadata_ms": traced_run, "in_profile_ms": in_profile,
    }, steps)
    # The recording alone, without machine noise: one step's real events replayed
    # through a collector's listener.
    events: list[object] = []
    Execution(plan, Step(sess), vals, events.append).run()
    record_us = per_call_us(lambda: _replay(events), 50) / 1.0
    n_steps = len(prof.collector.step_ids())
    t0 = time.perf_counter()
    trace = prof.trace
    build_ms = (time.perf_counter() - t0) * 1e3
    ops_per_step = len(trace.ops) / max(1, len(trace.steps))
    sess.close()
    base = ms["untraced_run_ms"]
    return {
        **ms,
        # all over the untraced sess.run of the same fetches and feeds
        "ratio_traced_run_metadata": ms["traced_run_metadata_ms"] / base,
        "ratio_in_profile": ms["in_profile_ms"] / base,
        "ratio_no_trace_options": ms["no_trace_options_ms"] / base,
        "ratio_dataflow_no_listener": ms["dataflow_no_listener_ms"] / base,
        "ratio_untraced_callable": ms["untraced_callable_ms"] / base,
        "ratio_collector_over_noop_listener": ms["dataflow_collector_ms"] / ms["dataflow_noop_listener_ms"],
        "record_us_per_step": record_us,
        "record_fraction_of_untraced_step": record_us / 1e3 / base,
        "ops_per_step": ops_per_step,
        "profile_steps": n_steps,
        "profile_trace_build_ms_per_step": build_ms / max(1, n_steps),
    }


def bench_off(calls: int) -> dict[str, float]:
    """Tracing off, on a step small enough that a microsecond shows: a plain run, a
    run with RunOptions(NO_TRACE) and a RunMetadata, and a run on a session that has
    been through a profile block (µs of CPU per call, interleaved)."""
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [], name="x")
        y = fl.add(x, 1.0)
    sess = fl.Session(graph=g)
    profiled = fl.Session(graph=g)
    with fl.profile(profiled):
        profiled.run(y, {x: 1.0})
    feed = {x: 1.0}
    off = fl.RunOptions()
    md = fl.RunMetadata()
    ms = _interleaved({
        "plain_run_us": lambda: sess.run(y, feed),
        "no_trace_options_us": lambda: sess.run(y, feed, options=off, run_metadata=md),
        "after_profile_block_us": lambda: profiled.run(y, feed),
    }, calls, rounds=9)
    sess.close()
    profiled.close()
    return {k: v * 1e3 for k, v in ms.items()}


def bench_tf(tf, steps: int) -> dict[str, float]:
    g, init, fetches, feed = build(tf)
    sess = tf.Session(graph=g, config=tf_session_config(tf))
    sess.run(init)
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    untraced = per_call_us(lambda: sess.run(fetches, feed), steps, repeats=3) / 1e3
    traced = per_call_us(lambda: sess.run(fetches, feed, options=full, run_metadata=tf.RunMetadata()),
                         steps, repeats=3) / 1e3
    sess.close()
    return {"untraced_ms": untraced, "traced_ms": traced, "ratio_traced": traced / untraced}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    out: dict[str, object] = {"flowlab": bench_flowlab(args.steps), "tracing_off": bench_off(2000)}
    tf1 = load_tf1()
    if tf1 is not None:
        out["tensorflow"] = bench_tf(tf1, args.steps)
    emit("trace_overhead", out)


if __name__ == "__main__":
    main()
