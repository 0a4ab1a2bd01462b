"""Large embeddings as TF1 recommender and word2vec-distributed scripts shard them:
get_variable with fixed_size_partitioner / min_max_variable_partitioner,
embedding_lookup over the PartitionedVariable with partition_strategy "mod" and
"div" and max_norm, a sparse update by Adagrad, a Saver round trip of the partitioned
variable (slices in the checkpoint) and the full value read back with
tf.train.load_variable."""
import os
import tempfile

import numpy as np

ckpt = os.path.join(tempfile.mkdtemp(), "emb.ckpt")
results = {}
with tf.Graph().as_default():
    tf.set_random_seed(4)
    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
        table = tf.get_variable("table", [10, 4], initializer=tf.random_uniform_initializer(-1.0, 1.0, seed=2))
    with tf.variable_scope("emb2", partitioner=tf.min_max_variable_partitioner(max_partitions=4,
                                                                                min_slice_size=32)):
        table2 = tf.get_variable("table", [16, 4], initializer=tf.ones_initializer())
    ids = tf.constant([0, 3, 7, 9, 3])
    mod = tf.nn.embedding_lookup(table, ids, partition_strategy="mod")
    div = tf.nn.embedding_lookup(table, ids, partition_strategy="div", max_norm=0.5)
    other = tf.nn.embedding_lookup(table2, tf.constant([1, 15]), partition_strategy="div")
    loss = tf.reduce_sum(tf.square(div - 0.1)) + tf.reduce_sum(mod)
    train = tf.train.AdagradOptimizer(0.5).minimize(loss)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        results["before"] = sess.run([mod, div, other])
        sess.run(train)
        results["after"] = sess.run([mod, div])
        results["parts"] = [(v.name, v.get_shape().as_list()) for v in tf.global_variables()]
        saver.save(sess, ckpt)
        full = sess.run(tf.concat(list(table), 0))
results["listed"] = sorted(tf.train.list_variables(ckpt))
results["loaded_equal"] = bool(np.array_equal(tf.train.load_variable(ckpt, "emb/table"), full))
results["full"] = full
