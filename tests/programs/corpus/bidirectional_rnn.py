"""aymericdamien TensorFlow-Examples: bidirectional_rnn.py (forward and backward
BasicLSTMCells through rnn.static_bidirectional_rnn, 2*num_hidden to logits)."""
import numpy as np

rnn = tf.contrib.rnn
tf.set_random_seed(8)
rng = np.random.RandomState(2)
data_x = rng.rand(8, 12 * 12).astype(np.float32)
data_y = np.eye(4, dtype=np.float32)[rng.randint(0, 4, 8)]

learning_rate = 0.01
training_steps = 3
num_input = 12
timesteps = 12
num_hidden = 8
num_classes = 4

X = tf.placeholder("float", [None, timesteps, num_input])
Y = tf.placeholder("float", [None, num_classes])
weights = {"out": tf.Variable(tf.random_normal([2 * num_hidden, num_classes]))}
biases = {"out": tf.Variable(tf.random_normal([num_classes]))}


def BiRNN(x, weights, biases):
    x = tf.unstack(x, timesteps, 1)
    lstm_fw_cell = rnn.BasicLSTMCell(num_hidden, forget_bias=1.0)
    lstm_bw_cell = rnn.BasicLSTMCell(num_hidden, forget_bias=1.0)
    try:
        outputs, _, _ = rnn.static_bidirectional_rnn(lstm_fw_cell, lstm_bw_cell, x, dtype=tf.float32)
    except Exception:  # Old TensorFlow version only returns outputs not states
        outputs = rnn.static_bidirectional_rnn(lstm_fw_cell, lstm_bw_cell, x, dtype=tf.float32)
    return tf.matmul(outputs[-1], weights["out"]) + biases["out"]


logits = BiRNN(X, weights, biases)
prediction = tf.nn.softmax(logits)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
optimizer = tf.train.GradientDescentOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))

results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    batch_x = data_x.reshape((8, timesteps, num_input))
    for step in range(1, training_steps + 1):
        sess.run(train_op, feed_dict={X: batch_x, Y: data_y})
        results["log"].append(sess.run([loss_op, accuracy], feed_dict={X: batch_x, Y: data_y}))
    results["names"] = [v.name for v in tf.trainable_variables()]
    results["fw_kernel"] = sess.run(tf.trainable_variables()[2])
