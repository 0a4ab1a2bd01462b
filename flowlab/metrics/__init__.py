"""`tf.metrics`: streaming metrics, each a `(value, update_op)` pair over local variables.

    acc, update = tf.metrics.accuracy(labels, predictions)
    sess.run(tf.local_variables_initializer())
    for batch in batches:
        sess.run(update, feed_dict=batch)
    print(sess.run(acc))

Built in flowlab.ops.metrics_impl (means, counts, precision/recall, mean_iou) and
flowlab.ops.metrics_thresholds (auc and the metrics at thresholds) and
flowlab.ops.metrics_at_k (recall and precision of the top k classes).
"""

from flowlab.ops.metrics_at_k import *  # noqa: F401,F403
from flowlab.ops.metrics_at_k import __all__ as _at_k_all
from flowlab.ops.metrics_impl import *  # noqa: F401,F403
from flowlab.ops.metrics_impl import __all__ as _impl_all
from flowlab.ops.metrics_thresholds import *  # noqa: F401,F403
from flowlab.ops.metrics_thresholds import __all__ as _thresholds_all

__all__ = [*_impl_all, *_thresholds_all, *_at_k_all]
