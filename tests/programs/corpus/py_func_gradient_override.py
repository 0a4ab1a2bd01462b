"""Custom ops the TF1 way: a NumPy function wrapped with tf.py_func (stateful=False),
its gradient registered with tf.RegisterGradient and attached by
graph.gradient_override_map({"PyFunc": ...}), an Identity whose gradient is
overridden to clip (the "gradient reversal layer" of domain adaptation), and
tf.test.compute_gradient_error over a smooth composite."""
import numpy as np

rng = np.random.RandomState(29)
xs = rng.randn(4, 3).astype(np.float32)


def np_softsign(x):
    return (x / (1.0 + np.abs(x))).astype(np.float32)


def np_softsign_grad(x, dy):
    return (dy / np.square(1.0 + np.abs(x))).astype(np.float32)


@tf.RegisterGradient("CorpusSoftsignGrad")
def _softsign_grad(op, grad):
    x = op.inputs[0]
    return tf.py_func(np_softsign_grad, [x, grad], tf.float32, stateful=False)


@tf.RegisterGradient("CorpusFlipGradient")
def _flip_gradients(op, grad):
    return [tf.negative(grad) * 0.5]


x = tf.placeholder(tf.float32, [4, 3])
g = tf.get_default_graph()
with g.gradient_override_map({"PyFuncStateless": "CorpusSoftsignGrad"}):
    y = tf.py_func(np_softsign, [x], tf.float32, stateful=False, name="softsign")
y.set_shape(x.get_shape())
with g.gradient_override_map({"Identity": "CorpusFlipGradient"}):
    flipped = tf.identity(y)
w = tf.Variable(tf.ones([3, 2]))
loss = tf.reduce_sum(tf.matmul(flipped, w) ** 2)
grads = tf.gradients(loss, [x, w])

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    results = {"values": sess.run([y, loss] + grads, {x: xs})}
    z = tf.constant(xs[:2, :2].astype(np.float64))
    err = tf.test.compute_gradient_error(z, [2, 2], tf.reduce_sum(tf.sin(z) * z, axis=1), [2])
    results["grad_error_small"] = bool(err < 1e-6)
    results["op_types"] = [y.op.type, flipped.op.type]
