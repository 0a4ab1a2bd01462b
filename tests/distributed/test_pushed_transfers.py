"""Transfers between tasks in a step's root frame are pushed: the producer hands each
value to its receiver as soon as its Send runs (one message, no reply), instead of the
receiver asking for it (recv_tensor, a request and its reply).  The sparse step of
benchmarks/distributed_steps.py (ids partitioned on the worker, a gather on each
shard's task, the rows stitched on the worker) makes four such transfers a step."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import flowlab as fl
from flowlab.distributed.remote_task import CONTROL_TIMEOUT_S

COUNTED = ("flowlab_run_step", "flowlab_recv_tensor", "flowlab_push_tensor")


def _count_calls(dask_worker):
    """Count the task server's handler calls on this worker (from now on)."""
    counts = collections.Counter()
    dask_worker._flowlab_test_counts = counts
    for name in COUNTED:
        handler = dask_worker.handlers[name]

        async def counted(message=None, _handler=handler, _name=name):
            counts[_name] += 1
            return await _handler(message)

        dask_worker.handlers[name] = counted


def _take_counts(dask_worker):
    counts = dask_worker._flowlab_test_counts
    out = dict(counts)
    counts.clear()
    return out


def _restore_calls(dask_worker):
    plugin = dask_worker.plugins["flowlab-task-server"]
    for name in COUNTED:
        dask_worker.handlers[name] = plugin._handler(name[len("flowlab_"):])


def sharded_lookup(tf, placed=True):
    """An embedding of 10 rows of 3 split over ps/0 and worker/1 (mod), looked up on
    worker/0: the ids go to both shards' tasks, the rows come back."""
    g = tf.Graph()
    table = np.arange(30, dtype=np.float32).reshape(10, 3)

    def on(device):
        return tf.device(device if placed else None)

    with g.as_default():
        with on("/job:ps/task:0"):
            t0 = tf.get_variable("shard0", initializer=table[0::2], use_resource=False)
        with on("/job:worker/task:1"):
            t1 = tf.get_variable("shard1", initializer=table[1::2], use_resource=False)
        with on("/job:worker/task:0"):
            ids = tf.placeholder(tf.int64, [None], name="ids")
            rows = tf.nn.embedding_lookup([t0, t1], ids)
        init = tf.global_variables_initializer()
    return g, ids, rows, init, table


def test_a_sharded_lookup_pushes_each_transfer_once_and_gets_numpys_rows(cluster):
    g, ids, rows, init, table = sharded_lookup(fl)
    with fl.Session(cluster, graph=g) as sess:
        sess.run(init)
        rng = np.random.default_rng(0)
        sess.run(rows, {ids: [0, 1]})  # registered
        cluster.client.run(_count_calls)
        try:
            for _ in range(3):
                want = rng.integers(0, 10, 7)
                np.testing.assert_array_equal(sess.run(rows, {ids: want}), table[want])
            counts = cluster.client.run(_take_counts)
        finally:
            cluster.client.run(_restore_calls)
        total = collections.Counter()
        for c in counts.values():
            total.update(c)
        # Per step: a run_step on each of the 3 tasks; the ids pushed to both shards'
        # tasks, their rows pushed back; nobody pulls.
        assert total == {"flowlab_run_step": 9, "flowlab_push_tensor": 12}
        by_name = {cluster.task(j, i).address: f"{j}/{i}" for j, i in (("ps", 0), ("worker", 0), ("worker", 1))}
        assert {by_name[a]: c.get("flowlab_push_tensor", 0) for a, c in counts.items()} == {
            "ps/0": 3, "worker/0": 6, "worker/1": 3}


def test_a_pushed_step_agrees_with_tensorflow(tf1, cluster):
    want = np.array([9, 0, 4, 4, 7, 2])
    g, ids, rows, init, _ = sharded_lookup(tf1, placed=False)  # TensorFlow in one process
    with tf1.Session(graph=g) as s:
        s.run(init)
        expected = s.run(rows, {ids: want})
    g, ids, rows, init, _ = sharded_lookup(fl)
    with fl.Session(cluster, graph=g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(rows, {ids: want}), expected)
        # A traced step pushes too, with the same values.
        md = fl.RunMetadata()
        traced = sess.run(rows, {ids: want}, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE),
                          run_metadata=md)
        np.testing.assert_array_equal(traced, expected)


def test_a_step_that_fails_on_a_shard_fails_with_its_error_and_the_next_one_runs(cluster):
    g, ids, rows, init, table = sharded_lookup(fl)
    with fl.Session(cluster, graph=g) as sess:
        sess.run(init)
        # id 41 goes to shard 1 as its row 20, out of its 5 rows: the gather there fails.
        with pytest.raises(fl.errors.InvalidArgumentError):
            sess.run(rows, {ids: [1, 41]}, options=fl.RunOptions(timeout_in_ms=20000))
        np.testing.assert_array_equal(sess.run(rows, {ids: [3, 8]}), table[[3, 8]])


@pytest.mark.parametrize("message,match", [
    ({"handle": "h", "step_id": 1, "feeds": [], "push": [{"key": "k"}]}, "'push' of run_step must list"),
    ({"handle": "h", "step_id": 1, "feeds": [], "pushed": [7]}, "'pushed' of run_step must list keys"),
])
def test_malformed_push_fields_of_run_step_are_refused(cluster, message, match):
    task = cluster.task("ps", 0)
    with pytest.raises(fl.errors.InvalidArgumentError, match=match):
        task.connection.sync(task.connection.call(task, "run_step", message, CONTROL_TIMEOUT_S))


def test_a_push_of_a_key_nobody_receives_is_refused(cluster):
    task = cluster.task("ps", 0)
    message = {"handle": "no-such-handle", "step_id": 12345, "key": "k", "value": np.ones(2, np.float32),
               "is_dead": False, "task": "/job:worker/replica:0/task:0", "incarnation": 1}
    with pytest.raises(fl.errors.InvalidArgumentError, match="is not a key that partitions"):
        task.connection.sync(task.connection.call(task, "push_tensor", message, CONTROL_TIMEOUT_S))
    with pytest.raises(fl.errors.InvalidArgumentError, match="push_tensor needs field 'is_dead'"):
        task.connection.sync(task.connection.call(
            task, "push_tensor", {k: v for k, v in message.items() if k != "is_dead"}, CONTROL_TIMEOUT_S))
