"""aymericdamien TensorFlow-Examples: convolutional_network_raw.py (conv2d/maxpool2d
helpers over tf.nn, a keep_prob placeholder for dropout, Adam, accuracy)."""
import numpy as np

tf.set_random_seed(1)
rng = np.random.RandomState(11)
batch_x_all = rng.rand(16, 784).astype(np.float32)
batch_y_all = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 16)]

learning_rate = 0.001
num_steps = 4
batch_size = 8
num_input = 784
num_classes = 10
dropout = 0.75

X = tf.placeholder(tf.float32, [None, num_input])
Y = tf.placeholder(tf.float32, [None, num_classes])
keep_prob = tf.placeholder(tf.float32)


def conv2d(x, W, b, strides=1):
    x = tf.nn.conv2d(x, W, strides=[1, strides, strides, 1], padding="SAME")
    x = tf.nn.bias_add(x, b)
    return tf.nn.relu(x)


def maxpool2d(x, k=2):
    return tf.nn.max_pool(x, ksize=[1, k, k, 1], strides=[1, k, k, 1], padding="SAME")


def conv_net(x, weights, biases, dropout):
    x = tf.reshape(x, shape=[-1, 28, 28, 1])
    conv1 = conv2d(x, weights["wc1"], biases["bc1"])
    conv1 = maxpool2d(conv1, k=2)
    conv2 = conv2d(conv1, weights["wc2"], biases["bc2"])
    conv2 = maxpool2d(conv2, k=2)
    fc1 = tf.reshape(conv2, [-1, weights["wd1"].get_shape().as_list()[0]])
    fc1 = tf.add(tf.matmul(fc1, weights["wd1"]), biases["bd1"])
    fc1 = tf.nn.relu(fc1)
    fc1 = tf.nn.dropout(fc1, dropout, seed=5)
    out = tf.add(tf.matmul(fc1, weights["out"]), biases["out"])
    return out


weights = {
    "wc1": tf.Variable(tf.random_normal([5, 5, 1, 4], stddev=0.1)),
    "wc2": tf.Variable(tf.random_normal([5, 5, 4, 8], stddev=0.1)),
    "wd1": tf.Variable(tf.random_normal([7 * 7 * 8, 32], stddev=0.1)),
    "out": tf.Variable(tf.random_normal([32, num_classes], stddev=0.1)),
}
biases = {
    "bc1": tf.Variable(tf.random_normal([4], stddev=0.1)),
    "bc2": tf.Variable(tf.random_normal([8], stddev=0.1)),
    "bd1": tf.Variable(tf.random_normal([32], stddev=0.1)),
    "out": tf.Variable(tf.random_normal([num_classes], stddev=0.1)),
}

logits = conv_net(X, weights, biases, keep_prob)
prediction = tf.nn.softmax(logits)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y))
optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session() as sess:
    sess.run(init)
    for step in range(1, num_steps + 1):
        sl = slice((step % 2) * batch_size, (step % 2 + 1) * batch_size)
        sess.run(train_op, feed_dict={X: batch_x_all[sl], Y: batch_y_all[sl], keep_prob: dropout})
        loss, acc = sess.run([loss_op, accuracy], feed_dict={X: batch_x_all[sl], Y: batch_y_all[sl], keep_prob: 1.0})
        results["log"].append((step, loss, acc))
    results["test_accuracy"] = sess.run(accuracy, feed_dict={X: batch_x_all, Y: batch_y_all, keep_prob: 1.0})
    results["shapes"] = [weights["wd1"].get_shape().as_list(), logits.get_shape().as_list()]
