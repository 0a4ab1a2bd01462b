"""aymericdamien TensorFlow-Examples: dynamic_rnn.py (variable-length toy sequences,
tf.nn.dynamic_rnn with sequence_length, the last relevant output gathered by index)."""
import numpy as np

tf.set_random_seed(11)
rng = np.random.RandomState(9)


class ToySequenceData(object):
    def __init__(self, n_samples=24, max_seq_len=10, min_seq_len=3, max_value=100):
        self.data, self.labels, self.seqlen = [], [], []
        for _ in range(n_samples):
            length = rng.randint(min_seq_len, max_seq_len)
            self.seqlen.append(length)
            if rng.rand() < 0.5:
                rand_start = rng.randint(0, max_value - length)
                s = [[float(i) / max_value] for i in range(rand_start, rand_start + length)]
                s += [[0.0] for _ in range(max_seq_len - length)]
                self.data.append(s)
                self.labels.append([1.0, 0.0])
            else:
                s = [[float(rng.randint(0, max_value)) / max_value] for _ in range(length)]
                s += [[0.0] for _ in range(max_seq_len - length)]
                self.data.append(s)
                self.labels.append([0.0, 1.0])
        self.batch_id = 0

    def next(self, batch_size):
        if self.batch_id == len(self.data):
            self.batch_id = 0
        end = min(self.batch_id + batch_size, len(self.data))
        batch_data = self.data[self.batch_id:end]
        batch_labels = self.labels[self.batch_id:end]
        batch_seqlen = self.seqlen[self.batch_id:end]
        self.batch_id = end
        return batch_data, batch_labels, batch_seqlen


learning_rate = 0.01
training_steps = 4
batch_size = 8
seq_max_len = 10
n_hidden = 8
n_classes = 2
trainset = ToySequenceData(n_samples=24, max_seq_len=seq_max_len)
testset = ToySequenceData(n_samples=10, max_seq_len=seq_max_len)

x = tf.placeholder("float", [None, seq_max_len, 1])
y = tf.placeholder("float", [None, n_classes])
seqlen = tf.placeholder(tf.int32, [None])
weights = {"out": tf.Variable(tf.random_normal([n_hidden, n_classes]))}
biases = {"out": tf.Variable(tf.random_normal([n_classes]))}


def dynamicRNN(x, seqlen, weights, biases):
    lstm_cell = tf.nn.rnn_cell.BasicLSTMCell(n_hidden)
    outputs, states = tf.nn.dynamic_rnn(lstm_cell, x, dtype=tf.float32, sequence_length=seqlen)
    batch_size = tf.shape(outputs)[0]
    index = tf.range(0, batch_size) * seq_max_len + (seqlen - 1)
    outputs = tf.gather(tf.reshape(outputs, [-1, n_hidden]), index)
    return tf.matmul(outputs, weights["out"]) + biases["out"], states


pred, final_state = dynamicRNN(x, seqlen, weights, biases)
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
optimizer = tf.train.GradientDescentOptimizer(learning_rate=learning_rate).minimize(cost)
correct_pred = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session() as sess:
    sess.run(init)
    for step in range(1, training_steps + 1):
        batch_x, batch_y, batch_seqlen = trainset.next(batch_size)
        feed = {x: batch_x, y: batch_y, seqlen: batch_seqlen}
        sess.run(optimizer, feed_dict=feed)
        acc, loss = sess.run([accuracy, cost], feed_dict=feed)
        results["log"].append((step, loss, acc))
    test_feed = {x: testset.data, y: testset.labels, seqlen: testset.seqlen}
    results["test"] = sess.run({"accuracy": accuracy, "state": final_state}, feed_dict=test_feed)
