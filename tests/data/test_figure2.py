"""The paper's Figure 2 input pipeline on tf.data (notebooks/06-input-pipeline.ipynb):
CSV files -> lines without headers -> parsed rows -> features -> shuffle -> minibatches
-> SGD steps.  Seeded, it is deterministic, so flowlab must train to TensorFlow's
numbers step for step."""

from __future__ import annotations

import numpy as np


def _files(tmp_path):
    rng = np.random.default_rng(0)
    files = []
    for k in range(3):
        path = tmp_path / f"part{k}.csv"
        path.write_text("x,y\n" + "".join(f"{x:.5f},{2 * x + 1:.5f}\n"
                                          for x in rng.uniform(-1, 1, 50)))
        files.append(str(path))
    return files


def figure2(tf, files):
    g = tf.Graph()
    with g.as_default():
        def parse(line):
            x, y = tf.io.decode_csv(line, record_defaults=[[0.0], [0.0]])
            return tf.stack([x, x * x]), y

        ds = (tf.data.Dataset.from_tensor_slices(files)
              .flat_map(lambda f: tf.data.TextLineDataset(f).skip(1))   # reader steps
              .map(parse, num_parallel_calls=2)                          # preprocessing
              .shuffle(200, seed=2)                                      # shuffling queue
              .repeat(8).batch(10).prefetch(2))                          # minibatches
        bx, by = tf.data.make_one_shot_iterator(ds).get_next()
        w = tf.Variable(tf.zeros([2]), name="w")
        b = tf.Variable(0.0, name="b")
        err = tf.reduce_sum(bx * w, axis=1) + b - by
        n = tf.cast(tf.shape(err)[0], tf.float32)
        train = tf.group(
            tf.assign_sub(w, 0.3 * tf.reduce_sum(bx * tf.expand_dims(err, 1), axis=0) / n),
            tf.assign_sub(b, 0.3 * tf.reduce_sum(err) / n))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            steps = 0
            trace = []
            while True:
                try:
                    sess.run(train)
                except tf.errors.OutOfRangeError:
                    break
                steps += 1
                if steps % 20 == 0:
                    trace.append(sess.run(b))
            return steps, sess.run(w), sess.run(b), trace


def test_figure2_on_tf_data_trains_as_tensorflow(tf1, tmp_path):
    files = _files(tmp_path)
    steps, w, b, trace = figure2(__import__("flowlab"), files)
    t_steps, t_w, t_b, t_trace = figure2(tf1, files)
    assert steps == t_steps == 120  # 3 files x 50 rows x 8 epochs / 10
    np.testing.assert_allclose(w, t_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, t_b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trace, t_trace, rtol=1e-5, atol=1e-6)
    assert abs(b - 1.0) < 0.05
