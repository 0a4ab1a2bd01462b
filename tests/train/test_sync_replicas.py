"""tf.train.SyncReplicasOptimizer: in-graph replication in one process, differential
against TensorFlow.

Each replica is a thread running its own train op (built by its own
SyncReplicasOptimizer, so each has its own local step) against one graph and one
session; the accumulators and the token queue are shared by name, and the chief's
queue runner aggregates.  Threads meet at a barrier after every step they run, so
which gradients each update averages is fixed and the final variables are
deterministic: they must equal TensorFlow's run of the same program.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowlab as fl

TIMEOUT_MS = 20000

_X = np.random.default_rng(7).normal(size=(3, 4, 4, 2)).astype(np.float32)  # [replica, step, batch, feat]
_Y = np.random.default_rng(8).normal(size=(3, 4, 4, 1)).astype(np.float32)
_IDS = np.array([[[0, 2], [1, 1], [3, 0], [2, 2]],
                 [[2, 3], [0, 0], [1, 3], [3, 1]],
                 [[1, 0], [2, 1], [0, 3], [1, 2]]], dtype=np.int32)


def _build(tf, n_replicas, m, total, sparse):
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable([[0.5], [-1.0]], name="w")
    b = tf.Variable(0.25, name="b")
    emb = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2) / 8, name="emb") if sparse else None
    replicas = []
    for i in range(n_replicas):
        x = tf.placeholder(tf.float32, [4, 2], name=f"x{i}")
        y = tf.placeholder(tf.float32, [4, 1], name=f"y{i}")
        ids = tf.placeholder(tf.int32, [2], name=f"ids{i}")
        pred = tf.matmul(x, w) + b
        if sparse:
            pred = pred + tf.reduce_sum(tf.gather(emb, ids))
        loss = tf.reduce_mean(tf.square(pred - y))
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=m, total_num_replicas=total)
        train = opt.minimize(loss, global_step=gs)
        replicas.append((opt, train, x, y, ids))
    return gs, [v for v in (w, b, emb) if v is not None], replicas


def _run(tf, schedule, n_replicas, m, total, sparse=False, num_tokens=0, settle=None):
    """Run `schedule` (a list of rounds, each the replicas that run one step together)
    and return the variables, the global step, the local steps and the accumulators'
    counts after every round.  `settle[r]`: the global step to wait for after round r
    (when replicas' steps return before the chief's update, as with initial tokens)."""
    g = tf.Graph()
    with g.as_default():
        gs, variables, replicas = _build(tf, n_replicas, m, total, sparse)
        hooks = [opt.make_session_run_hook(i == 0, num_tokens) for i, (opt, *_) in enumerate(replicas)]
        for h in hooks:
            h.begin()
        counts = [acc.num_accumulated() for acc, _ in replicas[0][0]._accumulator_list]
        local_steps = [opt._local_step for opt, *_ in replicas]
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        g.finalize()
        coord = tf.train.Coordinator()
        sess = tf.Session(graph=g)
        opts = tf.RunOptions(timeout_in_ms=TIMEOUT_MS)
        seen = []
        try:
            sess.run(init)
            for h in hooks:
                h.after_create_session(sess, coord)
            steps = [0] * n_replicas
            for rnd in schedule:
                errors = []

                def step(i, errors=errors):
                    _, train, x, y, ids = replicas[i]
                    k = steps[i]
                    try:
                        sess.run(train, {x: _X[i, k], y: _Y[i, k], ids: _IDS[i, k]}, options=opts)
                    except Exception as e:  # noqa: BLE001 - reported below
                        errors.append(e)

                threads = [threading.Thread(target=step, args=(i,)) for i in rnd]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(TIMEOUT_MS / 1000 + 5)
                assert not errors, errors
                for i in rnd:
                    steps[i] += 1
                if settle is not None:
                    deadline = time.monotonic() + TIMEOUT_MS / 1000
                    while sess.run(gs) < settle[len(seen)] and time.monotonic() < deadline:
                        time.sleep(0.005)
                seen.append(sess.run([gs, local_steps, counts]))
            values = sess.run(variables)
        finally:
            coord.request_stop()
            sess.close()
            coord.join(stop_grace_period_secs=10, ignore_live_threads=True)
    return values, seen


def _compare(expected, actual):
    (ev, es), (av, as_) = expected, actual
    for e, a in zip(ev, av):
        assert np.asarray(e).dtype == np.asarray(a).dtype
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)
    assert [[int(s[0]), [int(x) for x in s[1]], [int(c) for c in s[2]]] for s in as_] == \
        [[int(s[0]), [int(x) for x in s[1]], [int(c) for c in s[2]]] for s in es]


def test_two_replicas_average_two_gradients_per_update(tf1):
    schedule = [(0, 1)] * 3
    expected = _run(tf1, schedule, 2, 2, 2)
    actual = _run(fl, schedule, 2, 2, 2)
    _compare(expected, actual)
    assert [int(s[0]) for s in actual[1]] == [1, 2, 3]
    # Each update is one step of the mean of both replicas' gradients: check step 1
    # against a direct computation too.
    values, _ = _run(fl, [(0, 1)], 2, 2, 2)
    w0, b0 = np.array([[0.5], [-1.0]], np.float32), np.float32(0.25)
    gw, gb = [], []
    for i in range(2):
        r = _X[i, 0] @ w0 + b0 - _Y[i, 0]
        gw.append(2 * _X[i, 0].T @ r / 4)
        gb.append(2 * r.mean())
    np.testing.assert_allclose(values[0], w0 - 0.1 * (gw[0] + gw[1]) / 2, rtol=1e-5)
    np.testing.assert_allclose(values[1], b0 - 0.1 * (gb[0] + gb[1]) / 2, rtol=1e-5)


def test_backup_replica_gradient_is_dropped_as_stale(tf1):
    # 3 replicas, 2 aggregated: replica 2 runs after the first update with its local
    # step still 0, so its gradients are dropped (counts stay 0); then 0 and 2 update.
    schedule = [(0, 1), (2,), (0, 2)]
    expected = _run(tf1, schedule, 3, 2, 3)
    actual = _run(fl, schedule, 3, 2, 3)
    _compare(expected, actual)
    gs, local, counts = actual[1][1]
    assert int(gs) == 1 and list(map(int, counts)) == [0, 0] and int(local[2]) == 1
    assert int(actual[1][2][0]) == 2


def test_sparse_gradients_through_sparse_accumulator(tf1):
    schedule = [(0, 1)] * 2
    expected = _run(tf1, schedule, 2, 2, 2, sparse=True)
    actual = _run(fl, schedule, 2, 2, 2, sparse=True)
    _compare(expected, actual)


def test_init_tokens_let_the_first_step_through(tf1):
    # With the default initial tokens (replicas_to_aggregate of them) a replica's first
    # step returns before any update; the update follows from the two gradients.
    schedule = [(0,), (1,)]
    expected = _run(tf1, schedule, 2, 2, 2, num_tokens=-1, settle=[0, 1])
    actual = _run(fl, schedule, 2, 2, 2, num_tokens=-1, settle=[0, 1])
    _compare(expected, actual)
    assert [int(s[0]) for s in actual[1]] == [0, 1]


def test_structure_and_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            gs = tf.train.get_or_create_global_step()
            v = tf.Variable([1.0, 2.0], name="v")
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5), 2,
                                                 total_num_replicas=3)
            with pytest.raises(ValueError, match="after apply_gradients"):
                opt.get_chief_queue_runner()
            with pytest.raises(ValueError, match="Global step is required"):
                opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
            with pytest.raises(ValueError, match="Must supply at least one variable"):
                opt.apply_gradients([], global_step=gs)
            opt.apply_gradients([(tf.constant([1.0, 1.0]), v)], global_step=gs)
            qr = opt.get_chief_queue_runner()
            assert qr.queue.name == "sync_token_q"
            acc, dev = opt._accumulator_list[0]
            assert acc.accumulator_ref.op.type == "ResourceConditionalAccumulator"
            assert acc.accumulator_ref.op.get_attr("shared_name") in ("v:0/grad_accum", b"v:0/grad_accum")
            assert acc.accumulator_ref.op.name == "sync_replicas/conditional_accumulator"
            assert opt._local_step.op.name == "sync_rep_local_step"
            assert opt.get_init_tokens_op(0).type == "NoOp"
            assert opt.get_init_tokens_op().type == "QueueEnqueueManyV2"
            assert opt.get_slot_names() == [] and opt.variables() == []
            assert opt.get_slot(v, "momentum") is None
            assert opt.chief_init_op.type == "NoOp"
            assert sorted(i.type for i in opt.chief_init_op.control_inputs) == [
                "Assign", "ResourceAccumulatorSetGlobalStep"]
            opt2 = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5), 3,
                                                  total_num_replicas=1)
            opt2.apply_gradients([(tf.constant([1.0, 1.0]), v)], global_step=gs)
            with pytest.raises(ValueError, match=r"Too few tokens to finish the first step: 1 \(given\) vs 2"):
                opt2.get_init_tokens_op(1)


def test_between_graph_on_a_local_cluster():
    """Between-graph replication on a real Dask cluster: each worker is a thread with
    its own graph and session on /job:worker/task:i, variables on ps by
    replica_device_setter; every update averages both workers' gradients."""
    distributed = pytest.importorskip("flowlab.distributed")
    xs = np.array([[[1.0, 2.0]], [[3.0, -1.0]]], np.float32)
    with distributed.LocalCluster(ps=1, worker=2) as cluster:
        out, errs = {}, []
        ready = threading.Event()

        def worker(i):
            try:
                g = fl.Graph()
                with g.as_default():
                    with fl.device(fl.train.replica_device_setter(
                            cluster=cluster.cluster_spec, worker_device=f"/job:worker/task:{i}")):
                        gs = fl.train.get_or_create_global_step()
                        w = fl.Variable([[0.5], [0.25]], name="w")
                        x = fl.placeholder(fl.float32, [1, 2])
                        loss = fl.reduce_sum(fl.matmul(x, w))
                        opt = fl.train.SyncReplicasOptimizer(fl.train.GradientDescentOptimizer(1.0), 2, 2)
                        train = opt.minimize(loss, global_step=gs)
                    hook = opt.make_session_run_hook(i == 0, num_tokens=0)
                    hook.begin()
                    init, local_init = fl.global_variables_initializer(), fl.local_variables_initializer()
                    coord = fl.train.Coordinator()
                    sess = fl.Session(f"{cluster.target}/job:worker/task:{i}")
                    try:
                        if i == 0:
                            sess.run(init)
                            ready.set()
                        else:
                            assert ready.wait(60)
                        sess.run(local_init)
                        hook.after_create_session(sess, coord)
                        opts = fl.RunOptions(timeout_in_ms=TIMEOUT_MS)
                        for _ in range(2):
                            sess.run(train, {x: xs[i]}, options=opts)
                        out[i] = sess.run([gs, w])
                    finally:
                        coord.request_stop()
                        sess.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
    assert not errs, errs
    # d loss / d w = x^T; each update applies the mean of both workers' gradients.
    expected = np.array([[0.5], [0.25]], np.float32) - 2 * (xs[0].T + xs[1].T) / 2
    for i in range(2):
        assert int(out[i][0]) == 2
        np.testing.assert_allclose(out[i][1], expected, rtol=1e-6)
