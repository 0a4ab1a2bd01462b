"""GPU devices: creation, host transfers, and whole steps placed on a (fake) GPU.

Whole steps run on the fake GPU of tests/runtime/fake_gpu.py, added to a session's
devices by patching `local_devices` in the task module.  The runtime moves
feeds, fetches and constants across the host boundary (flowlab/runtime/task/plan.py).  With
`FLOWLAB_REAL_GPU=1` the same steps run on the real CuPy GPU.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import flowlab as fl
import flowlab.runtime.task.task as task_mod
from flowlab.kernels.registry import find_kernel
from flowlab.runtime.task import gpu
from flowlab.runtime.task.device import local_devices
from flowlab.runtime.task.plan import NodeContext
from tests.runtime.fake_gpu import FakeGpuArray, fake_gpu_device

REAL = os.environ.get("FLOWLAB_REAL_GPU") == "1"


@pytest.fixture
def gpu_session(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Sessions created in the test get CPU:0 and one GPU (fake, or real with
    FLOWLAB_REAL_GPU=1); yields the list their devices are appended to."""
    made: list[Any] = []
    if REAL:
        if gpu.gpu_count() == 0:
            pytest.skip("no CuPy GPU")
        return made

    def devices(count: Any = None, job: str = "localhost", task: int = 0) -> list[Any]:
        out = [*local_devices({**(count or {}), "GPU": 0}, job, task), fake_gpu_device(0, job, task)]
        made.extend(out)
        return out

    monkeypatch.setattr(task_mod, "local_devices", devices)
    return made


def test_no_cupy_no_gpu_devices() -> None:
    if gpu.load_cupy() is not None:
        pytest.skip("CuPy finds a GPU here")
    assert gpu.gpu_devices() == []
    assert gpu.gpu_count() == 0
    assert [d.device_type for d in local_devices()] == ["CPU"]


def test_device_count_gpu_zero_hides_gpus() -> None:
    assert [d.device_type for d in local_devices({"CPU": 2, "GPU": 0})] == ["CPU", "CPU"]


def test_fake_device_transfers_are_counted() -> None:
    d = fake_gpu_device()
    assert d.device_type == "GPU" and d.name.endswith("device:GPU:0")
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    dev = d.from_host(host)
    assert isinstance(dev, FakeGpuArray) and d.is_device_array(dev)
    assert d.from_host(dev) is dev  # already on the device: no copy
    back = d.to_host(dev + 1)
    assert type(back) is np.ndarray
    np.testing.assert_array_equal(back, host + 1)
    assert d.to_host(np.float32(2.0)) == np.float32(2.0)  # host values pass through
    stats = d.memory_stats()
    assert stats["bytes_from_host"] == 24 and stats["bytes_to_host"] == 24
    assert stats["bytes_limit"] == 1 << 30


def test_fake_xp_rejects_host_arrays_like_cupy() -> None:
    d = fake_gpu_device()
    x = d.from_host(np.ones(3))
    with pytest.raises(TypeError, match="Unsupported type"):
        _ = x + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        d.xp.matmul(np.ones((2, 2)), d.from_host(np.ones((2, 2))))
    assert isinstance(x + np.float64(1.0), FakeGpuArray)  # NumPy scalars are fine


def test_random_gpu_kernel_gives_the_cpu_numbers() -> None:
    g = fl.Graph()
    with g.as_default():
        r = fl.random_uniform([3, 4], seed=7)
    op = r.op
    cpu_dev, gpu_dev = local_devices()[0], fake_gpu_device()
    shape = np.array([3, 4], np.int32)
    want = find_kernel(op.type, "CPU").fn(NodeContext(op, cpu_dev, 0), shape)
    got = find_kernel(op.type, "GPU").fn(NodeContext(op, gpu_dev, 0), shape)
    assert gpu_dev.is_device_array(got)
    np.testing.assert_array_equal(gpu_dev.to_host(got), want)


def _mlp(g: Any, gpu_scope: str, host_boundary: bool) -> tuple[Any, ...]:
    """A two-layer MLP whose variables and math are under `gpu_scope`; with
    `host_boundary`, feeds, initial values and the fetched loss pass through CPU ops."""
    rs = np.random.RandomState(0)
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 4], name="x")
        y = fl.placeholder(fl.int32, [None], name="y")
        with fl.device("/cpu:0" if host_boundary else gpu_scope):
            xi, yi = fl.identity(x), fl.identity(y)
            inits = [fl.constant(rs.randn(4, 8).astype(np.float32) * 0.3), fl.zeros([8]),
                     fl.constant(rs.randn(8, 3).astype(np.float32) * 0.3), fl.zeros([3])]
        with fl.device(gpu_scope):
            w0, b0, w1, b1 = params = [fl.Variable(v) for v in inits]
            h = fl.nn.relu(fl.matmul(xi, w0) + b0)
            logits = fl.matmul(h, w1) + b1
            loss = fl.reduce_mean(fl.nn.sparse_softmax_cross_entropy_with_logits(labels=yi, logits=logits))
            grads = fl.gradients(loss, params)
            train = fl.group(*[fl.assign_sub(p, 0.5 * gr) for p, gr in zip(params, grads)])
        with fl.device("/cpu:0" if host_boundary else gpu_scope):
            out = fl.identity(loss)
        init = fl.global_variables_initializer()
    return x, y, out, train, init, logits


def _data() -> tuple[np.ndarray, np.ndarray]:
    X = np.random.RandomState(1).randn(32, 4).astype(np.float32)
    return X, (X[:, 0] + X[:, 1] > 0).astype(np.int32)


def _train(g: Any, parts: tuple[Any, ...], steps: int = 5) -> list[Any]:
    x, y, out, train, init, _ = parts
    X, Y = _data()
    with fl.Session(graph=g) as sess:
        sess.run(init)
        return [sess.run([out, train], {x: X, y: Y})[0] for _ in range(steps)]


def test_partitioned_forward_cpu_gpu(gpu_session: Any) -> None:
    """CPU feeds -> GPU math -> CPU fetch: values as on the CPU, transfers counted."""
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 3])
        w = fl.placeholder(fl.float32, [3, 2])
        with fl.device("/cpu:0"):
            xi, wi = fl.identity(x), fl.identity(w)
        with fl.device("/gpu:0"):
            y = fl.nn.relu(fl.matmul(xi, wi) - 4.0)
            s = fl.reduce_sum(y, 1)
        with fl.device("/cpu:0"):
            ys = fl.identity(s)
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    W = np.arange(6, dtype=np.float32).reshape(3, 2)
    with fl.Session(graph=g) as sess:
        got = sess.run(ys, {x: X, w: W})
        devs = {d.device_type: d for d in gpu_session}
        first = dict(devs["GPU"].memory_stats()) if not REAL else {}
        again = sess.run(ys, {x: X, w: W})
    assert type(got) is np.ndarray and got.dtype == np.float32
    np.testing.assert_allclose(got, np.maximum(X @ W - 4, 0).sum(1))
    np.testing.assert_array_equal(again, got)
    if not REAL:
        # The constants (4.0, the reduction axis) went over once, when the plan was
        # compiled; each step moves the two feeds in and the sum out.
        st = devs["GPU"].memory_stats()
        assert st["bytes_from_host"] - first["bytes_from_host"] == X.nbytes + W.nbytes
        assert st["transfers"] - first["transfers"] == 2
        assert st["bytes_to_host"] - first["bytes_to_host"] == got.nbytes


def test_mlp_training_step_on_gpu_with_host_boundary(gpu_session: Any) -> None:
    """Variables and every op of the training step on the GPU; only feeds, initial
    values and the fetched loss on the CPU.  Same losses as an all-CPU run."""
    g_cpu, g_gpu = fl.Graph(), fl.Graph()
    want = _train(g_cpu, _mlp(g_cpu, "/cpu:0", True))
    got = _train(g_gpu, _mlp(g_gpu, "/gpu:0", True))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert got[-1] < got[0]


def test_mlp_training_step_all_on_gpu(gpu_session: Any) -> None:
    g_cpu, g_gpu = fl.Graph(), fl.Graph()
    want = _train(g_cpu, _mlp(g_cpu, "/cpu:0", False))
    got = _train(g_gpu, _mlp(g_gpu, "/gpu:0", False))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_mlp_forward_with_variables_on_gpu(gpu_session: Any) -> None:
    """The initializers and the loss of the MLP, variables on the GPU: the variables
    hold device arrays and the loss equals the all-CPU one."""
    X, Y = _data()
    losses = []
    for scope in ("/cpu:0", "/gpu:0"):
        g = fl.Graph()
        x, y, out, _, init, _ = _mlp(g, scope, True)
        with fl.Session(graph=g) as sess:
            sess.run(init)
            losses.append(sess.run(out, {x: X, y: Y}))
            if scope == "/gpu:0" and not REAL:
                gpu_dev = [d for d in sess._devices if d.device_type == "GPU"][0]
                states = [r for _, r in gpu_dev.resources.items() if hasattr(r, "value")]
                assert len(states) == 4 and all(gpu_dev.is_device_array(r.value) for r in states)
                assert gpu_dev.memory_stats()["bytes_in_use"] == 4 * (32 + 8 + 24 + 3)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)
