"""Writing tf.train.Example records with tf.python_io.TFRecordWriter and reading them
back as the TF 1.x input tutorials do: tf.data.TFRecordDataset, map with
parse_single_example (FixedLenFeature, VarLenFeature), shuffle with a seed, batch,
repeat, make_one_shot_iterator, and a second pipeline that batches first and parses
with tf.parse_example; a logistic regression trained from the iterator."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(5)
features_np = rng.randn(12, 3).astype(np.float32)
labels_np = (features_np.sum(axis=1) > 0).astype(np.int64)
path = os.path.join(tempfile.mkdtemp(), "train.tfrecords")


def _float_feature(value):
    return tf.train.Feature(float_list=tf.train.FloatList(value=value))


def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _bytes_feature(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


with tf.python_io.TFRecordWriter(path) as writer:
    for i in range(len(features_np)):
        example = tf.train.Example(features=tf.train.Features(feature={
            "x": _float_feature(features_np[i].tolist()),
            "label": _int64_feature(int(labels_np[i])),
            "name": _bytes_feature(("row%d" % i).encode()),
            "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i % 3)))),
        }))
        writer.write(example.SerializeToString())

feature_spec = {
    "x": tf.FixedLenFeature([3], tf.float32),
    "label": tf.FixedLenFeature([], tf.int64),
    "name": tf.FixedLenFeature([], tf.string),
    "tags": tf.VarLenFeature(tf.int64),
}


def parser(record):
    parsed = tf.parse_single_example(record, feature_spec)
    return parsed["x"], tf.cast(parsed["label"], tf.int32)


dataset = tf.data.TFRecordDataset([path])
dataset = dataset.map(parser)
dataset = dataset.shuffle(buffer_size=6, seed=3)
dataset = dataset.batch(4)
dataset = dataset.repeat(2)
iterator = dataset.make_one_shot_iterator()
features, labels = iterator.get_next()

w = tf.Variable(tf.zeros([3, 2]))
b = tf.Variable(tf.zeros([2]))
logits = tf.matmul(features, w) + b
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

batched = tf.data.TFRecordDataset(path).batch(5)
raw = tf.compat.v1.data.make_one_shot_iterator(batched).get_next()
parsed = tf.parse_example(raw, feature_spec)

results = {"losses": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    while True:
        try:
            _, l, lab = sess.run([train_op, loss, labels])
            results["losses"].append((l, lab))
        except tf.errors.OutOfRangeError:
            results["end"] = "End of dataset"
            break
    results["w"] = sess.run(w)
    first = sess.run(parsed)
    results["parsed"] = {k: (v if not isinstance(v, tf.SparseTensorValue) else (v.indices, v.values, v.dense_shape))
                         for k, v in first.items()}
results["records"] = sum(1 for _ in tf.python_io.tf_record_iterator(path))
results["shapes"] = [features.get_shape().as_list(), labels.dtype.name,
                     str(dataset.output_types), str(dataset.output_shapes)]
