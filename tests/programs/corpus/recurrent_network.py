"""aymericdamien TensorFlow-Examples: recurrent_network.py (MNIST rows as a sequence,
tf.unstack, tf.contrib.rnn.BasicLSTMCell + static_rnn, last output to logits)."""
import numpy as np

rnn = tf.contrib.rnn
tf.set_random_seed(3)
rng = np.random.RandomState(5)
data_x = rng.rand(12, 28 * 28).astype(np.float32)
data_y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 12)]

learning_rate = 0.001
training_steps = 3
batch_size = 6
num_input = 28
timesteps = 28
num_hidden = 16
num_classes = 10

X = tf.placeholder("float", [None, timesteps, num_input])
Y = tf.placeholder("float", [None, num_classes])
weights = {"out": tf.Variable(tf.random_normal([num_hidden, num_classes]))}
biases = {"out": tf.Variable(tf.random_normal([num_classes]))}


def RNN(x, weights, biases):
    x = tf.unstack(x, timesteps, 1)
    lstm_cell = rnn.BasicLSTMCell(num_hidden, forget_bias=1.0)
    outputs, states = rnn.static_rnn(lstm_cell, x, dtype=tf.float32)
    return tf.matmul(outputs[-1], weights["out"]) + biases["out"]


logits = RNN(X, weights, biases)
prediction = tf.nn.softmax(logits)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
optimizer = tf.train.GradientDescentOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session() as sess:
    sess.run(init)
    for step in range(1, training_steps + 1):
        sl = slice((step % 2) * batch_size, (step % 2 + 1) * batch_size)
        batch_x = data_x[sl].reshape((batch_size, timesteps, num_input))
        sess.run(train_op, feed_dict={X: batch_x, Y: data_y[sl]})
        loss, acc = sess.run([loss_op, accuracy], feed_dict={X: batch_x, Y: data_y[sl]})
        results["log"].append("Step " + str(step) + ", Minibatch Loss= " + "{:.4f}".format(loss))
    results["variables"] = [(v.name, v.get_shape().as_list()) for v in tf.global_variables()]
    results["kernel"] = sess.run(tf.trainable_variables()[-2])
