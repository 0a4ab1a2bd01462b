"""tf.train.Supervisor as the TF 1.x PTB tutorial and the distributed-training guide use
it: Supervisor(logdir=..., save_model_secs=0, summary_op=None), sv.managed_session(),
sv.should_stop(), sv.global_step, sv.saver.save at the end, and a second Supervisor
over the same logdir restoring the checkpoint it left."""
import os
import tempfile

import numpy as np

rng = np.random.RandomState(20)
xs = rng.randn(10, 2).astype(np.float32)
ys = (xs[:, :1] * 3.0 - xs[:, 1:] + 1.0).astype(np.float32)
logdir = tempfile.mkdtemp()
results = {"log": []}


def build():
    tf.set_random_seed(12)
    x = tf.constant(xs)
    y = tf.constant(ys)
    w = tf.get_variable("w", [2, 1], initializer=tf.random_normal_initializer(seed=1))
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    gs = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return w, loss, train_op


with tf.Graph().as_default():
    w, loss, train_op = build()
    sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0, save_summaries_secs=0, summary_op=None)
    with sv.managed_session() as session:
        for step in range(4):
            if sv.should_stop():
                break
            _, l = session.run([train_op, loss])
            results["log"].append(l)
        results["global_step"] = session.run(sv.global_step)
        sv.saver.save(session, os.path.join(logdir, "model.ckpt"), global_step=sv.global_step)
        results["w"] = session.run(w)
    results["stopped"] = sv.should_stop()

with tf.Graph().as_default():
    w, loss, train_op = build()
    sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0, save_summaries_secs=0, summary_op=None)
    with sv.managed_session() as session:
        results["restored_w"] = session.run(w)
        results["restored_step"] = session.run(sv.global_step)
        results["continued"] = session.run([train_op, loss])[1]
results["latest"] = os.path.basename(tf.train.latest_checkpoint(logdir))
