"""The proximal optimizers' updates (FTRL, proximal GD/Adagrad, Adagrad-DA, dense and
sparse) run on a GPU device over device arrays and give the CPU's values.  The GPU is
the NumPy-backed fake of tests/runtime/fake_gpu.py (strict about host arrays, as CuPy)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import flowlab as fl
import flowlab.runtime.task.task as task_mod
from flowlab.kernels import registry
from flowlab.kernels.resources import VariableState
from flowlab.runtime.task.device import local_devices
from tests.runtime.fake_gpu import fake_gpu_device

UPDATES = ["ApplyFtrl", "ApplyFtrlV2", "ApplyProximalGradientDescent", "ApplyProximalAdagrad", "ApplyAdagradDA",
           "SparseApplyFtrl", "SparseApplyFtrlV2", "SparseApplyProximalGradientDescent",
           "SparseApplyProximalAdagrad", "SparseApplyAdagradDA"]


@pytest.fixture
def gpu_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    monkeypatch.setattr(task_mod, "local_devices", lambda count=None, job="localhost", task=0: [
        *local_devices({**(count or {}), "GPU": 0}, job, task), fake_gpu_device(0, job, task)])
    calls: dict[str, list[bool]] = {}
    for op_type in UPDATES:
        kdef = registry.find_kernel(op_type, "GPU")
        assert kdef is not None, f"{op_type} has no GPU kernel"

        def watched(ctx: Any, step: Any, *args: Any, _fn: Any = kdef.fn, _t: str = op_type) -> Any:
            dev = ctx.device
            out = _fn(ctx, step, *args)
            refs = [a for a in args if isinstance(a, VariableState)]
            calls.setdefault(_t, []).append(dev.device_type == "GPU"
                                            and all(dev.is_device_array(r.value) for r in refs))
            return out

        monkeypatch.setitem(registry._KERNELS, (op_type, "GPU"), dataclasses.replace(kdef, fn=watched))
    return calls


OPTIMIZERS = {
    "ftrl": (lambda gs: fl.train.FtrlOptimizer(0.2, l1_regularization_strength=0.01), "ApplyFtrl"),
    "ftrl_shrinkage": (lambda gs: fl.train.FtrlOptimizer(0.2, learning_rate_power=-0.6,
                                                         l2_shrinkage_regularization_strength=0.1), "ApplyFtrlV2"),
    "proximal_gd": (lambda gs: fl.train.ProximalGradientDescentOptimizer(0.1, 0.01, 0.02),
                    "ApplyProximalGradientDescent"),
    "proximal_adagrad": (lambda gs: fl.train.ProximalAdagradOptimizer(0.2, l1_regularization_strength=0.01),
                         "ApplyProximalAdagrad"),
    "adagrad_da": (lambda gs: fl.train.AdagradDAOptimizer(0.3, gs, l1_regularization_strength=0.01),
                   "ApplyAdagradDA"),
}


def _run(device: str, make_opt: Any) -> list[Any]:
    rs = np.random.RandomState(0)
    g = fl.Graph()
    with g.as_default():
        with fl.device(device):
            gs = fl.train.get_or_create_global_step()
            w = fl.Variable(rs.randn(4, 3).astype(np.float32))
            emb = fl.Variable(rs.randn(6, 3).astype(np.float32))
            vec = fl.Variable(rs.randn(5).astype(np.float32))
            x = fl.constant(rs.randn(2, 4).astype(np.float32))
            rows = fl.nn.embedding_lookup(emb, fl.constant([1, 4, 1]))
            cols = fl.nn.embedding_lookup(vec, fl.constant([0, 3]))
            loss = (fl.reduce_sum(fl.square(fl.matmul(x, w) - 1.0)) + fl.reduce_sum(fl.sin(rows))
                    + fl.reduce_sum(fl.square(cols)))
            train = make_opt(gs).minimize(loss, global_step=gs)
        init = fl.global_variables_initializer()
    with fl.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train)
        return sess.run([w, emb, vec, loss])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_updates_run_on_the_gpu(gpu_calls: dict[str, list[bool]], name: str) -> None:
    make_opt, op_type = OPTIMIZERS[name]
    want = _run("/cpu:0", make_opt)
    assert gpu_calls == {}
    got = _run("/gpu:0", make_opt)
    assert gpu_calls[op_type] == [True] * 3
    assert gpu_calls["Sparse" + op_type] == [True] * 6
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
