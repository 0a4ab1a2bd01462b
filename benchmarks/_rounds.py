"""Interleaved timing for benchmarks whose peers are slow enough to be hit by the load
of a shared machine: each round times `calls` calls of every peer in turn, so that a
burst of load is spread over all peers instead of falling on one of them.

Each round also reads the process's CPU time: on a loaded machine wall time is mostly
waiting for a core, while CPU time is the work a peer did (all its threads: with one
BLAS / intra-op thread each it compares like with like; a peer that spins threads pays
for them)."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any


def interleaved_ms(steps: dict[str, Callable[[], Any]], calls: int, rounds: int
                   ) -> dict[str, dict[str, float]]:
    """{peer: {"step_ms": median over rounds, "best_step_ms": fastest round,
    "cpu_step_ms": median process CPU time}} of the mean ms per call of each peer's
    step."""
    for fn in steps.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls * 1e3)
            cpu[name].append((time.process_time() - c0) / calls * 1e3)
    return {name: {"step_ms": statistics.median(s), "best_step_ms": min(s),
                   "cpu_step_ms": statistics.median(cpu[name])}
            for name, s in samples.items()}


def ratios(out: dict[str, Any], peers: list[str], ours: str = "flowlab") -> None:
    """Add ratio_<ours>_over_<peer> (medians), best_ratio_... (fastest rounds) and
    cpu_ratio_... (median CPU times)."""
    for peer in peers:
        if peer in out:
            out[f"ratio_{ours}_over_{peer}"] = out[ours]["step_ms"] / out[peer]["step_ms"]
            out[f"best_ratio_{ours}_over_{peer}"] = (out[ours]["best_step_ms"]
                                                     / out[peer]["best_step_ms"])
            if "cpu_step_ms" in out[ours] and "cpu_step_ms" in out[peer]:
                out[f"cpu_ratio_{ours}_over_{peer}"] = (out[ours]["cpu_step_ms"]
                                                        / out[peer]["cpu_step_ms"])


def compare_training_steps(
    benchmark: str,
    graph_step: Callable[..., Callable[[], float]],
    numpy_step: Callable[[], Callable[[], float]],
    torch_step: Callable[[int], Callable[[], float] | None],
    steps: int,
    threads: int,
) -> None:
    """The main of a training-step benchmark: flowlab, the NumPy step, TensorFlow 1.x
    and PyTorch (when installed) with the same BLAS/intra-op threads, timed in
    interleaved rounds; prints the JSON with each peer's first and last loss and the
    ratios.  `graph_step(module, session_config)` builds the TF1 program for flowlab
    or TensorFlow (flowlab's with `tasks=`, its task); each step callable returns its
    loss.  `--load N` keeps N neighbour processes doing NumPy GEMMs busy while the rounds
    run (benchmarks/_load.py)."""
    from _harness import emit, load_tf1, tf_session_config
    from _load import neighbours
    from threadpoolctl import threadpool_limits

    import flowlab as fl

    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=steps, help="steps per peer per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=threads, help="BLAS / intra-op threads of each")
    p.add_argument("--load", type=int, default=0,
                   help="neighbour processes doing NumPy GEMMs meanwhile (benchmarks/_load.py)")
    p.add_argument("--ablate", action="store_true",
                   help="also flowlab without the dependency optimization (flowlab_no_dep_opt)")
    p.add_argument("--tf-inter-op", type=int, default=2,
                   help="TensorFlow's inter-op threads (default 2, TensorFlow's own choice on 2 cores; "
                        "flowlab runs one op at a time, PyTorch and NumPy too)")
    args = p.parse_args()
    threadpool_limits(args.threads)  # NumPy's BLAS (the NumPy step; flowlab's steps set their own)

    def flowlab_task() -> list[Any]:
        # flowlab's intra-op threads = the peers' threads (its thread policy,
        # flowlab/runtime/thread_policy.py, runs one BLAS thread per call).  The task is
        # given directly: Session does not hand ConfigProto.intra_op_parallelism_threads
        # to the task it creates.
        from flowlab.runtime.task.task import LocalTask

        return [LocalTask("localhost", 0, None, 0, args.threads)]

    peers: dict[str, Callable[[], float]] = {"flowlab": graph_step(fl, None, flowlab_task()),
                                             "numpy": numpy_step()}
    if args.ablate:
        from flowlab.runtime.config import ConfigProto, GraphOptions, RewriterConfig

        no_dep = GraphOptions(rewrite_options=RewriterConfig(dependency_optimization=RewriterConfig.OFF))
        peers["flowlab_no_dep_opt"] = graph_step(fl, ConfigProto(graph_options=no_dep), flowlab_task())
    tf1 = load_tf1()
    if tf1 is not None:
        cfg = tf_session_config(tf1)
        cfg.intra_op_parallelism_threads = args.threads
        cfg.inter_op_parallelism_threads = args.tf_inter_op
        peers["tensorflow"] = graph_step(tf1, cfg)
    t = torch_step(args.threads)
    if t is not None:
        peers["pytorch"] = t
    first = {name: fn() for name, fn in peers.items()}
    out: dict[str, Any] = {"threads": args.threads, "tf_inter_op_threads": args.tf_inter_op,
                           "neighbours": args.load, "load_before": os.getloadavg()[0]}
    with neighbours(args.load) as load:
        out.update(interleaved_ms(peers, args.steps, args.rounds))
        if load is not None:
            out["neighbour_gemms_per_s"] = load.gemms_per_s()
    for name, fn in peers.items():
        out[name].update(first_loss=first[name], loss_after=fn())
    out["load_after"] = os.getloadavg()[0]
    ratios(out, ["numpy", "tensorflow", "pytorch", "flowlab_no_dep_opt"])
    emit(benchmark, out)
