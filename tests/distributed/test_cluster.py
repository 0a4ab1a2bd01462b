"""Sessions on a real Dask LocalCluster (ps/0, worker/0, worker/1 in their own
processes): TF1 programs give TensorFlow's numbers, state lives on the tasks."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab.distributed.remote_task import CONTROL_TIMEOUT_S

X = np.array([[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5]], np.float32)
Y = np.array([[1.0], [0.0], [2.0]], np.float32)


def build_model(tf, placed=True):
    # TensorFlow's one-process session has no ps job: its reference runs unplaced.
    setter = tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0") if placed else None
    with tf.device(setter):
        w = tf.get_variable("w", initializer=np.array([[0.5], [-0.25]], np.float32))
        b = tf.get_variable("b", initializer=np.zeros([1], np.float32))
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=step)
    return w, b, x, y, loss, train, step


def train_steps(tf, sess_factory, n=5, placed=True):
    g = tf.Graph()
    with g.as_default():
        w, b, x, y, loss, train, step = build_model(tf, placed)
        init = tf.global_variables_initializer()
        with sess_factory(g) as sess:
            sess.run(init)
            losses = [sess.run([loss, train], {x: X, y: Y})[0] for _ in range(n)]
            return losses, sess.run([w, b, step])


def test_training_on_the_cluster_gives_tensorflows_numbers(tf1, cluster):
    expected = train_steps(tf1, lambda g: tf1.Session(graph=g), placed=False)
    actual = train_steps(fl, lambda g: fl.Session(cluster, graph=g))
    for e, a in zip(expected[0] + expected[1], actual[0] + actual[1]):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7)


def test_placement_and_partitions_span_the_tasks(cluster):
    g = fl.Graph()
    with g.as_default():
        w, b, x, y, loss, train, step = build_model(fl)
        with fl.Session(cluster, graph=g) as sess:
            placement = sess.placement(train, {x: X, y: Y})
            assert placement.device_of["w"].name == "/job:ps/replica:0/task:0/device:CPU:0"
            matmul = next(op.name for op in g.get_operations() if op.type == "MatMul")
            assert placement.device_of[matmul].name == "/job:worker/replica:0/task:0/device:CPU:0"
            parts = sess.partitions(train, {x: X, y: Y})
            devices = {p.device for p in parts.partitions} if hasattr(parts, "partitions") else set(parts)
            assert any("job:ps" in str(d) for d in devices) and any("job:worker" in str(d) for d in devices)
            assert [d.name for d in sess.list_devices()][0].startswith("/job:worker/replica:0/task:0")


def test_make_callable_and_fetch_types(cluster):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:worker/task:1"):
            a = fl.placeholder(fl.float32, [], name="a")
            s = fl.strings.join([fl.as_string(a), fl.constant("x")], separator="-")
        with fl.device("/job:ps/task:0"):
            doubled = a * 2.0
            n = fl.constant(7, fl.int64)
        with fl.Session(cluster, graph=g) as sess:
            f = sess.make_callable([doubled, s, n], [a])
            d, text, seven = f(1.5)
            assert type(d) is np.float32 and d == 3.0
            assert text == b"1.500000-x"
            assert type(seven) is np.int64 and seven == 7
            assert f(2.0)[0] == 4.0


def test_fetched_and_received_arrays_are_their_receivers_own(cluster):
    # A tensor that crossed the network sits in a buffer the receiver allocated:
    # writeable, never a second copy of it, and writing to it changes nothing on
    # the task that sent it (the ps's variable).
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.get_variable("owned_v", initializer=np.arange(4096, dtype=np.float32), use_resource=False)
        with fl.device("/job:worker/task:0"):
            via_worker = fl.identity(v)
            doubled = via_worker * 2.0
        with fl.Session(cluster, graph=g) as sess:
            sess.run(v.initializer)
            direct, relayed, twice = sess.run([v, via_worker, doubled])
            for a in (direct, relayed, twice):
                assert a.flags.writeable
            relayed[:] = -1.0
            direct[:] = -2.0
            np.testing.assert_array_equal(sess.run(v), np.arange(4096, dtype=np.float32))
            np.testing.assert_array_equal(sess.run(doubled), 2.0 * np.arange(4096, dtype=np.float32))


def _rnn_program(tf, cells, placed, checkpoint_dir=None):
    """A TF1 ps/worker model as tutorials write it: a partitioned embedding on the ps
    tasks, a dynamic_rnn (a while loop) on the worker, Adagrad's sparse updates back
    on the shards; trained by a MonitoredTrainingSession (checkpoints, summaries)."""
    setter = tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:1") if placed else None
    with tf.device(setter), tf.variable_scope("rnn_program"):  # names no other test's state has
        emb = tf.get_variable("emb", shape=[50, 4], initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=1),
                              partitioner=tf.fixed_size_partitioner(2))
        ids = tf.constant(np.array([[1, 7, 3], [9, 2, 49], [30, 30, 5], [0, 11, 12]], np.int64))
        with tf.variable_scope("rnn", initializer=tf.glorot_uniform_initializer(seed=3)):
            _, state = tf.nn.dynamic_rnn(cells.BasicRNNCell(5), tf.nn.embedding_lookup(emb, ids), dtype=tf.float32)
        w = tf.get_variable("w", shape=[5, 2], initializer=tf.glorot_uniform_initializer(seed=2))
        loss = tf.losses.sparse_softmax_cross_entropy(tf.constant([0, 1, 1, 0]), tf.matmul(state, w))
        tf.summary.scalar("loss", loss)
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdagradOptimizer(0.3).minimize(loss, global_step=step)
    return loss, train, step


def test_a_loop_on_a_worker_with_its_weights_on_the_ps_trains_as_tensorflow(tf1, cluster, tmp_path):
    from tests.nn.test_rnn_cell import _tf_cells

    tf_cells = _tf_cells(tf1)
    with tf1.Graph().as_default():
        loss, train, _ = _rnn_program(tf1, tf_cells, placed=False)
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            expected = [sess.run([loss, train])[0] for _ in range(6)]
    with fl.Graph().as_default():
        loss, train, step = _rnn_program(fl, fl.nn.rnn_cell, placed=True)
        config = fl.ConfigProto(device_filters=["/job:ps", "/job:worker/task:1"])  # accepted, as TF1 scripts pass it
        got = []
        with fl.train.MonitoredTrainingSession(
                master=f"{cluster.target}/job:worker/task:1", is_chief=True, checkpoint_dir=str(tmp_path),
                save_checkpoint_steps=4, save_summaries_steps=2, config=config, log_step_count_steps=0,
                hooks=[fl.train.StopAtStepHook(last_step=6)]) as sess:
            while not sess.should_stop():
                got.append(sess.run([loss, train])[0])
    np.testing.assert_allclose(got, expected, rtol=2e-6)
    assert fl.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-6")
    fl.Session.reset(cluster.target)


def test_a_loop_whose_frames_span_tasks_runs(cluster):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.Variable(np.float32(2.0), name="loop_scale")

        def body(i, acc):
            with fl.device("/job:ps/task:0"):
                scaled = acc * v  # inside the loop, on the ps
            return i + 1, scaled

        with fl.device("/job:worker/task:0"):
            _, out = fl.while_loop(lambda i, acc: i < 3, body, [fl.constant(0), fl.constant(1.0)])
        with fl.Session(cluster, graph=g) as sess:
            sess.run(v.initializer)
            assert sess.run(out) == 8.0  # tests/distributed/test_loops_across_tasks.py has more


def _pipeline(tf):
    """A tf.data input pipeline with functions of every kind: a capture, a filter, a
    flat_map whose function builds a dataset with a map function of its own, an
    interleave."""
    scale = tf.constant(3.0)
    ds = tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32))
    ds = ds.map(lambda x: x * scale).filter(lambda x: x > 2.0)
    ds = ds.flat_map(lambda x: tf.data.Dataset.from_tensors(x).repeat(2).map(lambda y: y + 0.5))
    ds = ds.interleave(lambda x: tf.data.Dataset.from_tensors(x).map(lambda z: z * 2.0), cycle_length=2)
    return ds.batch(4).make_one_shot_iterator().get_next()


def _drain(sess, nxt):
    out = []
    while True:
        try:
            out.append(sess.run(nxt))
        except fl.errors.OutOfRangeError:
            return out


def test_dataset_functions_run_on_the_task_they_are_placed_on(cluster):
    with fl.Graph().as_default(), fl.Session() as local:
        expected = _drain(local, _pipeline(fl))
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:worker/task:1"):
            nxt = _pipeline(fl)
        with fl.device("/job:ps/task:0"):
            total = fl.reduce_sum(nxt)
        with fl.Session(cluster, graph=g) as sess:
            assert sess.list_devices()  # the pipeline's iterator lives on worker/1
            got = []
            while True:
                try:
                    batch, s = sess.run([nxt, total])
                except fl.errors.OutOfRangeError:
                    break
                got.append(batch)
                assert s == batch.sum()
    assert len(got) == len(expected) > 2
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_supervised_replicas_share_the_model_their_chief_prepared(cluster, tmp_path):
    """mnist_replica.py's shape: each replica its own graph and Supervisor; a
    non-chief waits until the chief has initialized the variables on the ps."""
    def replica(index):
        g = fl.Graph()
        with g.as_default():
            with fl.device(fl.train.replica_device_setter(ps_tasks=1, worker_device=f"/job:worker/task:{index}")):
                v = fl.get_variable("sv_v", initializer=np.float32(5.0))
                step = fl.train.get_or_create_global_step()
                train = fl.group(v.assign_add(1.0), fl.assign_add(step, 1))
            sv = fl.train.Supervisor(is_chief=index == 0, logdir=str(tmp_path) if index == 0 else None,
                                     recovery_wait_secs=0.1, save_summaries_secs=0, save_model_secs=0)
        return sv, v, train

    waiting: dict[str, float] = {}

    def non_chief():
        sv, v, _ = replica(1)
        with sv.managed_session(f"{cluster.target}/job:worker/task:1") as sess:
            waiting["seen"] = float(sess.run(v))

    fl.Session.reset(cluster.target)
    t = threading.Thread(target=non_chief)
    t.start()
    sv, v, train = replica(0)
    with sv.managed_session(f"{cluster.target}/job:worker/task:0") as sess:
        sess.run(train)
        t.join(60)
    assert waiting["seen"] in (5.0, 6.0)  # the chief's initial value, or after its first step
    fl.Session.reset(cluster.target)


@pytest.mark.parametrize("optimizer", ["GradientDescentOptimizer", "AdagradOptimizer"])
def test_a_sparse_training_steps_traffic_is_the_rows_it_touches_not_the_tables_size(cluster, optimizer):
    """Paper section 4.2: the gathers run on the shards' task, only the looked-up rows
    cross to the worker and only their gradients (IndexedSlices) come back to the
    sparse updates on the shards -- the same bytes for a table 100x larger."""
    from flowlab.profiler.trace import Trace

    def traffic(rows):
        g = fl.Graph()
        with g.as_default():
            with fl.device(fl.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
                table = fl.get_variable(f"traffic_{optimizer}_{rows}", shape=[rows, 8],
                                        initializer=fl.zeros_initializer(),
                                        partitioner=fl.fixed_size_partitioner(2))
                ids = fl.constant(np.array([3, 7, 7, 1, 0, 5], np.int64))
                loss = fl.reduce_sum(fl.square(fl.nn.embedding_lookup(table, ids) - 1.0))
                train = getattr(fl.train, optimizer)(0.1).minimize(loss)
            with fl.Session(cluster, graph=g) as sess:
                sess.run(fl.global_variables_initializer())
                md = fl.RunMetadata()
                sess.run(train, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
                assert np.count_nonzero(sess.run(table.as_tensor())) == 5 * 8  # only the touched rows moved
        trace = Trace.from_run_metadata(md)
        return sorted(t.bytes for t in trace.transfers if t.src_task != t.dst_task)

    small, large = traffic(1_000), traffic(100_000)
    assert small == large and 0 < sum(small) < 4_000  # rows of 8 floats and their ids, not 3.2 MB
    fl.Session.reset(cluster.target)


def test_each_task_server_keeps_to_its_thread_policy(cluster):
    # One BLAS thread per call and one thread per kernel (threads_per_task=1): a busy
    # neighbour can never make OpenBLAS's threads spin against each other.
    def threads(dask_worker):
        from threadpoolctl import threadpool_info

        from flowlab.kernels import intra_op

        task = dask_worker.plugins["flowlab-task-server"].task
        return ([p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"],
                intra_op.intra_op_threads(), task.threads.executor_threads)

    for blas, intra, executor in cluster.client.run(threads).values():
        assert set(blas) <= {1} and intra == 1 and executor == 1


def test_state_outlives_sessions_until_reset(cluster):
    def graph():
        g = fl.Graph()
        with g.as_default():
            with fl.device("/job:ps/task:0"):
                v = fl.Variable(10.0, name="kept")
            inc = v.assign_add(1.0)
            init = v.initializer
        return g, v, inc, init

    g, v, inc, init = graph()
    with fl.Session(cluster, graph=g) as sess:
        sess.run(init)
        sess.run(inc)
    g2, v2, inc2, _ = graph()  # another graph, the same variable name on ps/0
    with fl.Session(cluster.target, graph=g2) as sess:
        assert sess.run(inc2) == 12.0
    fl.Session.reset(cluster.target)
    with fl.Session(cluster, graph=g2) as sess:
        with pytest.raises(fl.errors.FailedPreconditionError, match="uninitialized value kept"):
            sess.run(v2)


def test_between_graph_replication_shares_the_ps_state(cluster):
    """Two clients (threads, each with its own graph and session) update one counter
    on ps/0 by name, as TF1's between-graph replication does."""
    g0 = fl.Graph()
    with g0.as_default():
        with fl.device("/job:ps/task:0"):
            counter = fl.Variable(0, dtype=fl.int64, name="shared_counter")
        with fl.Session(cluster, graph=g0) as sess:
            sess.run(counter.initializer)
    errors: list[BaseException] = []

    def replica(index: int) -> None:
        try:
            g = fl.Graph()
            with g.as_default():
                with fl.device("/job:ps/task:0"):
                    c = fl.Variable(0, dtype=fl.int64, name="shared_counter")
                with fl.device(f"/job:worker/task:{index}"):
                    delta = fl.constant(index + 1, fl.int64) * 1
                add = c.assign_add(delta)
                with fl.Session(f"{cluster.target}/job:worker/task:{index}", graph=g) as sess:
                    for _ in range(20):
                        sess.run(add)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=replica, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with fl.Session(cluster, graph=g0) as sess:
        assert sess.run(counter) == 20 * 1 + 20 * 2


def _forwarded_fetches(cluster, job, index):
    """The fetches task job/index leaves to the client to pull from their producer."""
    def forwarded(dask_worker):
        task = dask_worker.plugins["flowlab-task-server"].task
        return sorted(p["fetch"] for reg in task._handles.values() for p in reg.remote_recvs if p.get("forward"))

    addr = cluster.task(job, index).address
    return cluster.client.run(forwarded, workers=[addr])[addr]


def test_a_fetch_a_worker_only_passes_on_comes_straight_from_the_ps(cluster):
    # identity(v) on a worker: the worker pulls nothing, the client pulls v from the
    # ps (one transfer, not two), with the values, types and ownership of a relay.
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            a = fl.get_variable("passed_a", initializer=np.arange(4096, dtype=np.float32), use_resource=False)
            s = fl.get_variable("passed_s", initializer=np.float32(3.0), use_resource=False)
            b = fl.get_variable("used_b", initializer=np.ones(8, np.float32), use_resource=False)
            c = fl.get_variable("waited_c", initializer=np.float32(2.0), use_resource=False)
        with fl.device("/job:worker/task:0"):
            relayed = fl.identity(fl.stop_gradient(a))
            scalar = fl.identity(s)
            b_fetched = fl.identity(b)
            b_doubled = b_fetched * 2.0  # b's Recv has another reader: pulled by the worker
            c_fetched = fl.identity(c)
            with fl.control_dependencies([c_fetched]):  # an op waits on it: pulled too
                after_c = fl.constant(1.0) + 1.0
        with fl.device("/job:ps/task:0"):
            with fl.control_dependencies([relayed]):
                bump = fl.assign_add(a, np.ones(4096, np.float32))
        fetches = [relayed, scalar, b_fetched, b_doubled, c_fetched, after_c]
        with fl.Session(cluster, graph=g) as sess:
            sess.run(fl.global_variables_initializer())
            got = sess.run(fetches)
            assert _forwarded_fetches(cluster, "worker", 0) == sorted([relayed.name, scalar.name])
            # The ps's run_step reply delivers them, and the worker, which only passes
            # them on, is not called: one call per step, no recv_tensor.
            sess.run(relayed)  # registered
            sess.run([relayed, b_doubled])
            connection = cluster.task("ps", 0).connection
            calls, call = [], connection.call

            async def counted(task, name, message, timeout_s):
                calls.append((task.name, name))
                return await call(task, name, message, timeout_s)

            connection.call = counted
            try:
                np.testing.assert_array_equal(sess.run(relayed), np.arange(4096, dtype=np.float32))
                assert calls == [("/job:ps/replica:0/task:0", "run_step")]
                calls.clear()
                # A worker with work of its own runs (the relayed fetch still comes from the ps).
                value, doubled = sess.run([relayed, b_doubled])
                assert sorted(calls) == [("/job:ps/replica:0/task:0", "run_step"),
                                         ("/job:worker/replica:0/task:0", "run_step")]
                np.testing.assert_array_equal(value, np.arange(4096, dtype=np.float32))
                np.testing.assert_array_equal(doubled, 2.0 * np.ones(8, np.float32))
                calls.clear()
                # So does a watched one (the listener sees the worker's Identity run).
                seen = []
                previous = sess.set_listener(lambda ev: seen.append((ev.kind, ev.node)))
                try:
                    np.testing.assert_array_equal(sess.run(relayed), np.arange(4096, dtype=np.float32))
                finally:
                    sess.set_listener(previous)
                assert sorted(calls) == [("/job:ps/replica:0/task:0", "run_step"),
                                         ("/job:worker/replica:0/task:0", "run_step")]
                assert ("op_end", relayed.op.name) in seen
            finally:
                del connection.call
            np.testing.assert_array_equal(got[0], np.arange(4096, dtype=np.float32))
            assert type(got[1]) is np.float32 and got[1] == 3.0  # a scalar stays a NumPy scalar
            np.testing.assert_array_equal(got[2], np.ones(8, np.float32))
            np.testing.assert_array_equal(got[3], 2.0 * np.ones(8, np.float32))
            assert got[4] == 2.0 and got[5] == 2.0
            assert got[0].flags.writeable  # the client's own buffer
            got[0][:] = -1.0
            np.testing.assert_array_equal(sess.run(relayed), np.arange(4096, dtype=np.float32))
            # The value the ps sent, not the one its later update wrote.
            for k in range(3):
                value, _ = sess.run([relayed, bump])
                np.testing.assert_array_equal(value, np.arange(4096, dtype=np.float32) + k)
            # A traced step pulls on the worker as before, with the same values.
            md = fl.RunMetadata()
            traced = sess.run(fetches[:2], options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE),
                              run_metadata=md)
            np.testing.assert_array_equal(traced[0], np.arange(4096, dtype=np.float32) + 3)
            assert type(traced[1]) is np.float32 and traced[1] == 3.0


def test_a_failed_step_writes_nothing_on_any_task(cluster):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.Variable(1.0, name="rolled_back")
            bump = v.assign_add(5.0)
        with fl.device("/job:worker/task:1"):
            x = fl.placeholder(fl.float32, [None], name="x")
            with fl.control_dependencies([bump]):
                checked = fl.debugging.check_numerics(x, "x has a NaN")
        with fl.Session(cluster, graph=g) as sess:
            sess.run(v.initializer)
            with pytest.raises(fl.errors.InvalidArgumentError, match="x has a NaN") as e:
                sess.run(checked, {x: np.array([1.0, np.nan], np.float32)})
            assert e.value.op is checked.op  # the client's op, not the task's copy
            assert sess.run(v) == 1.0
            assert list(sess.run(checked, {x: np.array([2.0], np.float32)})) == [2.0]
            assert sess.run(v) == 6.0


def test_missing_task_names_the_workers_found(cluster):
    with pytest.raises(ValueError, match=r"no task worker/5.*'ps/0' at tcp://127\.0\.0\.1:\d+.*--name worker/5"):
        cluster.task("worker", 5)
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:worker/task:5"):
            c = fl.constant(1.0)
        with fl.Session(cluster, graph=g) as sess:
            with pytest.raises(fl.errors.InvalidArgumentError, match="worker/task:5"):
                sess.run(c)


@pytest.mark.parametrize("call,message,match", [
    ("run_step", {"handle": 3, "step_id": 1, "feeds": []}, "field 'handle' of run_step must be str"),
    ("run_step", {"step_id": 1, "feeds": []}, "run_step needs field 'handle'"),
    ("register_partitions", {"handle": "h", "graph_version": 1, "units": "nope", "num_fetches": 0},
     "field 'units' of register_partitions must be list"),
    ("register_partitions", {"handle": "h", "graph_version": 1, "units": [{"graph_def": {"node": [
        {"name": "x", "op": "NoSuchOp", "input": [], "attr": {}, "device": ""}]}}], "num_fetches": 0},
     "GraphDef 'format' must be 'flowlab.GraphDef'"),
    ("register_partitions", {"handle": "h", "graph_version": 1, "num_fetches": 0, "units": [{"graph_def": {
        "format": "flowlab.GraphDef", "version": 1, "library": {}, "node": [
            {"name": "x", "op": "NoSuchOp", "input": [], "attr": {}, "device": ""}]},
        "feeds": [], "feed_index": [], "fetches": [], "fetch_index": []}]}, "NoSuchOp"),
    # A crafted constant: a 4 TB shape with 12 bytes of data is refused, nothing allocated.
    ("register_partitions", {"handle": "h", "graph_version": 1, "num_fetches": 1, "units": [{
        "graph_def": {"format": "flowlab.GraphDef", "version": 1, "library": {}, "node": [
            {"name": "c", "op": "Const", "input": [], "device": "/job:ps/replica:0/task:0/device:CPU:0",
             "attr": {"dtype": {"type": "DT_FLOAT"}, "value": {"tensor": {
                 "dtype": "DT_FLOAT", "shape": [1000000, 1000000], "data": "AAAAAAAAAAAAAAAA"}}}}]},
        "feeds": [], "feed_index": [], "fetches": ["c:0"], "fetch_index": [0]}]},
     "tensor data has 12 bytes, but DT_FLOAT of shape \\[1000000, 1000000\\] needs 4000000000000"),
    ("recv_tensor", {"step_id": "1", "key": "k"}, "field 'step_id' of recv_tensor must be int"),
    ("run_step", {"handle": "h", "step_id": 1, "feeds": [], "deliver": [3]}, "'deliver' of run_step must list keys"),
    ("abort_step", [], "expects a message dict"),
    # A shipped function naming a tensor its body does not have, or of no known kind.
    ("register_partitions", {"handle": "h", "graph_version": 1, "num_fetches": 0, "units": [], "library": [{
        "kind": "pickle", "name": "f"}]}, r"Function 'f' is of kind 'pickle', which this process cannot build"),
    ("register_partitions", {"handle": "h", "graph_version": 1, "num_fetches": 0, "units": [], "library": [{
        "kind": "dataset", "name": "f", "args": ["nope:0"], "outputs": [], "captures": [],
        "graph_def": {"format": "flowlab.GraphDef", "version": 1, "library": {}, "node": []}}]}, "nope:0"),
])
def test_malformed_messages_get_an_error_and_change_nothing(cluster, call, message, match):
    task = cluster.task("ps", 0)
    before = task.status()
    with pytest.raises(fl.errors.OpError, match=match):
        task.connection.sync(task.connection.call(task, call, message, CONTROL_TIMEOUT_S))
    after = task.status()
    assert after["incarnation"] == before["incarnation"] and after["handles"] == before["handles"]


def test_a_library_missing_a_nested_function_is_refused_and_changes_nothing(cluster):
    from flowlab.distributed.functions import library_for

    g = fl.Graph()
    with g.as_default():
        ds = fl.data.Dataset.range(3).flat_map(lambda x: fl.data.Dataset.from_tensors(x).map(lambda y: y + 1))
        nxt = ds.make_one_shot_iterator().get_next()
    task = cluster.task("worker", 0)  # the session's own: where unplaced ops run
    with fl.Session(cluster, graph=g) as sess:
        assert sess.run(nxt) == 1  # shipped whole, it runs
        (message,) = [m for m in task._messages.values() if library_for(m["units"])] or [None]
    assert message is not None
    library = library_for(message["units"])
    outer = library[-1]
    assert [e["name"] for e in library][:-1] and outer["functions"]  # the nested one comes first
    before = task.status()
    with pytest.raises(fl.errors.InvalidArgumentError,
                       match=f"Function '{outer['name']}' calls '.*', which the message's library "
                             "does not define before it"):
        task.connection.sync(task.connection.call(task, "register_partitions", {
            **message, "handle": "bad-library", "library": [outer]}, CONTROL_TIMEOUT_S))
    assert task.status()["handles"] == before["handles"]


def test_traces_of_all_tasks_merge_into_one_timeline(cluster):
    g = fl.Graph()
    with g.as_default():
        w, b, x, y, loss, train, step = build_model(fl)
        init = fl.global_variables_initializer()
        with fl.Session(cluster, graph=g) as sess:
            sess.run(init)
            md = fl.RunMetadata()
            opts = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)
            before = sess.run(w)
            sess.run(train, {x: X, y: Y}, options=opts, run_metadata=md)
            devices = {d.device: d for d in md.step_stats.dev_stats}
            ps = "/job:ps/replica:0/task:0/device:CPU:0"
            worker = "/job:worker/replica:0/task:0/device:CPU:0"
            assert {ps, worker} <= set(devices)
            ps_nodes = {n.node_name for n in devices[ps].node_stats}
            worker_nodes = {n.node_name for n in devices[worker].node_stats}
            assert "w" in ps_nodes and any(n.startswith("gradients") for n in worker_nodes)
            matmul = next(n for n in devices[worker].node_stats if n.node_name == "MatMul")
            assert [d.size for d in matmul.output[0].tensor_description.shape.dim] == [3, 1]
            # One clock: every op of the step starts within the step's wall time.
            starts = [n.all_start_micros for d in devices.values() for n in d.node_stats]
            assert max(starts) - min(starts) < 5_000_000
            assert not np.array_equal(sess.run(w), before)  # the traced step trained
            # The profiler's view of a cluster step: ops on both tasks, transfers between them.
            with fl.profiler.profile(sess) as prof:
                sess.run(train, {x: X, y: Y})
            trace = prof.trace
            assert {r.device for r in trace.ops} >= {ps, worker}
            assert trace.transfers and all(t.bytes > 0 for t in trace.transfers)


def test_commits_ride_on_the_next_step_and_read_only_steps_keep_no_undo_log(cluster):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.Variable(0.0, name="committed")
        with fl.device("/job:worker/task:0"):
            one = fl.constant(1.0) * 1.0
        bump = v.assign_add(one)
        read = fl.identity(v) + one
        with fl.Session(cluster, graph=g) as sess:
            sess.run(v.initializer)
            ps = cluster.task("ps", 0)
            for _ in range(3):
                sess.run(read)
            assert ps.uncommitted == []  # nothing written: nothing to commit
            sess.run(bump)
            assert len(ps.uncommitted) == 1  # waits for ps/0's next run_step
            sess.run(bump)
            assert len(ps.uncommitted) == 1  # the first rode on the second's message
            assert sess.run(v) == 2.0
        assert ps.uncommitted == []  # closing the session committed the rest


def test_passes_show_the_placement_and_partitions_over_tasks(cluster):
    g = fl.Graph()
    with g.as_default():
        w, b, x, y, loss, train, step = build_model(fl)
        with fl.Session(cluster, graph=g) as sess:
            stages = fl.viz.passes(sess, train, {x: X, y: Y})
            ps, worker = "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"
            for stage in ("placed", "partitioned"):
                source = stages[stage].source
                assert ps in source and worker in source
            # Send/Recv between the tasks: the gradients to ps/0 (the weight gradient itself, its
            # GATE_OP tuple's Identity bypassed as Grappler does), the weights to worker/0.
            assert "send MatMul_1\\nto ps/0 CPU:0" in stages["partitioned"].source
            assert "send read\\nto worker/0 CPU:0" in stages["partitioned"].source


def test_the_stepper_refuses_a_cluster_session_and_says_what_to_do(cluster):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.Variable(1.0, name="stepped")
        with fl.Session(cluster, graph=g) as sess:
            with pytest.raises(fl.errors.UnimplementedError, match=r"live on its cluster's tasks.*local session"):
                fl.debug.Stepper(sess, v + 1.0)


def test_the_dask_dashboard_is_served_on_loopback(cluster):
    import urllib.request

    link = cluster.dashboard_link
    assert link.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(link, timeout=30) as page:
        assert page.status == 200 and b"Dask" in page.read()


def test_a_watched_steps_events_reach_the_listener_while_it_still_runs(cluster):
    # The step cannot end before its listener has seen `early` finish on the worker:
    # only then does the test feed the queue the step is blocked on.  Were events
    # sent with the step's reply only, it would wait until its deadline.
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:worker/task:0"):
            q = fl.FIFOQueue(1, fl.float32, shapes=[], shared_name="stream_q", name="stream_q")
            early = fl.identity(fl.constant(3.0), name="early")
            with fl.control_dependencies([early]):
                late = q.dequeue(name="late") + 1.0
            enqueue = q.enqueue(41.0)
    seen_early = threading.Event()
    seen_by_thread: list[str] = []

    def listener(ev):
        if ev.kind == "op_end" and ev.node == "early":
            seen_by_thread.append(threading.current_thread().name)
            seen_early.set()

    def feed_once_seen():
        if seen_early.wait(30):
            with fl.Session(cluster, graph=g) as other:
                other.run(enqueue)

    with fl.Session(cluster, graph=g) as sess:
        sess.set_listener(listener)
        feeder = threading.Thread(target=feed_once_seen)
        feeder.start()
        value = sess.run(late, options=fl.RunOptions(timeout_in_ms=20000))
        feeder.join()
    assert value == 42.0
    assert seen_by_thread and seen_by_thread[0] != threading.current_thread().name  # mid-step, not after


def test_the_live_graph_view_lights_up_ops_run_on_the_tasks(cluster):
    """GraphView's live bridge listens to the session: on a cluster the tasks' events
    come back with each step and light up the same nodes."""
    import threading as _threading

    from flowlab.viz import GraphView

    g = fl.Graph()
    with g.as_default():
        w, b, x, y, loss, train, step = build_model(fl)
        init = fl.global_variables_initializer()
        with fl.Session(cluster, graph=g) as sess:
            sess.run(init)
            view = GraphView(sess, train, {x: X, y: Y})
            sent: list[dict] = []
            idle = _threading.Event()

            def capture(msg, buffers=None):
                sent.append(msg)
                if msg.get("idle"):
                    idle.set()

            view.send = capture
            for _ in range(5):
                sess.run(train, {x: X, y: Y})
            assert idle.wait(10)
            view.stop()
            live = [m for m in sent if not m["idle"]]
            placed = view.layouts["placed"]
            ids = {n["name"]: n["id"] for n in placed["nodes"]}
            done = set().union(*(m["stages"].get("placed", {}).get("done", []) for m in live))
            assert ids["MatMul"] in done  # ran on worker/0
            assert ids["Momentum/update_w/ApplyMomentum"] in done  # ran on ps/0
            assert any(m["stages"].get("partitioned", {}).get("xfer") for m in live), "no bytes crossed tasks"
