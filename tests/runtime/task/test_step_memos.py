"""What the straight-line function of a step remembers between steps: shape memos
(flowlab.runtime.task.shape_memo: ops computed from shapes alone run once per shape, with
the values of running them every step) and its variables' states (looked up once
until a resource is removed)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.runtime.task import plan as plan_module
from flowlab.runtime.task import shape_memo


def _count_kernels(monkeypatch, op_types):
    """Count the kernel calls of `op_types` in plans compiled from now on."""
    calls: Counter = Counter()
    real = plan_module.find_kernel

    def find_kernel(op_type, device_type, *args, **kwargs):
        kdef = real(op_type, device_type, *args, **kwargs)
        if kdef is None or op_type not in op_types:
            return kdef
        fn = kdef.fn

        def counting(*a):
            calls[op_type] += 1
            return fn(*a)

        return dataclasses.replace(kdef, fn=counting)

    monkeypatch.setattr(plan_module, "find_kernel", find_kernel)
    return calls


@pytest.fixture
def counted(monkeypatch):
    return _count_kernels(monkeypatch, ("Shape", "GatherV2", "Prod", "Tile", "Fill", "Mul"))


def _mean_program():
    x = fl.placeholder(fl.float32, [None, 3])
    w = fl.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 5)
    loss = fl.reduce_mean(fl.square(fl.matmul(x, w)))
    (g,) = fl.gradients(loss, [w])
    return x, w, loss, g


def _want(xv, wv):
    y = xv @ wv
    return np.mean(y * y), xv.T @ (2 * y) / y.size


def _plan_source(sess, fetches, feed):
    return sess._plan_of(fetches, feed).source


def test_the_mean_gradient_runs_once_per_batch_size():
    x, w, loss, g = _mean_program()
    rng = np.random.default_rng(0)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        wv = sess.run(w)
        for n in (4, 4, 7, 4, 7, 7, 1):
            xv = rng.standard_normal((n, 3)).astype(np.float32)
            got_loss, got_g = sess.run([loss, g], {x: xv})
            want_loss, want_g = _want(xv, wv)
            np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
            np.testing.assert_allclose(got_g, want_g, rtol=1e-5, atol=1e-6)
        source = _plan_source(sess, [loss, g], {x: xv})
    assert "_mk" in source and "_mst(" in source


def test_kernels_of_a_region_run_only_when_the_shape_changes(counted):
    x, w, loss, g = _mean_program()
    rng = np.random.default_rng(1)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        step = sess.make_callable(g, [x])
        for n in (5, 5, 5, 5):
            step(rng.standard_normal((n, 3)).astype(np.float32))
        assert counted["GatherV2"] == 1 and counted["Prod"] == 1  # the mean gradient's count
        step(rng.standard_normal((2, 3)).astype(np.float32))
        assert counted["GatherV2"] == 2
        step(rng.standard_normal((5, 3)).astype(np.float32))
        assert counted["GatherV2"] == 3  # the memo holds the last shape only
        # Not memoized: the gradient's Mul by the step's values runs every step.
        assert counted["Mul"] >= 6


def test_a_memo_value_is_never_overwritten_by_forwarding():
    """The region's exported value dies at a Mul that forwards its output into a
    dying input: never into the memo's array."""
    x = fl.placeholder(fl.float32, [None])
    scale = fl.cast(fl.shape(x)[0], fl.float32) + fl.zeros([4])  # region: depends on shape only
    y = scale * (x[:4] * 1.0)
    with fl.Session() as sess:
        for _ in range(3):
            xv = np.arange(6, dtype=np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: xv}), 6.0 * xv[:4])


def test_a_fetched_region_value_is_not_memoized():
    x = fl.placeholder(fl.float32, [None, 2])
    dims = fl.shape(x) * 2  # fetched: the caller's array each step, not a memo's
    y = fl.reduce_sum(x) / fl.cast(fl.reduce_prod(dims), fl.float32)
    with fl.Session() as sess:
        for rows in (3, 3, 5, 5):
            xv = np.ones((rows, 2), np.float32)
            got_dims, got_y = sess.run([dims, y], {x: xv})
            np.testing.assert_array_equal(got_dims, [2 * rows, 4])
            assert got_y == np.float32(rows * 2) / (rows * 8)
            got_dims[...] = -1  # writing the fetched array changes no later step


def test_a_large_shape_derived_value_is_recomputed_not_held(counted):
    x = fl.placeholder(fl.float32, [None, None])
    big = fl.fill(fl.shape(x), 2.0)  # a Fill of the shape: as large as x
    y = x * big
    with fl.Session() as sess:
        for _ in range(3):
            xv = np.ones((200, 200), np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: xv}), 2 * xv)
    assert counted["Fill"] == 3  # 160 KB is over MAX_MEMO_BYTES: run every step
    assert 200 * 200 * 4 > shape_memo.MAX_MEMO_BYTES


def test_a_region_that_fails_fails_every_step():
    x = fl.placeholder(fl.float32, [None])
    picked = fl.gather(fl.shape(x), [1])  # index 1 of a rank-1 shape: out of range
    y = x * fl.cast(picked, fl.float32)
    with fl.Session() as sess:
        for _ in range(2):
            with pytest.raises(fl.errors.InvalidArgumentError, match=r"indices\[0\] = 1 is not in \[0, 1\)"):
                sess.run(y, {x: np.ones(3, np.float32)})


def test_a_shape_of_a_variable_is_not_a_root():
    """Reading an uninitialized variable's shape must fail every step (what
    tf.assert_variables_initialized relies on), so it keys no memo."""
    v = fl.Variable(fl.zeros([3]), validate_shape=False)  # no static shape: a Shape op
    n = fl.shape(v)[0] * 2
    with fl.Session() as sess:
        for _ in range(2):
            with pytest.raises(fl.errors.FailedPreconditionError, match="uninitialized"):
                sess.run(n)
        sess.run(v.initializer)
        assert sess.run(n) == 6


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 4)), min_size=1, max_size=6))
def test_broadcasting_gradients_over_changing_shapes_equal_numpy(shapes):
    """Gradients of a broadcasting product (BroadcastGradientArgs over two runtime
    shapes, a region of two roots) for a sequence of shapes, against NumPy."""
    g = fl.Graph()
    with g.as_default():
        a = fl.placeholder(fl.float32, [None, None])
        b = fl.placeholder(fl.float32, [None])
        ga, gb = fl.gradients(fl.reduce_sum(a * b * 3.0), [a, b])
        with fl.Session(graph=g) as sess:
            step = sess.make_callable([ga, gb], [a, b])
            for rows, cols in shapes:
                av = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
                bv = np.arange(1, cols + 1, dtype=np.float32)
                got_a, got_b = step(av, bv)
                np.testing.assert_allclose(got_a, np.broadcast_to(3 * bv, av.shape))
                np.testing.assert_allclose(got_b, 3 * av.sum(axis=0))


def test_variable_handles_are_looked_up_once_until_a_resource_is_removed(monkeypatch):
    """The straight-line function holds its VariableV2 ops' states (also a memo of
    the step): one lookup for many steps; after a resource manager is cleared the
    next step looks the variable up again and finds it gone (uninitialized)."""
    calls = _count_kernels(monkeypatch, ("VariableV2",))
    v = fl.Variable(2.0)
    inc = fl.assign_add(v, 1.0)
    with fl.Session() as sess:
        sess.run(v.initializer)
        step = sess.make_callable(inc)
        assert [step() for _ in range(4)] == [3.0, 4.0, 5.0, 6.0]
        before = calls["VariableV2"]
        assert [step() for _ in range(3)] == [7.0, 8.0, 9.0]
        assert calls["VariableV2"] == before  # held: no lookup per step
        for d in sess._devices:
            d.resources.clear()
        with pytest.raises(fl.errors.FailedPreconditionError, match="uninitialized"):
            step()
        sess.run(v.initializer)
        assert step() == 3.0


def test_concurrent_steps_with_different_shapes_get_their_own_values():
    """Two threads run one plan with different batch sizes: the memo's key and values
    are replaced as one, so no step reads the other shape's values."""
    import threading

    x, w, loss, g = _mean_program()
    failures = []
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        wv = sess.run(w)
        step = sess.make_callable([loss, g], [x])

        def work(n, seed):
            rng = np.random.default_rng(seed)
            for _ in range(150):
                xv = rng.standard_normal((n, 3)).astype(np.float32)
                got_loss, got_g = step(xv)
                want_loss, want_g = _want(xv, wv)
                if not (np.allclose(got_loss, want_loss, rtol=1e-4)
                        and np.allclose(got_g, want_g, rtol=1e-4, atol=1e-5)):
                    failures.append(n)

        threads = [threading.Thread(target=work, args=(n, n)) for n in (2, 9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


def test_a_region_runs_before_an_op_that_waits_for_it_by_a_control_edge():
    """The block is placed before the first op outside that waits for it, by data or
    by a control edge: a control dependency's order is kept."""
    x = fl.placeholder(fl.float32, [None])
    n = fl.cast(fl.shape(x)[0], fl.float32) * 2.0  # a region
    v = fl.Variable(0.0)
    with fl.control_dependencies([n.op]):
        bumped = fl.assign_add(v, 1.0)  # waits for the region, reads none of it
    with fl.control_dependencies([bumped]):
        y = fl.identity(x) * n  # the region's data reader, after the assignment
    with fl.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(y, {x: np.ones(3, np.float32)})
        plan = sess._plan_of(y, {x: np.ones(3, np.float32)})
    np.testing.assert_array_equal(got, np.full(3, 6.0, np.float32))
    lines = plan.source.splitlines()
    assign = next(n.index for n in plan.nodes if n.op.type == "AssignAdd")
    key_line = next(i for i, line in enumerate(lines) if "_mk" in line and "=" in line)
    assign_line = next(i for i, line in enumerate(lines) if f"k{assign}(" in line)
    assert key_line < assign_line
