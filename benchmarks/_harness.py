"""Shared timing helpers for the benchmark scripts (not used by tests).

Each benchmark prints one JSON object: its figures for flowlab and for the peers that
are installed (TensorFlow 1.x graph mode, NumPy by hand), measured in the same process
and the same run, so ratios are meaningful on a noisy shared machine.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def per_call_us(fn: Callable[[], Any], calls: int, repeats: int = 7) -> float:
    """Median over `repeats` of the mean µs per call of `fn` over `calls` calls."""
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def load_tf1() -> Any:
    """TensorFlow's tf.compat.v1 in graph mode, or None if not installed."""
    try:
        import tensorflow as tf  # type: ignore[import-not-found]
    except Exception:
        return None
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    return v1


def tf_session_config(tf1: Any, optimizer_off: bool = False) -> Any:
    cfg = tf1.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=2)
    if optimizer_off:
        from tensorflow.core.protobuf import rewriter_config_pb2  # type: ignore[import-not-found]

        cfg.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
        rw = cfg.graph_options.rewrite_options
        rw.disable_meta_optimizer = True
        rw.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
        rw.arithmetic_optimization = rewriter_config_pb2.RewriterConfig.OFF
    return cfg


def emit(name: str, figures: dict[str, Any]) -> None:
    print(json.dumps({"benchmark": name, "python": sys.version.split()[0], **figures}, indent=2))
