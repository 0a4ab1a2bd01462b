"""The pre-tf.data input pipeline of the TF 1.x "Reading data" guide and cifar10_input:
string_input_producer over record files, a TFRecordReader, parse_single_example,
tf.train.batch, a Coordinator with start_queue_runners, training until the epoch
limit raises OutOfRangeError, then coord.request_stop()/join."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(13)
directory = tempfile.mkdtemp()
filenames = []
for f in range(2):
    name = os.path.join(directory, "data_%d.tfrecords" % f)
    with tf.python_io.TFRecordWriter(name) as writer:
        for i in range(6):
            value = rng.randn(2).astype(np.float32)
            ex = tf.train.Example(features=tf.train.Features(feature={
                "value": tf.train.Feature(float_list=tf.train.FloatList(value=value.tolist())),
                "index": tf.train.Feature(int64_list=tf.train.Int64List(value=[f * 10 + i])),
            }))
            writer.write(ex.SerializeToString())
    filenames.append(name)

filename_queue = tf.train.string_input_producer(filenames, num_epochs=2, shuffle=False)
reader = tf.TFRecordReader()
_, serialized_example = reader.read(filename_queue)
features = tf.parse_single_example(serialized_example, features={
    "value": tf.FixedLenFeature([2], tf.float32),
    "index": tf.FixedLenFeature([], tf.int64),
})
value_batch, index_batch = tf.train.batch([features["value"], features["index"]], batch_size=4, num_threads=1,
                                          capacity=20)
w = tf.Variable([0.5, -0.5])
loss = tf.reduce_mean(tf.square(tf.reduce_sum(value_batch * w, axis=1) - 1.0))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

results = {"steps": []}
with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    try:
        step = 0
        while not coord.should_stop():
            _, l, idx = sess.run([train_op, loss, index_batch])
            results["steps"].append((step, l, idx))
            step += 1
    except tf.errors.OutOfRangeError:
        results["done"] = "Done training for %d epochs, %d steps." % (2, step)
    finally:
        coord.request_stop()
    coord.join(threads)
    results["w"] = sess.run(w)
    results["queue_runners"] = len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS))
