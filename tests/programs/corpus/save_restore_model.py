"""aymericdamien TensorFlow-Examples: save_restore_model.py (an MLP trained, saved with
tf.train.Saver, restored in a second session and trained further), plus the
checkpoint bookkeeping the tutorials print (latest_checkpoint, list_variables)."""
import os
import tempfile

import numpy as np

tf.set_random_seed(2)
rng = np.random.RandomState(2)
data_x = rng.rand(40, 20).astype(np.float32)
data_y = np.eye(5, dtype=np.float32)[rng.randint(0, 5, 40)]
model_dir = tempfile.mkdtemp()
model_path = os.path.join(model_dir, "model.ckpt")

learning_rate = 0.01
batch_size = 20
n_hidden_1 = 16
n_input = 20
n_classes = 5

x = tf.placeholder("float", [None, n_input])
y = tf.placeholder("float", [None, n_classes])
weights = {
    "h1": tf.Variable(tf.random_normal([n_input, n_hidden_1]), name="h1"),
    "out": tf.Variable(tf.random_normal([n_hidden_1, n_classes]), name="w_out"),
}
biases = {
    "b1": tf.Variable(tf.random_normal([n_hidden_1]), name="b1"),
    "out": tf.Variable(tf.random_normal([n_classes]), name="b_out"),
}


def multilayer_perceptron(x, weights, biases):
    layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["h1"]), biases["b1"]))
    return tf.matmul(layer_1, weights["out"]) + biases["out"]


pred = multilayer_perceptron(x, weights, biases)
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(cost)
init = tf.global_variables_initializer()
saver = tf.train.Saver()


def train_epochs(sess, n):
    costs = []
    for epoch in range(n):
        avg_cost = 0.
        for i in range(2):
            _, c = sess.run([optimizer, cost], feed_dict={x: data_x[i * 20:(i + 1) * 20],
                                                          y: data_y[i * 20:(i + 1) * 20]})
            avg_cost += c / 2
        costs.append(avg_cost)
    return costs


results = {}
with tf.Session() as sess:
    sess.run(init)
    results["first"] = train_epochs(sess, 3)
    save_path = saver.save(sess, model_path)
    results["save_path_ok"] = save_path == model_path
    results["before"] = sess.run(weights["out"])

with tf.Session() as sess:
    sess.run(init)
    results["fresh_differs"] = not np.allclose(sess.run(weights["out"]), results["before"])
    saver.restore(sess, model_path)
    results["restored"] = sess.run(weights["out"])
    results["second"] = train_epochs(sess, 2)
    correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
    results["accuracy"] = accuracy.eval({x: data_x, y: data_y})

results["latest"] = os.path.basename(tf.train.latest_checkpoint(model_dir))
results["listed"] = sorted((n, s) for n, s in tf.train.list_variables(model_dir))
reader = tf.train.NewCheckpointReader(model_path)
results["reader_h1"] = reader.get_tensor("h1")
results["exists"] = tf.gfile.Exists(model_path + ".index")
