"""The "getting started" part of the TF 1.x tutorials: tf.InteractiveSession,
Tensor.eval() and Operation.run() without a session argument, constants and
placeholders, tf.get_default_session(), the static and dynamic shapes printed, a
variable counter, fetch of several ops, and sess.close()."""
import numpy as np

sess = tf.InteractiveSession()
a = tf.constant([[3.0, 3.0]])
b = tf.constant([[2.0], [2.0]])
product = tf.matmul(a, b)
x = tf.Variable([1.0, 2.0])
sub = tf.subtract(x, a)
x.initializer.run()
state = tf.Variable(0, name="counter")
one = tf.constant(1)
new_value = tf.add(state, one)
update = tf.assign(state, new_value)
tf.global_variables_initializer().run()
counts = []
for _ in range(3):
    update.eval()
    counts.append(state.eval())
input1 = tf.placeholder(tf.float32)
input2 = tf.placeholder(tf.float32)
output = tf.multiply(input1, input2)
mul, intermed = sess.run([output, tf.add(input1, 1.0)], feed_dict={input1: [7.0], input2: [2.0]})
results = {
    "product": product.eval(), "sub": sub.eval(), "counts": counts, "mul": mul, "intermed": intermed,
    "default_is_sess": tf.get_default_session() is sess,
    "shapes": [product.get_shape().as_list(), str(product.shape), str(product), state.name],
    "dynamic": tf.shape(product).eval(),
    "np_mean": np.mean(sub.eval()),
}
sess.close()
