"""The TF 1.x tutorial tensorflow/examples/tutorials/mnist/fully_connected_feed.py with
mnist.py's inference/loss/training/evaluation inlined: argparse FLAGS, tf.app.run,
tf.gfile (Exists, DeleteRecursively, MakeDirs), placeholder_inputs/fill_feed_dict,
hidden layers under name scopes with truncated_normal weights, a scalar summary merged
and written by a FileWriter, a global step, Saver checkpoints, do_eval with in_top_k.
Run in a subprocess (tf.app.run exits)."""
import argparse
import math
import os
import sys
import tempfile

import numpy as np

NUM_CLASSES = 10
IMAGE_SIZE = 8
IMAGE_PIXELS = IMAGE_SIZE * IMAGE_SIZE
rng = np.random.RandomState(123)
TRAIN_X = rng.rand(200, IMAGE_PIXELS).astype(np.float32)
TRAIN_Y = rng.randint(0, NUM_CLASSES, 200).astype(np.int64)
results = {"log": [], "evals": []}


class DataSet(object):
    def __init__(self, images, labels):
        self._images, self._labels, self._index = images, labels, 0
        self.num_examples = len(images)

    def next_batch(self, batch_size, fake_data=False):
        start = self._index
        self._index = (self._index + batch_size) % self.num_examples
        return self._images[start:start + batch_size], self._labels[start:start + batch_size]


def inference(images, hidden1_units, hidden2_units):
    with tf.name_scope("hidden1"):
        weights = tf.Variable(tf.truncated_normal([IMAGE_PIXELS, hidden1_units],
                                                  stddev=1.0 / math.sqrt(float(IMAGE_PIXELS))), name="weights")
        biases = tf.Variable(tf.zeros([hidden1_units]), name="biases")
        hidden1 = tf.nn.relu(tf.matmul(images, weights) + biases)
    with tf.name_scope("hidden2"):
        weights = tf.Variable(tf.truncated_normal([hidden1_units, hidden2_units],
                                                  stddev=1.0 / math.sqrt(float(hidden1_units))), name="weights")
        biases = tf.Variable(tf.zeros([hidden2_units]), name="biases")
        hidden2 = tf.nn.relu(tf.matmul(hidden1, weights) + biases)
    with tf.name_scope("softmax_linear"):
        weights = tf.Variable(tf.truncated_normal([hidden2_units, NUM_CLASSES],
                                                  stddev=1.0 / math.sqrt(float(hidden2_units))), name="weights")
        biases = tf.Variable(tf.zeros([NUM_CLASSES]), name="biases")
        logits = tf.matmul(hidden2, weights) + biases
    return logits


def loss(logits, labels):
    labels = tf.to_int64(labels)
    return tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)


def training(loss, learning_rate):
    tf.summary.scalar("loss", loss)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    global_step = tf.Variable(0, name="global_step", trainable=False)
    train_op = optimizer.minimize(loss, global_step=global_step)
    return train_op


def evaluation(logits, labels):
    correct = tf.nn.in_top_k(logits, labels, 1)
    return tf.reduce_sum(tf.cast(correct, tf.int32))


def placeholder_inputs(batch_size):
    images_placeholder = tf.placeholder(tf.float32, shape=(batch_size, IMAGE_PIXELS))
    labels_placeholder = tf.placeholder(tf.int32, shape=(batch_size))
    return images_placeholder, labels_placeholder


def fill_feed_dict(data_set, images_pl, labels_pl):
    images_feed, labels_feed = data_set.next_batch(FLAGS.batch_size, FLAGS.fake_data)
    return {images_pl: images_feed, labels_pl: labels_feed}


def do_eval(sess, eval_correct, images_placeholder, labels_placeholder, data_set):
    true_count = 0
    steps_per_epoch = data_set.num_examples // FLAGS.batch_size
    num_examples = steps_per_epoch * FLAGS.batch_size
    for step in range(steps_per_epoch):
        feed_dict = fill_feed_dict(data_set, images_placeholder, labels_placeholder)
        true_count += sess.run(eval_correct, feed_dict=feed_dict)
    precision = float(true_count) / num_examples
    results["evals"].append("Num examples: %d  Num correct: %d  Precision @ 1: %0.04f"
                            % (num_examples, true_count, precision))


def run_training():
    data_sets = {"train": DataSet(TRAIN_X[:150], TRAIN_Y[:150]), "validation": DataSet(TRAIN_X[150:], TRAIN_Y[150:])}
    with tf.Graph().as_default():
        tf.set_random_seed(66)
        images_placeholder, labels_placeholder = placeholder_inputs(FLAGS.batch_size)
        logits = inference(images_placeholder, FLAGS.hidden1, FLAGS.hidden2)
        loss_op = loss(logits, labels_placeholder)
        train_op = training(loss_op, FLAGS.learning_rate)
        eval_correct = evaluation(logits, labels_placeholder)
        summary = tf.summary.merge_all()
        init = tf.global_variables_initializer()
        saver = tf.train.Saver()
        sess = tf.Session()
        summary_writer = tf.summary.FileWriter(FLAGS.log_dir, sess.graph)
        sess.run(init)
        for step in range(FLAGS.max_steps):
            feed_dict = fill_feed_dict(data_sets["train"], images_placeholder, labels_placeholder)
            _, loss_value = sess.run([train_op, loss_op], feed_dict=feed_dict)
            if step % 2 == 0:
                results["log"].append("Step %d: loss = %.2f" % (step, loss_value))
                summary_str = sess.run(summary, feed_dict=feed_dict)
                summary_writer.add_summary(summary_str, step)
                summary_writer.flush()
            if (step + 1) % 3 == 0 or (step + 1) == FLAGS.max_steps:
                checkpoint_file = os.path.join(FLAGS.log_dir, "model.ckpt")
                saver.save(sess, checkpoint_file, global_step=step)
                do_eval(sess, eval_correct, images_placeholder, labels_placeholder, data_sets["train"])
                do_eval(sess, eval_correct, images_placeholder, labels_placeholder, data_sets["validation"])
        summary_writer.close()
        results["checkpoints"] = [os.path.basename(p) for p in saver.last_checkpoints]
        results["files"] = sorted(f for f in tf.gfile.ListDirectory(FLAGS.log_dir) if not f.startswith("events"))
        results["logdir"] = FLAGS.log_dir
        sess.close()


def main(_):
    if tf.gfile.Exists(FLAGS.log_dir):
        tf.gfile.DeleteRecursively(FLAGS.log_dir)
    tf.gfile.MakeDirs(FLAGS.log_dir)
    run_training()


parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, default=0.01, help="Initial learning rate.")
parser.add_argument("--max_steps", type=int, default=6, help="Number of steps to run trainer.")
parser.add_argument("--hidden1", type=int, default=16, help="Number of units in hidden layer 1.")
parser.add_argument("--hidden2", type=int, default=8, help="Number of units in hidden layer 2.")
parser.add_argument("--batch_size", type=int, default=25, help="Batch size.")
parser.add_argument("--log_dir", type=str, default=os.path.join(tempfile.mkdtemp(), "fully_connected_feed"),
                    help="Directory to put the log data.")
parser.add_argument("--fake_data", default=False, action="store_true", help="If true, uses fake data.")
FLAGS, unparsed = parser.parse_known_args()
tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
