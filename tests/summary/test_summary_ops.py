"""tf.summary ops: TensorFlow's op types, names, tags and collections, and the same
serialized Summary bytes as TensorFlow's kernels for every kind."""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
import pytest
from tensorboard.compat.proto import summary_pb2

import flowlab as fl
from tests.difftest import run_with

RS = np.random.RandomState(7)


def _summary(b: bytes) -> summary_pb2.Summary:
    s = summary_pb2.Summary()
    s.ParseFromString(b)
    return s


def _ops(tf, build):
    g = tf.Graph()
    with g.as_default():
        build(tf)
        return [(op.name, op.type, [t.name for t in op.inputs]) for op in g.get_operations()
                if "Summary" in op.type], \
            [t.name for t in g.get_collection("summaries")], [t.name for t in g.get_collection("mine")]


def _program(tf):
    x = tf.placeholder(tf.float32, [None], name="x")
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.scalar("acc rate!", x[0], family="train")
    with tf.name_scope("outer"):
        tf.summary.histogram("w", x, collections=["mine"])
        tf.summary.histogram("w2", x, family="fam")
    tf.summary.image("img", tf.reshape(x[:12], [1, 2, 2, 3]))
    tf.summary.audio("au", tf.reshape(x[:8], [2, 4]), 8000, max_outputs=1)
    tf.summary.text("tx", tf.constant("hi"))
    tf.summary.tensor_summary("ts", x, display_name="shown")
    tf.summary.merge_all()
    tf.summary.merge_all(scope="outer", name="outer_merge")
    tf.summary.merge_all(key="mine")


def test_op_types_names_inputs_and_collections_match_tensorflow(tf1):
    want = _ops(tf1, _program)
    got = _ops(fl, _program)
    assert got == want
    names = [n for n, _, _ in got[0]]
    assert "loss_1" in names and "train/acc_rate_" in names and "Merge/MergeSummary" in names


def test_tags_follow_tensorflow(tf1):
    def build(tf):
        x = tf.constant([1.0, 2.0])
        ss = [tf.summary.scalar("loss", x[0]), tf.summary.scalar("loss", x[1]),
              tf.summary.scalar("/lead ing", x[0], family="fam")]
        with tf.name_scope("scope"):
            ss.append(tf.summary.scalar("inner", x[1], family="f"))
        return tf.summary.merge(ss)

    tags = [v.tag for v in _summary(run_with(fl, build)).value]
    assert tags == ["loss", "loss_1", "fam/fam/lead_ing", "f/scope/f/inner"]
    assert tags == [v.tag for v in _summary(run_with(tf1, build)).value]


def test_merge_all_returns_none_without_summaries_and_merge_has_no_collection():
    assert fl.summary.merge_all() is None
    s = fl.summary.scalar("a", 1.0)
    m = fl.summary.merge([s], name="m")
    assert m.op.name == "m/m" and m.op.type == "MergeSummary"
    assert fl.get_collection("summaries") == [s]
    assert m.shape.as_list() == [] and m.dtype == fl.string


def test_text_requires_a_string_tensor():
    with pytest.raises(ValueError, match="Expected tensor Const:0 to have dtype string, got"):
        fl.summary.text("t", fl.constant(1.0))


def _same_bytes(tf1, build):
    want = run_with(tf1, build)
    got = run_with(fl, build)
    assert _summary(got) == _summary(want)
    assert got == want  # byte for byte
    return _summary(got)


def test_scalar_values_and_dtypes(tf1):
    def build(tf):
        return tf.summary.merge([
            tf.summary.scalar("f", tf.constant(0.1)),
            tf.summary.scalar("d", tf.constant(1.0 / 3.0, tf.float64)),
            tf.summary.scalar("i", tf.constant(2**40 + 1, tf.int64)),
            tf.summary.scalar("u", tf.constant(200, tf.uint8)),
        ])

    s = _same_bytes(tf1, build)
    assert [v.simple_value for v in s.value] == [np.float32(0.1), np.float32(1 / 3), np.float32(2**40), 200.0]


@pytest.mark.parametrize("case", ["normal", "wide", "ints", "empty", "zeros", "float16"])
def test_histogram_equals_tensorflow(tf1, case):
    values = {
        "normal": RS.randn(1000).astype(np.float32),
        "wide": (RS.randn(300) * 10.0 ** RS.randint(-14, 22, 300)),
        "ints": RS.randint(-5, 9, (7, 9)).astype(np.int32),
        "empty": np.zeros([0], np.float32),
        "zeros": np.zeros([5], np.float64),
        "float16": RS.randn(50).astype(np.float16),
    }[case]
    s = _same_bytes(tf1, lambda tf: tf.summary.histogram("h", tf.constant(values)))
    h = s.value[0].histo
    assert h.num == values.size and sum(h.bucket) == values.size


@pytest.mark.parametrize("case", ["u8_gray", "u8_rgb", "u8_rgba", "f32_pos", "f32_neg", "f64",
                                  "f16", "nan_inf", "all_zero", "big_u8"])
def test_image_equals_tensorflow(tf1, case):
    values = {
        "u8_gray": RS.randint(0, 256, (2, 5, 7, 1)).astype(np.uint8),
        "u8_rgb": RS.randint(0, 256, (4, 3, 6, 3)).astype(np.uint8),
        "u8_rgba": RS.randint(0, 256, (1, 9, 4, 4)).astype(np.uint8),
        "f32_pos": RS.rand(2, 8, 8, 3).astype(np.float32),
        "f32_neg": RS.randn(3, 6, 5, 1).astype(np.float32),
        "f64": RS.randn(1, 4, 4, 3),
        "f16": RS.randn(1, 5, 5, 4).astype(np.float16),
        "nan_inf": np.where(RS.rand(1, 6, 6, 3) > 0.7, np.nan,
                            np.where(RS.rand(1, 6, 6, 3) > 0.9, np.inf, RS.rand(1, 6, 6, 3))).astype(np.float32),
        "all_zero": np.zeros((1, 3, 3, 1), np.float32),
        "big_u8": RS.randint(0, 256, (1, 120, 160, 3)).astype(np.uint8),
    }[case]
    s = _same_bytes(tf1, lambda tf: tf.summary.image("im", tf.constant(values), max_outputs=3))
    assert [v.tag for v in s.value] == [f"im/image/{i}" for i in range(min(3, len(values)))]


def test_image_tag_with_one_output_and_pixels_round_trip():
    import io

    from PIL import Image

    pixels = RS.randint(0, 256, (2, 4, 5, 3)).astype(np.uint8)
    s = _summary(run_with(fl, lambda tf: tf.summary.image("one", tf.constant(pixels), max_outputs=1)))
    assert [v.tag for v in s.value] == ["one/image"]
    im = s.value[0].image
    assert (im.height, im.width, im.colorspace) == (4, 5, 3)
    decoded = np.asarray(Image.open(io.BytesIO(im.encoded_image_string)))
    np.testing.assert_array_equal(decoded, pixels[0])


@pytest.mark.parametrize("shape,rate", [((2, 50), 8000), ((3, 40, 2), 44100.4), ((1, 0), 16000)])
def test_audio_equals_tensorflow(tf1, shape, rate):
    values = np.clip(RS.randn(*shape) * 0.7, -1.5, 1.5).astype(np.float32)
    s = _same_bytes(tf1, lambda tf: tf.summary.audio("a", tf.constant(values), rate, max_outputs=2))
    a = s.value[0].audio
    assert a.content_type == "audio/wav" and a.encoded_audio_string[:4] == b"RIFF"
    assert a.length_frames == shape[1] and a.num_channels == (shape[2] if len(shape) == 3 else 1)


@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.int32).reshape(2, 3), np.array(2.5, np.float64), np.array([True, False]),
    np.array([1 + 2j], np.complex64), np.array([[b"a", b"bc"]], dtype=object), np.zeros((0, 2), np.float32),
], ids=["int32", "f64_scalar", "bool", "complex", "strings", "empty"])
def test_tensor_summary_equals_tensorflow(tf1, value):
    def build(tf):
        return tf.summary.tensor_summary("t", tf.constant(value), summary_description="desc")

    s = _same_bytes(tf1, build)
    assert s.value[0].metadata.summary_description == "desc"


def test_text_summary_equals_tensorflow(tf1):
    s = _same_bytes(tf1, lambda tf: tf.summary.text("notes", tf.constant(["a *b*", "c"])))
    assert s.value[0].metadata.plugin_data.plugin_name == "text"
    assert list(s.value[0].tensor.string_val) == [b"a *b*", b"c"]


# --- run-time errors, by type and message, as TensorFlow's --------------------------------
def _error(tf, build, feed=None):
    g = tf.Graph()
    with g.as_default():
        out = build(tf)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(out, feed)
    lines = e.value.message.splitlines()
    # TensorFlow's message ends "<kernel message>\n\t [[{{node h}}]]" after a preamble.
    ends = [i for i, line in enumerate(lines) if line.startswith("\t [[")]
    return lines[ends[0] - 1] if ends else lines[0]


@pytest.mark.parametrize("name,build", [
    ("scalar_shape", lambda tf: tf.summary.scalar("v", tf.constant([1.0, 2.0]))),
    ("histo_nan", lambda tf: tf.summary.histogram("h", tf.constant([1.0, np.nan]))),
    ("histo_inf", lambda tf: tf.summary.histogram("h", tf.constant([np.inf, 1.0]))),
    ("image_rank", lambda tf: tf.summary.image("i", tf.zeros([2, 3, 3, 2]))),
    ("audio_rank", lambda tf: tf.summary.audio("a", tf.zeros([2]), 100)),
    ("audio_rate", lambda tf: tf.summary.audio("a", tf.zeros([1, 3]), 0.0)),
    ("merge_dup", lambda tf: tf.summary.merge([tf.summary.histogram("h", [1.0]), tf.summary.scalar("s", 1.0),
                                               tf.identity(tf.get_collection("summaries")[-1])])),
])
def test_errors_match_tensorflow(tf1, name, build):
    want = _error(tf1, build)  # TensorFlow's kernel message, e.g. "Nan in summary histogram for: h"
    got = _error(fl, build)  # flowlab's names the op, its device and where it was defined
    assert want in got, (got, want)


def test_merge_refuses_bytes_that_are_not_a_summary():
    with fl.Session() as sess, pytest.raises(fl.errors.InvalidArgumentError,
                                             match="Could not parse one of the summary inputs"):
        sess.run(fl.summary.merge([fl.constant(b"\xff\xff\xff")]))


def test_summary_ops_are_placed_and_pruned_like_any_op():
    x = fl.placeholder(fl.float32, [], name="x")
    s = fl.summary.scalar("x", x)
    y = x * 2.0
    with fl.Session() as sess:
        assert sess.run(y, {x: 1.5}) == 3.0  # the summary is not run
        md = fl.RunMetadata()
        sess.run(s, {x: 1.5}, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    ran = {n.node_name for d in md.step_stats.dev_stats for n in d.node_stats}
    assert s.op.name in ran and "mul" not in ran


def test_summary_across_devices_is_partitioned_with_send_recv_and_drawn():
    with fl.device("/cpu:0"):
        x = fl.constant([1.0, 2.0, 3.0], name="x")
    with fl.device("/cpu:1"):
        h = fl.summary.histogram("h", x)
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as sess:
        got = sess.run(h)
        parts = sess.partitions(h)
    with fl.Session(config=fl.ConfigProto(allow_soft_placement=True)) as sess:
        assert got == sess.run(h)  # the same bytes as on one device
    (cpu1,) = [[n["op"] for n in parts[d]["node"]] for d in parts if d.endswith("CPU:1")]
    assert "HistogramSummary" in cpu1 and "_Recv" in cpu1
    assert [(p.tensor, p.dst_device[-5:]) for p in parts.pairs] == [("x:0", "CPU:1")]
    assert "HistogramSummary" in fl.viz.graph(fl.get_default_graph()).source
