"""aymericdamien TensorFlow-Examples: gan.py (generator and discriminator weights in
dicts, glorot_init, two Adam optimizers each minimizing over its own var_list, noise
fed from NumPy)."""
import numpy as np

tf.set_random_seed(5)
rng = np.random.RandomState(1)
mnist = rng.rand(32, 64).astype(np.float32)

num_steps = 4
batch_size = 16
learning_rate = 0.0002
image_dim = 64
gen_hidden_dim = 32
disc_hidden_dim = 32
noise_dim = 10


def glorot_init(shape):
    return tf.random_normal(shape=shape, stddev=1. / tf.sqrt(shape[0] / 2.))


weights = {
    "gen_hidden1": tf.Variable(glorot_init([noise_dim, gen_hidden_dim])),
    "gen_out": tf.Variable(glorot_init([gen_hidden_dim, image_dim])),
    "disc_hidden1": tf.Variable(glorot_init([image_dim, disc_hidden_dim])),
    "disc_out": tf.Variable(glorot_init([disc_hidden_dim, 1])),
}
biases = {
    "gen_hidden1": tf.Variable(tf.zeros([gen_hidden_dim])),
    "gen_out": tf.Variable(tf.zeros([image_dim])),
    "disc_hidden1": tf.Variable(tf.zeros([disc_hidden_dim])),
    "disc_out": tf.Variable(tf.zeros([1])),
}


def generator(x):
    hidden_layer = tf.matmul(x, weights["gen_hidden1"])
    hidden_layer = tf.add(hidden_layer, biases["gen_hidden1"])
    hidden_layer = tf.nn.relu(hidden_layer)
    out_layer = tf.matmul(hidden_layer, weights["gen_out"])
    out_layer = tf.add(out_layer, biases["gen_out"])
    return tf.nn.sigmoid(out_layer)


def discriminator(x):
    hidden_layer = tf.matmul(x, weights["disc_hidden1"])
    hidden_layer = tf.add(hidden_layer, biases["disc_hidden1"])
    hidden_layer = tf.nn.relu(hidden_layer)
    out_layer = tf.matmul(hidden_layer, weights["disc_out"])
    out_layer = tf.add(out_layer, biases["disc_out"])
    return tf.nn.sigmoid(out_layer)


gen_input = tf.placeholder(tf.float32, shape=[None, noise_dim], name="input_noise")
disc_input = tf.placeholder(tf.float32, shape=[None, image_dim], name="disc_input")
gen_sample = generator(gen_input)
disc_real = discriminator(disc_input)
disc_fake = discriminator(gen_sample)
gen_loss = -tf.reduce_mean(tf.log(disc_fake))
disc_loss = -tf.reduce_mean(tf.log(disc_real) + tf.log(1. - disc_fake))
optimizer_gen = tf.train.AdamOptimizer(learning_rate=learning_rate)
optimizer_disc = tf.train.AdamOptimizer(learning_rate=learning_rate)
gen_vars = [weights["gen_hidden1"], weights["gen_out"], biases["gen_hidden1"], biases["gen_out"]]
disc_vars = {"h1": weights["disc_hidden1"], "out": weights["disc_out"],
             "b1": biases["disc_hidden1"], "b_out": biases["disc_out"]}
train_gen = optimizer_gen.minimize(gen_loss, var_list=gen_vars)
train_disc = optimizer_disc.minimize(disc_loss, var_list=disc_vars.values())
init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session() as sess:
    sess.run(init)
    for i in range(1, num_steps + 1):
        batch_x = mnist[(i % 2) * batch_size:(i % 2 + 1) * batch_size]
        z = rng.uniform(-1., 1., size=[batch_size, noise_dim])
        feed_dict = {disc_input: batch_x, gen_input: z}
        _, _, gl, dl = sess.run([train_gen, train_disc, gen_loss, disc_loss], feed_dict=feed_dict)
        results["log"].append("Step %i: Generator Loss: %f, Discriminator Loss: %f" % (i, gl, dl))
    z = rng.uniform(-1., 1., size=[4, noise_dim])
    results["samples"] = sess.run(gen_sample, feed_dict={gen_input: z})
