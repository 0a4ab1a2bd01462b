"""Interleaved timing for benchmarks whose peers are slow enough to be hit by the load
of a shared machine: each round times `calls` calls of every peer in turn, so that a
burst of load is spread over all peers instead of falling on one of them."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def interleaved_ms(steps: dict[str, Callable[[], Any]], calls: int, rounds: int
                   ) -> dict[str, dict[str, float]]:
    """{peer: {"step_ms": median over rounds, "best_step_ms": fastest round}} of the
    mean ms per call of each peer's step."""
    for fn in steps.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls * 1e3)
    return {name: {"step_ms": statistics.median(s), "best_step_ms": min(s)}
            for name, s in samples.items()}


def ratios(out: dict[str, Any], peers: list[str], ours: str = "flowlab") -> None:
    """Add ratio_<ours>_over_<peer> (medians) and best_ratio_... (fastest rounds)."""
    for peer in peers:
        if peer in out:
            out[f"ratio_{ours}_over_{peer}"] = out[ours]["step_ms"] / out[peer]["step_ms"]
            out[f"best_ratio_{ours}_over_{peer}"] = (out[ours]["best_step_ms"]
                                                     / out[peer]["best_step_ms"])
