"""aymericdamien TensorFlow-Examples: multigpu_cnn.py and the cifar10_multi_gpu_train
towers: a device function that reads `op.node_def.op` to pin variables to the
parameter device, one tower per device under name_scope('tower_%d') with
variable_scope reuse, average_gradients over the towers' compute_gradients, one
apply_gradients (two CPU towers here, as a machine without GPUs runs it)."""
import numpy as np

tf.set_random_seed(6)
rng = np.random.RandomState(6)
data_x = rng.rand(16, 8, 8, 1).astype(np.float32)
data_y = rng.randint(0, 3, 16).astype(np.int32)
num_gpus = 2
batch_size = 4
PS_OPS = ["Variable", "VariableV2", "AutoReloadVariable"]


def assign_to_device(device, ps_device="/cpu:0"):
    def _assign(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        if node_def.op in PS_OPS:
            return "/" + ps_device
        else:
            return device
    return _assign


def conv_net(x, n_classes, reuse, is_training):
    with tf.variable_scope("ConvNet", reuse=reuse):
        conv1 = tf.layers.conv2d(x, 4, 3, activation=tf.nn.relu)
        conv1 = tf.layers.max_pooling2d(conv1, 2, 2)
        fc1 = tf.layers.flatten(conv1)
        fc1 = tf.layers.dense(fc1, 16)
        fc1 = tf.layers.dropout(fc1, rate=0.5, training=is_training)
        out = tf.layers.dense(fc1, n_classes)
        out = tf.nn.softmax(out) if not is_training else out
    return out


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            expanded_g = tf.expand_dims(g, 0)
            grads.append(expanded_g)
        grad = tf.concat(grads, 0)
        grad = tf.reduce_mean(grad, 0)
        v = grad_and_vars[0][1]
        grad_and_var = (grad, v)
        average_grads.append(grad_and_var)
    return average_grads


device_log = []
with tf.device("/cpu:0"):
    tower_grads = []
    reuse_vars = False
    X = tf.placeholder(tf.float32, [None, 8, 8, 1])
    Y = tf.placeholder(tf.int32, [None])
    for i in range(num_gpus):
        with tf.device(assign_to_device("/cpu:0", ps_device="cpu:0")):
            with tf.name_scope("tower_%d" % i):
                _x = X[i * batch_size: (i + 1) * batch_size]
                _y = Y[i * batch_size: (i + 1) * batch_size]
                logits_train = conv_net(_x, 3, reuse=reuse_vars, is_training=False)
                loss_op = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    logits=logits_train, labels=_y))
                tf.add_to_collection("losses", loss_op)
                optimizer = tf.train.AdamOptimizer(learning_rate=0.01)
                grads = optimizer.compute_gradients(loss_op)
                reuse_vars = True
                tower_grads.append(grads)
                device_log.append([(op.name, op.node_def.op) for op in tf.get_default_graph().get_operations()
                                   if op.node_def.op == "VariableV2"])
    tower_grads = average_gradients(tower_grads)
    train_op = optimizer.apply_gradients(tower_grads)
    total_loss = tf.add_n(tf.get_collection("losses"), name="total_loss")
    init = tf.global_variables_initializer()

results = {"log": []}
with tf.Session(config=tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)) as sess:
    sess.run(init)
    for step in range(3):
        sl = slice((step % 2) * 8, (step % 2 + 1) * 8)
        _, l = sess.run([train_op, total_loss], feed_dict={X: data_x[sl], Y: data_y[sl]})
        results["log"].append(l)
results["variables"] = device_log[-1]
results["devices"] = sorted({op.device for op in tf.get_default_graph().get_operations()
                             if op.type == "VariableV2"})
results["tower_ops"] = sorted(op.name for op in tf.get_default_graph().get_operations()
                              if op.name.startswith("tower_1/ConvNet/dense_1"))[:6]
