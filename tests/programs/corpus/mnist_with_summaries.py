"""The TF 1.x tutorial mnist_with_summaries.py: tf.app.flags, variable_summaries
(mean, stddev, max, min, histogram) under name scopes, nn_layer with
weight/bias/preactivation summaries, an image summary of the input, dropout with a
fed keep_prob, merge_all, train and test FileWriters (the train one given the
graph), RunOptions/RunMetadata on one step, tf.app.run.  One change from the tutorial: the
train summaries are fetched in a run after the train step, not in the same run -- there
TensorFlow reads each weight before or after its update as its threads happen to go,
so the weight summaries differ from run to run of TensorFlow itself.  Run in a subprocess; the
event files are compared after reading them back with TensorBoard's reader."""
import tempfile

import numpy as np

flags = tf.app.flags
FLAGS = flags.FLAGS
flags.DEFINE_integer("max_steps", 6, "Number of steps to run trainer.")
flags.DEFINE_float("learning_rate", 0.001, "Initial learning rate")
flags.DEFINE_float("dropout", 0.9, "Keep probability for training dropout.")
flags.DEFINE_string("summaries_dir", tempfile.mkdtemp(), "Summaries log directory")
flags.DEFINE_boolean("fake_data", False, "If true, uses fake data for unit testing.")

rng = np.random.RandomState(77)
TRAIN_X = rng.rand(60, 64).astype(np.float32)
TRAIN_Y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 60)]
results = {"acc": []}


def train():
    sess = tf.InteractiveSession()
    tf.set_random_seed(99)
    with tf.name_scope("input"):
        x = tf.placeholder(tf.float32, [None, 64], name="x-input")
        y_ = tf.placeholder(tf.float32, [None, 10], name="y-input")
    with tf.name_scope("input_reshape"):
        image_shaped_input = tf.reshape(x, [-1, 8, 8, 1])
        tf.summary.image("input", image_shaped_input, 2)

    def weight_variable(shape):
        initial = tf.truncated_normal(shape, stddev=0.1)
        return tf.Variable(initial)

    def bias_variable(shape):
        initial = tf.constant(0.1, shape=shape)
        return tf.Variable(initial)

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

    def nn_layer(input_tensor, input_dim, output_dim, layer_name, act=tf.nn.relu):
        with tf.name_scope(layer_name):
            with tf.name_scope("weights"):
                weights = weight_variable([input_dim, output_dim])
                variable_summaries(weights)
            with tf.name_scope("biases"):
                biases = bias_variable([output_dim])
                variable_summaries(biases)
            with tf.name_scope("Wx_plus_b"):
                preactivate = tf.matmul(input_tensor, weights) + biases
                tf.summary.histogram("pre_activations", preactivate)
            activations = act(preactivate, name="activation")
            tf.summary.histogram("activations", activations)
            return activations

    hidden1 = nn_layer(x, 64, 32, "layer1")
    with tf.name_scope("dropout"):
        keep_prob = tf.placeholder(tf.float32)
        tf.summary.scalar("dropout_keep_probability", keep_prob)
        dropped = tf.nn.dropout(hidden1, keep_prob, seed=3)
    y = nn_layer(dropped, 32, 10, "layer2", act=tf.identity)
    with tf.name_scope("cross_entropy"):
        with tf.name_scope("total"):
            cross_entropy = tf.losses.softmax_cross_entropy(onehot_labels=y_, logits=y)
    tf.summary.scalar("cross_entropy", cross_entropy)
    with tf.name_scope("train"):
        train_step = tf.train.AdamOptimizer(FLAGS.learning_rate).minimize(cross_entropy)
    with tf.name_scope("accuracy"):
        with tf.name_scope("correct_prediction"):
            correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        with tf.name_scope("accuracy"):
            accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    tf.summary.scalar("accuracy", accuracy)

    merged = tf.summary.merge_all()
    train_writer = tf.summary.FileWriter(FLAGS.summaries_dir + "/train", sess.graph)
    test_writer = tf.summary.FileWriter(FLAGS.summaries_dir + "/test")
    tf.global_variables_initializer().run()

    def feed_dict(train):
        if train or FLAGS.fake_data:
            xs, ys, k = TRAIN_X[:40], TRAIN_Y[:40], FLAGS.dropout
        else:
            xs, ys, k = TRAIN_X[40:], TRAIN_Y[40:], 1.0
        return {x: xs, y_: ys, keep_prob: k}

    for i in range(FLAGS.max_steps):
        if i % 3 == 0:
            summary, acc = sess.run([merged, accuracy], feed_dict=feed_dict(False))
            test_writer.add_summary(summary, i)
            results["acc"].append("Accuracy at step %s: %s" % (i, acc))
        elif i == 4:
            run_options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            run_metadata = tf.RunMetadata()
            sess.run(train_step, feed_dict=feed_dict(True), options=run_options, run_metadata=run_metadata)
            summary = sess.run(merged, feed_dict=feed_dict(True))
            train_writer.add_run_metadata(run_metadata, "step%03d" % i)
            train_writer.add_summary(summary, i)
        else:
            sess.run(train_step, feed_dict=feed_dict(True))
            summary = sess.run(merged, feed_dict=feed_dict(True))
            train_writer.add_summary(summary, i)
    train_writer.close()
    test_writer.close()
    results["logdir_train"] = FLAGS.summaries_dir + "/train"
    results["logdir_test"] = FLAGS.summaries_dir + "/test"
    results["flags"] = (FLAGS.max_steps, FLAGS.learning_rate, FLAGS.dropout, FLAGS.fake_data)
    sess.close()


def main(_):
    if tf.gfile.Exists(FLAGS.summaries_dir):
        tf.gfile.DeleteRecursively(FLAGS.summaries_dir)
    tf.gfile.MakeDirs(FLAGS.summaries_dir)
    train()


tf.app.run(main=main)
