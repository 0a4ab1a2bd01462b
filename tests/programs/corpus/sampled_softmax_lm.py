"""A language model head trained with tf.nn.sampled_softmax_loss (the seq2seq translate
tutorial's output projection): a projection weight transposed as the tutorials store
it, log-uniform candidates drawn with a graph seed, the full softmax for evaluation, and
tf.nn.log_uniform_candidate_sampler / fixed_unigram_candidate_sampler fetched directly."""
import numpy as np

tf.set_random_seed(23)
rng = np.random.RandomState(23)
vocab, dim, batch = 40, 6, 8
inputs = tf.placeholder(tf.float32, [batch, dim])
labels = tf.placeholder(tf.int64, [batch, 1])
w_t = tf.get_variable("proj_w", [dim, vocab], initializer=tf.random_normal_initializer(stddev=0.3, seed=3))
w = tf.transpose(w_t)
b = tf.get_variable("proj_b", [vocab], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(weights=w, biases=b, labels=labels, inputs=inputs,
                                                 num_sampled=10, num_classes=vocab))
full = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
    labels=tf.reshape(labels, [-1]), logits=tf.matmul(inputs, w_t) + b))
train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
sampled = tf.nn.log_uniform_candidate_sampler(labels, 1, 5, True, vocab, seed=4)
unigram = tf.nn.fixed_unigram_candidate_sampler(labels, 1, 4, False, vocab,
                                                unigrams=list(range(1, vocab + 1)), seed=6)
feed = {inputs: rng.randn(batch, dim).astype(np.float32), labels: rng.randint(0, vocab, (batch, 1))}
results = {"log": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(4):
        _, l = sess.run([train_op, loss], feed)
        results["log"].append((l, sess.run(full, feed)))  # a run of its own: not racing the update
    results["sampled"] = sess.run(list(sampled), feed)
    results["unigram"] = sess.run(list(unigram), feed)
