"""GPU check: the GPU kernel tests and an MLP step on a real GPU (CuPy), beside the CPU.

Run on a machine with a CUDA GPU and `pip install -e .[gpu]`:

    python benchmarks/gpu_check.py [--steps 20] [--no-tests]

It (1) runs tests/runtime/task/test_gpu_kernels.py, test_gpu_device.py, test_host_memory.py
and test_gpu_training.py with FLOWLAB_REAL_GPU=1, so that every GPU kernel runs on CuPy
against the CPU session, the host-memory steps run against real CuPy arrays and the
optimizers train on the device, and (2) runs an MLP training step (784-512-512-10,
batch 256) with variables and math on /gpu:0 beside the same step on /cpu:0, twice:
plain SGD through `assign_sub` ("train") and Adam through `minimize()` ("train_adam":
the six ApplyAdam must be placed on the GPU, `adam_devices`); the losses of the first
and last steps must match the CPU's (`losses_match`, rtol 1e-3), and all are timed.  One JSON object is
printed; a failure of one part is reported in it and the others still run.

Without CuPy or a GPU it prints {"gpu": false, "message": ...} and exits 0.  The exit
status is 0 when every part passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _harness import emit  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.runtime.task import gpu  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 256


def build(scope: str, optimizer: str = "sgd") -> tuple[Any, ...]:
    rs = np.random.RandomState(0)
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, SIZES[0]])
        y = fl.placeholder(fl.int32, [None])
        with fl.device("/cpu:0"):  # feeds and initial values cross the host boundary here
            xi, yi = fl.identity(x), fl.identity(y)
            inits = []
            for a, b in zip(SIZES[:-1], SIZES[1:]):
                inits += [fl.constant((rs.randn(a, b) * np.sqrt(2.0 / a)).astype(np.float32)), fl.zeros([b])]
        with fl.device(scope):
            params = [fl.Variable(v) for v in inits]
            h = xi
            for i in range(0, len(params), 2):
                h = fl.matmul(h, params[i]) + params[i + 1]
                if i + 2 < len(params):
                    h = fl.nn.relu(h)
            loss = fl.reduce_mean(fl.nn.sparse_softmax_cross_entropy_with_logits(labels=yi, logits=h))
            if optimizer == "adam":
                train = fl.train.AdamOptimizer(1e-3).minimize(loss)
            else:
                grads = fl.gradients(loss, params)
                train = fl.group(*[fl.assign_sub(p, 0.1 * gr) for p, gr in zip(params, grads)])
        with fl.device("/cpu:0"):
            out = fl.identity(loss)
        init = fl.global_variables_initializer()
    return g, x, y, out, train, init


def time_step(scope: str, steps: int, train_step: bool, optimizer: str = "sgd") -> dict[str, Any]:
    g, x, y, out, train, init = build(scope, optimizer)
    rs = np.random.RandomState(1)
    feed = {x: rs.randn(BATCH, SIZES[0]).astype(np.float32), y: rs.randint(0, 10, BATCH).astype(np.int32)}
    fetches = [out, train] if train_step else [out]
    with fl.Session(graph=g) as sess:
        sess.run(init)
        first = float(sess.run(fetches, feed)[0])  # compiles the plan; warms the device
        t0 = time.perf_counter()
        for _ in range(steps):
            last = float(sess.run(fetches, feed)[0])  # fetching the loss synchronizes
        ms = (time.perf_counter() - t0) / steps * 1e3
        stats = {d.device_type: d.memory_stats() for d in sess._devices}
        placed = sess.placement(fetches, feed).device_of
        updates = sorted(placed[op.name].device_type for op in g.get_operations() if op.type == "ApplyAdam")
    return {"step_ms": round(ms, 3), "first_loss": first, "last_loss": last, "memory": stats.get("GPU"),
            "adam_devices": updates}


def run_tests() -> dict[str, Any]:
    env = dict(os.environ, FLOWLAB_REAL_GPU="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "tests/runtime/task/test_gpu_kernels.py", "tests/runtime/task/test_gpu_device.py",
           "tests/runtime/task/test_host_memory.py", "tests/runtime/task/test_gpu_training.py"]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    lines = r.stdout.strip().splitlines()
    failed = [ln for ln in lines if ln.startswith("FAILED")]
    return {"returncode": r.returncode, "summary": lines[-1] if lines else r.stderr[-500:], "failed": failed[:50]}


def _device_name(cp: Any) -> str:
    try:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception as e:  # noqa: BLE001 -- a detail of the CuPy build: reported, not fatal
        return f"unknown ({type(e).__name__})"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--no-tests", action="store_true")
    args = p.parse_args()
    cp = gpu.load_cupy()
    if cp is None:
        emit("gpu_check", {"gpu": False, "message": "CuPy is not installed or finds no CUDA device: "
                           "nothing to check (pip install -e .[gpu] on a machine with a GPU)."})
        return 0
    out: dict[str, Any] = {"gpu": True, "cupy": getattr(cp, "__version__", "?"),
                           "device": _device_name(cp), "mlp": {"sizes": SIZES, "batch": BATCH}}
    ok = True
    if not args.no_tests:
        out["tests"] = run_tests()
        ok = out["tests"]["returncode"] == 0
    for kind, train_step, optimizer in (("train", True, "sgd"), ("train_adam", True, "adam"),
                                        ("forward", False, "sgd")):
        try:
            fig = out[kind] = {"gpu": time_step("/gpu:0", args.steps, train_step, optimizer),
                               "cpu": time_step("/cpu:0", args.steps, train_step, optimizer)}
            fig["cpu_over_gpu"] = round(fig["cpu"]["step_ms"] / fig["gpu"]["step_ms"], 2)
            fig["losses_match"] = bool(np.allclose(
                [fig["gpu"]["first_loss"], fig["gpu"]["last_loss"]],
                [fig["cpu"]["first_loss"], fig["cpu"]["last_loss"]], rtol=1e-3))
            ok = ok and fig["losses_match"]
            if optimizer == "adam":
                fig["adam_on_gpu"] = fig["gpu"]["adam_devices"] == ["GPU"] * 6
                ok = ok and fig["adam_on_gpu"]
        except Exception as e:  # noqa: BLE001 -- reported, the check goes on
            out[kind] = {"error": f"{type(e).__name__}: {str(e)[:500]}"}
            ok = False
    out["ok"] = ok
    emit("gpu_check", out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
