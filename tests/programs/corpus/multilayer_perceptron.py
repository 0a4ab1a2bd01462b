"""aymericdamien TensorFlow-Examples: multilayer_perceptron.py (weights and biases in
dicts of tf.Variable(tf.random_normal(...)), softmax_cross_entropy_with_logits, Adam)."""
import numpy as np

tf.set_random_seed(42)
rng = np.random.RandomState(3)
mnist_x = rng.rand(96, 784).astype(np.float32)
mnist_y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 96)]

learning_rate = 0.001
training_epochs = 2
batch_size = 32
n_hidden_1 = 32
n_hidden_2 = 16
n_input = 784
n_classes = 10

X = tf.placeholder("float", [None, n_input])
Y = tf.placeholder("float", [None, n_classes])
weights = {
    "h1": tf.Variable(tf.random_normal([n_input, n_hidden_1])),
    "h2": tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2])),
    "out": tf.Variable(tf.random_normal([n_hidden_2, n_classes])),
}
biases = {
    "b1": tf.Variable(tf.random_normal([n_hidden_1])),
    "b2": tf.Variable(tf.random_normal([n_hidden_2])),
    "out": tf.Variable(tf.random_normal([n_classes])),
}


def multilayer_perceptron(x):
    layer_1 = tf.add(tf.matmul(x, weights["h1"]), biases["b1"])
    layer_2 = tf.add(tf.matmul(layer_1, weights["h2"]), biases["b2"])
    out_layer = tf.matmul(layer_2, weights["out"]) + biases["out"]
    return out_layer


logits = multilayer_perceptron(X)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
init = tf.global_variables_initializer()

results = {"costs": []}
with tf.Session() as sess:
    sess.run(init)
    for epoch in range(training_epochs):
        avg_cost = 0.0
        total_batch = len(mnist_x) // batch_size
        for i in range(total_batch):
            sl = slice(i * batch_size, (i + 1) * batch_size)
            _, c = sess.run([train_op, loss_op], feed_dict={X: mnist_x[sl], Y: mnist_y[sl]})
            avg_cost += c / total_batch
        results["costs"].append(avg_cost)
    pred = tf.nn.softmax(logits)
    correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
    results["accuracy"] = accuracy.eval({X: mnist_x, Y: mnist_y})
    results["out_bias"] = sess.run(biases["out"])
    results["names"] = sorted(v.name for v in tf.trainable_variables())
    results["slots"] = sorted(optimizer.get_slot_names())
