"""Training on a GPU: the optimizer updates (Apply*/SparseApply*) and the Scatter*
variable updates run on the device, over device arrays, and give the CPU's values.

Whole TF1 programs (an MLP trained by each optimizer through `minimize()`, an
embedding trained through its sparse update) run with their variables and ops under
/gpu:0 beside the same program under /cpu:0; spies on the GPU kernels record that
every update ran there with device arrays.  The kernels are also called directly on
the GPU device with repeated indices, against the CPU kernels: on a CuPy 13-like fake
(ufunc.at for add/subtract/maximum/minimum), an older one (cupyx.scatter_* only), and
for dtypes CUDA's atomics lack (round by round).  The GPU is the fake of
tests/runtime/fake_gpu.py, or CuPy's with `FLOWLAB_REAL_GPU=1`.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
import flowlab.runtime.task.task as task_mod
from flowlab import errors
from flowlab.kernels import registry
from flowlab.kernels.resources import VariableState
from flowlab.kernels.state_kernels import occurrence_rounds, scatter_at
from flowlab.runtime.task import gpu
from flowlab.runtime.task.device import local_devices
from flowlab.runtime.task.plan import NodeContext
from tests.runtime.fake_gpu import FakeGpuArray, fake_gpu_device

REAL = os.environ.get("FLOWLAB_REAL_GPU") == "1"
UPDATES = ["ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "ApplyRMSProp", "ApplyAdagrad",
           "ApplyAdadelta", "ApplyCenteredRMSProp", "SparseApplyMomentum", "SparseApplyAdagrad",
           "SparseApplyRMSProp", "SparseApplyAdadelta", "SparseApplyCenteredRMSProp",
           "ScatterAdd", "ScatterSub", "ScatterUpdate"]


@pytest.fixture
def gpu_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """Sessions get /cpu:0 and /gpu:0; the GPU kernels of UPDATES record, per call,
    whether every input and the variables' new values were device arrays."""
    if REAL:
        if gpu.gpu_count() == 0:
            pytest.skip("no CuPy GPU")
        real = task_mod.local_devices
        monkeypatch.setattr(task_mod, "local_devices",
                            lambda count=None, job="localhost", task=0: real({**(count or {}), "GPU": 1}, job, task))
    else:
        monkeypatch.setattr(task_mod, "local_devices", lambda count=None, job="localhost", task=0: [
            *local_devices({**(count or {}), "GPU": 0}, job, task), fake_gpu_device(0, job, task)])
    calls: dict[str, list[bool]] = {}
    for op_type in UPDATES:
        kdef = registry.find_kernel(op_type, "GPU")
        assert kdef is not None, f"{op_type} has no GPU kernel"

        def watched(ctx: Any, step: Any, *args: Any, _fn: Any = kdef.fn, _t: str = op_type) -> Any:
            dev = ctx.device
            ok = dev.device_type == "GPU" and all(
                dev.is_device_array(a) for a in args if not isinstance(a, VariableState))
            out = _fn(ctx, step, *args)
            refs = [a for a in args if isinstance(a, VariableState)]
            calls.setdefault(_t, []).append(ok and all(dev.is_device_array(r.value) for r in refs))
            return out

        monkeypatch.setitem(registry._KERNELS, (op_type, "GPU"), dataclasses.replace(kdef, fn=watched))
    return calls


def _mlp(device: str, make_opt: Any) -> tuple[Any, ...]:
    rs = np.random.RandomState(0)
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [None, 4], name="x")
        y = fl.placeholder(fl.int32, [None], name="y")
        with fl.device(device):
            w0 = fl.Variable(rs.randn(4, 8).astype(np.float32) * 0.3)
            b0 = fl.Variable(np.zeros(8, np.float32))
            w1 = fl.Variable(rs.randn(8, 3).astype(np.float32) * 0.3)
            b1 = fl.Variable(np.zeros(3, np.float32))
            logits = fl.matmul(fl.nn.relu(fl.matmul(x, w0) + b0), w1) + b1
            loss = fl.reduce_mean(fl.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            train = make_opt().minimize(loss)
        init = fl.global_variables_initializer()
    return g, x, y, loss, train, init, [w0, b0, w1, b1]


def _run_mlp(device: str, make_opt: Any, steps: int = 4) -> tuple[list[Any], list[Any]]:
    g, x, y, loss, train, init, params = _mlp(device, make_opt)
    X = np.random.RandomState(1).randn(16, 4).astype(np.float32)
    Y = (X[:, 0] + X[:, 1] > 0).astype(np.int32)
    with fl.Session(graph=g) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], {x: X, y: Y})[0] for _ in range(steps)]
        return losses, sess.run(params)


OPTIMIZERS = {
    "GradientDescent": (lambda: fl.train.GradientDescentOptimizer(0.5), "ApplyGradientDescent"),
    "Momentum": (lambda: fl.train.MomentumOptimizer(0.1, 0.9), "ApplyMomentum"),
    "Nesterov": (lambda: fl.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True), "ApplyMomentum"),
    "Adam": (lambda: fl.train.AdamOptimizer(0.05), "ApplyAdam"),
    "RMSProp": (lambda: fl.train.RMSPropOptimizer(0.05, momentum=0.5), "ApplyRMSProp"),
    "CenteredRMSProp": (lambda: fl.train.RMSPropOptimizer(0.05, centered=True), "ApplyCenteredRMSProp"),
    "Adagrad": (lambda: fl.train.AdagradOptimizer(0.3), "ApplyAdagrad"),
    "Adadelta": (lambda: fl.train.AdadeltaOptimizer(1.0), "ApplyAdadelta"),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_mlp_optimizer_updates_run_on_the_gpu(gpu_calls: dict[str, list[bool]], name: str) -> None:
    make_opt, op_type = OPTIMIZERS[name]
    want_loss, want_params = _run_mlp("/cpu:0", make_opt)
    assert gpu_calls == {}  # the CPU program used no GPU kernel
    got_loss, got_params = _run_mlp("/gpu:0", make_opt)
    # 4 variables x 4 steps, every call on the GPU with device arrays in and out.
    assert gpu_calls[op_type] == [True] * 16
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    for g, w in zip(got_params, want_params):
        assert type(g) is np.ndarray and g.dtype == np.float32  # fetched back to the host
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert got_loss[-1] < got_loss[0]


def _embedding(device: str, make_opt: Any) -> tuple[Any, ...]:
    g = fl.Graph()
    with g.as_default():
        ids = fl.placeholder(fl.int32, [None], name="ids")
        target = fl.placeholder(fl.float32, [None, 3], name="target")
        with fl.device(device):
            table = fl.Variable(np.random.RandomState(2).randn(10, 3).astype(np.float32))
            rows = fl.nn.embedding_lookup(table, ids)
            loss = fl.reduce_sum(fl.square(rows - target))
            train = make_opt().minimize(loss)
        init = fl.global_variables_initializer()
    return g, ids, target, loss, train, init, table


SPARSE = {
    "GradientDescent": (lambda: fl.train.GradientDescentOptimizer(0.1), "ScatterSub"),
    "Momentum": (lambda: fl.train.MomentumOptimizer(0.1, 0.9), "SparseApplyMomentum"),
    "Adagrad": (lambda: fl.train.AdagradOptimizer(0.3), "SparseApplyAdagrad"),
    "RMSProp": (lambda: fl.train.RMSPropOptimizer(0.05, momentum=0.5), "SparseApplyRMSProp"),
    "CenteredRMSProp": (lambda: fl.train.RMSPropOptimizer(0.05, centered=True), "SparseApplyCenteredRMSProp"),
    "Adadelta": (lambda: fl.train.AdadeltaOptimizer(1.0), "SparseApplyAdadelta"),
    "Adam": (lambda: fl.train.AdamOptimizer(0.05), "ScatterAdd"),
}


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_embedding_sparse_update_runs_on_the_gpu(gpu_calls: dict[str, list[bool]], name: str) -> None:
    """An embedding's IndexedSlices gradient (ids repeat: TF1 sums duplicates first) is
    applied by the sparse update on the GPU; the table equals the CPU's."""
    make_opt, op_type = SPARSE[name]
    ids_v = np.array([1, 4, 1, 7, 4, 1], np.int32)
    tgt = np.random.RandomState(3).randn(6, 3).astype(np.float32)
    out = []
    for device in ("/cpu:0", "/gpu:0"):
        g, ids, target, loss, train, init, table = _embedding(device, make_opt)
        with fl.Session(graph=g) as sess:
            sess.run(init)
            losses = [sess.run([loss, train], {ids: ids_v, target: tgt})[0] for _ in range(3)]
            out.append((losses, sess.run(table)))
    assert gpu_calls.get(op_type) and all(gpu_calls[op_type])
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-5, atol=1e-6)
    untouched = [0, 2, 3, 5, 6, 8, 9]
    np.testing.assert_array_equal(out[1][1][untouched], out[0][1][untouched])


# --- the kernels called directly, repeated indices --------------------------------------
class _Step:
    def write_var(self, var: Any, value: Any, increment: Any = None) -> None:
        var.value = value


def _state(device: Any, value: np.ndarray) -> VariableState:
    st = VariableState("v", value.dtype, value.shape)
    st.value = device.from_host(value) if device.device_type == "GPU" else value
    return st


def _call(op: Any, device: Any, values: list[np.ndarray], refs: int) -> list[np.ndarray]:
    """Run `op`'s kernel on `device` with `values` (the first `refs` as variables);
    return the variables' new values on the host."""
    kdef = registry.find_kernel(op.type, device.device_type)
    assert kdef is not None
    states = [_state(device, v) for v in values[:refs]]
    args = [device.from_host(v) if device.device_type == "GPU" else v for v in values[refs:]]
    kdef.fn(NodeContext(op, device, 0), _Step(), *states, *args)
    if device.device_type == "GPU":
        assert all(device.is_device_array(s.value) for s in states)
    return [device.to_host(s.value) if device.device_type == "GPU" else s.value for s in states]


def _scatter_op(how: str, dtype: Any, nd: bool = False) -> Any:
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(np.zeros((5, 2), dtype))
        if nd:
            fn = {"update": fl.scatter_nd_update, "add": fl.scatter_nd_add, "sub": fl.scatter_nd_sub}[how]
            return fn(v, np.zeros((1, 1), np.int32), np.zeros((1, 2), dtype)).op
        fn = {"update": fl.scatter_update, "add": fl.scatter_add, "sub": fl.scatter_sub,
              "mul": fl.scatter_mul, "div": fl.scatter_div, "min": fl.scatter_min,
              "max": fl.scatter_max}[how]
        return fn(v, [0], np.zeros((1, 2), dtype)).op


@pytest.mark.parametrize("old_cupy", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("how", ["update", "add", "sub", "mul", "div", "min", "max"])
def test_scatter_with_repeated_indices_equals_cpu(how: str, dtype: Any, old_cupy: bool) -> None:
    if REAL and old_cupy:
        pytest.skip("the old-CuPy model is the fake's")
    dev = fake_gpu_device(old_cupy=old_cupy) if not REAL else gpu.gpu_devices(1)[0]
    cpu = local_devices()[0]
    op = _scatter_op(how, dtype)
    params = (np.arange(10).reshape(5, 2) + 3).astype(dtype)
    idx = np.array([3, 1, 3, 0, 3, 1], np.int32)
    upd = (np.arange(12).reshape(6, 2) % 5 + 1).astype(dtype) * (1 if how != "sub" else -1)
    want = _call(op, cpu, [params, idx, upd], 1)[0]
    before = [] if REAL else list(dev.xp.at_calls)
    got = _call(op, dev, [params, idx, upd], 1)[0]
    assert got.dtype == want.dtype == dtype
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)
    if not REAL:
        atomic = how in ("add", "sub", "min", "max") and np.dtype(dtype) in (np.float32, np.int32)
        used = dev.xpx.calls if old_cupy else dev.xp.at_calls[len(before):]
        assert bool(used) == atomic  # the module's scatter only where CuPy has it for the dtype


@pytest.mark.parametrize("how", ["update", "add", "sub"])
def test_scatter_nd_with_repeated_indices_equals_cpu(how: str) -> None:
    dev = fake_gpu_device() if not REAL else gpu.gpu_devices(1)[0]
    cpu = local_devices()[0]
    op = _scatter_nd_op = _scatter_op(how, np.float64, nd=True)
    params = np.arange(10, dtype=np.float64).reshape(5, 2)
    idx = np.array([[3, 1], [0, 0], [3, 1], [4, 0]], np.int32)
    upd = np.array([1.5, -2.0, 4.0, 8.0])
    want = _call(op, cpu, [params, idx, upd], 1)[0]
    got = _call(_scatter_nd_op, dev, [params, idx, upd], 1)[0]
    np.testing.assert_array_equal(got, want)


def test_scatter_errors_on_the_gpu_are_the_cpus() -> None:
    dev = fake_gpu_device() if not REAL else gpu.gpu_devices(1)[0]
    op = _scatter_op("add", np.float32)
    params = np.zeros((5, 2), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 5\)"):
        _call(op, dev, [params, np.array([0, 5], np.int32), np.ones((2, 2), np.float32)], 1)
    with pytest.raises(errors.InvalidArgumentError, match="Must have updates.shape"):
        _call(op, dev, [params, np.array([0, 1], np.int32), np.ones((3, 2), np.float32)], 1)
    div = _scatter_op("div", np.int32)
    with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
        _call(div, dev, [np.ones((5, 2), np.int32), np.array([0, 0], np.int32), np.zeros((2, 2), np.int32)], 1)


def _sparse_op(kind: str) -> Any:
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(np.zeros((6, 2), np.float32))
        grads = fl.IndexedSlices(fl.constant(np.ones((4, 2), np.float32)), fl.constant([0, 1, 2, 3]))
        opt = {"SparseApplyMomentum": fl.train.MomentumOptimizer(0.1, 0.9),
               "SparseApplyAdagrad": fl.train.AdagradOptimizer(0.1),
               "SparseApplyRMSProp": fl.train.RMSPropOptimizer(0.1, momentum=0.5),
               "SparseApplyCenteredRMSProp": fl.train.RMSPropOptimizer(0.1, centered=True),
               "SparseApplyAdadelta": fl.train.AdadeltaOptimizer(1.0)}[kind]
        train = opt.apply_gradients([(grads, v)])
    return next(o for o in g.get_operations() if o.type == kind), train


@pytest.mark.parametrize("kind", ["SparseApplyMomentum", "SparseApplyAdagrad", "SparseApplyRMSProp",
                                  "SparseApplyCenteredRMSProp", "SparseApplyAdadelta"])
def test_sparse_apply_with_repeated_indices_equals_cpu(kind: str) -> None:
    """Repeated indices apply one after another (TensorFlow's CPU kernels); the GPU
    kernel does it round by round and gives the same values."""
    dev = fake_gpu_device() if not REAL else gpu.gpu_devices(1)[0]
    cpu = local_devices()[0]
    op, _ = _sparse_op(kind)
    rs = np.random.RandomState(4)
    n_refs = sum(1 for t in op.inputs if t.dtype.is_ref_dtype)
    # mg (CenteredRMSProp's second) small, so that ms - mg * mg stays positive.
    refs = [(rs.rand(6, 2) * 0.1 + (i != 1)).astype(np.float32) for i in range(n_refs)]
    idx = np.array([2, 5, 2, 0, 2], np.int32)
    grad = rs.randn(5, 2).astype(np.float32)
    scalars = {"lr": 0.1, "momentum": 0.9, "rho": 0.9, "epsilon": 1e-7}
    names = list(inspect.signature(registry.find_kernel(kind, "CPU").fn).parameters)[2 + n_refs:]
    rest = [idx if n == "indices" else grad if n == "grad" else np.float32(scalars[n]) for n in names]
    want = _call(op, cpu, refs + rest, n_refs)
    got = _call(op, dev, refs + rest, n_refs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    untouched = [1, 3, 4]
    np.testing.assert_array_equal(got[0][untouched], refs[0][untouched])


def test_sparse_apply_bad_index_on_the_gpu() -> None:
    dev = fake_gpu_device() if not REAL else gpu.gpu_devices(1)[0]
    op, _ = _sparse_op("SparseApplyAdagrad")
    var = np.ones((6, 2), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="Index 6 at offset 1 in indices is out of range"):
        _call(op, dev, [var, var, np.float32(0.1), np.ones((2, 2), np.float32), np.array([0, 6], np.int32)], 2)


def test_occurrence_rounds() -> None:
    flat = np.array([3, 1, 3, 0, 3, 1])
    rounds = occurrence_rounds(np, flat)
    assert [r.tolist() for r in rounds] == [[0, 1, 3], [2, 5], [4]]
    assert occurrence_rounds(np, np.array([2, 0, 1])) == [None]
    dev = fake_gpu_device()
    on_dev = occurrence_rounds(dev.xp, dev.from_host(flat))
    assert all(isinstance(r, FakeGpuArray) for r in on_dev)
    assert [dev.to_host(r).tolist() for r in on_dev] == [[0, 1, 3], [2, 5], [4]]


def test_scatter_nd_op_with_bool_updates_on_the_gpu() -> None:
    dev = fake_gpu_device()
    g = fl.Graph()
    with g.as_default():
        out = fl.scatter_nd([[0], [2], [0]], [True, False, True], [4])
    kdef = registry.find_kernel("ScatterNd", "GPU")
    idx, upd = dev.from_host(np.array([[0], [2], [0]], np.int32)), dev.from_host(np.array([True, False, True]))
    got = kdef.fn(NodeContext(out.op, dev, 0), idx, upd, np.array([4], np.int32))
    np.testing.assert_array_equal(dev.to_host(got), [True, False, False, False])


@settings(max_examples=60, deadline=None)
@given(idx=st.lists(st.integers(0, 5), min_size=0, max_size=12),
       how=st.sampled_from(["update", "add", "sub", "mul", "div", "min", "max"]),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64]),
       old_cupy=st.booleans())
def test_scatter_at_on_a_gpu_equals_numpys_ufunc_at(idx: list[int], how: str, dtype: Any, old_cupy: bool) -> None:
    """Any index list (repeats, empty): the GPU path of `scatter_at` (module scatter or
    rounds) gives NumPy's `ufunc.at` result (ScatterDiv's truncation for integers)."""
    dev = fake_gpu_device(old_cupy=old_cupy)
    rs = np.random.RandomState(len(idx))
    base = (rs.randint(1, 9, (6, 2)) * (1 if how != "div" else 8)).astype(dtype)
    upd = rs.randint(1, 4, (len(idx), 2)).astype(dtype)
    want = base.copy()
    flat = np.array(idx, np.int32)
    scatter_at(np, None, how, want, flat, upd)
    got = dev.from_host(base)
    scatter_at(dev.xp, dev.xpx, how, got, dev.from_host(flat), dev.from_host(upd))
    np.testing.assert_array_equal(dev.to_host(got), want)
