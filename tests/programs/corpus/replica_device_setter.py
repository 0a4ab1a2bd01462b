"""Between-graph replication as the TF1 distributed guide builds the graph: a
ClusterSpec of ps and worker jobs, tf.train.replica_device_setter (round-robin over
two ps tasks, by cluster and by ps_tasks), the device each variable, op and
optimizer slot lands on, and tf.device merging inside it.  Only the graph is built (no
servers); the devices are what is compared."""
import numpy as np

cluster = tf.train.ClusterSpec({"ps": ["localhost:2222", "localhost:2223"],
                                "worker": ["localhost:2224", "localhost:2225"]})
results = {"cluster": (cluster.jobs, cluster.num_tasks("ps"), cluster.task_address("worker", 1))}

with tf.Graph().as_default() as g:
    with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:1", cluster=cluster)):
        w1 = tf.Variable(tf.zeros([4, 8]), name="w1")
        b1 = tf.Variable(tf.zeros([8]), name="b1")
        w2 = tf.Variable(tf.zeros([8, 2]), name="w2")
        gs = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2)
        with tf.device("/cpu:0"):
            loss = tf.reduce_mean(y)
        opt = tf.train.AdagradOptimizer(0.1)
        train_op = opt.minimize(loss, global_step=gs)
    results["devices"] = sorted((op.name, op.device) for op in g.get_operations()
                                if op.type in ("VariableV2", "MatMul", "Mean", "ApplyAdagrad", "Placeholder"))

with tf.Graph().as_default() as g:
    setter = tf.train.replica_device_setter(ps_tasks=2, ps_device="/job:ps", worker_device="/job:worker")
    with tf.device(setter):
        big = tf.Variable(tf.zeros([100, 10]), name="big")
        small1 = tf.Variable(tf.zeros([2]), name="small1")
        small2 = tf.Variable(tf.zeros([3]), name="small2")
        z = big * 2.0
    results["round_robin"] = [(v.op.name, v.device) for v in (big, small1, small2)] + [("z", z.device)]
    results["values"] = np.float32(0)
