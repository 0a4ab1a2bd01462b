"""tf.train.MonitoredTrainingSession as TF1 training scripts configure it: a Scaffold
with a Saver(max_to_keep), CheckpointSaverHook(save_steps) and SummarySaverHook
(save_steps, summary_op) writing to the checkpoint dir, LoggingTensorHook,
StepCounterHook-free step bookkeeping through the global step, a
FinalOpsHook fetching the final weights, and a MonitoredSession restoring the last
checkpoint through a ChiefSessionCreator; events read back with TensorBoard's reader.
Summaries are saved every step: with save_steps > 1 the hook's trigger depends on
whether its global-step read ran before or after the step's increment, which in
TensorFlow varies from run to run."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(17)
xs = rng.randn(12, 3).astype(np.float32)
ys = (xs @ np.array([[1.0], [2.0], [-1.0]], np.float32)).astype(np.float32)
ckpt_dir = tempfile.mkdtemp()
results = {"steps": []}


def model():
    tf.set_random_seed(3)
    gs = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer(seed=1))
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(xs), w) - ys), name="loss")
    tf.summary.scalar("loss", loss)
    # (no histogram of w: the hook's summaries run with the train op, where TensorFlow
    # reads w before or after its update as its threads go; the loss is read before it)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return gs, w, loss, train


with tf.Graph().as_default():
    gs, w, loss, train = model()
    scaffold = tf.train.Scaffold(saver=tf.train.Saver(max_to_keep=3))
    final = tf.train.FinalOpsHook(w)
    hooks = [tf.train.StopAtStepHook(num_steps=6),
             tf.train.CheckpointSaverHook(ckpt_dir, save_steps=2, scaffold=scaffold),
             tf.train.SummarySaverHook(save_steps=1, output_dir=ckpt_dir, summary_op=tf.summary.merge_all()),
             tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=3)]
    with tf.train.MonitoredTrainingSession(scaffold=scaffold, hooks=hooks, chief_only_hooks=[final],
                                           save_checkpoint_secs=None, save_summaries_steps=None,
                                           save_summaries_secs=None, log_step_count_steps=None) as sess:
        while not sess.should_stop():
            _, step, l = sess.run([train, gs, loss])
            results["steps"].append((step, l))
    results["final_w"] = final.final_ops_values
results["checkpoints"] = sorted(f for f in os.listdir(ckpt_dir) if f.endswith(".index"))

with tf.Graph().as_default():
    gs, w, loss, train = model()
    creator = tf.train.ChiefSessionCreator(checkpoint_dir=ckpt_dir)
    with tf.train.MonitoredSession(session_creator=creator) as sess:
        results["restored"] = sess.run([gs, w])
results["logdir"] = ckpt_dir
