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


def _sequence_records(tf):
    out = []
    for i, steps in enumerate([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0]], []]):
        ex = tf.train.SequenceExample()
        ex.context.feature["label"].int64_list.value.append(i)
        ex.context.feature["name"].bytes_list.value.append(b"seq%d" % i)
        if i != 1:
            ex.context.feature["tags"].int64_list.value.extend(range(i + 1))
        pairs = ex.feature_lists.feature_list["pairs"]
        words = ex.feature_lists.feature_list["words"]
        ids = ex.feature_lists.feature_list["ids"]
        for j, s in enumerate(steps):
            pairs.feature.add().float_list.value.extend(s)
            words.feature.add().bytes_list.value.append(b"w%d" % j)
            ids.feature.add().int64_list.value.extend(range(j + 1))
        if i == 2:
            del ex.feature_lists.feature_list["pairs"]
        out.append(ex.SerializeToString())
    return out


CONTEXT = lambda tf: {"label": tf.FixedLenFeature([], tf.int64),  # noqa: E731
                      "name": tf.FixedLenFeature([], tf.string),
                      "tags": tf.VarLenFeature(tf.int64)}
SEQUENCE = lambda tf: {"pairs": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),  # noqa: E731
                       "words": tf.FixedLenSequenceFeature([], tf.string),
                       "ids": tf.VarLenFeature(tf.int64)}


def _fetchable(d):
    return {k: (v.indices, v.values, v.dense_shape) if hasattr(v, "dense_shape") else v for k, v in d.items()}


def test_parse_single_sequence_example(tf1):
    def prog(tf):
        records = _sequence_records(tf)
        r = tf.placeholder(tf.string, [])
        ctx, seq = tf.parse_single_sequence_example(r, CONTEXT(tf), SEQUENCE(tf))
        _, seq_io = tf.io.parse_single_sequence_example(  # tf.io's names are the same functions
            r, sequence_features={"w": tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True)})
        shapes = [(k, v.get_shape().as_list()) for k, v in sorted({**ctx, **seq}.items())
                  if not hasattr(v, "dense_shape")]
        with tf.Session() as s:
            out = [s.run([_fetchable(ctx), _fetchable(seq), seq_io], {r: rec}) for rec in records[:2]]
        return out, shapes, sorted(ctx), sorted(seq)

    same_results(tf1, prog)


def test_parse_sequence_example_batch_and_lengths(tf1):
    def prog(tf):
        records = _sequence_records(tf)
        ctx, seq, lengths = tf.io.parse_sequence_example(records, CONTEXT(tf), SEQUENCE(tf))
        with tf.Session() as s:
            return s.run([_fetchable(ctx), _fetchable(seq), lengths]), seq["pairs"].get_shape().as_list()

    same_results(tf1, prog)


def test_sequence_example_errors(tf1):
    from tests.programs.hidden_support import same_error

    def missing_required(tf):
        records = _sequence_records(tf)
        _, seq = tf.parse_single_sequence_example(
            records[2], sequence_features={"pairs": tf.FixedLenSequenceFeature([2], tf.float32)})
        with tf.Session() as s:
            s.run(seq)

    def wrong_size(tf):
        records = _sequence_records(tf)
        _, seq = tf.parse_single_sequence_example(
            records[0], sequence_features={"pairs": tf.FixedLenSequenceFeature([3], tf.float32)})
        with tf.Session() as s:
            s.run(seq)

    def no_features(tf):
        tf.parse_single_sequence_example(tf.constant(b""))

    same_error(tf1, missing_required, "is required but could not be found")
    same_error(tf1, wrong_size, "values != expected")
    same_error(tf1, no_features, "at least one should have values")


def test_histogram_proto_in_a_hand_built_summary(tf1):
    """The TensorBoard logger snippet: a tf.HistogramProto filled from np.histogram,
    written in a tf.Summary; its bytes are TensorFlow's."""

    def prog(tf):
        values = np.random.RandomState(0).randn(30)
        counts, edges = np.histogram(values, bins=5)
        hist = tf.HistogramProto(min=float(values.min()), max=float(values.max()), num=30,
                                 sum=float(values.sum()), sum_squares=float((values ** 2).sum()))
        hist.bucket_limit.extend(edges[1:])
        hist.bucket.extend(counts)
        s = tf.Summary(value=[tf.Summary.Value(tag="w", histo=hist)])
        meta = tf.MetaGraphDef()
        meta.meta_info_def.tags.append("serve")
        return [s.SerializeToString(), meta.SerializeToString(),
                tf.AttrValue(i=3).SerializeToString(), tf.NameAttrList(name="f").SerializeToString(),
                tf.TensorInfo(name="x:0").SerializeToString(), tf.SummaryMetadata().SerializeToString(),
                tf.LogMessage(message="m").SerializeToString()]

    same_results(tf1, prog)


def test_parse_example_batch_of_scalar_strings(tf1):
    """A batch's scalar string feature (and its default) holds the strings (it held the
    0-d arrays they came in, fetched as garbage bytes)."""

    def prog(tf):
        recs = []
        for i in range(3):
            feature = {"n": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"ab%d" % i]))}
            if i != 1:
                feature["m"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"m%d" % i]))
            recs.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        p = tf.parse_example(recs, {"n": tf.FixedLenFeature([], tf.string),
                                    "m": tf.FixedLenFeature([], tf.string, default_value="none")})
        with tf.Session() as s:
            return s.run(p)

    same_results(tf1, prog)


def test_dataset_list_files(tf1):
    def prog(tf):
        d = tempfile.mkdtemp()
        for n in ("b.txt", "a.txt", "c.csv", "d.txt"):
            with open(os.path.join(d, n), "w") as f:
                f.write(n)
        ordered = tf.data.Dataset.list_files(os.path.join(d, "*.txt"), shuffle=False)
        shuffled = tf.data.Dataset.list_files([os.path.join(d, "*.txt"), os.path.join(d, "*.csv")], seed=5)
        it = ordered.make_one_shot_iterator().get_next()
        its = shuffled.repeat(2).make_one_shot_iterator().get_next()
        none = tf.data.Dataset.list_files(os.path.join(d, "*.png")).make_initializable_iterator()
        out = []
        with tf.Session() as s:
            out.append([os.path.basename(s.run(it)) for _ in range(3)])
            out.append([os.path.basename(s.run(its)) for _ in range(8)])
            try:
                s.run(none.initializer)
            except tf.errors.InvalidArgumentError as e:
                out.append("No files matched pattern" in str(e))
        ops = sorted((op.name, op.type) for op in tf.get_default_graph().get_operations()
                     if op.name.startswith("list_files/"))
        return out, ops, str(ordered.output_types), str(ordered.output_shapes)

    same_results(tf1, prog)


def test_matching_files_sorts_the_matches_of_all_patterns(tf1):
    def prog(tf):
        d = tempfile.mkdtemp()
        for n in ("b.txt", "a.txt", "c.csv", "d.txt"):
            with open(os.path.join(d, n), "w") as f:
                f.write(n)
        m = tf.matching_files([os.path.join(d, "*.txt"), os.path.join(d, "*.csv"), os.path.join(d, "a.*")])
        with tf.Session() as s:
            return [os.path.basename(p) for p in s.run(m)]

    assert same_results(tf1, prog) == [b"a.txt", b"a.txt", b"b.txt", b"c.csv", b"d.txt"]


def test_scaffold_and_hook_graph_as_tensorflow(tf1):
    """Scaffold.finalize's default ops (resources' init and report, tables init, the
    concatenated ready ops) and the hooks' global-step read (`global_step/add`) are
    TensorFlow's, node for node.  The read is run on its own: fetched beside the train
    op, nothing orders it against the AssignAdd, and TensorFlow's inter-op threads give
    the step before or after the increment (1 instead of 0 seen once, on a loaded
    machine)."""

    def prog(tf):
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable([1.0, 2.0], name="w")
        train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(w * w), global_step=gs)
        hook = tf.train.StopAtStepHook(last_step=3)
        hook.begin()
        scaffold = tf.train.Scaffold()
        scaffold.finalize()
        ops = sorted((op.name, op.type) for op in tf.get_default_graph().get_operations()
                     if not op.name.startswith("save/"))  # the Saver's graph is not the Scaffold's
        with tf.Session() as s:
            s.run(scaffold.init_op)
            s.run(scaffold.local_init_op)
            ready = s.run([scaffold.ready_op, scaffold.ready_for_local_init_op])
            read = tf.get_default_graph().get_tensor_by_name("global_step/add:0")
            steps = []
            for _ in range(2):
                steps.append(s.run(read))
                s.run(train)
        return ops, ready, steps

    same_results(tf1, prog)


def test_dropout_wrapper_seeds_and_state_filter(tf1):
    """DropoutWrapper as TensorFlow's: a seed per leaf and per input/state/output
    (md5 of seed and salt), no dropout on an LSTM's memory c, dropout added for any
    keep probability but a Python float 1.0; through static_rnn (a while loop's
    iterations draw in TensorFlow's scheduling order, see the corpus report)."""
    from tests.programs.hidden_support import tf_with_legacy_keras

    def prog(tf):
        tf.set_random_seed(33)
        xs = [tf.constant(np.full([2, 4], 0.5 + t, np.float32)) for t in range(3)]
        keep = tf.placeholder_with_default(0.7, [])
        lstm = tf.nn.rnn_cell.LSTMCell(3, initializer=tf.ones_initializer())
        cell = tf.nn.rnn_cell.DropoutWrapper(lstm, input_keep_prob=keep, output_keep_prob=0.8,
                                             state_keep_prob=0.6, seed=1)
        gru = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2, kernel_initializer=tf.ones_initializer()),
                                            output_keep_prob=1, seed=4)
        out, state = tf.nn.static_rnn(cell, xs, dtype=tf.float32, scope="lstm")
        out2, state2 = tf.nn.static_rnn(gru, xs, dtype=tf.float32, scope="gru")
        seeds = sorted((op.name, op.get_attr("seed2")) for op in tf.get_default_graph().get_operations()
                       if op.type == "RandomUniform")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return s.run([out, state, out2, state2]), seeds

    same_results(tf_with_legacy_keras(tf1), prog)
