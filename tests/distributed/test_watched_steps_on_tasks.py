"""A traced or watched step on Dask task servers keeps the executor's fast paths, as a
local one does: the task's event recorder takes records (flowlab.distributed.events),
so a fused loop runs its recording twin and a straight-line step its recording line,
and the client's StepStats are the frame path's."""

from __future__ import annotations

import collections
from unittest import mock

import numpy as np
import pytest

import flowlab as fl
from flowlab.runtime.task import loop_fusion

pytestmark = pytest.mark.slow


def _loop_graph(on: str) -> tuple[fl.Graph, list[fl.Tensor]]:
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0" if on != "local" else None):
            w = fl.Variable(np.float32(0.5), name="w")
        with fl.device("/job:worker/task:0" if on != "local" else None):
            i0, x0 = fl.constant(0), fl.constant(np.float32(1.0))
            _, x = fl.while_loop(lambda i, x: i < 7, lambda i, x: (i + 1, x * w + 1.0), [i0, x0])
            y = fl.square(x) * 2.0  # straight-line ops after the loop
    return g, [x, y]


def _counts(md: fl.RunMetadata, live: bool = False) -> collections.Counter[str]:
    """Executions per node (the frame path also lists the ops it found dead)."""
    return collections.Counter(n.node_name for d in md.step_stats.dev_stats for n in d.node_stats
                               if not n.node_name.startswith("_") and "/_" not in n.node_name
                               and n.node_name != "w" and not (live and getattr(n, "dead", False)))


def _twin_runs(cluster) -> int:
    addr = cluster.task("worker", 0).address

    def runs() -> int:
        from flowlab.runtime.task import loop_recording

        return loop_recording.TRACED_RUNS[0]

    return cluster.client.run(runs, workers=[addr])[addr]


def test_a_traced_loop_on_a_worker_stays_fused_and_gives_the_frame_paths_step_stats(cluster):
    g, fetches = _loop_graph("cluster")
    with g.as_default(), fl.Session(cluster, graph=g) as sess:
        sess.run(fl.global_variables_initializer())
        plain = sess.run(fetches)
        before = _twin_runs(cluster)
        md = fl.RunMetadata()
        traced = sess.run(fetches, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
        assert _twin_runs(cluster) == before + 1  # the worker ran the loop's recording twin
        np.testing.assert_array_equal(traced, plain)
        remote = _counts(md)
        worker = "/job:worker/replica:0/task:0/device:CPU:0"
        assert any(n.node_name == "while/mul" for d in md.step_stats.dev_stats if d.device == worker
                   for n in d.node_stats)
    # The same loop in this process on the frame path (fusion off): the same executions.
    lg, lf = _loop_graph("local")
    with lg.as_default(), fl.Session(graph=lg) as s, mock.patch.object(loop_fusion, "ENABLED", False):
        s.run(fl.global_variables_initializer())
        lmd = fl.RunMetadata()
        np.testing.assert_array_equal(
            s.run(lf, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=lmd), plain)
    local = _counts(lmd)
    loop_ops = {k for k in local if k.startswith("while/")}
    assert loop_ops and {k: remote[k] for k in loop_ops} == {k: local[k] for k in loop_ops}
    assert _counts(md, live=True)["while/mul"] == 7 and remote["Square"] == local["Square"] == 1
    x = np.float32(1.0)
    for _ in range(7):
        x = x * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(plain, [x, np.float32(2.0) * x * x], rtol=1e-6)


def test_a_watched_loop_on_a_worker_streams_every_op_to_the_listener(cluster):
    g, fetches = _loop_graph("cluster")
    with g.as_default(), fl.Session(cluster, graph=g) as sess:
        sess.run(fl.global_variables_initializer())
        seen: list[tuple[str, str, int]] = []

        def listener(ev):
            seen.append((ev.kind, ev.node, ev.iteration))

        listener.take_records = None  # a plain listener here: the task's recorder takes records
        before = _twin_runs(cluster)
        previous = sess.set_listener(listener)
        try:
            sess.run(fetches)
        finally:
            sess.set_listener(previous)
        assert _twin_runs(cluster) == before + 1
        ends = collections.Counter(n for k, n, _ in seen if k == "op_end")
        assert ends["while/mul"] == 7 and ends["Square"] == 1
        assert sorted(it for k, n, it in seen if k == "op_end" and n == "while/mul") == list(range(7))
