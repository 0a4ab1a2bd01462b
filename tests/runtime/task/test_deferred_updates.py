"""Deferred variable updates (flowlab.runtime.task.deferred_updates): an optimizer update at
the end of its straight-line step, in place when its variables hold their arrays
alone -- with the values of the logged update, nothing written by a step that fails,
and no array anyone else holds ever changed."""

from __future__ import annotations

import queue
from collections import Counter

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels.in_place_updates import InPlaceUpdate
from flowlab.ops import training_ops
from flowlab.runtime.task import deferred_updates


@pytest.fixture
def writes(monkeypatch):
    """Count how the deferred updates wrote, per optimizer: in place or as new arrays
    ("in_place", "fresh"; e.g. "in_place:adam"), and in place with the gradient's buffer
    as scratch ("own_grad")."""
    seen: Counter = Counter()
    in_place, fresh = InPlaceUpdate._in_place, InPlaceUpdate._fresh

    def counting_in_place(self, bufs):
        seen["in_place"] += 1
        seen[f"in_place:{self.arith.name}"] += 1
        seen["own_grad"] += any(b is self.g for b in bufs)
        return in_place(self, bufs)

    def counting_fresh(self, step):
        seen["fresh"] += 1
        seen[f"fresh:{self.arith.name}"] += 1
        return fresh(self, step)

    monkeypatch.setattr(InPlaceUpdate, "_in_place", counting_in_place)
    monkeypatch.setattr(InPlaceUpdate, "_fresh", counting_fresh)
    return seen


def _logged(monkeypatch):
    """The reference: plans compiled from now on neither forward buffers nor defer
    updates (every update is the logged one)."""
    monkeypatch.setenv("FLOWLAB_FORWARDING", "0")
    monkeypatch.setattr(deferred_updates, "deferrable", lambda order, fetch_slots: set())


def _program(seed=0):
    rng = np.random.default_rng(seed)
    x = fl.placeholder(fl.float32, [None, 4])
    w = fl.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")
    b = fl.Variable(np.zeros(3, np.float32), name="b")
    loss = fl.reduce_mean(fl.square(fl.nn.relu(fl.matmul(x, w) + b) - 1.0))
    train = fl.train.AdamOptimizer(0.05).minimize(loss)
    feed = {x: rng.standard_normal((8, 4)).astype(np.float32)}
    return x, w, b, loss, train, feed


def _run(steps, env, monkeypatch, fetch_loss=True):
    if env == "0":
        _logged(monkeypatch)
    g = fl.Graph()
    with g.as_default():
        x, w, b, loss, train, feed = _program()
        with fl.Session(graph=g) as sess:
            sess.run(fl.global_variables_initializer())
            losses = [sess.run([train, loss] if fetch_loss else train, feed) for _ in range(steps)]
            slots = [sess.run(s) for s in fl.global_variables()]
            return losses, slots


def test_in_place_updates_give_the_logged_updates_values_bit_for_bit(monkeypatch, writes):
    on, slots_on = _run(12, "1", monkeypatch)
    assert writes["in_place"] >= 2 * 10  # both variables, every step after the first
    off, slots_off = _run(12, "0", monkeypatch)
    for a, b in zip(on, off):
        assert a[1] == b[1]
    for a, b in zip(slots_on, slots_off):
        np.testing.assert_array_equal(a, b)


def test_a_step_that_fails_after_the_update_writes_nothing(monkeypatch, writes):
    """The update's turn comes, then an op fails: the commit never runs, so the
    variables, the slots and the beta powers are as they were."""
    x, w, b, loss, train, feed = _program(1)
    with fl.control_dependencies([train]):
        fail = fl.check_numerics(fl.log(loss - loss - 1.0), "always_fails")  # log(-1): NaN
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        for _ in range(3):
            sess.run(train, feed)
        before = sess.run(fl.global_variables())
        in_place = writes["in_place"]
        with pytest.raises(fl.errors.InvalidArgumentError, match="always_fails"):
            sess.run(fail, feed)
        assert writes["in_place"] == in_place  # deferred, then dropped
        assert "step.commit()" in sess._plan_of(fail, feed).source
        after = sess.run(fl.global_variables())
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_a_fetched_value_is_never_changed_by_a_later_update(monkeypatch, writes):
    x, w, b, loss, train, feed = _program(2)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        held = sess.run(w)  # the caller's array
        copy = held.copy()
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(held, copy)
        assert not np.array_equal(sess.run(w), copy)
    assert writes["fresh"] >= 1  # while `held` was the variable's array, not in place


def test_a_value_in_a_queue_is_never_changed_by_a_later_update(writes):
    x, w, b, loss, train, feed = _program(3)
    q = fl.FIFOQueue(4, [fl.float32], shapes=[[4, 3]])
    enqueue = q.enqueue([w])
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        sess.run(enqueue)
        want = sess.run(w)
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(sess.run(q.dequeue()), want)


def test_a_read_after_the_update_in_the_same_step_sees_the_update(monkeypatch, writes):
    """An op after the update that reads the variable: the update is not deferred
    (the read must see the new value), as TensorFlow's control edge promises."""
    x, w, b, loss, train, feed = _program(4)
    with fl.control_dependencies([train]):
        w_after = fl.identity(w)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        w0 = sess.run(w)
        got = sess.run(w_after, feed)
        np.testing.assert_array_equal(got, sess.run(w))
        assert not np.array_equal(got, w0)
        plan = sess._plan_of(w_after, feed)
        from flowlab.runtime.task.straight_line import _line_order
        order = _line_order(plan.nodes)
        names = {plan.nodes[i].op.name for i in deferred_updates.deferrable(order, plan.fetch_slots)}
        assert names == {"Adam/update_b/ApplyAdam"}  # b is read by nothing later


def test_deferrable_names_the_updates_whose_variables_nothing_later_uses():
    x, w, b, loss, train, feed = _program(5)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        plan = sess._plan_of(train, feed)
        from flowlab.runtime.task.straight_line import _line_order
        order = _line_order(plan.nodes)
        names = {plan.nodes[i].op.name for i in deferred_updates.deferrable(order, plan.fetch_slots)}
        assert names == {"Adam/update_w/ApplyAdam", "Adam/update_b/ApplyAdam"}
        # Fetching a variable keeps its update in the step.
        fetched = sess._plan_of([train, w], feed)
        order = _line_order(fetched.nodes)
        names = {fetched.nodes[i].op.name for i in deferred_updates.deferrable(order, fetched.fetch_slots)}
        assert names == {"Adam/update_b/ApplyAdam"}


def test_concurrent_steps_train_without_errors_and_end_finite(writes):
    """Three threads train one model, switching threads every microsecond: updates may
    interleave with reads (TensorFlow's use_locking=False), but two commits of one
    variable take turns (Step.commit locks), so every step completes and the values
    stay finite.  Without the locks, one writer's read-only flag met the other's
    in-place write ('output array is read-only') in 15 of 15 such runs."""
    import sys
    import threading

    x, w, b, loss, train, feed = _program(6)
    errors: queue.Queue = queue.Queue()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())

            def work():
                try:
                    for _ in range(40):
                        sess.run(train, feed)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.put(e)

            threads = [threading.Thread(target=work) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert errors.empty(), errors.get()
            assert np.isfinite(sess.run(w)).all()
    finally:
        sys.setswitchinterval(interval)
    assert writes["in_place"] > 0


# --- every dense optimizer kernel ----------------------------------------------------
def _adam_nesterov(loss, variables):
    """ApplyAdam with use_nesterov (no tf.train optimizer builds it): slots by hand."""
    updates = []
    for var, grad in zip(variables, fl.gradients(loss, variables)):
        dtype = var.dtype.base_dtype
        shape = var.shape.as_list()
        m = fl.Variable(np.zeros(shape, dtype.as_numpy_dtype), name=var.op.name + "_m")
        v = fl.Variable(np.zeros(shape, dtype.as_numpy_dtype), name=var.op.name + "_v")
        c = [fl.constant(x, dtype) for x in (0.9, 0.999, 0.05, 0.9, 0.999, 1e-8)]
        updates.append(training_ops.apply_adam(var, m, v, *c, grad, use_nesterov=True))
    return fl.group(*updates)


OPTIMIZERS = {
    "sgd": lambda: fl.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: fl.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda: fl.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adagrad": lambda: fl.train.AdagradOptimizer(0.3, initial_accumulator_value=0.2),
    "adadelta": lambda: fl.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
    "rmsprop": lambda: fl.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6),
    "centered_rmsprop": lambda: fl.train.RMSPropOptimizer(0.01, momentum=0.3, epsilon=1e-4, centered=True),
    "adam": lambda: fl.train.AdamOptimizer(0.05),
    "adam_nesterov": None,
}


def _dense_program(name, dtype, seed=0, fetch_grads=False):
    """A small dense model trained by optimizer `name` in `dtype`: (train, fetches, feed)."""
    rng = np.random.default_rng(seed)
    np_dtype = np.dtype(dtype)
    x = fl.placeholder(dtype, [None, 4])
    w = fl.Variable(rng.standard_normal((4, 3)).astype(np_dtype), name="w")
    b = fl.Variable((rng.standard_normal(3) * 0.1).astype(np_dtype), name="b")
    loss = fl.reduce_mean(fl.square(fl.nn.relu(fl.matmul(x, w) + b) - 1.0))
    if OPTIMIZERS[name] is None:
        train = _adam_nesterov(loss, [w, b])
        grads = []
    else:
        pairs = OPTIMIZERS[name]().compute_gradients(loss, [w, b])
        train = OPTIMIZERS[name]().apply_gradients(pairs)
        grads = [g for g, _ in pairs]
    feed = {x: rng.standard_normal((8, 4)).astype(np_dtype)}
    return train, [loss] + (grads if fetch_grads else []), feed


def _train_dense(name, dtype, steps, fetch_grads=False):
    g = fl.Graph()
    with g.as_default():
        train, fetches, feed = _dense_program(name, dtype, fetch_grads=fetch_grads)
        with fl.Session(graph=g) as sess:
            sess.run(fl.global_variables_initializer())
            out = [sess.run([train] + fetches, feed)[1:] for _ in range(steps)]
            return out, sess.run(fl.global_variables())


def _assert_same_bits(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            _assert_same_bits(x, y)
        else:
            assert np.asarray(x).dtype == np.asarray(y).dtype
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_each_optimizer_in_place_gives_the_logged_values_bit_for_bit(monkeypatch, writes, name, dtype):
    steps = 6
    on = _train_dense(name, dtype, steps)
    assert writes[f"in_place:{name}"] >= 2 * (steps - 1)  # w and b, every step after the first
    if name != "adadelta":  # the one body that never borrows the gradient
        assert writes["own_grad"] >= 2 * (steps - 1)
    _logged(monkeypatch)
    before = writes["in_place"] + writes["fresh"]
    off = _train_dense(name, dtype, steps)
    assert writes["in_place"] + writes["fresh"] == before  # the reference defers nothing
    _assert_same_bits(on, off)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_large_variables_update_runs_by_row_blocks_with_one_calls_bits(monkeypatch, writes, name):
    """With three intra-op threads the in-place update of a [600, 512] variable is cut
    into row blocks shared by the threads; its values stay the logged update's."""
    from flowlab.kernels import batch_blocks

    cut = []
    real = batch_blocks.each

    def each(bounds, fn):
        cut.append(len(bounds) - 1)
        return real(bounds, fn)

    def train(steps):
        rng = np.random.default_rng(3)
        g = fl.Graph()
        with g.as_default():
            x = fl.placeholder(fl.float32, [None, 600])
            w = fl.Variable(rng.standard_normal((600, 512)).astype(np.float32) * 0.05, name="w")
            loss = fl.reduce_mean(fl.square(fl.matmul(x, w) - 1.0))
            if OPTIMIZERS[name] is None:
                op = _adam_nesterov(loss, [w])
            else:
                op = OPTIMIZERS[name]().minimize(loss)
            feed = {x: rng.standard_normal((8, 600)).astype(np.float32)}
            config = fl.ConfigProto(intra_op_parallelism_threads=3)
            with fl.Session(graph=g, config=config) as sess:
                sess.run(fl.global_variables_initializer())
                losses = [sess.run([op, loss], feed)[1] for _ in range(steps)]
                return losses, sess.run(fl.global_variables())

    monkeypatch.setattr(batch_blocks, "each", each)
    on = train(4)
    assert writes[f"in_place:{name}"] >= 3 and 3 in cut
    _logged(monkeypatch)
    _assert_same_bits(on, train(4))


@pytest.mark.parametrize("name", ["sgd", "nesterov", "adagrad", "rmsprop", "adam"])
def test_fetched_gradients_are_not_scratch_and_keep_their_values(monkeypatch, writes, name):
    """A fetched gradient does not die at its update: the update allocates its scratch
    and the caller's gradient arrays are those of the logged path."""
    steps = 5
    on = _train_dense(name, np.float32, steps, fetch_grads=True)
    assert writes[f"in_place:{name}"] >= 2 * (steps - 1)
    assert writes["own_grad"] == 0
    _logged(monkeypatch)
    off = _train_dense(name, np.float32, steps, fetch_grads=True)
    _assert_same_bits(on, off)


@pytest.mark.parametrize("name", ["sgd", "momentum", "adadelta", "centered_rmsprop"])
def test_each_optimizer_writes_nothing_when_a_later_op_fails(writes, name):
    train, fetches, feed = _dense_program(name, np.float32, seed=1)
    loss = fetches[0]
    with fl.control_dependencies([train]):
        fail = fl.check_numerics(fl.log(loss - loss - 1.0), "always_fails")
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        for _ in range(3):
            sess.run(train, feed)
        assert writes[f"in_place:{name}"] >= 2
        before = sess.run(fl.global_variables())
        counts = dict(writes)
        with pytest.raises(fl.errors.InvalidArgumentError, match="always_fails"):
            sess.run(fail, feed)
        assert dict(writes) == counts  # deferred, then dropped
        after = sess.run(fl.global_variables())
    _assert_same_bits(before, after)


@pytest.mark.parametrize("name", ["sgd", "momentum", "adagrad", "adam_nesterov"])
def test_each_optimizer_never_changes_a_fetched_variable_value(writes, name):
    train, fetches, feed = _dense_program(name, np.float32, seed=2)
    w = [v for v in fl.global_variables() if v.op.name == "w"][0]
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(train, feed)
        held = sess.run(w)
        copy = held.copy()
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(held, copy)
        assert not np.array_equal(sess.run(w), copy)
    assert writes[f"fresh:{name}"] >= 1  # while `held` was w's array
    assert writes[f"in_place:{name}"] >= 1  # b, and w once `held` was no longer its array


def test_use_locking_is_never_deferred(writes):
    x = fl.placeholder(fl.float32, [None, 4])
    w = fl.Variable(np.ones((4, 3), np.float32))
    loss = fl.reduce_sum(fl.matmul(x, w))
    train = fl.train.MomentumOptimizer(0.1, 0.9, use_locking=True).minimize(loss)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {x: np.ones((2, 4), np.float32)})
        np.testing.assert_allclose(sess.run(w)[0, 0], 1 - 0.1 * 2 * (1 + 1.9 + 2.71), rtol=1e-6)
    assert writes["in_place"] == writes["fresh"] == 0


def test_forwarding_off_alone_turns_deferral_off(monkeypatch, writes):
    monkeypatch.setenv("FLOWLAB_FORWARDING", "0")
    _train_dense("sgd", np.float32, 3)
    assert writes["in_place"] + writes["fresh"] == 0


def test_one_variable_passed_as_two_is_updated_as_the_logged_path_does(monkeypatch, writes):
    """ApplyMomentum(var=w, accum=w): the logged path stores var, then accum (last
    write wins); the deferred update must not run its body on one array twice."""

    def run():
        g = fl.Graph()
        with g.as_default():
            w = fl.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
            grad = fl.square(fl.identity(w)) + 0.5
            train = training_ops.apply_momentum(w, w, fl.constant(0.1), grad, fl.constant(0.9))
            with fl.Session(graph=g) as sess:
                sess.run(fl.global_variables_initializer())
                for _ in range(4):
                    sess.run(train.op)
                return sess.run(w)

    on = run()
    assert writes["in_place"] == 0
    _logged(monkeypatch)
    np.testing.assert_array_equal(on, run())


def test_nesterov_adam_matches_tensorflow_over_five_steps(tf1, writes):
    """ApplyAdam(use_nesterov=True), which no tf.train optimizer builds, against
    TensorFlow's raw op (its deferred in-place path here, the logged one in TF)."""
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    x0 = rng.standard_normal((8, 4)).astype(np.float32)

    def run(tf, apply_adam):
        g = tf.Graph()
        with g.as_default():
            w = tf.Variable(w0)
            m = tf.Variable(np.zeros_like(w0))
            v = tf.Variable(np.zeros_like(w0))
            loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(tf.constant(x0), w)) - 1.0))
            grad = tf.gradients(loss, [w])[0]
            c = [tf.constant(np.float32(s)) for s in (0.9, 0.999, 0.05, 0.9, 0.999, 1e-8)]
            train = apply_adam(w, m, v, *c, grad)
            with tf.Session(graph=g) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(5):
                    sess.run(train.op)
                return sess.run([w, m, v])

    want = run(tf1, lambda var, m, v, b1p, b2p, lr, b1, b2, eps, grad: tf1.raw_ops.ApplyAdam(
        var=var, m=m, v=v, beta1_power=b1p, beta2_power=b2p, lr=lr, beta1=b1, beta2=b2, epsilon=eps,
        grad=grad, use_nesterov=True))
    got = run(fl, lambda *args: training_ops.apply_adam(*args, use_nesterov=True))
    assert writes["in_place:adam_nesterov"] >= 4
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
