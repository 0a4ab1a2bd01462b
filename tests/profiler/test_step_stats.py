"""RunMetadata.step_stats under FULL_TRACE: TensorFlow's fields and flowlab's."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.client.step_stats import StepStatsCollector, task_of
from tests.runtime import testing_ops as T

FULL = fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE)


def _matmul_graph(tf):
    a = tf.placeholder(tf.float32, [2, 3], name="a")
    b = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="b")
    c = tf.matmul(a, b)
    d = tf.reduce_sum(c)
    return a, d


def _traced(build_and_feed, **run_kw):
    md = fl.RunMetadata()
    with fl.Session() as s:
        fetch, feed = build_and_feed()
        value = s.run(fetch, feed, options=FULL, run_metadata=md, **run_kw)
    return md, value


def _nodes(md):
    return {n.node_name: n for d in md.step_stats.dev_stats for n in d.node_stats}


def test_node_stats_fields():
    def build():
        a, d = _matmul_graph(fl)
        return d, {a: np.ones((2, 3), np.float32)}

    md, value = _traced(build)
    assert value == pytest.approx(42.0)
    (dev,) = md.step_stats.dev_stats
    assert dev.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    nodes = _nodes(md)
    assert set(nodes) == {"b", "Const", "MatMul", "Sum"}  # the fed placeholder does not run
    mm = nodes["MatMul"]
    assert mm.op_type == "MatMul"
    assert mm.timeline_label == "MatMul = MatMul(a, b)"
    assert mm.inputs == ["a:0", "b:0"]
    (out,) = mm.output
    assert out.slot == 0
    assert out.tensor_description.dtype == fl.float32
    assert out.tensor_description.shape.as_tuple() == (2, 2)
    assert [d.size for d in out.tensor_description.shape.dim] == [2, 2]
    assert out.tensor_description.allocation_description.requested_bytes == 16
    assert out.tensor_description.allocation_description.allocator_name == "cpu"
    assert nodes["Sum"].output[0].tensor_description.shape.as_tuple() == ()
    assert nodes["Sum"].output[0].tensor_description.allocation_description.requested_bytes == 4
    for n in nodes.values():
        assert n.op_start_rel_micros == 0
        assert n.op_end_rel_micros == n.all_end_rel_micros == n.op_end_rel_nanos // 1000
        assert n.all_start_micros == n.all_start_nanos // 1000
        assert n.thread_id in dev.thread_names
        assert n.step_id > 0 and not n.dead and n.frame == "" and n.iteration == 0
        assert n.task == "/job:localhost/replica:0/task:0"
    # Inputs start no earlier than their producers end (one monotonic clock).
    assert nodes["MatMul"].all_start_nanos >= nodes["b"].all_start_nanos + nodes["b"].all_end_rel_nanos
    assert nodes["Sum"].all_start_nanos >= mm.all_start_nanos + mm.all_end_rel_nanos
    starts = [n.all_start_nanos for n in dev.node_stats]
    assert starts == sorted(starts)


def test_labels_and_outputs_match_tensorflow(tf1):
    """Node names, timeline labels (of nodes whose inputs TensorFlow does not rewrite)
    and output shapes/bytes agree with TensorFlow's StepStats."""
    g = tf1.Graph()
    with g.as_default():
        a, d = _matmul_graph(tf1)
        tf_md = tf1.RunMetadata()
        with tf1.Session(graph=g) as s:
            s.run(d, {a: np.ones((2, 3))}, options=tf1.RunOptions(trace_level=3), run_metadata=tf_md)
    tf_nodes = {n.node_name: n for ds in tf_md.step_stats.dev_stats for n in ds.node_stats}

    def build():
        a, d = _matmul_graph(fl)
        return d, {a: np.ones((2, 3))}

    md, _ = _traced(build)
    ours = _nodes(md)
    for name in ("b", "Const", "MatMul", "Sum"):
        assert name in tf_nodes
        theirs = tf_nodes[name].output[0].tensor_description
        mine = ours[name].output[0].tensor_description
        assert [d.size for d in theirs.shape.dim] == [d.size for d in mine.shape.dim]
        assert theirs.allocation_description.requested_bytes == mine.allocation_description.requested_bytes
    for name in ("b", "Const", "Sum"):
        assert ours[name].timeline_label == tf_nodes[name].timeline_label


def test_no_trace_leaves_metadata_empty():
    md = fl.RunMetadata()
    with fl.Session() as s:
        s.run(fl.constant(1.0) + 2.0, options=fl.RunOptions(), run_metadata=md)
    assert md.step_stats.dev_stats == []


def test_make_callable_with_options_traces():
    x = fl.placeholder(fl.float32, [3], name="x")
    y = fl.square(x, name="sq")
    md = fl.RunMetadata()
    with fl.Session() as s:
        f = s.make_callable(y, [x], accept_options=True)
        np.testing.assert_array_equal(f(np.arange(3.0), options=FULL, run_metadata=md), [0, 1, 4])
    assert "sq" in _nodes(md)


def test_dead_ops_are_marked():
    x = fl.constant([1.0, 2.0], name="x")
    p = fl.placeholder(fl.bool, [], name="p")
    sw = T.switch(x, p, name="sw")
    f = T.plus(sw[0], 1.0, name="on_false")
    t = T.plus(sw[1], 10.0, name="on_true")
    m = T.merge([f, t], name="merge")
    md = fl.RunMetadata()
    with fl.Session() as s:
        np.testing.assert_array_equal(s.run(m, {p: True}, options=FULL, run_metadata=md), [11.0, 12.0])
    nodes = _nodes(md)
    assert nodes["on_false"].dead and nodes["on_false"].output == []
    assert nodes["on_false"].all_end_rel_nanos == 0
    assert not nodes["on_true"].dead and not nodes["merge"].dead
    # A Switch's untaken output is left out, the taken one described.
    assert [o.slot for o in nodes["sw"].output] == [1]


def test_variables_ref_outputs_count_no_bytes():
    v = fl.Variable(np.zeros((4, 4), np.float32), name="v")
    r = fl.identity(v, name="r")
    md = fl.RunMetadata()
    with fl.Session() as s:
        s.run(v.initializer)
        s.run(r, options=FULL, run_metadata=md)
    nodes = _nodes(md)
    ref_out = nodes["v"].output[0].tensor_description
    assert ref_out.shape.as_tuple() == (4, 4)
    assert ref_out.allocation_description.requested_bytes == 0
    assert nodes["r"].output[0].tensor_description.allocation_description.requested_bytes == 64


def test_failed_step_does_not_fill_but_collector_records_the_error():
    """The collector itself keeps the failing op with its error; the session raises and
    leaves RunMetadata alone (as TensorFlow)."""
    x = fl.constant(1.0, name="x")
    bad = T.fail(x, message="kaput", name="bad")
    coll = StepStatsCollector()
    with fl.Session() as s:
        s.set_listener(coll)
        with pytest.raises(errors.OpError, match="kaput"):
            s.run(bad)
    nodes = {n.node_name: n for d in coll.step_stats().dev_stats for n in d.node_stats}
    assert "kaput" in nodes["bad"].error
    assert nodes["x"].error == ""


def test_collector_groups_steps():
    x = fl.placeholder(fl.float32, [], name="x")
    y = fl.square(x, name="y")
    z = fl.negative(y, name="z")
    coll = StepStatsCollector()
    with fl.Session() as s:
        s.set_listener(coll)
        s.run(z, {x: 1.0})
        s.run(z, {x: 2.0})
    ids = coll.step_ids()
    assert len(ids) == 2 and ids[0] != ids[1]
    one = coll.step_stats([ids[1]])
    assert {n.step_id for d in one.dev_stats for n in d.node_stats} == {ids[1]}
    assert [n.node_name for d in one.dev_stats for n in d.node_stats] == ["y", "z"]


def test_task_of():
    assert task_of("/job:w/replica:0/task:1/device:CPU:0") == "/job:w/replica:0/task:1"
    assert task_of("CPU:0") == ""


def test_trace_reads_tensorflows_step_stats(tf1):
    """A TensorFlow RunMetadata goes through the same Trace (op types and inputs from
    its timeline labels)."""
    from flowlab.profiler import Trace

    g = tf1.Graph()
    with g.as_default():
        a, d = _matmul_graph(tf1)
        md = tf1.RunMetadata()
        with tf1.Session(graph=g) as s:
            s.run(d, {a: np.ones((2, 3))}, options=tf1.RunOptions(trace_level=3), run_metadata=md)
    tr = Trace.from_run_metadata(md)
    (mm,) = tr.op("MatMul")
    assert mm.op_type == "MatMul" and mm.outputs[0].shape == (2, 2) and mm.bytes == 16
    assert mm.inputs[1] == "b:0"
    assert [r.name for r in tr.critical_path()][-3:] == ["MatMul", "Sum", "_retval_Sum_0_0"]
    assert "MatMul" in repr(tr.summary())
