"""Every GPU-registered kernel, run on a GPU device, against the CPU kernel.

The cases are the gradient table's (tests/ops/gradient_check.py): each builds a
forward graph and its gradients, so forward and gradient kernels are both exercised,
plus a few cases here for ops without gradients.  For every op of a case's graph
that has a GPU kernel, the CPU session's values of its inputs go to the device
(`from_host`; inputs the kernel declares `host_memory` stay on the host), the GPU
kernel runs, and its outputs must be device arrays (so it computed with `ctx.xp`)
whose values equal the CPU session's.

By default the device is the fake GPU (tests/runtime/fake_gpu.py).  With
`FLOWLAB_REAL_GPU=1` (benchmarks/gpu_check.py sets it) the device is a real CuPy
GPU, and the module skips when there is none.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels.registry import find_kernel, registered_kernels
from flowlab.ops.control_flow_context import context_of, output_context
from flowlab.ops.gradients_impl import gradients
from flowlab.runtime.task.plan import NodeContext
from tests.ops.gradient_check import load_table
from tests.runtime.fake_gpu import fake_gpu_device

REAL = os.environ.get("FLOWLAB_REAL_GPU") == "1"


def _device() -> Any:
    if not REAL:
        return fake_gpu_device()
    from flowlab.runtime.task.gpu import gpu_devices

    devs = gpu_devices(1)
    if not devs:
        pytest.skip("FLOWLAB_REAL_GPU=1 but CuPy finds no GPU", allow_module_level=True)
    return devs[0]


DEVICE = _device()

# Ops not run by the walk: plumbing the runtime handles itself, and ops whose kernels
# need a step (variables, rendezvous, frames), tested by whole steps instead.
SKIP = {"Placeholder", "Const", "NoOp"}


def _extra_cases() -> list[tuple[str, Any, list[np.ndarray]]]:
    """(name, build(tf, *placeholders) -> tensor or list, inputs) for ops without
    gradient cases."""
    r = np.random.RandomState(0)
    a = r.randn(3, 4)
    b = r.randn(3, 4)
    i = np.array([[1, -2, 3], [4, 0, -6]], np.int32)
    return [
        ("compare", lambda tf, x, y: [x < y, x <= y, tf.equal(x, y), tf.not_equal(x, y), x > y, x >= y,
                                      tf.logical_and(x < y, x > 0), tf.logical_or(x < y, x > 0),
                                      tf.logical_not(x < y), tf.where(x < y, x, y)], [a, b]),
        ("argmax", lambda tf, x: [tf.argmax(x, 1), tf.argmin(x, 0), tf.shape(x), tf.size(x), tf.rank(x),
                                  tf.zeros_like(x), tf.ones_like(x), tf.fill([2, 2], 3.0), tf.range(5),
                                  tf.cast(x, tf.int32), tf.one_hot([0, 2, 1], 3)], [a]),
        ("int", lambda tf, x: [x // 3, x % 3, tf.abs(x), -x, tf.sign(x), tf.maximum(x, 1), x * x,
                               tf.reduce_max(x, 1), tf.reduce_sum(x), tf.reduce_prod(x, 0),
                               tf.reduce_any(x > 0), tf.reduce_all(x > 0)], [i]),
        ("elementwise", lambda tf, x, n: [tf.is_nan(x), tf.is_inf(x), tf.is_finite(x), tf.ones_like(n),
                                          tf.zeros_like(n), tf.stop_gradient(x), tf.truncatediv(n, 4),
                                          tf.truncatemod(n, 4), tf.where(n > 0), tf.unique(n[0])[0],
                                          tf.unique(n[0])[1], tf.lin_space(x[0, 0] * 0, x[0, 0] * 0 + 1.0, 5)],
         [np.array([[1.0, np.nan, np.inf], [-np.inf, 0.0, -2.5]]), i]),
        ("batch_norm", lambda tf, x: list(tf.nn.fused_batch_norm(
            tf.reshape(tf.cast(x, tf.float32), [1, 2, 3, 2]), tf.ones([2]), tf.zeros([2]))[:3]), [a]),
        ("nn", lambda tf, x: [tf.nn.in_top_k(tf.cast(x, tf.float32), [0, 1, 2], 2), tf.nn.top_k(x, 2).values,
                              tf.nn.softmax(x), tf.nn.log_softmax(x), tf.nn.relu(x),
                              tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 3], logits=x)], [a]),
    ]


def _cases() -> list[tuple[str, Any, list[np.ndarray]]]:
    out = []
    for _op_type, cases in sorted(load_table().items()):
        for c in cases:
            out.append((c.id, c.build, c.inputs))
    return out + _extra_cases()


def _host_args(args: Any, n_tensors: int, kdef: Any) -> set[int]:
    """Indices of the tensors of `args` (an op's inputs or outputs) that the kernel
    keeps in host memory."""
    if not kdef.host_memory:
        return set()
    n_list = n_tensors - sum(1 for a in args if not a.is_list)
    idx, out = 0, set()
    for a in args:
        n = n_list if a.is_list else 1
        if a.name in kdef.host_memory:
            out.update(range(idx, idx + n))
        idx += n
    return out


def _in_branch(g: Any) -> set[Any]:
    """Ops that can see a dead value: between a Switch and its Merge."""
    seen: set[Any] = set()
    todo = [op for op in g.get_operations() if op.type in ("Switch", "RefSwitch")]
    while todo:
        op = todo.pop()
        for t in op.outputs:
            for c in t.consumers():
                if c not in seen and c.type not in ("Merge", "RefMerge"):
                    seen.add(c)
                    todo.append(c)
    return seen


def _gpu_ops(g: Any) -> list[Any]:
    ops = []
    branch = _in_branch(g)
    for op in g.get_operations():
        if op in branch:
            continue
        kdef = find_kernel(op.type, "GPU")
        if op.type in SKIP or kdef is None or kdef.needs_step:
            continue
        if op.op_def is None or op.op_def.is_control_flow or any(a.is_ref for a in op.op_def.inputs):
            continue
        if any(t.dtype.base_dtype.name in ("string", "resource", "variant") for t in (*op.inputs, *op.outputs)):
            continue
        # Values inside a cond or a loop cannot be fetched (dead, or per iteration).
        if context_of(op) is not None or any(output_context(t.op) is not None for t in op.inputs):
            continue
        ops.append(op)
    return ops


COVERED: set[str] = set()


def _as_host(v: Any) -> Any:
    return DEVICE.to_host(v) if DEVICE.is_device_array(v) else v


def _check_graph(g: Any, feed: dict[Any, Any]) -> None:
    ops = _gpu_ops(g)
    tensors = sorted({t for op in ops for t in (*op.inputs, *op.outputs)}, key=lambda t: t.name)
    with fl.Session(graph=g) as sess:
        vals = dict(zip(tensors, sess.run(tensors, feed)))
    for op in ops:
        kdef = find_kernel(op.type, "GPU")
        host = _host_args(op.op_def.inputs, len(op.inputs), kdef)
        host_out = _host_args(op.op_def.outputs, len(op.outputs), kdef)
        args = [np.asarray(vals[t]) if i in host else DEVICE.from_host(np.asarray(vals[t]))
                for i, t in enumerate(op.inputs)]
        out = kdef.fn(NodeContext(op, DEVICE, 0), *args)
        if len(op.outputs) == 1 and not (op.op_def.outputs and op.op_def.outputs[0].is_list):
            out = [out]
        for t, v in zip(op.outputs, out):
            where = f"{op.type} '{op.name}' output {t.value_index}"
            # 0-d values may flow as NumPy scalars (CuPy takes them as operands).
            if t.value_index not in host_out and not isinstance(v, np.generic):
                assert DEVICE.is_device_array(v), f"{where}: {type(v).__name__} is not a device array"
            got = np.asarray(_as_host(v))
            want = np.asarray(vals[t])
            assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=where)
        COVERED.add(op.type)


@pytest.mark.parametrize("name,build,inputs", _cases(), ids=[c[0] for c in _cases()])
def test_gpu_kernel_matches_cpu(name: str, build: Any, inputs: list[np.ndarray]) -> None:
    g = fl.Graph()
    with g.as_default():
        xs = [fl.placeholder(fl.as_dtype(v.dtype), v.shape, name=f"x{i}") for i, v in enumerate(inputs)]
        ys = build(fl, *xs)
        ys = ys if isinstance(ys, list) else [ys]
        floats = [x for x in xs if x.dtype.is_floating]
        diff = [y for y in ys if y.dtype.is_floating]
        if floats and diff:
            loss = fl.add_n([fl.reduce_sum(fl.cast(y * y, fl.float64)) for y in diff])
            gradients(loss, floats)
    _check_graph(g, dict(zip(xs, inputs)))


def test_coverage_report() -> None:
    """Runs last in this module: the GPU kernels the walk covered (informational, and a
    floor so that the walk cannot silently stop covering ops)."""
    gpu_ops = {t for (t, d) in registered_kernels() if d == "GPU"}
    missing = sorted(gpu_ops - COVERED - SKIP)
    print(f"\nGPU kernels: {len(gpu_ops)}; run by the walk: {len(COVERED)}; not run: {missing}")
    if COVERED:
        assert len(COVERED) >= 60
