"""Input pipelines: producers, batching, and the paper's Figure 2 pipeline (reader,
preprocessing, training and checkpointing steps running concurrently on one graph)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import data_flow_ops, io_ops


def drain(tf, build, max_steps=200):
    """Build a pipeline in a fresh graph, start its queue runners and fetch until
    OutOfRange; returns the fetched values."""
    g = tf.Graph()
    with g.as_default():
        fetch = build(tf)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            out = []
            oor = errors.OutOfRangeError if tf is fl else tf.errors.OutOfRangeError
            try:
                for _ in range(max_steps):
                    out.append(sess.run(fetch))
            except oor:
                pass
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=10)
    return out


def assert_same_drain(tf1, build):
    expected = drain(tf1, build)
    actual = drain(fl, build)
    assert len(actual) == len(expected)
    for e, a in zip(expected, actual):
        for x, y in zip(e if isinstance(e, list) else [e], a if isinstance(a, list) else [a]):
            assert np.asarray(x).dtype == np.asarray(y).dtype
            np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    return actual


def test_batch_in_order_with_smaller_final_batch(tf1):
    def build(tf):
        x = tf.train.range_input_producer(10, num_epochs=2, shuffle=False).dequeue()
        return tf.train.batch([x, tf.cast(x, tf.float32) * 2.0], 4, allow_smaller_final_batch=True)

    out = assert_same_drain(tf1, build)
    assert [len(b[0]) for b in out] == [4, 4, 4, 4, 4]


def test_batch_drops_final_partial_batch(tf1):
    def build(tf):
        x = tf.train.range_input_producer(7, num_epochs=1, shuffle=False).dequeue()
        return tf.train.batch([x], 3)

    out = assert_same_drain(tf1, build)
    assert len(out) == 2


def test_batch_enqueue_many_and_dict(tf1):
    def build(tf):
        x = tf.train.limit_epochs(tf.constant([[1, 2], [3, 4], [5, 6]]), num_epochs=2)
        d = tf.train.batch({"a": x, "b": x * 10}, 2, enqueue_many=True, allow_smaller_final_batch=True)
        return [d["a"], d["b"]]

    assert_same_drain(tf1, build)


def test_batch_dynamic_pad(tf1):
    def build(tf):
        n = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
        return tf.train.batch([tf.range(n)], 2, dynamic_pad=True)

    out = assert_same_drain(tf1, build)
    np.testing.assert_array_equal(out[1], [[0, 1, 0], [0, 1, 2]])


def test_string_input_producer_epochs(tf1):
    def build(tf):
        q = tf.train.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False)
        return q.dequeue()

    out = assert_same_drain(tf1, build)
    assert out == [b"a", b"b", b"c"] * 2


def test_slice_input_producer(tf1):
    def build(tf):
        x, y = tf.train.slice_input_producer([tf.constant([1, 2, 3]), tf.constant([[1.0], [2.0], [3.0]])],
                                             num_epochs=1, shuffle=False)
        return [x, y]

    assert_same_drain(tf1, build)


def test_graph_names_and_shapes(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            q = mod.train.string_input_producer(["a"])
            b = mod.train.batch([q.dequeue()], 5)
            s = mod.train.shuffle_batch([mod.constant([1.0, 2.0])], 3, capacity=10, min_after_dequeue=2)
            assert q.queue_ref.op.name == "input_producer"
            assert (b.op.name, b.op.type, b.shape.as_list()) == ("batch", "QueueDequeueManyV2", [5])
            assert (s.op.name, s.shape.as_list()) == ("shuffle_batch", [3, 2])
            assert s.op.inputs[0].op.type == "RandomShuffleQueueV2"
            qrs = mod.get_collection(mod.GraphKeys.QUEUE_RUNNERS)
            assert len(qrs) == 3


def test_shuffle_batch_mixes_every_element():
    def build(tf):
        x = tf.train.range_input_producer(20, num_epochs=1, shuffle=False).dequeue()
        return tf.train.shuffle_batch([x], 5, capacity=20, min_after_dequeue=5, seed=3,
                                      allow_smaller_final_batch=True)

    out = drain(fl, build)
    flat = [int(v) for b in out for v in b]
    assert sorted(flat) == list(range(20))
    assert flat != list(range(20))


def test_shuffled_producer_covers_each_epoch():
    def build(tf):
        return tf.train.range_input_producer(6, num_epochs=3, seed=1).dequeue()

    out = [int(v) for v in drain(fl, build)]
    assert [sorted(out[i:i + 6]) for i in (0, 6, 12)] == [list(range(6))] * 3


def test_limit_epochs_raises_after_limit():
    x = fl.train.limit_epochs(fl.constant(1), num_epochs=2)
    with fl.Session() as sess:
        sess.run(fl.local_variables_initializer())
        assert sess.run(x) == 1 and sess.run(x) == 1
        with pytest.raises(errors.OutOfRangeError):
            sess.run(x)
    with pytest.raises(ValueError):
        fl.train.limit_epochs(fl.constant(1), num_epochs=0)


def test_batch_build_errors():
    with pytest.raises(ValueError, match="fully defined"):
        fl.train.batch([fl.placeholder(fl.float32, [None])], 2)
    with pytest.raises(ValueError, match="fully defined"):
        fl.train.input_producer(fl.placeholder(fl.float32, [None, None]))


# --- Figure 2 ------------------------------------------------------------------------
def test_figure2_pipeline(tmp_path):
    """Reader steps -> preprocessing steps -> a shuffle queue -> training steps, with a
    checkpointing thread, all running concurrently on one graph and one session.  The
    model is y = 2x + 1 by SGD on the CSV rows."""
    rng = np.random.default_rng(0)
    files = []
    for k in range(3):
        xs = rng.uniform(-1, 1, 40)
        p = tmp_path / f"part{k}.csv"
        p.write_text("x,y\n" + "".join(f"{x:.6f},{2 * x + 1:.6f}\n" for x in xs))
        files.append(str(p))

    # Reader: file names -> lines -> parsed rows (its own queue runner, 2 threads).
    names = fl.train.string_input_producer(files, num_epochs=10, seed=1)
    _, line = io_ops.TextLineReader(skip_header_lines=1).read(names)
    x, y = io_ops.decode_csv(line, [[0.0], [0.0]])
    raw = data_flow_ops.FIFOQueue(64, [fl.float32, fl.float32], shapes=[[], []], name="raw")
    fl.train.add_queue_runner(fl.train.QueueRunner(raw, [raw.enqueue([x, y])] * 2))
    # Preprocessing: features [x, x^2] into a shuffling queue (2 threads).
    rx, ry = raw.dequeue()
    feats = fl.stack([rx, rx * rx])
    examples = data_flow_ops.RandomShuffleQueue(128, 16, [fl.float32, fl.float32], shapes=[[2], []],
                                                seed=2, name="examples")
    fl.train.add_queue_runner(fl.train.QueueRunner(
        examples, [examples.enqueue([feats, ry])] * 2,
        queue_closed_exception_types=(errors.OutOfRangeError,)))
    # Training: minibatches of 8, hand-written SGD on a linear model.
    bx, by = examples.dequeue_up_to(8)
    w = fl.Variable(fl.zeros([2]), name="w")
    b = fl.Variable(0.0, name="b")
    step = fl.Variable(0, dtype=fl.int64, trainable=False, name="global_step")
    err = fl.reduce_sum(bx * w, axis=1) + b - by
    n = fl.cast(fl.shape(err)[0], fl.float32)
    gw = fl.reduce_sum(bx * fl.expand_dims(err, 1), axis=0) / n
    gb = fl.reduce_sum(err) / n
    train = fl.group(fl.assign_sub(w, 0.3 * gw, use_locking=True),
                     fl.assign_sub(b, 0.3 * gb, use_locking=True),
                     fl.assign_add(step, 1, use_locking=True))
    saver_cls = getattr(fl.train, "Saver", None)
    saver = saver_cls([w, b, step]) if saver_cls is not None else None

    with fl.Session() as sess:
        sess.run([fl.global_variables_initializer(), fl.local_variables_initializer()])
        coord = fl.train.Coordinator()
        threads = fl.train.start_queue_runners(sess, coord)
        checkpoints = []

        def checkpointer():
            # Checkpointing steps share the variables with the training steps.
            with coord.stop_on_exception():
                while not coord.wait_for_stop(0.005):
                    if saver is not None:
                        checkpoints.append(saver.save(sess, str(tmp_path / "ckpt" / "model"),
                                                      global_step=int(sess.run(step))))
                    else:
                        checkpoints.append(sess.run([w, b, step]))

        ck = threading.Thread(target=checkpointer)
        ck.start()
        coord.register_thread(ck)
        trained = 0
        try:
            while not coord.should_stop():
                sess.run(train)
                trained += 1
        except errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads + [ck], stop_grace_period_secs=10)
        wv, bv, sv = sess.run([w, b, step])
    assert trained == sv == 150  # 3 files x 40 rows x 10 epochs / 8 per batch
    np.testing.assert_allclose(wv, [2.0, 0.0], atol=0.05)
    np.testing.assert_allclose(bv, 1.0, atol=0.05)
    assert checkpoints
