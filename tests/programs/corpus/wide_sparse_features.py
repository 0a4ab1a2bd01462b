"""A wide linear model over sparse categorical features as TF1 recommender tutorials
build it by hand: tf.sparse_placeholder fed with SparseTensorValue, embedding_lookup_sparse
with sum/mean/sqrtn combiners and sparse weights, sparse_tensor_dense_matmul, a hashed
string column through string_to_hash_bucket_fast, FTRL with L1/L2 on the wide part and
Adagrad on the deep part."""
import numpy as np

tf.set_random_seed(41)
ids = tf.sparse_placeholder(tf.int64, name="ids")
weights = tf.sparse_placeholder(tf.float32, name="weights")
words = tf.placeholder(tf.string, [None])
labels = tf.placeholder(tf.float32, [None, 1])
emb = tf.get_variable("emb", [10, 4], initializer=tf.random_normal_initializer(stddev=0.3, seed=1))
wide_w = tf.get_variable("wide_w", [10, 1], initializer=tf.zeros_initializer())
deep = {c: tf.nn.embedding_lookup_sparse(emb, ids, None if c == "sum" else weights, combiner=c)
        for c in ("sum", "mean", "sqrtn")}
one_hot = tf.SparseTensor(tf.stack([ids.indices[:, 0], ids.values], axis=1),
                          tf.ones_like(ids.values, tf.float32),
                          tf.stack([ids.dense_shape[0], tf.constant(10, tf.int64)]))
wide = tf.sparse_tensor_dense_matmul(tf.sparse_reorder(one_hot), wide_w)
hashed = tf.string_to_hash_bucket_fast(words, 10)
hash_emb = tf.nn.embedding_lookup(emb, hashed)
logits = wide + tf.layers.dense(tf.concat([deep["mean"], hash_emb], 1), 1, name="deep")
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
wide_opt = tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.01)
deep_vars = [v for v in tf.trainable_variables() if v is not wide_w]
train_op = tf.group(wide_opt.minimize(loss, var_list=[wide_w]),
                    tf.train.AdagradOptimizer(0.1).minimize(loss, var_list=deep_vars))

feed = {
    ids: tf.SparseTensorValue(indices=[[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]],
                              values=np.array([1, 3, 2, 5, 1, 9], np.int64), dense_shape=[3, 3]),
    weights: tf.SparseTensorValue(indices=[[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]],
                                  values=np.array([1.0, 0.5, 2.0, 1.0, 1.0, 0.25], np.float32),
                                  dense_shape=[3, 3]),
    words: ["cat", "dog", "fish"],
    labels: [[1.0], [0.0], [1.0]],
}
results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    results["combiners"] = sess.run(deep, feed)
    results["hashed"] = sess.run(hashed, feed)
    for _ in range(3):
        _, l = sess.run([train_op, loss], feed)
        results["log"].append(l)
    results["wide_w"] = sess.run(wide_w)
