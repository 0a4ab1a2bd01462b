"""What the tutorial corpus (tests/programs/corpus, test_tutorial_corpus.py) found,
each pinned beside TensorFlow: SelectV2's gradient graph (the one dropout builds) as
TensorFlow 2.21 builds it, `tf.compat.v1.dtypes`, and a FileWriter given the
session's graph writing the graph and meta graph TensorBoard reads."""

from __future__ import annotations

import os
import tempfile

import numpy as np

import flowlab as fl
from tests.programs.hidden_support import same_results


def _grad_graph(tf, g):
    return sorted((op.name, op.type) for op in g.get_operations() if op.name.startswith("gradients/"))


def test_select_v2_gradient_nodes_and_values(tf1):
    """A scalar branch facing an unknown batch is reduced over axes known statically (no
    BroadcastGradientArgs), a matching branch through BroadcastGradientArgs, as dropout's
    where_v2(mask, x * scale, 0.) is."""

    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 3])
        b = tf.placeholder(tf.float32, [1, 3])
        keep = tf.placeholder(tf.float32)
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 4.0)
        h = tf.where_v2(x > 0.0, x * 2.0, 0.5)
        k = tf.where_v2(x > 1.0, b, x)
        d = tf.nn.dropout(tf.matmul(h + k, w), keep, seed=3)
        loss = tf.reduce_sum(d * d)
        grads = tf.gradients(loss, [x, b, w])
        feed = {x: np.array([[1.5, -1.0, 0.5], [2.0, 0.2, -0.3]], np.float32),
                b: np.array([[0.1, 0.2, 0.3]], np.float32), keep: 0.7}
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            values = s.run(grads, feed)
        return [values, _grad_graph(tf, tf.get_default_graph())]

    same_results(tf1, prog)


def test_compat_v1_dtypes_namespace(tf1):
    def prog(tf):
        d = tf.compat.v1.dtypes
        x = d.cast(tf.constant([1.7, -2.5, 300.0]), d.int32)
        y = d.saturate_cast(tf.constant([1.7, -2.5, 300.0]), tf.dtypes.uint8)
        z = tf.dtypes.complex(tf.constant([1.0]), tf.constant([2.0]))
        with tf.Session() as s:
            out = s.run([x, y, z, d.as_string(tf.constant([3, 4]))])
        return [out, d.as_dtype("float32").name, d.as_dtype(np.int64) == d.int64, d.float16.size,
                isinstance(d.int64, d.DType), tf.dtypes.string.name]

    same_results(tf1, prog)


def test_file_writer_given_the_session_graph(tf1):
    """`tf.summary.FileWriter(logdir, sess.graph)`, as fully_connected_feed and
    mnist_with_summaries write it: a graph event and a meta graph event, read back with
    TensorFlow's summary_iterator, name the same nodes."""

    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        with tf.name_scope("layer"):
            w = tf.Variable(tf.ones([2, 1]), name="weights")
            y = tf.matmul(x, w)
        tf.summary.scalar("mean", tf.reduce_mean(y))
        merged = tf.summary.merge_all()
        logdir = tempfile.mkdtemp()
        with tf.Session() as sess:
            writer = tf.summary.FileWriter(logdir, sess.graph)
            sess.run(tf.global_variables_initializer())
            writer.add_summary(sess.run(merged, {x: [[1.0, 2.0]]}), 3)
            writer.close()
        seen = []
        for f in sorted(os.listdir(logdir)):
            for ev in tf1.train.summary_iterator(os.path.join(logdir, f)):
                kind = ev.WhichOneof("what")
                if kind == "graph_def":
                    gd = tf1.GraphDef.FromString(ev.graph_def)
                    seen.append((kind, sorted(n.name for n in gd.node)))
                elif kind == "meta_graph_def":
                    mg = tf1.MetaGraphDef.FromString(ev.meta_graph_def)
                    seen.append((kind, sorted(n.name for n in mg.graph_def.node),
                                 sorted(o.name for o in mg.meta_info_def.stripped_op_list.op)))
                elif kind == "summary":
                    seen.append((kind, ev.step, [(v.tag, v.simple_value) for v in ev.summary.value]))
                else:
                    seen.append((kind,))
        return seen

    out = same_results(tf1, prog)
    assert [k[0] for k in out] == ["file_version", "graph_def", "meta_graph_def", "summary"]
    assert fl.dtypes.float32 is fl.float32
