"""tf.data fed from Python as TF1 input tutorials do: Dataset.from_generator with
output_types/output_shapes, a map through tf.py_func (a NumPy augmentation), shuffle
with a seed, batch with drop_remainder, interleave of per-shard datasets, and
Dataset.list_files/TextLineDataset over CSV shards parsed with tf.decode_csv."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(9)
directory = tempfile.mkdtemp()
for s in range(2):
    with open(os.path.join(directory, "shard%d.csv" % s), "w") as f:
        for i in range(4):
            f.write("%d,%.2f,%s\n" % (s * 10 + i, rng.rand(), "abcd"[i]))


def gen():
    for i in range(7):
        yield np.arange(i % 3 + 1, dtype=np.float32), i


def augment(x):
    return (x * 2.0 + 1.0).astype(np.float32)


ds = tf.data.Dataset.from_generator(gen, (tf.float32, tf.int64), (tf.TensorShape([None]), tf.TensorShape([])))
ds = ds.map(lambda x, i: (tf.reduce_sum(tf.py_func(augment, [x], tf.float32)), i))
ds = ds.shuffle(4, seed=2).batch(3, drop_remainder=True)
gen_next = ds.make_one_shot_iterator().get_next()

files = tf.data.Dataset.list_files(os.path.join(directory, "*.csv"), shuffle=False)
lines = files.interleave(lambda f: tf.data.TextLineDataset(f), cycle_length=2, block_length=1)
rows = lines.map(lambda line: tf.decode_csv(line, record_defaults=[[0], [0.0], [""]]))
rows_next = rows.batch(3).make_one_shot_iterator().get_next()


def drain(sess, t):
    out = []
    while True:
        try:
            out.append(sess.run(t))
        except tf.errors.OutOfRangeError:
            return out


with tf.Session() as sess:
    results = {"gen": drain(sess, gen_next), "rows": drain(sess, rows_next)}
results["types"] = [str(ds.output_types), str(ds.output_shapes)]
