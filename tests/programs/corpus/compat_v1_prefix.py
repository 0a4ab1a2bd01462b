"""A TF1 program ported to TF2 the way the migration guide says: every name spelled
`tf.compat.v1.*` (placeholder, get_variable, variable_scope, train, losses, Session,
summary, initializers) with the v2-only spellings it keeps (tf.math, tf.nn, tf.random)."""
import numpy as np

v1 = tf.compat.v1
v1.set_random_seed(14)
rng = np.random.RandomState(14)
data_x = rng.randn(24, 5).astype(np.float32)
data_y = (data_x @ rng.randn(5, 1) + 0.5).astype(np.float32)

x = tf.compat.v1.placeholder(tf.float32, shape=[None, 5], name="x")
y = tf.compat.v1.placeholder(tf.float32, shape=[None, 1], name="y")
with tf.compat.v1.variable_scope("linear", initializer=tf.compat.v1.glorot_uniform_initializer()):
    w = tf.compat.v1.get_variable("w", [5, 1])
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
pred = tf.matmul(x, w) + b
loss = tf.compat.v1.losses.mean_squared_error(labels=y, predictions=pred)
reg = 0.01 * tf.nn.l2_loss(w)
total = tf.math.add(loss, reg, name="total")
global_step = tf.compat.v1.train.get_or_create_global_step()
lr = tf.compat.v1.train.exponential_decay(0.1, global_step, 2, 0.9, staircase=True)
train_op = tf.compat.v1.train.MomentumOptimizer(lr, 0.9).minimize(total, global_step=global_step)
noise = tf.random.uniform([3], seed=2)
tf.compat.v1.summary.scalar("loss", total)
merged = tf.compat.v1.summary.merge_all()

results = {"log": []}
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(5):
        out = sess.run({"train": train_op, "loss": total, "lr": lr, "step": global_step},
                       feed_dict={x: data_x, y: data_y})
        results["log"].append((out["loss"], out["lr"], out["step"]))
    results["w"] = sess.run(w)
    results["noise"] = sess.run(noise)
    results["summary"] = v1.Summary.FromString(sess.run(merged, {x: data_x, y: data_y})).value[0].tag
    results["names"] = [v.name for v in tf.compat.v1.global_variables()]
    results["types"] = [w.dtype.name, global_step.dtype.name, tf.compat.v1.dtypes.as_dtype("float32").name]
