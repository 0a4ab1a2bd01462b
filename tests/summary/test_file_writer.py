"""tf.summary.FileWriter: event files TensorBoard's EventAccumulator and TensorFlow's
reader read, with the events TensorFlow's FileWriter writes for the same program."""

from __future__ import annotations

import glob
import os
import time
import warnings

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import event_pb2, graph_pb2, summary_pb2

import flowlab as fl

RS = np.random.RandomState(3)
EVERYTHING = {"images": 0, "audio": 0, "histograms": 0, "tensors": 0, "scalars": 0}


def _files(logdir):
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def _events(path):
    return list(fl.train.summary_iterator(path))


def _train_and_log(tf, logdir, steps=3):
    """A TF1 program that logs a scalar, a histogram and an image each step."""
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(tf.ones([4, 2]), name="w")
    y = tf.matmul(x, w, name="y")
    loss = tf.reduce_mean(tf.square(y), name="loss")
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    tf.summary.image("x_image", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=1)
    merged = tf.summary.merge_all()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feeds = [RS.randn(3, 4).astype(np.float32) for _ in range(steps)]
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(logdir), sess.graph)
        sess.run(tf.global_variables_initializer())
        writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 0)
        for step, feed in enumerate(feeds):
            writer.add_summary(sess.run(merged, {x: feed}), step)  # before the update: no race
            sess.run(train, {x: feed})
        writer.close()
    return feeds


def test_events_match_tensorflows_file_writer(tf1, tmp_path):
    state = RS.get_state()
    _train_and_log(tf1, tmp_path / "tf")
    RS.set_state(state)
    with fl.Graph().as_default():
        _train_and_log(fl, tmp_path / "fl")
    (tf_file,), (fl_file,) = _files(tmp_path / "tf"), _files(tmp_path / "fl")
    want, got = _events(tf_file), _events(fl_file)
    assert [(e.WhichOneof("what"), e.step) for e in got] == [(e.WhichOneof("what"), e.step) for e in want]
    assert got[0].file_version == want[0].file_version == "brain.Event:2"
    for w, g in zip(want, got):
        if w.WhichOneof("what") in ("summary", "session_log"):
            assert g.summary == w.summary and g.session_log == w.session_log  # same values, same bytes
        assert g.wall_time > 1e9
    tf_graph, fl_graph = graph_pb2.GraphDef(), graph_pb2.GraphDef()
    tf_graph.ParseFromString(want[1].graph_def)
    fl_graph.ParseFromString(got[1].graph_def)
    tf_nodes = {n.name: (n.op, list(n.input)) for n in tf_graph.node}
    fl_nodes = {n.name: (n.op, list(n.input)) for n in fl_graph.node}
    for name in ("x", "w", "y", "loss", "loss_1", "weights", "x_image", "Merge/MergeSummary"):
        assert fl_nodes[name] == tf_nodes[name]
    shapes = {n.name: n.attr["_output_shapes"] for n in fl_graph.node}
    assert [d.size for d in shapes["y"].list.shape[0].dim] == [-1, 2]


def test_event_accumulator_reads_every_kind(tmp_path):
    x = fl.placeholder(fl.float32, [None], name="x")
    fl.summary.scalar("avg", fl.reduce_mean(x))
    fl.summary.histogram("values", x)
    fl.summary.image("pic", fl.reshape(x[:12], [1, 2, 2, 3]))
    fl.summary.audio("sound", fl.reshape(x[:8], [1, 8]) / 10.0, 4000)
    fl.summary.text("note", fl.constant("hello *world*"))
    fl.summary.tensor_summary("raw", x)
    merged = fl.summary.merge_all()
    with fl.Session() as sess, fl.summary.FileWriter(str(tmp_path), sess.graph) as writer:
        for step in range(3):
            md = fl.RunMetadata()
            s = sess.run(merged, {x: np.arange(12, dtype=np.float32) + step},
                         options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
            writer.add_summary(s, step)
        writer.add_run_metadata(md, "step2", 2)
    acc = EventAccumulator(str(tmp_path), size_guidance=EVERYTHING)
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["avg"] and tags["histograms"] == ["values"]
    assert tags["images"] == ["pic/image/0"] and tags["audio"] == ["sound/audio/0"]
    assert sorted(tags["tensors"]) == ["note", "raw"] and tags["run_metadata"] == ["step2"]
    assert [(e.step, e.value) for e in acc.Scalars("avg")] == [(0, 5.5), (1, 6.5), (2, 7.5)]
    h = acc.Histograms("values")[2].histogram_value
    assert (h.min, h.max, h.num, h.sum) == (2.0, 13.0, 12.0, 90.0)
    img = acc.Images("pic/image/0")[0]
    assert (img.width, img.height) == (2, 2) and img.encoded_image_string.startswith(b"\x89PNG")
    assert acc.Audio("sound/audio/0")[1].content_type == "audio/wav"
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"
    assert {n.name for n in acc.Graph().node} >= {"x", "avg", "values", "Merge/MergeSummary"}
    assert "ScalarSummary" in {op.name for op in acc.MetaGraph().meta_info_def.stripped_op_list.op}
    stats = acc.RunMetadata("step2").step_stats
    timed = {n.node_name: n for d in stats.dev_stats for n in d.node_stats}
    assert "Merge/MergeSummary" in timed and timed["Merge/MergeSummary"].all_start_micros > 0


def test_tensorflow_reads_flowlab_event_files(tf1, tmp_path):
    with fl.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(fl.Summary(value=[fl.Summary.Value(tag="a", simple_value=0.25)]), 7)
    events = list(tf1.train.summary_iterator(_files(tmp_path)[0]))
    assert events[0].file_version == "brain.Event:2"
    assert (events[1].step, events[1].summary.value[0].tag, events[1].summary.value[0].simple_value) == (7, "a", 0.25)


def test_metadata_is_written_with_the_first_value_of_a_tag_only(tmp_path):
    t = fl.summary.text("t", fl.constant("x"))
    with fl.Session() as sess, fl.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(sess.run(t), 0)
        w.add_summary(sess.run(t), 1)
    values = [e.summary.value[0] for e in _events(_files(tmp_path)[0]) if e.HasField("summary")]
    assert values[0].metadata.plugin_data.plugin_name == "text"
    assert not values[1].HasField("metadata")


def test_writer_api_events_in_order(tmp_path):
    w = fl.summary.FileWriter(str(tmp_path / "run"), filename_suffix=".v2")
    assert w.get_logdir() == str(tmp_path / "run")
    w.add_event(event_pb2.Event(step=5, file_version="custom"))
    w.add_session_log(fl.SessionLog(status=fl.SessionLog.CHECKPOINT, checkpoint_path="/c"), 6)
    gd = fl.get_default_graph()
    fl.constant(1.0, name="c")
    w.add_graph(gd, global_step=7)
    w.add_meta_graph(fl.train.export_meta_graph(), global_step=8)
    w.add_run_metadata(fl.RunMetadata(), "rm", 9)
    with pytest.raises(ValueError, match="The provided tag was already used for this event type"):
        w.add_run_metadata(fl.RunMetadata(), "rm", 10)
    w.close()
    (path,) = _files(tmp_path / "run")
    assert path.endswith(".v2")
    events = _events(path)
    assert [(e.WhichOneof("what"), e.step) for e in events] == [
        ("file_version", 0), ("file_version", 5), ("session_log", 6), ("graph_def", 7),
        ("meta_graph_def", 8), ("tagged_run_metadata", 9)]
    assert events[2].session_log.checkpoint_path == "/c"
    g = graph_pb2.GraphDef()
    g.ParseFromString(events[3].graph_def)
    assert [n.name for n in g.node] == ["c"] and g.versions.producer > 0


def test_closed_writer_warns_and_writes_nothing_until_reopened(tmp_path):
    w = fl.summary.FileWriter(str(tmp_path))
    w.close()
    with pytest.warns(UserWarning, match="Attempting to use a closed FileWriter"):
        w.add_summary(fl.Summary(value=[fl.Summary.Value(tag="lost", simple_value=1.0)]), 1)
    assert [e.WhichOneof("what") for e in _events(_files(tmp_path)[0])] == ["file_version"]
    w.reopen()
    w.add_summary(fl.Summary(value=[fl.Summary.Value(tag="kept", simple_value=2.0)]), 2)
    w.close()
    files = _files(tmp_path)
    assert len(files) == 2  # reopening continues in a new file
    tags = [v.tag for f in files for e in _events(f) for v in e.summary.value]
    assert tags == ["kept"]


def test_background_writer_flushes_without_being_asked(tmp_path):
    w = fl.summary.FileWriter(str(tmp_path), max_queue=100, flush_secs=0.05)
    w.add_summary(fl.Summary(value=[fl.Summary.Value(tag="bg", simple_value=3.0)]), 1)
    path = _files(tmp_path)[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(e.HasField("summary") for e in _events(path)):
            break
        time.sleep(0.02)
    else:
        pytest.fail("the background writer never flushed the event")
    w.close()


def test_flush_puts_every_event_on_disk(tmp_path):
    w = fl.summary.FileWriter(str(tmp_path), max_queue=1000, flush_secs=3600)
    for i in range(50):
        w.add_summary(fl.Summary(value=[fl.Summary.Value(tag="s", simple_value=float(i))]), i)
    w.flush()
    assert [e.step for e in _events(_files(tmp_path)[0]) if e.HasField("summary")] == list(range(50))
    w.close()


def test_argument_errors():
    with fl.Graph().as_default():
        w = fl.summary.FileWriter(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fl-args-{os.getpid()}"))
        with pytest.raises(ValueError, match="Please pass only graph, or graph_def"):
            w.add_graph(fl.get_default_graph(), graph_def=graph_pb2.GraphDef())
        with pytest.raises(TypeError, match="must be an instance of `Graph`"):
            w.add_graph(42)
        with pytest.raises(TypeError, match="meta_graph_def must be type MetaGraphDef"):
            w.add_meta_graph("nope")
        with pytest.raises(TypeError, match="add_summary expects a Summary proto"):
            w.add_summary(1.5)
        w.close()
    with pytest.raises(ValueError, match="summary-writer resource"):
        fl.summary.FileWriter("/tmp/x", session=object())


def test_file_writer_cache(tmp_path):
    fl.constant(2.0, name="in_default_graph")
    a = fl.summary.FileWriterCache.get(str(tmp_path))
    assert fl.summary.FileWriterCache.get(str(tmp_path)) is a
    fl.summary.FileWriterCache.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="closed FileWriter"):
            a.flush()
    assert fl.summary.FileWriterCache.get(str(tmp_path)) is not a
    fl.summary.FileWriterCache.clear()
    kinds = [e.WhichOneof("what") for f in _files(tmp_path) for e in _events(f)]
    assert kinds.count("graph_def") == 2  # each cached writer wrote the default graph


def test_corrupt_event_file_is_data_loss(tmp_path):
    with fl.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="a", simple_value=1.0)]), 1)
    path = _files(tmp_path)[0]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[-6] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(fl.errors.DataLossError, match="corrupted record data"):
        _events(path)


def test_record_checksums_are_tensorflows():
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as reference

    from flowlab.summary.records import masked_crc32c

    for data in (b"", b"a", b"123456789", bytes(range(256)) * 40):
        assert masked_crc32c(data) == reference(data)
