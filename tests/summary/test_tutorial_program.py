"""TensorFlow's classic mnist_with_summaries tutorial, run unchanged under TensorFlow
and flowlab: the two logdirs hold the same runs, tags, steps and (to float32
rounding) values, and TensorBoard's EventAccumulator reads both alike."""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import flowlab as fl

RS = np.random.RandomState(21)
IMAGES = RS.rand(40, 784).astype(np.float32)
LABELS = np.eye(10, dtype=np.float32)[RS.randint(0, 10, 40)]
W1 = (RS.randn(784, 50) * 0.1).astype(np.float32)
W2 = (RS.randn(50, 10) * 0.1).astype(np.float32)


def tutorial(tf, log_dir, steps=6):
    """mnist_with_summaries.py (TensorFlow 1.x), with fixed weights and data."""
    with tf.name_scope("input"):
        x = tf.placeholder(tf.float32, [None, 784], name="x-input")
        y_ = tf.placeholder(tf.float32, [None, 10], name="y-input")
    with tf.name_scope("input_reshape"):
        tf.summary.image("input", tf.reshape(x, [-1, 28, 28, 1]), 10)

    def variable_summaries(var):
        with tf.name_scope("summaries"):
            mean = tf.reduce_mean(var)
            tf.summary.scalar("mean", mean)
            with tf.name_scope("stddev"):
                stddev = tf.sqrt(tf.reduce_mean(tf.square(var - mean)))
            tf.summary.scalar("stddev", stddev)
            tf.summary.scalar("max", tf.reduce_max(var))
            tf.summary.scalar("min", tf.reduce_min(var))
            tf.summary.histogram("histogram", var)

    def nn_layer(input_tensor, w0, layer_name, act=tf.nn.relu):
        with tf.name_scope(layer_name):
            with tf.name_scope("weights"):
                weights = tf.Variable(w0)
                variable_summaries(weights)
            with tf.name_scope("biases"):
                biases = tf.Variable(tf.constant(0.1, shape=[w0.shape[1]]))
                variable_summaries(biases)
            with tf.name_scope("Wx_plus_b"):
                preactivate = tf.matmul(input_tensor, weights) + biases
                tf.summary.histogram("pre_activations", preactivate)
            activations = act(preactivate, name="activation")
            tf.summary.histogram("activations", activations)
            return activations

    hidden1 = nn_layer(x, W1, "layer1")
    y = nn_layer(hidden1, W2, "layer2", act=tf.identity)
    with tf.name_scope("cross_entropy"):
        with tf.name_scope("total"):
            cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    tf.summary.scalar("cross_entropy", cross_entropy)
    with tf.name_scope("train"):
        train_step = tf.train.AdamOptimizer(0.001).minimize(cross_entropy)
    with tf.name_scope("accuracy"):
        with tf.name_scope("correct_prediction"):
            correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        with tf.name_scope("accuracy"):
            accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    tf.summary.scalar("accuracy", accuracy)

    merged = tf.summary.merge_all()
    sess = tf.Session()
    train_writer = tf.summary.FileWriter(log_dir + "/train", sess.graph)
    test_writer = tf.summary.FileWriter(log_dir + "/test")
    sess.run(tf.global_variables_initializer())
    for i in range(steps):
        if i % 3 == 0:
            summary, acc = sess.run([merged, accuracy], {x: IMAGES[:20], y_: LABELS[:20]})
            test_writer.add_summary(summary, i)
        else:
            batch = {x: IMAGES[20:], y_: LABELS[20:]}
            if i % 5 == 4:
                run_options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
                run_metadata = tf.RunMetadata()
                summary = sess.run(merged, batch, options=run_options, run_metadata=run_metadata)
                sess.run(train_step, batch)
                train_writer.add_run_metadata(run_metadata, f"step{i:03d}")
                train_writer.add_summary(summary, i)
            else:
                summary = sess.run(merged, batch)
                sess.run(train_step, batch)
                train_writer.add_summary(summary, i)
    train_writer.close()
    test_writer.close()
    sess.close()


def _read(log_dir, run):
    acc = EventAccumulator(os.path.join(log_dir, run), size_guidance={
        "images": 0, "histograms": 0, "scalars": 0})
    acc.Reload()
    return acc


def test_tutorial_logdirs_match_tensorflow(tf1, tmp_path):
    with tf1.Graph().as_default():
        tutorial(tf1, str(tmp_path / "tf"))
    with fl.Graph().as_default():
        tutorial(fl, str(tmp_path / "fl"))
    for run in ("train", "test"):
        want, got = _read(str(tmp_path / "tf"), run), _read(str(tmp_path / "fl"), run)
        wt, gt = want.Tags(), got.Tags()
        for kind in ("scalars", "histograms", "images", "run_metadata"):
            assert sorted(gt[kind]) == sorted(wt[kind]), kind
        assert gt["graph"] == wt["graph"]
        for tag in wt["scalars"]:
            w = [(e.step, e.value) for e in want.Scalars(tag)]
            g = [(e.step, e.value) for e in got.Scalars(tag)]
            assert [s for s, _ in g] == [s for s, _ in w]
            np.testing.assert_allclose([v for _, v in g], [v for _, v in w], rtol=2e-5, atol=1e-6)
        for tag in wt["histograms"]:
            for w, g in zip(want.Histograms(tag), got.Histograms(tag)):
                assert w.step == g.step and w.histogram_value.num == g.histogram_value.num
                np.testing.assert_allclose(g.histogram_value.sum, w.histogram_value.sum, rtol=1e-4, atol=1e-3)
        for tag in wt["images"]:
            assert [e.encoded_image_string for e in got.Images(tag)] == \
                [e.encoded_image_string for e in want.Images(tag)]
    assert "input_reshape/input/image/9" in gt["images"]
    # reduce_mean made "Mean" first, and names collide case-insensitively, as in TensorFlow
    assert "layer1/weights/summaries/mean_1" in _read(str(tmp_path / "fl"), "train").Tags()["scalars"]
