"""The TF 1.x tutorial mnist_deep.py (Deep MNIST for experts): deepnn with name scopes
reshape/conv1/pool1/conv2/pool2/fc1/dropout/fc2, weight_variable (truncated_normal 0.1)
and bias_variable (0.1), conv2d/max_pool_2x2 helpers, softmax_cross_entropy_with_logits
under a 'loss' scope, Adam 1e-4 under 'adam_optimizer', accuracy under 'accuracy', the
graph written to a temp dir by a FileWriter, accuracy.eval(feed_dict=...) and
train_step.run(feed_dict=...) inside `with tf.Session()` (shrunk to 8x8 inputs)."""
import tempfile

import numpy as np

rng = np.random.RandomState(50)
images = rng.rand(20, 64).astype(np.float32)
labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 20)]


def deepnn(x):
    with tf.name_scope("reshape"):
        x_image = tf.reshape(x, [-1, 8, 8, 1])
    with tf.name_scope("conv1"):
        W_conv1 = weight_variable([3, 3, 1, 4])
        b_conv1 = bias_variable([4])
        h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1)
    with tf.name_scope("pool1"):
        h_pool1 = max_pool_2x2(h_conv1)
    with tf.name_scope("conv2"):
        W_conv2 = weight_variable([3, 3, 4, 8])
        b_conv2 = bias_variable([8])
        h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2)
    with tf.name_scope("pool2"):
        h_pool2 = max_pool_2x2(h_conv2)
    with tf.name_scope("fc1"):
        W_fc1 = weight_variable([2 * 2 * 8, 32])
        b_fc1 = bias_variable([32])
        h_pool2_flat = tf.reshape(h_pool2, [-1, 2 * 2 * 8])
        h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)
    with tf.name_scope("dropout"):
        keep_prob = tf.placeholder(tf.float32)
        h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob, seed=11)
    with tf.name_scope("fc2"):
        W_fc2 = weight_variable([32, 10])
        b_fc2 = bias_variable([10])
        y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
    return y_conv, keep_prob


def conv2d(x, W):
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")


def weight_variable(shape):
    initial = tf.truncated_normal(shape, stddev=0.1)
    return tf.Variable(initial)


def bias_variable(shape):
    initial = tf.constant(0.1, shape=shape)
    return tf.Variable(initial)


tf.set_random_seed(77)
x = tf.placeholder(tf.float32, [None, 64])
y_ = tf.placeholder(tf.float32, [None, 10])
y_conv, keep_prob = deepnn(x)
with tf.name_scope("loss"):
    cross_entropy = tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv)
cross_entropy = tf.reduce_mean(cross_entropy)
with tf.name_scope("adam_optimizer"):
    train_step = tf.train.AdamOptimizer(1e-3).minimize(cross_entropy)
with tf.name_scope("accuracy"):
    correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
    correct_prediction = tf.cast(correct_prediction, tf.float32)
accuracy = tf.reduce_mean(correct_prediction)

graph_location = tempfile.mkdtemp()
train_writer = tf.summary.FileWriter(graph_location)
train_writer.add_graph(tf.get_default_graph())
train_writer.close()

results = {"log": [], "logdir": graph_location}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(4):
        batch = (images[(i % 2) * 10:(i % 2 + 1) * 10], labels[(i % 2) * 10:(i % 2 + 1) * 10])
        train_accuracy = accuracy.eval(feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0})
        results["log"].append("step %d, training accuracy %g" % (i, train_accuracy))
        train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})
    results["test"] = "test accuracy %g" % accuracy.eval(feed_dict={x: images, y_: labels, keep_prob: 1.0})
    results["loss"] = cross_entropy.eval(feed_dict={x: images, y_: labels, keep_prob: 1.0})
