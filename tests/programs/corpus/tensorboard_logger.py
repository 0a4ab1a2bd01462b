"""The TensorBoard "Logger" class many TF1-era PyTorch and NumPy projects copy (yunjey's
logger.py): tf.Summary(value=[tf.Summary.Value(tag=, simple_value=)]) scalars, an
image summary built from PNG bytes with tf.Summary.Image, a histogram built by hand into
a tf.HistogramProto from np.histogram, all written by tf.summary.FileWriter.add_summary
without running a graph; plus tf.summary.text and tf.summary.tensor_summary run in a
session.  The events are read back with TensorBoard's reader."""
import io
import tempfile

import numpy as np
from PIL import Image

log_dir = tempfile.mkdtemp()


class Logger(object):
    def __init__(self, log_dir):
        self.writer = tf.summary.FileWriter(log_dir)

    def scalar_summary(self, tag, value, step):
        summary = tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=value)])
        self.writer.add_summary(summary, step)

    def image_summary(self, tag, images, step):
        img_summaries = []
        for i, img in enumerate(images):
            s = io.BytesIO()
            Image.fromarray(img).save(s, format="png")
            img_sum = tf.Summary.Image(encoded_image_string=s.getvalue(), height=img.shape[0], width=img.shape[1])
            img_summaries.append(tf.Summary.Value(tag="%s/%d" % (tag, i), image=img_sum))
        summary = tf.Summary(value=img_summaries)
        self.writer.add_summary(summary, step)

    def histo_summary(self, tag, values, step, bins=10):
        counts, bin_edges = np.histogram(values, bins=bins)
        hist = tf.HistogramProto()
        hist.min = float(np.min(values))
        hist.max = float(np.max(values))
        hist.num = int(np.prod(values.shape))
        hist.sum = float(np.sum(values))
        hist.sum_squares = float(np.sum(values ** 2))
        bin_edges = bin_edges[1:]
        for edge in bin_edges:
            hist.bucket_limit.append(edge)
        for c in counts:
            hist.bucket.append(c)
        summary = tf.Summary(value=[tf.Summary.Value(tag=tag, histo=hist)])
        self.writer.add_summary(summary, step)
        self.writer.flush()


rng = np.random.RandomState(2)
logger = Logger(log_dir)
for step in range(1, 4):
    logger.scalar_summary("loss", 1.0 / step, step)
    logger.scalar_summary("accuracy", 0.5 + 0.1 * step, step)
    logger.histo_summary("weights", rng.randn(50), step)
logger.image_summary("images", rng.randint(0, 255, (2, 4, 4, 3)).astype(np.uint8), 3)

with tf.Graph().as_default():
    note = tf.summary.text("note", tf.constant("step report"))
    t = tf.summary.tensor_summary("tensor", tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    with tf.Session() as sess:
        s1, s2 = sess.run([note, t])
    logger.writer.add_summary(s1, 4)
    logger.writer.add_summary(s2, 4)
logger.writer.close()
parsed = tf.Summary.FromString(s2)
results = {"logdir": log_dir, "tensor_tag": parsed.value[0].tag,
           "tensor_value": tf.make_ndarray(parsed.value[0].tensor)}
