"""Graph-mode loops as TF1 tutorials teach them: tf.while_loop computing a Fibonacci
sequence into a TensorArray, tf.scan for a cumulative recurrence, tf.map_fn over rows,
a hand-written RNN with tf.while_loop and TensorArray.unstack/stack trained by
gradients through the loop, and tf.cond inside the body."""
import numpy as np

tf.set_random_seed(2)
rng = np.random.RandomState(2)
seq = rng.randn(5, 3, 2).astype(np.float32)

n = tf.constant(10)
ta = tf.TensorArray(tf.int32, size=n)
ta = ta.write(0, 0).write(1, 1)


def fib_body(i, a, b, ta):
    c = a + b
    return i + 1, b, c, ta.write(i, c)


_, _, _, fib_ta = tf.while_loop(lambda i, a, b, ta: i < n, fib_body, [2, 0, 1, ta])
fib = fib_ta.stack()
cum = tf.scan(lambda acc, x: 0.5 * acc + x, tf.constant([1.0, 2.0, 3.0, 4.0]), initializer=0.0)
norms = tf.map_fn(lambda row: tf.norm(row), tf.constant(seq[0]), dtype=tf.float32)

inputs = tf.placeholder(tf.float32, [5, 3, 2])
w_x = tf.Variable(tf.random_normal([2, 4], stddev=0.5))
w_h = tf.Variable(tf.random_normal([4, 4], stddev=0.5))
inputs_ta = tf.TensorArray(tf.float32, size=5).unstack(inputs)
out_ta = tf.TensorArray(tf.float32, size=5)


def rnn_body(t, h, out_ta):
    x_t = inputs_ta.read(t)
    h_new = tf.tanh(tf.matmul(x_t, w_x) + tf.matmul(h, w_h))
    h_new = tf.cond(t > 2, lambda: h_new * 0.9, lambda: h_new)
    return t + 1, h_new, out_ta.write(t, h_new)


_, h_final, outs = tf.while_loop(lambda t, h, o: t < 5, rnn_body, [0, tf.zeros([3, 4]), out_ta])
outputs = outs.stack()
loss = tf.reduce_mean(tf.square(h_final - 0.5)) + 0.1 * tf.reduce_mean(outputs)
grads = tf.gradients(loss, [w_x, w_h])
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    results["fib"], results["cum"], results["norms"] = sess.run([fib, cum, norms])
    results["grads"] = sess.run(grads, {inputs: seq})
    for _ in range(3):
        _, l = sess.run([train_op, loss], {inputs: seq})
        results["log"].append(l)
    results["outputs"] = sess.run(outputs, {inputs: seq})
