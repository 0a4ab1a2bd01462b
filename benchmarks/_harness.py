"""Shared timing helpers for the benchmark scripts (not used by tests).

Each benchmark prints one JSON object: its figures for flowlab and for the peers that
are installed (TensorFlow 1.x graph mode, NumPy by hand), measured in the same process
and the same run, so ratios are meaningful on a noisy shared machine.

The TensorFlow peer runs in the configuration a user gets: on CPUs with AVX512_VNNI,
AVX512_BF16 or AMX TensorFlow 2.x turns its oneDNN kernels on by default, elsewhere it
runs its portable Eigen kernels (what the tests pin, tests/conftest.py).  Every JSON
object says which one ran ("tensorflow_config").  When the default was oneDNN, `emit`
runs the same command once more in a child process with `TF_ENABLE_ONEDNN_OPTS=0` (TF
reads the switch once, when it is imported) and reports that run whole beside it, under
"tensorflow_onednn_off_run": flowlab's figures there are a second sample of the same
code, the TensorFlow figures and ratios are against the portable kernels.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
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


# Set by `emit` for the child run with oneDNN off: where the child writes its JSON.
_CHILD_RESULT = "FLOWLAB_BENCH_RESULT"
_tf_loaded = False


def load_tf1() -> Any:
    """TensorFlow's tf.compat.v1 in graph mode, or None if not installed."""
    global _tf_loaded
    try:
        import tensorflow as tf  # type: ignore[import-not-found]
    except Exception:
        return None
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    _tf_loaded = True
    return v1


def tensorflow_config() -> dict[str, Any] | None:
    """Which kernels the TensorFlow peer of this process runs, or None if it has none."""
    if not _tf_loaded:
        return None
    import tensorflow as tf  # type: ignore[import-not-found]
    from tensorflow.python.util import _pywrap_util_port  # type: ignore[import-not-found]

    onednn = bool(_pywrap_util_port.IsMklEnabled())
    return {"version": tf.__version__, "onednn": onednn,
            "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
            "kernels": "oneDNN" if onednn else "Eigen (portable)"}


def _run_with_onednn_off() -> dict[str, Any]:
    """This benchmark's command again, in a child process whose TensorFlow runs its
    portable kernels; its JSON object, or {"error": ...}."""
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", **{_CHILD_RESULT: result})
        proc = subprocess.run([sys.executable, *sys.argv], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or not os.path.exists(result):
            return {"error": f"exit status {proc.returncode}", "stderr": proc.stderr[-2000:]}
        with open(result) as f:
            return json.load(f)


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


def save_figure(fig: Any, path: str) -> None:
    """Lay `fig` out, write it to `path` as a PNG (its folder made) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def emit(name: str, figures: dict[str, Any]) -> None:
    """Print the benchmark's JSON object (see the module docstring for the oneDNN run)."""
    out: dict[str, Any] = {"benchmark": name, "python": sys.version.split()[0],
                           "tensorflow_config": tensorflow_config(), **figures}
    child_result = os.environ.get(_CHILD_RESULT)
    if child_result:
        with open(child_result, "w") as f:
            json.dump(out, f)
        return
    config = out["tensorflow_config"]
    if config is not None and config["onednn"]:
        out["tensorflow_onednn_off_run"] = _run_with_onednn_off()
    print(json.dumps(out, indent=2))
