"""aymericdamien TensorFlow-Examples: variational_autoencoder.py (glorot_init, the
reparameterization trick with a seeded tf.random_normal epsilon, KL divergence plus
reconstruction loss, RMSProp; the decoder reused on a fed latent)."""
import numpy as np

tf.set_random_seed(31)
rng = np.random.RandomState(31)
mnist = (rng.rand(32, 64) > 0.5).astype(np.float32)

learning_rate = 0.001
num_steps = 4
batch_size = 16
image_dim = 64
hidden_dim = 24
latent_dim = 2


def glorot_init(shape):
    return tf.random_normal(shape=shape, stddev=1. / tf.sqrt(shape[0] / 2.))


weights = {
    "encoder_h1": tf.Variable(glorot_init([image_dim, hidden_dim])),
    "z_mean": tf.Variable(glorot_init([hidden_dim, latent_dim])),
    "z_std": tf.Variable(glorot_init([hidden_dim, latent_dim])),
    "decoder_h1": tf.Variable(glorot_init([latent_dim, hidden_dim])),
    "decoder_out": tf.Variable(glorot_init([hidden_dim, image_dim])),
}
biases = {
    "encoder_b1": tf.Variable(glorot_init([hidden_dim])),
    "z_mean": tf.Variable(glorot_init([latent_dim])),
    "z_std": tf.Variable(glorot_init([latent_dim])),
    "decoder_b1": tf.Variable(glorot_init([hidden_dim])),
    "decoder_out": tf.Variable(glorot_init([image_dim])),
}

input_image = tf.placeholder(tf.float32, shape=[None, image_dim])
encoder = tf.matmul(input_image, weights["encoder_h1"]) + biases["encoder_b1"]
encoder = tf.nn.tanh(encoder)
z_mean = tf.matmul(encoder, weights["z_mean"]) + biases["z_mean"]
z_std = tf.matmul(encoder, weights["z_std"]) + biases["z_std"]
eps = tf.random_normal(tf.shape(z_std), dtype=tf.float32, mean=0., stddev=1.0, name="epsilon", seed=4)
z = z_mean + tf.exp(z_std / 2) * eps
decoder = tf.matmul(z, weights["decoder_h1"]) + biases["decoder_b1"]
decoder = tf.nn.tanh(decoder)
decoder = tf.matmul(decoder, weights["decoder_out"]) + biases["decoder_out"]
decoder = tf.nn.sigmoid(decoder)


def vae_loss(x_reconstructed, x_true):
    encode_decode_loss = x_true * tf.log(1e-10 + x_reconstructed) + (1 - x_true) * tf.log(1e-10 + 1 - x_reconstructed)
    encode_decode_loss = -tf.reduce_sum(encode_decode_loss, 1)
    kl_div_loss = 1 + z_std - tf.square(z_mean) - tf.exp(z_std)
    kl_div_loss = -0.5 * tf.reduce_sum(kl_div_loss, 1)
    return tf.reduce_mean(encode_decode_loss + kl_div_loss)


loss_op = vae_loss(decoder, input_image)
optimizer = tf.train.RMSPropOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session() as sess:
    sess.run(init)
    for i in range(1, num_steps + 1):
        batch_x = mnist[(i % 2) * batch_size:(i % 2 + 1) * batch_size]
        _, l = sess.run([train_op, loss_op], feed_dict={input_image: batch_x})
        results["log"].append(l)
    noise_input = tf.placeholder(tf.float32, shape=[None, latent_dim])
    decoder = tf.matmul(noise_input, weights["decoder_h1"]) + biases["decoder_b1"]
    decoder = tf.nn.tanh(decoder)
    decoder = tf.matmul(decoder, weights["decoder_out"]) + biases["decoder_out"]
    decoder = tf.nn.sigmoid(decoder)
    x_axis = np.linspace(-2, 2, 3)
    z_mu = np.array([[xi, 0.5] for xi in x_axis], dtype=np.float32)
    results["generated"] = sess.run(decoder, feed_dict={noise_input: z_mu})
