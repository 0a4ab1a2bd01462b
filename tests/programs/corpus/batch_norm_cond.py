"""Batch normalization written by hand as the TF1 batch-norm tutorials (R2RT) write it:
tf.nn.moments over the batch, an ExponentialMovingAverage of the batch statistics applied
under control_dependencies inside tf.cond(is_training, ...), tf.nn.batch_normalization
with learned scale and offset, a placeholder_with_default switch, then
tf.layers.batch_normalization-free inference with the averages."""
import numpy as np

tf.set_random_seed(7)
rng = np.random.RandomState(7)
xs = (rng.randn(32, 6) * 3 + 2).astype(np.float32)
ys = rng.randint(0, 3, 32).astype(np.int32)

x = tf.placeholder(tf.float32, [None, 6])
y = tf.placeholder(tf.int32, [None])
is_training = tf.placeholder_with_default(True, [], name="is_training")


def batch_norm_wrapper(inputs, is_training, decay=0.9, epsilon=1e-3):
    scale = tf.Variable(tf.ones([inputs.get_shape()[-1]]))
    beta = tf.Variable(tf.zeros([inputs.get_shape()[-1]]))
    pop_mean = tf.Variable(tf.zeros([inputs.get_shape()[-1]]), trainable=False)
    pop_var = tf.Variable(tf.ones([inputs.get_shape()[-1]]), trainable=False)

    def training():
        batch_mean, batch_var = tf.nn.moments(inputs, [0])
        train_mean = tf.assign(pop_mean, pop_mean * decay + batch_mean * (1 - decay))
        train_var = tf.assign(pop_var, pop_var * decay + batch_var * (1 - decay))
        with tf.control_dependencies([train_mean, train_var]):
            return tf.nn.batch_normalization(inputs, batch_mean, batch_var, beta, scale, epsilon)

    def inference():
        return tf.nn.batch_normalization(inputs, pop_mean, pop_var, beta, scale, epsilon)

    return tf.cond(is_training, training, inference), pop_mean, pop_var


w1 = tf.Variable(tf.truncated_normal([6, 8], stddev=0.3))
z1 = tf.matmul(x, w1)
bn1, pop_mean, pop_var = batch_norm_wrapper(z1, is_training)
h1 = tf.nn.relu(bn1)
w2 = tf.Variable(tf.truncated_normal([8, 3], stddev=0.3))
logits = tf.matmul(h1, w2)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y), tf.float32))

ema = tf.train.ExponentialMovingAverage(0.5)
with tf.control_dependencies([train_op]):
    train_with_ema = ema.apply([w1, w2])

results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(4):
        sl = slice((i % 2) * 16, (i % 2 + 1) * 16)
        _, l = sess.run([train_with_ema, loss], {x: xs[sl], y: ys[sl]})
        results["log"].append(l)
    results["pop"] = sess.run([pop_mean, pop_var])
    results["inference"] = sess.run([loss, accuracy], {x: xs, y: ys, is_training: False})
    results["shadow"] = sess.run(ema.average(w2))
    results["names"] = sorted(v.op.name for v in tf.global_variables())
