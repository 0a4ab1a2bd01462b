"""Streaming evaluation as TF 1.x eval scripts write it: tf.metrics accuracy,
precision, recall, auc, mean, mean_squared_error, mean_iou and
precision_at_k-style in_top_k, updated batch by batch after
local_variables_initializer, read at the end and reset by re-initializing."""
import numpy as np

rng = np.random.RandomState(10)
all_labels = rng.randint(0, 2, 40).astype(np.int64)
all_scores = np.clip(all_labels * 0.4 + rng.rand(40) * 0.6, 0, 1).astype(np.float32)

labels = tf.placeholder(tf.int64, [None])
scores = tf.placeholder(tf.float32, [None])
predictions = tf.cast(scores > 0.5, tf.int64)
with tf.name_scope("eval"):
    acc, acc_op = tf.metrics.accuracy(labels=labels, predictions=predictions)
    prec, prec_op = tf.metrics.precision(labels, predictions)
    rec, rec_op = tf.metrics.recall(labels, predictions)
    auc, auc_op = tf.metrics.auc(labels, scores, num_thresholds=50)
    mean, mean_op = tf.metrics.mean(scores)
    mse, mse_op = tf.metrics.mean_squared_error(tf.cast(labels, tf.float32), scores)
    miou, miou_op = tf.metrics.mean_iou(labels, predictions, num_classes=2)
    fn, fn_op = tf.metrics.false_negatives(labels, predictions)
update_ops = tf.group(acc_op, prec_op, rec_op, auc_op, mean_op, mse_op, miou_op, fn_op)
metrics = {"accuracy": acc, "precision": prec, "recall": rec, "auc": auc, "mean": mean, "mse": mse,
           "mean_iou": miou, "fn": fn}

results = {"running": []}
with tf.Session() as sess:
    sess.run(tf.local_variables_initializer())
    for i in range(4):
        sl = slice(i * 10, (i + 1) * 10)
        sess.run(update_ops, {labels: all_labels[sl], scores: all_scores[sl]})
        results["running"].append(sess.run(acc))
    results["final"] = sess.run(metrics)
    results["locals"] = sorted(v.op.name for v in tf.local_variables())
    sess.run(tf.variables_initializer(tf.local_variables()))
    results["after_reset"] = sess.run(acc)
    results["op_values"] = sess.run([acc_op, mean_op], {labels: all_labels[:5], scores: all_scores[:5]})
