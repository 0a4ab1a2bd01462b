"""Variable-length sequences stored as tf.train.SequenceExample (context length and
label, a token feature_list) as the TF1 RNN input tutorials write them, parsed with
tf.parse_single_sequence_example (FixedLenFeature context, FixedLenSequenceFeature
tokens), padded_batch'ed by tf.data and fed to an embedding + GRU dynamic_rnn."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(15)
path = os.path.join(tempfile.mkdtemp(), "seq.tfrecords")
sequences = [rng.randint(1, 9, size=rng.randint(2, 6)).tolist() for _ in range(6)]


def make_example(sequence, label):
    ex = tf.train.SequenceExample()
    ex.context.feature["length"].int64_list.value.append(len(sequence))
    ex.context.feature["label"].int64_list.value.append(label)
    fl_tokens = ex.feature_lists.feature_list["tokens"]
    for token in sequence:
        fl_tokens.feature.add().int64_list.value.append(token)
    return ex


with tf.python_io.TFRecordWriter(path) as writer:
    for i, seq in enumerate(sequences):
        writer.write(make_example(seq, i % 2).SerializeToString())

context_features = {"length": tf.FixedLenFeature([], dtype=tf.int64),
                    "label": tf.FixedLenFeature([], dtype=tf.int64)}
sequence_features = {"tokens": tf.FixedLenSequenceFeature([], dtype=tf.int64)}


def parse(serialized):
    context_parsed, sequence_parsed = tf.parse_single_sequence_example(
        serialized=serialized, context_features=context_features, sequence_features=sequence_features)
    return sequence_parsed["tokens"], context_parsed["length"], context_parsed["label"]


dataset = tf.data.TFRecordDataset(path).map(parse).padded_batch(3, padded_shapes=([None], [], []))
tokens, lengths, labels = dataset.make_one_shot_iterator().get_next()

tf.set_random_seed(5)
embedding = tf.get_variable("embedding", [10, 4])
inputs = tf.nn.embedding_lookup(embedding, tokens)
cell = tf.nn.rnn_cell.GRUCell(5)
outputs, state = tf.nn.dynamic_rnn(cell, inputs, sequence_length=lengths, dtype=tf.float32)
logits = tf.layers.dense(state, 2)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_op = tf.train.AdamOptimizer(0.05).minimize(loss)

results = {"batches": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    while True:
        try:
            _, l, t, n = sess.run([train_op, loss, tokens, lengths])
            results["batches"].append((l, t, n))
        except tf.errors.OutOfRangeError:
            break
