"""The TF 1.x tutorial word2vec_basic.py: build_dataset over a word list, the skip-gram
generate_batch with a deque, embeddings from random_uniform, NCE weights from
truncated_normal, tf.nn.nce_loss, SGD at 1.0, normalized embeddings and cosine
similarity of a validation set (on a synthetic Zipf-distributed corpus)."""
import collections
import math
import random

import numpy as np

rng = np.random.RandomState(0)
random.seed(0)
base = ["the", "of", "and", "one", "in", "a", "to", "zero", "nine", "two", "is", "as", "eight",
        "for", "s", "five", "three", "was", "by", "that", "four", "six", "seven", "with", "on"]
words = [base[min(int(rng.zipf(1.4)) - 1, len(base) - 1)] for _ in range(600)]
vocabulary_size = 20


def build_dataset(words, n_words):
    count = [["UNK", -1]]
    count.extend(collections.Counter(words).most_common(n_words - 1))
    dictionary = dict()
    for word, _ in count:
        dictionary[word] = len(dictionary)
    data = list()
    unk_count = 0
    for word in words:
        index = dictionary.get(word, 0)
        if index == 0:
            unk_count += 1
        data.append(index)
    count[0][1] = unk_count
    reversed_dictionary = dict(zip(dictionary.values(), dictionary.keys()))
    return data, count, dictionary, reversed_dictionary


data, count, dictionary, reverse_dictionary = build_dataset(words, vocabulary_size)
data_index = 0


def generate_batch(batch_size, num_skips, skip_window):
    global data_index
    assert batch_size % num_skips == 0
    assert num_skips <= 2 * skip_window
    batch = np.ndarray(shape=(batch_size), dtype=np.int32)
    labels = np.ndarray(shape=(batch_size, 1), dtype=np.int32)
    span = 2 * skip_window + 1
    buffer = collections.deque(maxlen=span)
    if data_index + span > len(data):
        data_index = 0
    buffer.extend(data[data_index:data_index + span])
    data_index += span
    for i in range(batch_size // num_skips):
        context_words = [w for w in range(span) if w != skip_window]
        words_to_use = random.sample(context_words, num_skips)
        for j, context_word in enumerate(words_to_use):
            batch[i * num_skips + j] = buffer[skip_window]
            labels[i * num_skips + j, 0] = buffer[context_word]
        if data_index == len(data):
            buffer.extend(data[0:span])
            data_index = span
        else:
            buffer.append(data[data_index])
            data_index += 1
    data_index = (data_index + len(data) - span) % len(data)
    return batch, labels


batch_size = 16
embedding_size = 8
skip_window = 1
num_skips = 2
num_sampled = 6
valid_examples = np.array([1, 3, 5, 7])

graph = tf.Graph()
with graph.as_default():
    tf.set_random_seed(1234)
    train_inputs = tf.placeholder(tf.int32, shape=[batch_size])
    train_labels = tf.placeholder(tf.int32, shape=[batch_size, 1])
    valid_dataset = tf.constant(valid_examples, dtype=tf.int32)
    with tf.device("/cpu:0"):
        with tf.name_scope("embeddings"):
            embeddings = tf.Variable(tf.random_uniform([vocabulary_size, embedding_size], -1.0, 1.0))
            embed = tf.nn.embedding_lookup(embeddings, train_inputs)
        with tf.name_scope("weights"):
            nce_weights = tf.Variable(tf.truncated_normal([vocabulary_size, embedding_size],
                                                          stddev=1.0 / math.sqrt(embedding_size)))
        with tf.name_scope("biases"):
            nce_biases = tf.Variable(tf.zeros([vocabulary_size]))
    with tf.name_scope("loss"):
        loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                             inputs=embed, num_sampled=num_sampled,
                                             num_classes=vocabulary_size))
    tf.summary.scalar("loss", loss)
    with tf.name_scope("optimizer"):
        optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
    normalized_embeddings = embeddings / norm
    valid_embeddings = tf.nn.embedding_lookup(normalized_embeddings, valid_dataset)
    similarity = tf.matmul(valid_embeddings, normalized_embeddings, transpose_b=True)
    merged = tf.summary.merge_all()
    init = tf.global_variables_initializer()
    saver = tf.train.Saver()

results = {"losses": []}
with tf.Session(graph=graph) as session:
    init.run()
    average_loss = 0
    for step in range(8):
        batch_inputs, batch_labels = generate_batch(batch_size, num_skips, skip_window)
        feed_dict = {train_inputs: batch_inputs, train_labels: batch_labels}
        _, summary, loss_val = session.run([optimizer, merged, loss], feed_dict=feed_dict)
        average_loss += loss_val
        if step % 4 == 3:
            results["losses"].append(average_loss / 4)
            average_loss = 0
    sim = similarity.eval()
    nearest = []
    for i in range(len(valid_examples)):
        valid_word = reverse_dictionary[valid_examples[i]]
        top_k = 3
        near = (-sim[i, :]).argsort()[1:top_k + 1]
        nearest.append("Nearest to %s: %s" % (valid_word, ", ".join(reverse_dictionary[k] for k in near)))
    results["nearest"] = nearest
    results["final_embeddings"] = normalized_embeddings.eval()
    results["summary_is_bytes"] = type(summary).__name__
