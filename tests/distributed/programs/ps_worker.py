"""A TensorFlow 1.x ps/worker launcher, as TF1 tutorials write it: one process per
task, the same ClusterSpec everywhere.  Only the import differs between TensorFlow
and flowlab.

    python ps_worker.py {flowlab|tensorflow} JOB INDEX CLUSTER_JSON OUT_JSON LAST_STEP
"""

import json
import os
import sys

import numpy as np

impl, job_name, task_index, cluster_json, out_path, last_step = sys.argv[1:7]
if impl == "tensorflow":
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import flowlab as tf


def main():
    task_index_ = int(task_index)
    cluster = tf.train.ClusterSpec(json.loads(cluster_json))
    server = tf.train.Server(cluster, job_name=job_name, task_index=task_index_)
    if job_name == "ps":
        server.join()
        return
    with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index_}",
                                                  cluster=cluster)):
        w = tf.get_variable("w", initializer=np.array([[0.5, -0.1], [0.2, 0.3], [-0.4, 0.1]], np.float32))
        b = tf.get_variable("b", initializer=np.zeros([2], np.float32))
        x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        target = tf.constant([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, -1.0]])
        loss = tf.reduce_mean(tf.square(tf.tanh(tf.matmul(x, w) + b) - target))
        global_step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.2, 0.9).minimize(loss, global_step=global_step)
    hooks = [tf.train.StopAtStepHook(last_step=int(last_step))]
    losses, steps = [], []
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=(task_index_ == 0), hooks=hooks,
                                           log_step_count_steps=0) as sess:
        while not sess.should_stop():
            value, _, step = sess.run([loss, train, global_step])
            losses.append(float(value))
            steps.append(int(step))
    with open(out_path, "w") as f:
        json.dump({"losses": losses, "steps": steps}, f)


if __name__ == "__main__":
    main()
