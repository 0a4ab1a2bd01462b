"""tf.data as TF 1.x tutorials used it: from_tensor_slices over fed placeholders with
make_initializable_iterator (re-initialized per epoch), a dict-structured dataset with
map/filter/padded_batch, zip and range, Iterator.from_structure with reinitializable
train/validation initializers, and prefetch."""
import numpy as np

rng = np.random.RandomState(8)
xs = rng.rand(10, 2).astype(np.float32)
ys = rng.randint(0, 2, 10).astype(np.int64)

features_placeholder = tf.placeholder(xs.dtype, xs.shape)
labels_placeholder = tf.placeholder(ys.dtype, ys.shape)
dataset = tf.data.Dataset.from_tensor_slices((features_placeholder, labels_placeholder))
dataset = dataset.shuffle(10, seed=1).batch(4)
iterator = dataset.make_initializable_iterator()
next_x, next_y = iterator.get_next()

seqs = tf.data.Dataset.range(1, 7).map(lambda n: {"ids": tf.range(n), "len": n})
seqs = seqs.filter(lambda d: d["len"] % 2 == 0)
seqs = seqs.padded_batch(2, padded_shapes={"ids": [None], "len": []})
seq_next = seqs.make_one_shot_iterator().get_next()

zipped = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.from_tensor_slices([1.5, 2.5, 3.5])))
zipped = zipped.map(lambda i, v: tf.cast(i, tf.float32) * v).prefetch(1)
zipped_next = zipped.make_one_shot_iterator().get_next()

training_dataset = tf.data.Dataset.range(6).map(lambda x: x + tf.random_uniform([], -2, 2, tf.int64, seed=4))
validation_dataset = tf.data.Dataset.range(3)
reinit = tf.data.Iterator.from_structure(training_dataset.output_types, training_dataset.output_shapes)
next_element = reinit.get_next()
training_init_op = reinit.make_initializer(training_dataset)
validation_init_op = reinit.make_initializer(validation_dataset)


def drain(sess, t):
    out = []
    while True:
        try:
            out.append(sess.run(t))
        except tf.errors.OutOfRangeError:
            return out


results = {}
with tf.Session() as sess:
    epochs = []
    for _ in range(2):
        sess.run(iterator.initializer, feed_dict={features_placeholder: xs, labels_placeholder: ys})
        epochs.append(drain(sess, [next_x, next_y]))
    results["epochs"] = epochs
    results["seqs"] = drain(sess, seq_next)
    results["zipped"] = drain(sess, zipped_next)
    for _ in range(2):
        sess.run(training_init_op)
        results.setdefault("train", []).append(drain(sess, next_element))
        sess.run(validation_init_op)
        results.setdefault("valid", []).append(drain(sess, next_element))
