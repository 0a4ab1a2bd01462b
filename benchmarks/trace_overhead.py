"""trace_overhead: what tracing costs on the mlp_train step (784-512-512-10 MLP, batch
128, Adam) -- untraced, traced per step (FULL_TRACE + RunMetadata, StepStats filled
after every step), and inside `fl.profile(sess)` (events recorded, the trace built once
at the end) -- beside TensorFlow's own FULL_TRACE cost on the same model.

An untraced step runs the plan's generated straight-line function; a traced one runs
its recording twin (`Plan.traced_line()`) when every listener takes records (the
StepStats collector does), and the dataflow executor otherwise.  The dataflow paths
are measured too (no listener, a do-nothing listener, the collector as a plain
listener), to split the cost into "another execution path" and "recording".

Every variant runs `--steps` steps per round, the variants taking turns within a round
(`_rounds.interleaved_ms`), for `--rounds` rounds; each step's wall and CPU time are
taken.  Ratios are the median over rounds of (variant / untraced `sess.run`) within
the round, so that a burst of load hits both sides of a ratio alike.

    python benchmarks/trace_overhead.py [--steps N] [--rounds R] [--no-tf] [--variants a,b]
    python benchmarks/trace_overhead.py --loops [--iters N] [--steps N] [--rounds R] [--no-tf]

`--loops` times loop steps instead: a scalar while_loop and dynamic_rnn's step,
untraced and traced, flowlab (a traced step keeps the fused loops: their recording
twins, `loop_fusion.recording_twin`), flowlab's frame path traced (fusion off) and
TensorFlow's FULL_TRACE (v1 control flow, graph optimizer off), interleaved.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402
from _rounds import interleaved_ms  # noqa: E402
from mlp_train import build  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.runtime.client.step_stats import StepStatsCollector  # noqa: E402

BASE = "untraced_run"


def timed_rounds(fns: dict[str, Callable[[], Any]], steps: int, rounds: int) -> dict[str, Any]:
    """Per variant: median wall and CPU ms per step over the rounds, and the median over
    rounds of its ratio to `BASE` in the same round (wall and CPU)."""
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}

    def clocked(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        w, c = wall[name], cpu[name]

        def call() -> Any:
            c0, w0 = time.process_time(), time.perf_counter()
            r = fn()
            w.append(time.perf_counter() - w0)
            c.append(time.process_time() - c0)
            return r

        return call

    interleaved_ms({k: clocked(k, f) for k, f in fns.items()}, steps, rounds)

    def per_round(samples: list[float]) -> list[float]:
        samples = samples[1:]  # interleaved_ms calls each once before the rounds
        return [sum(samples[r * steps:(r + 1) * steps]) / steps * 1e3 for r in range(rounds)]

    out: dict[str, Any] = {}
    rw = {k: per_round(v) for k, v in wall.items()}
    rc = {k: per_round(v) for k, v in cpu.items()}
    for k in fns:
        out[k] = {
            "wall_ms": statistics.median(rw[k]), "cpu_ms": statistics.median(rc[k]),
            "ratio_wall": statistics.median(a / b for a, b in zip(rw[k], rw[BASE])),
            "ratio_cpu": statistics.median(a / b for a, b in zip(rc[k], rc[BASE])),
        }
    return out


def _events_only() -> Callable[[Any], None]:
    """A new collector's listener as a plain function: it gets events, not records."""
    listen = StepStatsCollector().listen
    return lambda ev: listen(ev)


class _Capture:
    """A listener taking records that keeps one step's records, outputs included."""

    def __init__(self) -> None:
        self.rec: Any = None
        self.outputs: Any = None

        def listen(ev: Any) -> None:
            pass

        def take(rec: Any) -> None:
            self.rec, self.outputs = rec, rec.outputs

        listen.take_records = take  # type: ignore[attr-defined]
        self.listen = listen


def bench_flowlab(steps: int, rounds: int, only: list[str] | None = None) -> dict[str, Any]:
    from flowlab.runtime.client.fetches import FetchMapper
    from flowlab.runtime.task.executor import Execution
    from flowlab.runtime.task.step import Step

    g, init, fetches, feed = build(fl)
    sess = fl.Session(graph=g)
    sess.run(init)
    feeds = list(feed)
    vals = list(feed.values())
    straight = sess.make_callable(fetches, feeds)
    full = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)
    off = fl.RunOptions()
    mapper = FetchMapper(g, fetches)
    plan = sess._plan_for(feeds, mapper.tensors, mapper.targets)

    def traced_run() -> Any:
        md = fl.RunMetadata()
        sess.run(fetches, feed, options=full, run_metadata=md)
        return md

    prof = fl.profile(sess)

    def in_profile() -> Any:
        with prof:  # entering and leaving only swaps the session's listener
            return sess.run(fetches, feed)

    variants: dict[str, Callable[[], Any]] = {
        BASE: lambda: sess.run(fetches, feed),
        "untraced_callable": lambda: straight(*vals),
        "no_trace_options": lambda: sess.run(fetches, feed, options=off, run_metadata=fl.RunMetadata()),
        "traced_run_metadata": traced_run,
        "in_profile": in_profile,
        # The traced straight-line function with the collector, without the session.
        "traced_line_collector": lambda: Execution(plan, Step(sess), vals, StepStatsCollector().listen).run(),
        # The dataflow executor: no listener, one that does nothing, the collector's
        # events (a plain function: it does not take records).
        "dataflow_no_listener": lambda: Execution(plan, Step(sess), vals).run(),
        "dataflow_noop_listener": lambda: Execution(plan, Step(sess), vals, lambda ev: None).run(),
        "dataflow_collector_events": lambda: Execution(plan, Step(sess), vals, _events_only()).run(),
    }
    if only:
        variants = {k: f for k, f in variants.items() if k == BASE or k in only}
    figures = timed_rounds(variants, steps, rounds)
    # What recording adds, without machine noise: one step's records handed to a new
    # collector, and one step's 2 events per op replayed through its listener.
    cap = _Capture()
    Execution(plan, Step(sess), vals, cap.listen).run()

    def take_one() -> None:
        cap.rec.outputs = cap.outputs
        StepStatsCollector().listen.take_records(cap.rec)  # type: ignore[attr-defined]

    events: list[Any] = []
    Execution(plan, Step(sess), vals, events.append).run()

    def replay() -> None:
        listen = StepStatsCollector().listen
        for ev in events:
            listen(ev)

    take_us = per_call_us(take_one, 50)
    replay_us = per_call_us(replay, 50)
    n_steps = len(prof.collector.step_ids())
    t0 = time.perf_counter()
    trace = prof.trace
    build_ms = (time.perf_counter() - t0) * 1e3
    sess.close()
    base_ms = figures[BASE]["wall_ms"]
    return {
        "variants": figures,
        **{f"ratio_{v}": {k: figures[v][k] for k in ("ratio_wall", "ratio_cpu")}
           for v in ("traced_run_metadata", "in_profile") if v in figures},
        "take_records_us_per_step": take_us,
        "take_records_fraction_of_untraced_step": take_us / 1e3 / base_ms,
        "event_replay_us_per_step": replay_us,
        "ops_per_step": len(trace.ops) / max(1, len(trace.steps)),
        "profile_steps": n_steps,
        "profile_trace_build_ms_per_step": build_ms / max(1, n_steps),
    }


def bench_off(calls: int, rounds: int) -> dict[str, float]:
    """Tracing off, on a step small enough that a microsecond shows: a plain run, a
    run with RunOptions(NO_TRACE) and a RunMetadata, and a run on a session that has
    been through a profile block (µs per call, median of interleaved rounds)."""
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
    ms = interleaved_ms({
        "plain_run_us": lambda: sess.run(y, feed),
        "no_trace_options_us": lambda: sess.run(y, feed, options=off, run_metadata=md),
        "after_profile_block_us": lambda: profiled.run(y, feed),
    }, calls, rounds)
    sess.close()
    profiled.close()
    return {k: v["step_ms"] * 1e3 for k, v in ms.items()}


def bench_tf(tf: Any, steps: int, rounds: int) -> dict[str, Any]:
    g, init, fetches, feed = build(tf)
    sess = tf.Session(graph=g, config=tf_session_config(tf))
    sess.run(init)
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    global BASE
    saved, BASE = BASE, "untraced"
    try:
        figures = timed_rounds({
            "untraced": lambda: sess.run(fetches, feed),
            "traced": lambda: sess.run(fetches, feed, options=full, run_metadata=tf.RunMetadata()),
        }, steps, rounds)
    finally:
        BASE = saved
    sess.close()
    return {**figures, "ratio_traced": {k: figures["traced"][k] for k in ("ratio_wall", "ratio_cpu")}}


def _loop_steps(tf: Any, cfg: Any, iters: int) -> dict[str, Callable[[], Any]]:
    """The two loop steps, as zero-argument calls of `tf`'s session (FULL_TRACE and a
    new RunMetadata when `traced`): a scalar loop of `iters` iterations (`i + 1 < n`,
    `a * 1.5 + 1`) and dynamic_rnn's forward and gradient step (benchmarks/while_loop.py:
    BasicRNNCell(16), batch 4, 100 steps)."""
    from while_loop import build_rnn

    steps: dict[str, Callable[[], Any]] = {}
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        loop = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.5 + 1.0),
                             [tf.constant(0), tf.constant(1.0)])
    s1 = tf.Session(graph=g, config=cfg)
    feed = {n: iters}
    steps["scalar_untraced"] = lambda: s1.run(loop, feed)
    steps["scalar_traced"] = lambda: s1.run(loop, feed, options=full, run_metadata=tf.RunMetadata())
    g2 = tf.Graph()
    with g2.as_default():
        fetches = build_rnn(tf, False)
        init = tf.global_variables_initializer()
    s2 = tf.Session(graph=g2, config=cfg)
    s2.run(init)
    steps["rnn_untraced"] = lambda: s2.run(fetches)
    steps["rnn_traced"] = lambda: s2.run(fetches, options=full, run_metadata=tf.RunMetadata())
    return steps


def bench_loops(tf1: Any, iters: int, steps: int, rounds: int) -> dict[str, Any]:
    """Loop steps untraced and traced: flowlab (fused loops; traced, their recording
    twins), flowlab's frame path traced (fusion off: what a traced loop step ran before),
    and TensorFlow's FULL_TRACE, all interleaved in one set of rounds.  Ratios: traced /
    untraced of the same engine within each round (median over rounds)."""
    from flowlab.runtime.task import loop_fusion, loop_recording

    ours = _loop_steps(fl, None, iters)
    frame = dict(ours)

    def fusion_off(fn: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:
            loop_fusion.ENABLED = False
            try:
                return fn()
            finally:
                loop_fusion.ENABLED = True
        return call

    fns: dict[str, Callable[[], Any]] = {f"flowlab_{k}": f for k, f in ours.items()}
    fns.update({f"flowlab_frame_path_{k}": fusion_off(f) for k, f in frame.items() if k.endswith("_traced")})
    if tf1 is not None:
        theirs = _loop_steps(tf1, tf_session_config(tf1, optimizer_off=True), iters)
        fns.update({f"tensorflow_{k}": f for k, f in theirs.items()})
    before = loop_recording.TRACED_RUNS[0]
    global BASE
    saved, BASE = BASE, "flowlab_scalar_untraced"
    try:
        figures = timed_rounds(fns, steps, rounds)
    finally:
        BASE = saved
    recorded = loop_recording.TRACED_RUNS[0] - before
    out: dict[str, Any] = {"iterations": iters, "variants": figures, "traced_loop_instances_recorded": recorded}
    for engine in ("flowlab", "tensorflow", "flowlab_frame_path"):
        for loop in ("scalar", "rnn"):
            t, u = f"{engine}_{loop}_traced", f"{'flowlab' if engine == 'flowlab_frame_path' else engine}_{loop}_untraced"
            if t in figures and u in figures:
                out[f"overhead_{engine}_{loop}"] = {
                    "traced_over_untraced_wall": figures[t]["ratio_wall"] / figures[u]["ratio_wall"],
                    "traced_over_untraced_cpu": figures[t]["ratio_cpu"] / figures[u]["ratio_cpu"],
                }
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    # One step per variant per round, many rounds: on a loaded machine two consecutive
    # steps see the same load, so the ratio within a round is what stays stable.
    p.add_argument("--steps", type=int, default=1, help="steps per variant per round")
    p.add_argument("--rounds", type=int, default=150)
    p.add_argument("--no-tf", action="store_true", help="leave TensorFlow out")
    p.add_argument("--variants", default="", help="comma-separated flowlab variants to time (default: all)")
    p.add_argument("--loops", action="store_true",
                   help="only the loop steps (a scalar while_loop, dynamic_rnn) untraced and traced")
    p.add_argument("--iters", type=int, default=1000, help="iterations of the scalar loop (--loops)")
    args = p.parse_args()
    out: dict[str, Any] = {"steps": args.steps, "rounds": args.rounds, "load_before": os.getloadavg()[0]}
    if args.loops:
        out["loops"] = bench_loops(None if args.no_tf else load_tf1(), args.iters, args.steps, args.rounds)
        out["load_after"] = os.getloadavg()[0]
        emit("trace_overhead", out)
        return
    out["flowlab"] = bench_flowlab(args.steps, args.rounds, [v for v in args.variants.split(",") if v])
    out["tracing_off"] = bench_off(2000, 9)
    tf1 = None if args.no_tf else load_tf1()
    if tf1 is not None:
        out["tensorflow"] = bench_tf(tf1, args.steps, args.rounds)
    out["load_after"] = os.getloadavg()[0]
    emit("trace_overhead", out)


if __name__ == "__main__":
    main()
