"""The machine profile the tests run under: the TensorFlow reference is pinned to its
portable kernels, and the portability pass of scripts/test really turns NumPy's SIMD
loops off and runs another CPU's OpenBLAS kernels (else that pass would check nothing)."""

from __future__ import annotations

import os

import numpy as np
import pytest


def test_reference_runs_tensorflows_portable_kernels(tf1):
    from tensorflow.python.util import _pywrap_util_port  # type: ignore[import-not-found]

    assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert not _pywrap_util_port.IsMklEnabled()
    g = tf1.Graph()
    with g.as_default():
        a = tf1.placeholder(tf1.float32, [2, 2])
        y = tf1.matmul(a, a)
        md = tf1.RunMetadata()
        with tf1.Session(graph=g) as s:
            s.run(y, {a: np.eye(2)}, options=tf1.RunOptions(trace_level=3), run_metadata=md)
    kernels = {n.timeline_label.split(" = ")[-1].split("(")[0]
               for d in md.step_stats.dev_stats for n in d.node_stats}
    assert "MatMul" in kernels and "_MklMatMul" not in kernels


@pytest.mark.skipif(not os.environ.get("NPY_DISABLE_CPU_FEATURES"),
                    reason="only in the portability pass (NPY_DISABLE_CPU_FEATURES set)")
def test_portability_pass_runs_numpys_baseline_loops():
    introspect = pytest.importorskip("numpy.lib.introspect")
    core = getattr(np, "_core", None) or np.core
    dispatched = core._multiarray_umath.__cpu_dispatch__
    disabled = os.environ["NPY_DISABLE_CPU_FEATURES"].split()
    assert set(dispatched) <= set(disabled)
    for name in ("log", "exp", "sin", "tanh", "add"):
        for loops in introspect.opt_func_info(func_name=f"^{name}$").values():
            for loop in loops.values():
                current = loop["current"] if isinstance(loop, dict) else loop
                assert str(current).startswith("baseline"), (name, loop)


@pytest.mark.skipif(not os.environ.get("OPENBLAS_CORETYPE"),
                    reason="only in the portability pass where it picks other OpenBLAS kernels (OPENBLAS_CORETYPE set)")
def test_portability_pass_runs_another_cpus_blas_kernels():
    from threadpoolctl import threadpool_info

    kernels = {i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"}
    assert kernels == {os.environ["OPENBLAS_CORETYPE"]}, kernels
