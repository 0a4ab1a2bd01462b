"""A char-rnn (sherjilozair/char-rnn-tensorflow style): a MultiRNNCell of LSTMCells with
DropoutWrapper, dynamic_rnn over embedded characters with initial_state fed back,
sequence_loss by hand (sparse softmax over reshaped outputs), clip_by_global_norm with
Adam, and sampling one character at a time with tf.multinomial (seeded), the state
carried between sess.run calls."""
import numpy as np

text = "hello world, hello tensorflow, hello graphs. " * 3
chars = sorted(set(text))
vocab = {c: i for i, c in enumerate(chars)}
data = np.array([vocab[c] for c in text], np.int32)
vocab_size = len(chars)
rnn_size, num_layers, batch_size, seq_length = 12, 2, 2, 8

tf.set_random_seed(33)
input_data = tf.placeholder(tf.int32, [None, None])
targets = tf.placeholder(tf.int32, [None, None])
keep = tf.placeholder_with_default(1.0, [])
cells = [tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.LSTMCell(rnn_size), output_keep_prob=keep, seed=i)
         for i in range(num_layers)]
cell = tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=True)
n = tf.shape(input_data)[0]
initial_state = cell.zero_state(n, tf.float32)
with tf.variable_scope("rnnlm"):
    softmax_w = tf.get_variable("softmax_w", [rnn_size, vocab_size])
    softmax_b = tf.get_variable("softmax_b", [vocab_size])
    embedding = tf.get_variable("embedding", [vocab_size, rnn_size])
    inputs = tf.nn.embedding_lookup(embedding, input_data)
outputs, last_state = tf.nn.dynamic_rnn(cell, inputs, initial_state=initial_state, scope="rnnlm")
output = tf.reshape(outputs, [-1, rnn_size])
logits = tf.matmul(output, softmax_w) + softmax_b
probs = tf.nn.softmax(logits)
loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(targets, [-1]), logits=logits)
cost = tf.reduce_mean(loss)
tvars = tf.trainable_variables()
grads, norm = tf.clip_by_global_norm(tf.gradients(cost, tvars), 5.0)
train_op = tf.train.AdamOptimizer(0.01).apply_gradients(zip(grads, tvars))
sample_op = tf.multinomial(logits[-1:], 1, seed=7)

results = {"costs": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    state = sess.run(initial_state, {input_data: np.zeros([batch_size, seq_length], np.int32)})
    for b in range(3):
        start = b * seq_length * batch_size
        xb = data[start:start + batch_size * seq_length].reshape(batch_size, seq_length)
        yb = data[start + 1:start + 1 + batch_size * seq_length].reshape(batch_size, seq_length)
        feed = {input_data: xb, targets: yb, keep: 0.8}
        for i, (c, h) in enumerate(initial_state):
            feed[c] = state[i].c
            feed[h] = state[i].h
        c_val, norm_val, state, _ = sess.run([cost, norm, last_state, train_op], feed)
        results["costs"].append((c_val, norm_val))
    prime = "hel"
    state = sess.run(cell.zero_state(1, tf.float32))
    for ch in prime[:-1]:
        state = sess.run(last_state, {input_data: [[vocab[ch]]], initial_state: state})
    ret, ch = prime, prime[-1]
    for _ in range(6):
        sample, state = sess.run([sample_op, last_state], {input_data: [[vocab[ch]]], initial_state: state})
        ch = chars[int(sample[0, 0])]
        ret += ch
    results["sample"] = ret
