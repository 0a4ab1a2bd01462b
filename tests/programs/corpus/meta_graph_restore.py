"""Saving a model with its meta graph and restoring it in a fresh graph, as the
"save and restore a model" tutorials do: tf.add_to_collection of the ops to find again,
saver.save (max_to_keep, global_step), tf.reset_default_graph, tf.train.import_meta_graph
+ restore(latest_checkpoint), get_tensor_by_name / get_operation_by_name, the
collection read back, training continued and a new op built on the restored graph."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(4)
xs = rng.randn(16, 3).astype(np.float32)
ys = (xs @ np.array([[2.0], [-1.0], [0.5]], np.float32)).astype(np.float32)
ckpt_dir = tempfile.mkdtemp()
results = {}

tf.reset_default_graph()
tf.set_random_seed(8)
x = tf.placeholder(tf.float32, [None, 3], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
w = tf.Variable(tf.random_normal([3, 1], seed=2), name="w")
b = tf.Variable(0.0, name="b")
pred = tf.add(tf.matmul(x, w), b, name="pred")
loss = tf.reduce_mean(tf.square(pred - y), name="loss")
global_step = tf.Variable(0, trainable=False, name="global_step")
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step, name="train_op")
tf.add_to_collection("train_op", train_op)
tf.add_to_collection("pred", pred)
saver = tf.train.Saver(max_to_keep=2)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        sess.run(train_op, {x: xs, y: ys})
        saver.save(sess, os.path.join(ckpt_dir, "model"), global_step=global_step)
    results["before"] = sess.run([w, b, loss], {x: xs, y: ys})
results["kept"] = sorted(os.path.basename(p) for p in saver.last_checkpoints)
results["files"] = sorted(f for f in os.listdir(ckpt_dir) if f.endswith(".meta"))

tf.reset_default_graph()
with tf.Session() as sess:
    new_saver = tf.train.import_meta_graph(os.path.join(ckpt_dir, "model-5.meta"))
    new_saver.restore(sess, tf.train.latest_checkpoint(ckpt_dir))
    graph = tf.get_default_graph()
    x2 = graph.get_tensor_by_name("x:0")
    y2 = graph.get_tensor_by_name("y:0")
    loss2 = graph.get_tensor_by_name("loss:0")
    w2 = graph.get_tensor_by_name("w:0")
    train2 = tf.get_collection("train_op")[0]
    pred2 = tf.get_collection("pred")[0]
    results["restored"] = sess.run([w2, loss2], {x2: xs, y2: ys})
    for _ in range(3):
        sess.run(train2, {x2: xs, y2: ys})
    doubled = tf.multiply(pred2, 2.0, name="doubled")
    results["after"] = sess.run([loss2, doubled, graph.get_tensor_by_name("global_step:0")], {x2: xs[:2], y2: ys[:2]})
    results["op_types"] = [graph.get_operation_by_name(n).type for n in ("pred", "loss", "train_op", "w")]
    results["variables"] = sorted(v.name for v in tf.global_variables())
    results["trainable"] = sorted(v.name for v in tf.trainable_variables())
