"""A DCGAN-style example (aymericdamien dcgan.py / the TF1 GAN tutorials): generator and
discriminator built with tf.layers under variable_scope(reuse=...), the two players'
variables taken from tf.get_collection by scope and passed as var_list, Adam with
beta1=0.5, sigmoid_cross_entropy_with_logits with ones_like/zeros_like targets."""
import numpy as np

tf.set_random_seed(21)
rng = np.random.RandomState(21)
images = rng.rand(8, 8, 8, 1).astype(np.float32)
noise_dim = 6


def generator(x, reuse=False):
    with tf.variable_scope("Generator", reuse=reuse):
        x = tf.layers.dense(x, units=4 * 4 * 8)
        x = tf.nn.tanh(x)
        x = tf.reshape(x, shape=[-1, 4, 4, 8])
        x = tf.image.resize_nearest_neighbor(x, [8, 8])
        x = tf.layers.conv2d(x, 1, 3, padding="same")
        x = tf.nn.sigmoid(x)
        return x


def discriminator(x, reuse=False):
    with tf.variable_scope("Discriminator", reuse=reuse):
        x = tf.layers.conv2d(x, 4, 3, strides=2, padding="same")
        x = tf.nn.leaky_relu(x, alpha=0.2)
        x = tf.layers.average_pooling2d(x, 2, 2)
        x = tf.layers.flatten(x)
        x = tf.layers.dense(x, 16)
        x = tf.nn.tanh(x)
        x = tf.layers.dense(x, 1)
    return x


noise_input = tf.placeholder(tf.float32, shape=[None, noise_dim])
real_image_input = tf.placeholder(tf.float32, shape=[None, 8, 8, 1])
gen_sample = generator(noise_input)
disc_real = discriminator(real_image_input)
disc_fake = discriminator(gen_sample, reuse=True)
stacked_gan = discriminator(gen_sample, reuse=True)

disc_loss_real = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
    logits=disc_real, labels=tf.ones_like(disc_real)))
disc_loss_fake = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
    logits=disc_fake, labels=tf.zeros_like(disc_fake)))
disc_loss = disc_loss_real + disc_loss_fake
gen_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
    logits=stacked_gan, labels=tf.ones_like(stacked_gan)))

optimizer_gen = tf.train.AdamOptimizer(learning_rate=0.001, beta1=0.5)
optimizer_disc = tf.train.AdamOptimizer(learning_rate=0.001, beta1=0.5)
gen_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="Generator")
disc_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="Discriminator")
train_gen = optimizer_gen.minimize(gen_loss, var_list=gen_vars)
train_disc = optimizer_disc.minimize(disc_loss, var_list=disc_vars)

results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(3):
        z = rng.uniform(-1., 1., size=[8, noise_dim]).astype(np.float32)
        _, dl = sess.run([train_disc, disc_loss], feed_dict={real_image_input: images, noise_input: z})
        _, gl = sess.run([train_gen, gen_loss], feed_dict={noise_input: z})
        results["log"].append((gl, dl))
    results["gen_vars"] = [v.name for v in gen_vars]
    results["disc_vars"] = [v.name for v in disc_vars]
    results["sample"] = sess.run(gen_sample, {noise_input: np.ones([1, noise_dim], np.float32)})
