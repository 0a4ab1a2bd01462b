"""TF 1.x programs written with tf.contrib names: tf.contrib.layers.xavier_initializer
and l2_regularizer on get_variable, tf.contrib.layers.apply_regularization over the
weights, tf.contrib.rnn.LSTMCell/GRUCell/MultiRNNCell/DropoutWrapper through
tf.nn.dynamic_rnn, and the regularization losses collected into the objective."""
import numpy as np

tf.set_random_seed(19)
rng = np.random.RandomState(19)
seq = rng.randn(4, 5, 3).astype(np.float32)
target = rng.randn(4, 2).astype(np.float32)

regularizer = tf.contrib.layers.l2_regularizer(scale=0.01)
with tf.variable_scope("mlp", initializer=tf.contrib.layers.xavier_initializer(seed=2)):
    w1 = tf.get_variable("w1", [6, 8], regularizer=regularizer)
    b1 = tf.get_variable("b1", [8], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("w2", [8, 2], regularizer=regularizer)

inputs = tf.placeholder(tf.float32, [None, 5, 3])
cells = [tf.contrib.rnn.LSTMCell(6, initializer=tf.contrib.layers.xavier_initializer(seed=4)),
         tf.contrib.rnn.DropoutWrapper(tf.contrib.rnn.GRUCell(6), output_keep_prob=1.0)]
stack = tf.contrib.rnn.MultiRNNCell(cells)
outputs, state = tf.nn.dynamic_rnn(stack, inputs, dtype=tf.float32, scope="rnn")
last = outputs[:, -1, :]
hidden = tf.nn.relu(tf.matmul(last, w1) + b1)
pred = tf.matmul(hidden, w2)
mse = tf.reduce_mean(tf.square(pred - target))
reg_losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
reg_term = tf.contrib.layers.apply_regularization(tf.contrib.layers.l2_regularizer(0.001), [w1, w2])
loss = mse + tf.add_n(reg_losses) + reg_term
train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        _, l, r = sess.run([train_op, loss, reg_term], {inputs: seq})
        results["log"].append((l, r))
    results["state"] = sess.run(state, {inputs: seq})
    results["names"] = [v.name for v in tf.trainable_variables()]
    results["reg_names"] = len(reg_losses)
