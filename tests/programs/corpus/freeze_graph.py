"""Freezing a trained graph as the TF 1.x deployment tutorials do:
graph_util.convert_variables_to_constants over the output node names, tf.train.write_graph
(binary and text), the .pb read back with tf.gfile.GFile into a tf.GraphDef, imported
with tf.import_graph_def(name="prefix") and return_elements, and run without variables;
extract_sub_graph and remove_training_nodes on the way."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(6)
xs = rng.randn(5, 4).astype(np.float32)
out_dir = tempfile.mkdtemp()
results = {}

with tf.Graph().as_default() as g:
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [None, 4], name="input")
    w = tf.Variable(tf.truncated_normal([4, 3], stddev=0.5), name="w")
    b = tf.Variable(tf.zeros([3]), name="b")
    logits = tf.nn.bias_add(tf.matmul(x, w), b, name="logits")
    probs = tf.nn.softmax(tf.identity(logits), name="output")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2, 1, 0], logits=logits))
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op, {x: xs})
        results["trained"] = sess.run(probs, {x: xs})
        frozen = tf.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["output"])
    sub = tf.graph_util.extract_sub_graph(frozen, ["output"])
    stripped = tf.graph_util.remove_training_nodes(sub)
    tf.train.write_graph(stripped, out_dir, "frozen.pb", as_text=False)
    tf.train.write_graph(stripped, out_dir, "frozen.pbtxt", as_text=True)
    results["frozen_ops"] = sorted({n.op for n in frozen.node})
    results["stripped_nodes"] = sorted(n.name for n in stripped.node)

with tf.gfile.GFile(os.path.join(out_dir, "frozen.pb"), "rb") as f:
    graph_def = tf.GraphDef()
    graph_def.ParseFromString(f.read())

with tf.Graph().as_default() as graph:
    inp, out = tf.import_graph_def(graph_def, name="prefix", return_elements=["input:0", "output:0"])
    with tf.Session(graph=graph) as sess:
        results["frozen_run"] = sess.run(out, {inp: xs})
    results["imported"] = sorted(op.name for op in graph.get_operations())
    results["no_variables"] = len(tf.global_variables())
results["pbtxt_starts"] = open(os.path.join(out_dir, "frozen.pbtxt")).read().split("\n")[0]
