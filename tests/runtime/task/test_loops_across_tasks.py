"""While loops whose frames span in-process tasks (a worker task and a ps task): each
iteration's transfer has its own key (``frame_id:iter``, derived from frame names and
iterations, so both tasks agree), which the receiving task pulls when its Recv runs.
Values, gradients and a training step equal TensorFlow's with every op on one CPU;
an error, the deadline or a closed peer in the middle of a loop fail the step as a
root-frame transfer does (the error naming the op or the task, writes rolled back),
and no task keeps anything of a step after it ends."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.kernels.sendrecv_kernels import DEAD, LocalRendezvous, key_prefix, make_key
from flowlab.runtime.task.task import LocalTask

PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"


def _tasks():
    return [LocalTask("worker", 0, {"CPU": 1}), LocalTask("ps", 0, {"CPU": 1})]


def _on(tf, where):
    # TensorFlow's reference runs every op on its one CPU.
    return tf.device(where if tf is fl else "/cpu:0")


def _same(a, b, rtol=1e-5):
    for x, y in zip(a if isinstance(a, (list, tuple)) else [a], b if isinstance(b, (list, tuple)) else [b]):
        if isinstance(x, (list, tuple)):
            _same(x, y, rtol)
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-6)


def _clean(tasks):
    """Nothing of any step is left on any task."""
    for t in tasks:
        assert len(t.rendezvous) == 0 and not t._unpulled and not t._held and not t._active
        assert not t._dead_sent  # the session committed every step: no late pull can come


def _run_both(tf1, build, steps=1):
    """The fetches of `build` on a worker and a ps task, and on TensorFlow's one CPU."""
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            fetches = build(fl)
            init = fl.global_variables_initializer() if fl.global_variables() else None
            with fl.Session(tasks=tasks) as s:
                if init is not None:
                    s.run(init)
                got = [s.run(fetches) for _ in range(steps)]
                _clean(tasks)
                messages = s._master.plan_for([], list(fetches) if isinstance(fetches, (list, tuple))
                                              else [fetches], []).messages
    finally:
        for t in tasks:
            t.close()
    tf1.disable_control_flow_v2()
    fetches = build(tf1)
    with tf1.Session() as s:
        if tf1.global_variables():
            s.run(tf1.global_variables_initializer())
        want = [s.run(fetches) for _ in range(steps)]
    return got, want, messages


def _split(tf):
    def body(i, x):
        with _on(tf, PS):
            y = x * 2.0 + 1.0
        with _on(tf, WORKER):
            return i + 1, y * 0.5

    with _on(tf, WORKER):
        return list(tf.while_loop(lambda i, x: i < 7, body, [tf.constant(0), tf.constant(1.0)]))


def _nested(tf):
    def outer(i, acc):
        def inner(j, a):
            with _on(tf, PS):
                a2 = a * 1.5 + tf.cast(j, tf.float32)
            return j + 1, a2

        _, a = tf.while_loop(lambda j, a: j < 3, inner, [tf.constant(0), acc])
        return i + 1, a

    with _on(tf, WORKER):
        return list(tf.while_loop(lambda i, a: i < 4, outer, [tf.constant(0), tf.constant(0.5)]))


def _cond_in_body(tf):
    def body(i, x):
        with _on(tf, PS):
            y = tf.cond(tf.equal(i % 3, 0), lambda: x * 2.0, lambda: x + 1.0)
        return i + 1, y

    with _on(tf, WORKER):
        return list(tf.while_loop(lambda i, x: i < 8, body, [tf.constant(0), tf.constant(1.0)]))


def _gather_each_iteration(tf):
    """The body gathers a row of a variable on the ps every iteration (embedding_lookup
    colocates with its params) and updates another ps variable."""
    with _on(tf, PS):
        emb = tf.Variable(np.arange(24, dtype=np.float32).reshape(6, 4) * 0.25, name="emb")
        count = tf.Variable(0.0, name="count")

    def body(i, acc):
        row = tf.nn.embedding_lookup(emb, tf.reshape(i % 6, [1]))
        with _on(tf, PS):
            bumped = tf.assign_add(count, 1.0)
        with tf.control_dependencies([bumped]):
            return i + 1, acc + tf.reduce_sum(row) * tf.cast(i, tf.float32)

    with _on(tf, WORKER):
        _, total = tf.while_loop(lambda i, acc: i < 9, body, [tf.constant(0), tf.constant(0.0)])
    with _on(tf, PS), tf.control_dependencies([total]):  # read where the variable lives, after the loop
        c = tf.identity(count.read_value() if tf is fl else count.value())
    return [total, c]


@pytest.mark.parametrize("build", [_split, _nested, _cond_in_body, _gather_each_iteration],
                         ids=["split", "nested", "cond", "gather"])
def test_a_loop_across_tasks_equals_tensorflow(build, tf1):
    got, want, messages = _run_both(tf1, build, steps=2)
    _same(got, want)
    pulls = [p for m in messages for p in m["remote_recvs"]]
    assert any(p.get("in_loop") for p in pulls)  # pulled per iteration, on demand


def _rnn(tf, train: bool):
    if tf is fl:
        cells = fl.nn.rnn_cell
    else:
        from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as cells

    class Cell(cells.BasicRNNCell):
        def __call__(self, *a, **k):  # the cell's ops (and so its weights) on the ps
            with _on(tf, PS):
                return super().__call__(*a, **k)

    x = tf.constant(np.random.RandomState(0).randn(3, 6, 4).astype(np.float32))
    init = tf.constant_initializer(np.random.RandomState(1).randn(9, 5).astype(np.float32) * 0.3)
    with _on(tf, WORKER), tf.variable_scope("rnn_test", initializer=init):
        out, state = tf.nn.dynamic_rnn(Cell(5), x, dtype=tf.float32)
        loss = tf.reduce_sum(out * out)
        if not train:
            return [out, state, *tf.gradients(loss, [*tf.trainable_variables(), x])]
        step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    with tf.control_dependencies([step]):
        return [loss, *[tf.identity(v) for v in tf.trainable_variables()]]


def test_a_dynamic_rnn_whose_cell_is_on_the_ps_task_and_its_gradients(tf1):
    got, want, _ = _run_both(tf1, lambda tf: _rnn(tf, False))
    _same(got, want, rtol=1e-4)


def test_training_steps_of_a_dynamic_rnn_across_tasks(tf1):
    got, want, _ = _run_both(tf1, lambda tf: _rnn(tf, True), steps=3)
    _same(got, want, rtol=1e-4)


def _poisoned_loop():
    """Five iterations adding to `v` on the ps and `w` on the worker; the ps's
    CheckNumerics fails in iteration `bad_at`.  (v, w, bad_at, the loop's result)."""
    with fl.device(PS):
        v = fl.Variable(0.0, name="v")
    with fl.device(WORKER):
        w = fl.Variable(0.0, name="w")
    bad_at = fl.placeholder(fl.int32, [], name="bad_at")

    def body(i):
        with fl.device(PS):
            a = fl.assign_add(v, 1.0)
            poisoned = fl.where(fl.equal(i, bad_at), np.float32(np.nan), np.float32(1.0))
            checked = fl.check_numerics(poisoned * a, "ps saw a NaN")
        with fl.device(WORKER):
            b = fl.assign_add(w, checked)
        with fl.control_dependencies([b]):
            return i + 1

    with fl.device(WORKER):
        n = fl.while_loop(lambda i: i < 5, body, [fl.constant(0)])
    return v, w, bad_at, n


def test_an_error_inside_the_body_on_the_ps_fails_the_step_and_rolls_back_both_tasks():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            v, w, bad_at, n = _poisoned_loop()
            with fl.Session(tasks=tasks) as s:
                s.run([v.initializer, w.initializer])
                assert s.run(n, {bad_at: -1}) == 5
                assert s.run([v, w]) == [5.0, 15.0]
                with pytest.raises(errors.InvalidArgumentError, match="ps saw a NaN") as e:
                    s.run(n, {bad_at: 2})
                assert e.value.op.name.endswith("CheckNumerics")
                assert s.run([v, w]) == [5.0, 15.0]  # both tasks' increments of the failed step are gone
                _clean(tasks)
                assert s.run(n, {bad_at: -1}) == 5
                assert s.run([v, w]) == [10.0, 30.0 + 25.0]
    finally:
        for t in tasks:
            t.close()


def _runaway():
    def body(i, x):
        with fl.device(PS):
            return i + 1, x + 1.0

    with fl.device(WORKER):
        return fl.while_loop(lambda i, x: i >= 0, body, [fl.constant(0), fl.constant(0.0)])[1]


def test_a_runaway_loop_across_tasks_ends_at_the_deadline():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            x = _runaway()
            with fl.Session(tasks=tasks) as s:
                with pytest.raises(errors.DeadlineExceededError):
                    s.run(x, options=fl.RunOptions(timeout_in_ms=300))
                _clean(tasks)
    finally:
        for t in tasks:
            t.close()


def _endless_loop():
    """A loop that runs until stopped, each iteration a value from the ps added to `w`
    on the worker.  (w, the loop's result)."""
    with fl.device(WORKER):
        w = fl.Variable(0.0, name="w")

    def body(i):
        with fl.device(PS):
            one = fl.cast(i, fl.float32) * 0.0 + 1.0
        with fl.device(WORKER):
            b = fl.assign_add(w, one)
        with fl.control_dependencies([b]):
            return i + 1

    with fl.device(WORKER):
        n = fl.while_loop(lambda i: i >= 0, body, [fl.constant(0)])
    return w, n


def test_a_peer_closed_mid_loop_fails_the_step_naming_it():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            w, n = _endless_loop()
            with fl.Session(tasks=tasks) as s:
                s.run(w.initializer)
                closer = threading.Timer(0.3, tasks[1].close)
                closer.start()
                t0 = time.monotonic()
                with pytest.raises(errors.UnavailableError, match="/job:ps/replica:0/task:0"):
                    s.run(n)
                assert time.monotonic() - t0 < 10
                closer.join()
                assert s.run(w) == 0.0  # the worker's increments of the failed step are gone
                assert len(tasks[0].rendezvous) == 0 and not tasks[0]._active
    finally:
        for t in tasks:
            t.close()


def test_a_loop_beside_root_frame_transfers_pulls_only_its_own_keys_on_demand():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            with fl.device(PS):
                a = fl.constant(3.0, name="a")
                b = a * 2.0

            def body(i, x):
                with fl.device(PS):
                    y = x + a
                return i + 1, y

            with fl.device(WORKER):
                _, r = fl.while_loop(lambda i, x: i < 4, body, [fl.constant(0), b])
                out = r + b
            with fl.Session(tasks=tasks) as s:
                assert s.run(out) == 6.0 + 12.0 + 6.0
                msgs = {m["units"][0]["graph_def"]["node"][0]["device"].split("/device")[0]: m
                        for m in s._master.plan_for([], [out], []).messages}
                worker_pulls = msgs["/job:worker/replica:0/task:0"]["remote_recvs"]
                assert any(p.get("in_loop") for p in worker_pulls)
                assert any(not p.get("in_loop") for p in worker_pulls)  # `b` at step start
                _clean(tasks)
    finally:
        for t in tasks:
            t.close()


def test_the_table_starts_one_pull_per_remote_key_and_none_for_others():
    r = LocalRendezvous(7)
    src, dst = "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"
    remote = make_key(src, 5, dst, "edge_1_x", 1234, 0)
    local = make_key(dst, 6, dst, "edge_2_y", 1234, 0)
    started: list[tuple[str, str]] = []
    r.pull_on_demand({key_prefix(remote): "from-ps"}, lambda what, key: started.append((what, key)))
    got: list[object] = []
    for it in range(3):
        k = make_key(src, 5, dst, "edge_1_x", 1234, it)
        r.recv(k, lambda v, e: got.append(v))
        r.send(k, np.float32(it))
    r.recv(local, lambda v, e: got.append(v))
    assert started == [("from-ps", make_key(src, 5, dst, "edge_1_x", 1234, it)) for it in range(3)]
    assert got == [0.0, 1.0, 2.0] and len(r) == 1  # the local key waits for its Send, unpulled
    r.send(local, np.float32(9))
    assert got[-1] == 9.0 and len(r) == 0
    assert key_prefix(remote) == f"{src};0000000000000005;{dst};edge_1_x"


def test_a_finished_sender_keeps_live_loop_values_for_their_pulls_and_answers_dead_ones():
    task = LocalTask("ps", 0, {"CPU": 1})
    try:
        src, dst = task.devices[0].name, "/job:worker/replica:0/task:0/device:CPU:0"
        root = make_key(src, 1, dst, "edge_0_a")
        live, dead = make_key(src, 1, dst, "edge_2_b", 99, 3), make_key(src, 1, dst, "edge_2_b", 99, 4)
        table = task.rendezvous.find_or_create(5)
        table.send(root, np.float32(1))
        table.send(live, np.float32(2))
        table.send(dead, DEAD)
        assert task._hold(5, frozenset({key_prefix(root), key_prefix(live)}))
        assert task._unpulled[5] == {root, live}  # the dead loop value is not waited for
        assert task.recv_tensor({"step_id": 5, "key": dead}) == {"value": None, "is_dead": True}
        assert task.recv_tensor({"step_id": 5, "key": live})["value"] == 2.0
        assert task.recv_tensor({"step_id": 5, "key": root})["value"] == 1.0
        assert len(task.rendezvous) == 0 and not task._unpulled and not task._dead_sent
        # The step has ended here: a late pull fails at once and leaves no table behind.
        with pytest.raises(errors.CancelledError, match="step 5 has already ended on /job:ps/replica:0/task:0"):
            task.recv_tensor({"step_id": 5, "key": make_key(src, 1, dst, "edge_2_b", 99, 5)})
        assert len(task.rendezvous) == 0
        # A pull for a step that has not started here waits for it; timed out, its table goes.
        with pytest.raises(errors.DeadlineExceededError, match="timed out after 50 ms"):
            task.recv_tensor({"step_id": 6, "key": root, "timeout_ms": 50})
        assert len(task.rendezvous) == 0
    finally:
        task.close()


def test_a_traced_loop_across_tasks_gives_the_same_values_and_stats_from_both_tasks():
    tasks = _tasks()
    try:
        with fl.Graph().as_default():
            fetches = _split(fl)
            with fl.Session(tasks=tasks) as s:
                md = fl.RunMetadata()
                traced = s.run(fetches, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE),
                               run_metadata=md)
                assert [float(v) for v in traced] == [float(v) for v in s.run(fetches)] == [7.0, 4.5]
                stats = {d.device: d.node_stats for d in md.step_stats.dev_stats}
                assert sorted(stats) == ["/job:ps/replica:0/task:0/device:CPU:0",
                                         "/job:worker/replica:0/task:0/device:CPU:0"]
                # The ps's Recvs ran once per iteration of the worker's loop (and its last, dead one).
                ps = stats["/job:ps/replica:0/task:0/device:CPU:0"]
                pred = [n for n in ps if n.node_name.startswith("while/LoopCond/") and "= _Recv(" in n.timeline_label]
                assert len(pred) == 8
                _clean(tasks)
    finally:
        for t in tasks:
            t.close()


def test_an_in_process_pull_on_demand_takes_the_value_the_peer_sends_later_or_its_dead_one():
    from flowlab.runtime.task.step import Step

    ps, worker = LocalTask("ps", 0, {"CPU": 1}), LocalTask("worker", 0, {"CPU": 1})
    try:
        src, dst = ps.devices[0].name, worker.devices[0].name
        pull = {"task": ps.name, "incarnation": ps.incarnation}
        step = Step(None, None, 11)
        later, dead = make_key(src, 1, dst, "edge_2_b", 99, 0), make_key(src, 1, dst, "edge_2_b", 99, 1)
        mine = worker.rendezvous.find_or_create(11)
        worker._pull_key(step, 0, pull, later)  # before the peer's Send: it calls back when it sends
        ps.rendezvous.find_or_create(11).send(later, np.float32(4))
        assert mine.holds(later)
        ps._dead_sent[11] = {dead}  # the peer finished without waiting for this dead value
        worker._pull_key(step, 0, pull, dead)
        assert mine.held(frozenset({key_prefix(dead)})) == {later: 4.0, dead: DEAD}
        assert not ps._dead_sent and not step.get_cancellation().cancelled
    finally:
        ps.close()
        worker.close()
