"""The runtime's thread policy (flowlab.runtime.thread_policy): the numbers it chooses
from ConfigProto, one BLAS thread and the intra-op threads while a step with an
expensive kernel runs, the user's BLAS setting back afterwards, and steps of small ops
left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import flowlab as fl
from flowlab.kernels import intra_op
from flowlab.runtime import thread_policy
from flowlab.runtime.config import ConfigProto
from flowlab.runtime.task.task import LocalTask
from flowlab.runtime.thread_policy import ThreadPolicy, choose, from_config


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.mark.parametrize("intra, inter, cores, want", [
    (0, 0, 2, ThreadPolicy(1, 2, 1)),
    (0, 0, 1, ThreadPolicy(1, 1, 1)),
    (0, 2, 8, ThreadPolicy(2, 4, 1)),
    (0, 3, 2, ThreadPolicy(3, 1, 1)),  # more executor threads than cores: one each
    (1, 0, 16, ThreadPolicy(1, 1, 1)),
    (6, 2, 2, ThreadPolicy(2, 6, 1)),  # what the user asks for, even past the cores
])
def test_choose(intra, inter, cores, want):
    assert choose(intra, inter, cores) == want


def test_choose_rejects_negative_counts():
    with pytest.raises(ValueError, match=r"ConfigProto.intra_op_parallelism_threads must be >= 0"):
        choose(-1, 0)
    with pytest.raises(ValueError, match=r"ConfigProto.inter_op_parallelism_threads must be >= 0 "
                                         r"\(0: let flowlab choose\), got -2"):
        choose(0, -2)


def test_from_config_reads_both_fields():
    p = from_config(ConfigProto(intra_op_parallelism_threads=3, inter_op_parallelism_threads=2))
    assert p == ThreadPolicy(2, 3, 1)
    assert from_config(None) == choose()
    assert LocalTask("localhost", 0, None, 2, 5).threads == ThreadPolicy(2, 5, 1)


def test_scope_sets_and_restores_and_nests():
    old_intra = intra_op.intra_op_threads()
    with threadpool_limits(2, user_api="blas"):
        policy = ThreadPolicy(1, 3, 1)
        with policy.scope():
            assert set(_blas_threads()) == {1}
            assert intra_op.intra_op_threads() == 3
            with ThreadPolicy(1, 5, 1).scope():  # a concurrent step: the first one's policy
                assert intra_op.intra_op_threads() == 3
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {2}
    intra_op.set_intra_op_threads(old_intra)


def test_scope_restores_after_an_error():
    with threadpool_limits(2, user_api="blas"):
        with pytest.raises(RuntimeError, match="inside"):
            with ThreadPolicy(1, 1, 1).scope():
                raise RuntimeError("inside")
        assert set(_blas_threads()) == {2}


def _graph_reading_the_threads(seen):
    def probe(x):
        seen.append((tuple(_blas_threads()), intra_op.intra_op_threads()))
        return x

    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [2])
        y = fl.py_func(probe, [x], fl.float32)  # PyFunc is an expensive kernel
    return g, x, y


@pytest.mark.parametrize("callable_", [False, True])
def test_a_step_runs_under_the_policy_and_gives_the_setting_back(callable_):
    seen = []
    g, x, y = _graph_reading_the_threads(seen)
    with threadpool_limits(2, user_api="blas"):
        task = LocalTask("localhost", 0, None, 0, 3)
        with fl.Session(graph=g, tasks=[task]) as sess:
            run = sess.make_callable(y, [x]) if callable_ else (lambda v: sess.run(y, {x: v}))
            np.testing.assert_array_equal(run(np.ones(2, np.float32)), np.ones(2, np.float32))
            assert set(_blas_threads()) == {2}
        task.close()
    assert seen and set(seen[0][0]) == {1} and seen[0][1] == 3


def test_steps_of_small_ops_do_not_touch_the_settings(monkeypatch):
    entered = []
    monkeypatch.setattr(thread_policy, "enter", lambda p: entered.append(p))
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float32, [2])
        y = x * 2.0 + 1.0
    with fl.Session(graph=g) as sess:
        sess.run(y, {x: np.ones(2, np.float32)})
        sess.make_callable(y, [x])(np.ones(2, np.float32))
    assert entered == []


def test_limit_process_for_a_task_server():
    with threadpool_limits(2, user_api="blas"):
        limits = ThreadPolicy(1, 2, 1).limit_process()
        assert set(_blas_threads()) == {1} and intra_op.intra_op_threads() == 2
        limits.restore_original_limits()
        assert set(_blas_threads()) == {2}



def test_a_blas_library_loaded_later_is_limited_too():
    # A fresh process: NumPy's OpenBLAS only, a scope, then SciPy's own OpenBLAS.
    pytest.importorskip("scipy.linalg")
    code = """
import numpy
from threadpoolctl import threadpool_info
from flowlab.runtime.thread_policy import ThreadPolicy
p = ThreadPolicy(1, 1, 1)
with p.scope():
    pass
import scipy.linalg
blas = lambda: [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
assert len(blas()) == 2, blas()
with p.scope():
    print(blas())
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[1, 1]"


def test_a_process_that_limited_its_blas_limits_the_chosen_intra_op_threads():
    assert choose(0, 0, cores=8, blas_limit=1) == ThreadPolicy(1, 1, 1)
    assert choose(0, 2, cores=8, blas_limit=3) == ThreadPolicy(2, 3, 1)
    assert choose(4, 0, cores=8, blas_limit=1) == ThreadPolicy(1, 4, 1)  # asked for: kept
    with threadpool_limits(1, user_api="blas"):  # a Dask task server, the training notebook
        assert thread_policy.current_blas_threads() == 1
        assert LocalTask("localhost", 0, None, 0).threads.intra_op_threads == 1
        with ThreadPolicy(1, 1, 1).scope():  # inside a step: the process's own setting
            assert thread_policy.current_blas_threads() == 1
    with threadpool_limits(2, user_api="blas"), ThreadPolicy(1, 1, 1).scope():
        assert thread_policy.current_blas_threads() == 2


def test_a_step_on_another_thread_is_limited_too():
    # threadpoolctl lets only the first Python thread that set OpenBLAS's count set it
    # again; a step may run on any thread (a session's step pool, a Dask task's).
    import threading

    seen = []
    g, x, y = _graph_reading_the_threads(seen)
    with threadpool_limits(2, user_api="blas"):  # this thread controls OpenBLAS now
        task = LocalTask("localhost", 0, None, 0, 2)
        with fl.Session(graph=g, tasks=[task]) as sess:
            t = threading.Thread(target=lambda: sess.run(y, {x: np.ones(2, np.float32)}))
            t.start()
            t.join()
        assert set(_blas_threads()) == {2}
        task.close()
    assert seen and set(seen[0][0]) == {1}
