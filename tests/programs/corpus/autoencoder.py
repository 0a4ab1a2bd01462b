"""aymericdamien TensorFlow-Examples: autoencoder.py (encoder/decoder of sigmoid
layers, weights in dicts, RMSProp, reconstruction loss)."""
import numpy as np

tf.set_random_seed(12)
rng = np.random.RandomState(12)
mnist = rng.rand(40, 100).astype(np.float32)

learning_rate = 0.01
num_steps = 5
batch_size = 20
num_hidden_1 = 32
num_hidden_2 = 8
num_input = 100

X = tf.placeholder("float", [None, num_input])
weights = {
    "encoder_h1": tf.Variable(tf.random_normal([num_input, num_hidden_1])),
    "encoder_h2": tf.Variable(tf.random_normal([num_hidden_1, num_hidden_2])),
    "decoder_h1": tf.Variable(tf.random_normal([num_hidden_2, num_hidden_1])),
    "decoder_h2": tf.Variable(tf.random_normal([num_hidden_1, num_input])),
}
biases = {
    "encoder_b1": tf.Variable(tf.random_normal([num_hidden_1])),
    "encoder_b2": tf.Variable(tf.random_normal([num_hidden_2])),
    "decoder_b1": tf.Variable(tf.random_normal([num_hidden_1])),
    "decoder_b2": tf.Variable(tf.random_normal([num_input])),
}


def encoder(x):
    layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["encoder_h1"]), biases["encoder_b1"]))
    layer_2 = tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["encoder_h2"]), biases["encoder_b2"]))
    return layer_2


def decoder(x):
    layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["decoder_h1"]), biases["decoder_b1"]))
    layer_2 = tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["decoder_h2"]), biases["decoder_b2"]))
    return layer_2


encoder_op = encoder(X)
decoder_op = decoder(encoder_op)
y_pred = decoder_op
y_true = X
loss = tf.reduce_mean(tf.pow(y_true - y_pred, 2))
optimizer = tf.train.RMSPropOptimizer(learning_rate).minimize(loss)
init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session() as sess:
    sess.run(init)
    for i in range(1, num_steps + 1):
        batch_x = mnist[(i % 2) * batch_size:(i % 2 + 1) * batch_size]
        _, l = sess.run([optimizer, loss], feed_dict={X: batch_x})
        results["log"].append("Step %i: Minibatch Loss: %f" % (i, l))
    results["codes"] = sess.run(encoder_op, feed_dict={X: mnist[:4]})
    results["reconstruction"] = sess.run(decoder_op, feed_dict={X: mnist[:2]})
