"""The TF 1.x CIFAR-10 tutorial (cifar10.py, cifar10_train.py, cifar10_eval.py) on a
small synthetic batch: _variable_on_cpu / _variable_with_weight_decay with an L2 loss
added to the 'losses' collection, conv + lrn + pooling, exponential_decay with
staircase, _add_loss_summaries' ExponentialMovingAverage over the losses, histograms
of variables and gradients, the variables' moving averages applied after the train step
under control_dependencies, tf.train.MonitoredTrainingSession with a checkpoint_dir,
StopAtStepHook, NanTensorHook and a _LoggerHook(SessionRunHook) reading the loss through
SessionRunArgs, then the eval: EMA variables_to_restore, get_checkpoint_state and
in_top_k precision."""
import re
import tempfile

import numpy as np

rng = np.random.RandomState(10)
IMAGES = rng.rand(8, 12, 12, 3).astype(np.float32)
LABELS = rng.randint(0, 5, 8).astype(np.int32)
NUM_CLASSES = 5
MOVING_AVERAGE_DECAY = 0.9999
NUM_EPOCHS_PER_DECAY = 350.0
LEARNING_RATE_DECAY_FACTOR = 0.1
INITIAL_LEARNING_RATE = 0.1
TOWER_NAME = "tower"
train_dir = tempfile.mkdtemp()
results = {"logger": []}


def _activation_summary(x):
    tensor_name = re.sub("%s_[0-9]*/" % TOWER_NAME, "", x.op.name)
    tf.summary.histogram(tensor_name + "/activations", x)
    tf.summary.scalar(tensor_name + "/sparsity", tf.nn.zero_fraction(x))


def _variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
    return var


def _variable_with_weight_decay(name, shape, stddev, wd):
    var = _variable_on_cpu(name, shape, tf.truncated_normal_initializer(stddev=stddev, dtype=tf.float32))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name="weight_loss")
        tf.add_to_collection("losses", weight_decay)
    return var


def inference(images):
    with tf.variable_scope("conv1") as scope:
        kernel = _variable_with_weight_decay("weights", shape=[5, 5, 3, 8], stddev=5e-2, wd=None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding="SAME")
        biases = _variable_on_cpu("biases", [8], tf.constant_initializer(0.0))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv1 = tf.nn.relu(pre_activation, name=scope.name)
        _activation_summary(conv1)
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME", name="pool1")
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm1")
    with tf.variable_scope("local3") as scope:
        reshape = tf.reshape(norm1, [images.get_shape().as_list()[0], -1])
        dim = reshape.get_shape()[1].value
        weights = _variable_with_weight_decay("weights", shape=[dim, 16], stddev=0.04, wd=0.004)
        biases = _variable_on_cpu("biases", [16], tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        _activation_summary(local3)
    with tf.variable_scope("softmax_linear") as scope:
        weights = _variable_with_weight_decay("weights", [16, NUM_CLASSES], stddev=1 / 16.0, wd=None)
        biases = _variable_on_cpu("biases", [NUM_CLASSES], tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local3, weights), biases, name=scope.name)
        _activation_summary(softmax_linear)
    return softmax_linear


def loss(logits, labels):
    labels = tf.cast(labels, tf.int64)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits, name="cross_entropy_per_example")
    cross_entropy_mean = tf.reduce_mean(cross_entropy, name="cross_entropy")
    tf.add_to_collection("losses", cross_entropy_mean)
    return tf.add_n(tf.get_collection("losses"), name="total_loss")


def _add_loss_summaries(total_loss):
    loss_averages = tf.train.ExponentialMovingAverage(0.9, name="avg")
    losses = tf.get_collection("losses")
    loss_averages_op = loss_averages.apply(losses + [total_loss])
    for l in losses + [total_loss]:
        tf.summary.scalar(l.op.name + " (raw)", l)
        tf.summary.scalar(l.op.name, loss_averages.average(l))
    return loss_averages_op


def train(total_loss, global_step):
    num_batches_per_epoch = 2
    decay_steps = int(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY)
    lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, decay_steps,
                                    LEARNING_RATE_DECAY_FACTOR, staircase=True)
    tf.summary.scalar("learning_rate", lr)
    loss_averages_op = _add_loss_summaries(total_loss)
    with tf.control_dependencies([loss_averages_op]):
        opt = tf.train.GradientDescentOptimizer(lr)
        grads = opt.compute_gradients(total_loss)
    apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
    for var in tf.trainable_variables():
        tf.summary.histogram(var.op.name, var)
    for grad, var in grads:
        if grad is not None:
            tf.summary.histogram(var.op.name + "/gradients", grad)
    variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    with tf.control_dependencies([apply_gradient_op]):
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
    return variables_averages_op


with tf.Graph().as_default():
    tf.set_random_seed(1)
    global_step = tf.train.get_or_create_global_step()
    with tf.device("/cpu:0"):
        images, labels = tf.constant(IMAGES), tf.constant(LABELS)
    logits = inference(images)
    total = loss(logits, labels)
    train_op = train(total, global_step)

    class _LoggerHook(tf.train.SessionRunHook):
        def begin(self):
            self._step = -1

        def before_run(self, run_context):
            self._step += 1
            return tf.train.SessionRunArgs(total)

        def after_run(self, run_context, run_values):
            results["logger"].append((self._step, run_values.results))

    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=train_dir,
            hooks=[tf.train.StopAtStepHook(last_step=4), tf.train.NanTensorHook(total), _LoggerHook()],
            save_summaries_steps=None, save_summaries_secs=None, log_step_count_steps=None) as mon_sess:
        while not mon_sess.should_stop():
            mon_sess.run(train_op)

with tf.Graph().as_default() as g:
    images, labels = tf.constant(IMAGES), tf.constant(LABELS)
    logits = inference(images)
    top_k_op = tf.nn.in_top_k(logits, labels, 1)
    variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
    variables_to_restore = variable_averages.variables_to_restore()
    saver = tf.train.Saver(variables_to_restore)
    with tf.Session() as sess:
        ckpt = tf.train.get_checkpoint_state(train_dir)
        saver.restore(sess, ckpt.model_checkpoint_path)
        global_step = ckpt.model_checkpoint_path.split("/")[-1].split("-")[-1]
        predictions = sess.run([top_k_op])
        results["eval"] = (global_step, np.sum(predictions) / 8.0)
        results["restored"] = sess.run(tf.trainable_variables()[-1])
    results["to_restore"] = sorted(variables_to_restore)
