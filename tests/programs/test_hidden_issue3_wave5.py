"""Issue 3 programs, wave 5 (session 5, helper H2), part 1: training scripts as a course
or a paper replication writes them -- optimizers per variable group, clipping before
apply_gradients, schedules inside the loop, gradient accumulation, hand-written and fused
batch norm with moving statistics, moving averages restored for evaluation, seeded dropout
in a trained net, regularizers, every loss Reduction, checkpoints in the middle of
training.  Each runs under TensorFlow's tf.compat.v1 and under flowlab; values and dtypes
agree.  Part 2 (gradients, convolutions, kernel edge cases): test_hidden_issue3_wave5_grads.py."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from tests.programs.hidden_support import same_results, tf_with_legacy_keras
from tests.programs.wave5_support import IMG, W1, W2, X, Y, loop, mlp, xent


# --- optimizers per variable group, clipping, schedules -------------------------------
def test_two_optimizers_on_two_variable_groups_alternating(tf1):
    def prog(tf):
        logits, (w1, b1, w2, b2) = mlp(tf)
        loss = xent(tf, logits)
        gs = tf.train.get_or_create_global_step()
        body = tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True).minimize(loss, var_list=[w1, b1])
        head = tf.train.AdamOptimizer(0.01).minimize(loss, var_list=[w2, b2], global_step=gs)
        with tf.Session() as s:  # alternating, as a GAN's two players (one run would race on w1)
            s.run(tf.global_variables_initializer())
            trace = []
            for _ in range(6):
                trace.append([s.run([body, loss])[1], s.run([head, loss])[1]])
            trace.append(s.run([gs, w1, w2]))
        return trace, sorted(v.op.name for v in tf.global_variables())

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_discriminative_learning_rates_through_gradient_split(tf1):
    def prog(tf):
        logits, var_list = mlp(tf, act=tf.tanh)
        loss = xent(tf, logits)
        grads = tf.gradients(loss, var_list)
        slow = tf.train.RMSPropOptimizer(0.001, decay=0.8, momentum=0.5)
        fast = tf.train.AdagradOptimizer(0.3)
        with tf.control_dependencies(grads):  # else w1's update may race the backward pass's read of w1
            train = tf.group(slow.apply_gradients(zip(grads[:2], var_list[:2])),
                             fast.apply_gradients(zip(grads[2:], var_list[2:])))
        return loop(tf, train, [loss] + var_list, 6)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_clip_by_global_norm_with_an_unconnected_variable(tf1):
    def prog(tf):
        logits, var_list = mlp(tf)
        unused = tf.Variable([1.0, 2.0], name="unused")
        loss = xent(tf, logits) * 10.0
        opt = tf.train.AdamOptimizer(0.05)
        gv = opt.compute_gradients(loss, var_list=var_list + [unused])
        grads, variables = zip(*gv)
        clipped, norm = tf.clip_by_global_norm(grads, 1.0)
        gs = tf.train.get_or_create_global_step()
        train = opt.apply_gradients([(g, v) for g, v in zip(clipped, variables) if g is not None], global_step=gs)
        trace = loop(tf, train, [loss, norm, tf.global_norm([g for g in clipped if g is not None])], 6)
        return trace, [g is None for g in clipped]

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_clip_by_value_and_by_norm_per_gradient_with_rmsprop(tf1):
    def prog(tf):
        logits, var_list = mlp(tf)
        loss = xent(tf, logits)
        opt = tf.train.RMSPropOptimizer(0.01, momentum=0.9, centered=True)
        gv = opt.compute_gradients(loss)
        capped = [(tf.clip_by_value(g, -0.05, 0.05) if v.shape.ndims == 2 else tf.clip_by_norm(g, 0.01), v)
                  for g, v in gv]
        gs = tf.Variable(0, trainable=False, name="step")
        train = opt.apply_gradients(capped, global_step=gs)
        return loop(tf, train, [loss, gs, capped[1][0]], 7)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


SCHEDULED = {
    "polynomial_cycle_gd": lambda tf, gs: (tf.train.polynomial_decay(0.5, gs, 3, 0.05, power=0.5, cycle=True),
                                           tf.train.GradientDescentOptimizer),
    "inverse_time_adagrad": lambda tf, gs: (tf.train.inverse_time_decay(0.5, gs, 2, 0.3),
                                            tf.train.AdagradOptimizer),
    "natural_exp_staircase_momentum": lambda tf, gs: (tf.train.natural_exp_decay(0.2, gs, 3, 0.4, staircase=True),
                                                      lambda lr: tf.train.MomentumOptimizer(lr, 0.8)),
    "cosine_adam": lambda tf, gs: (tf.train.cosine_decay(0.05, gs, 6, alpha=0.1), tf.train.AdamOptimizer),
    "cosine_restarts_rmsprop": lambda tf, gs: (tf.train.cosine_decay_restarts(0.01, gs, 2, t_mul=2.0, m_mul=0.8),
                                               tf.train.RMSPropOptimizer),
    "piecewise_int64_adadelta": lambda tf, gs: (tf.train.piecewise_constant(gs, [tf.constant(2, tf.int64),
                                                                                 tf.constant(5, tf.int64)],
                                                                            [1.0, 0.5, 0.1]),
                                                tf.train.AdadeltaOptimizer),
}


@pytest.mark.parametrize("name", sorted(SCHEDULED))
def test_schedule_inside_the_training_loop(tf1, name):
    def prog(tf):
        logits, var_list = mlp(tf)
        loss = xent(tf, logits)
        gs = tf.train.get_or_create_global_step()
        lr, make = SCHEDULED[name](tf, gs)
        train = make(lr).minimize(loss, global_step=gs)
        return loop(tf, train, [loss, lr, gs, var_list[3]], 8)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_gradient_accumulation_over_micro_batches(tf1):
    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.int32, [None])
        logits, var_list = mlp(tf, x)
        loss = xent(tf, logits, y)
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        accum = [tf.Variable(tf.zeros_like(v.initialized_value()), trainable=False) for v in var_list]
        gv = opt.compute_gradients(loss, var_list)
        zero = [a.assign(tf.zeros_like(a)) for a in accum]
        add = [a.assign_add(g) for a, (g, _) in zip(accum, gv)]
        apply = opt.apply_gradients([(a / 3.0, v) for a, v in zip(accum, var_list)])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(3):
                s.run(zero)
                for i in range(3):
                    s.run(add, {x: X[4 * i:4 * i + 4], y: Y[4 * i:4 * i + 4]})
                s.run(apply)
                out.append(s.run([loss] + var_list, {x: X, y: Y}))
            return out

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


FED_LR = {
    "adam_eps": lambda tf, lr: tf.train.AdamOptimizer(lr, epsilon=1.0),
    "rmsprop_centered": lambda tf, lr: tf.train.RMSPropOptimizer(lr, decay=0.5, momentum=0.1, epsilon=1e-3,
                                                                 centered=True),
    "adadelta": lambda tf, lr: tf.train.AdadeltaOptimizer(lr, rho=0.5),
    "ftrl": lambda tf, lr: tf.train.FtrlOptimizer(lr, l1_regularization_strength=0.01),
}


@pytest.mark.parametrize("name", sorted(FED_LR))
def test_learning_rate_fed_by_placeholder_and_held_in_a_variable(tf1, name):
    def prog(tf):
        lr = tf.placeholder(tf.float32, [])
        lr_var = tf.Variable(0.1, trainable=False, name="lr")
        logits, var_list = mlp(tf)
        loss = xent(tf, logits)
        first = FED_LR[name](tf, lr).minimize(loss, var_list=var_list[:2], name="first")
        second = FED_LR[name](tf, lr_var).minimize(loss, var_list=var_list[2:], name="second")
        halve = tf.assign(lr_var, lr_var * 0.5)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for i in range(4):
                s.run(first, {lr: 0.2 / (i + 1)})
                s.run(second)
                s.run(halve)
                out.append(s.run([loss] + var_list))
            return out, sorted(v.op.name for v in tf.global_variables())

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


# --- moving averages and batch norm ---------------------------------------------------
def test_ema_shadow_variables_restored_for_evaluation(tf1):
    def prog(tf):
        logits, var_list = mlp(tf)
        loss = xent(tf, logits)
        gs = tf.train.get_or_create_global_step()
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=gs)
        ema = tf.train.ExponentialMovingAverage(0.7, num_updates=gs)
        with tf.control_dependencies([step]):
            train = tf.group(ema.apply(var_list))
        path = os.path.join(tempfile.mkdtemp(), "ema")
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(5):
                s.run(train)
            trained = s.run([loss] + [ema.average(v) for v in var_list])
            saver.save(s, path)
        restore = tf.train.Saver(ema.variables_to_restore())
        with tf.Session() as s:
            restore.restore(s, path)
            averaged = s.run([loss] + var_list)
        return trained, averaged, sorted(ema.variables_to_restore()), ema.average_name(var_list[0])

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_hand_written_batch_norm_with_update_ops(tf1):
    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.int32, [None])
        training = tf.placeholder_with_default(False, [])
        w = tf.Variable(W1, name="w")
        z = tf.matmul(x, w)
        gamma, beta = tf.Variable(tf.ones([8]), name="gamma"), tf.Variable(tf.zeros([8]), name="beta")
        pop_mean = tf.Variable(tf.zeros([8]), trainable=False, name="pop_mean")
        pop_var = tf.Variable(tf.ones([8]), trainable=False, name="pop_var")
        mean, var = tf.nn.moments(z, [0])
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign(pop_mean, pop_mean * 0.9 + mean * 0.1))
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign(pop_var, pop_var * 0.9 + var * 0.1))
        m, v = tf.cond(training, lambda: (mean, var), lambda: (pop_mean.read_value(), pop_var.read_value()))
        h = tf.nn.relu(tf.nn.batch_normalization(z, m, v, beta, gamma, 1e-3))
        out = tf.layers.dense(h, 3, kernel_initializer=tf.constant_initializer(W2))
        loss = xent(tf, out, y)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.AdamOptimizer(0.02).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            trace = []
            for i in range(4):
                s.run(train, {x: X[3 * i:3 * i + 6], y: Y[3 * i:3 * i + 6], training: True})
                trace.append(s.run([loss, pop_mean, pop_var], {x: X, y: Y}))
            return trace, s.run([out, loss], {x: X, y: Y, training: True}), len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))

    same_results(tf_with_legacy_keras(tf1), prog, rtol=1e-5, atol=1e-5)


def test_fused_batch_norm_training_then_inference_with_moving_stats(tf1):
    def prog(tf):
        x = tf.constant(IMG)
        k = tf.Variable(np.random.RandomState(1).randn(3, 3, 2, 4).astype(np.float32) * 0.3, name="k")
        scale, offset = tf.Variable(tf.ones([4]), name="scale"), tf.Variable(tf.zeros([4]), name="offset")
        mov_mean = tf.Variable(tf.zeros([4]), trainable=False)
        mov_var = tf.Variable(tf.ones([4]), trainable=False)
        c = tf.nn.conv2d(x, k, [1, 2, 2, 1], "SAME")
        y, bm, bv = tf.nn.fused_batch_norm(c, scale, offset, epsilon=1e-3)
        upd = [tf.assign_sub(mov_mean, (mov_mean - bm) * 0.2), tf.assign_sub(mov_var, (mov_var - bv) * 0.2)]
        loss = tf.reduce_mean(tf.square(tf.nn.relu(y) - 0.5))
        with tf.control_dependencies(upd):
            train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        yi, _, _ = tf.nn.fused_batch_norm(c, scale, offset, mov_mean, mov_var, epsilon=1e-3, is_training=False)
        trace = loop(tf, train, [loss, mov_mean, mov_var, scale], 4)
        return trace, yi.shape.as_list()

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


# --- dropout, regularizers --------------------------------------------------------------
def test_seeded_dropout_inside_a_trained_net(tf1):
    def prog(tf):
        tf.set_random_seed(11)
        keep = tf.placeholder_with_default(1.0, [])
        x = tf.constant(X)
        w1 = tf.Variable(W1, name="w1")
        h = tf.nn.dropout(tf.nn.relu(tf.matmul(x, w1)), keep_prob=keep, seed=5)
        w2 = tf.Variable(W2, name="w2")
        loss = xent(tf, tf.matmul(h, w2))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(4):
                out.append(s.run([train, loss], {keep: 0.6})[1])
            return out, s.run([loss, w1, w2])

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_dense_and_conv_layers_with_regularizers_trained(tf1):
    def prog(tf):
        tf.set_random_seed(4)
        x = tf.constant(IMG)
        h = tf.layers.conv2d(x, 4, 3, strides=2, padding="valid", activation=tf.nn.relu,
                             kernel_initializer=tf.glorot_normal_initializer(seed=3),
                             kernel_regularizer=lambda k: 0.01 * tf.nn.l2_loss(k), name="conv")
        h = tf.layers.average_pooling2d(h, 2, 2, padding="same")
        d = tf.layers.dense(tf.layers.flatten(h), 3, kernel_initializer=tf.random_uniform_initializer(-0.3, 0.3, seed=7),
                            kernel_regularizer=lambda k: 0.05 * tf.reduce_sum(tf.abs(k)),
                            bias_regularizer=lambda b: 0.1 * tf.reduce_sum(tf.square(b)), name="logits")
        data_loss = xent(tf, d, tf.constant([0, 2, 1]))
        reg = tf.losses.get_regularization_loss()
        loss = data_loss + reg
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
        trace = loop(tf, train, [data_loss, reg], 5)
        return trace, [r.op.name for r in tf.losses.get_regularization_losses()]

    same_results(tf_with_legacy_keras(tf1), prog, rtol=1e-4, atol=1e-5)


def test_weight_decay_over_trainable_variables(tf1):
    def prog(tf):
        logits, _ = mlp(tf)
        l2 = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "b" not in v.op.name])
        loss = xent(tf, logits) + 5e-3 * l2
        train = tf.train.AdamOptimizer(0.03, beta1=0.5).minimize(loss)
        return loop(tf, train, [loss, l2], 6)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


# --- losses ---------------------------------------------------------------------------
REDUCTIONS = ["NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_losses_and_their_gradients_under_each_reduction(tf1, reduction):
    def prog(tf):
        logits, var_list = mlp(tf)
        onehot = tf.one_hot(tf.constant(Y), 3)
        w_row = tf.constant(np.array([1, 0, 2, 1, 1, 0, 3, 1, 1, 1, 0.5, 1], np.float32))
        red = getattr(tf.losses.Reduction, reduction)
        ls = [tf.losses.sparse_softmax_cross_entropy(tf.constant(Y.astype(np.int64)), logits, weights=w_row,
                                                     reduction=red),
              tf.losses.softmax_cross_entropy(onehot, logits, weights=w_row, label_smoothing=0.2, reduction=red),
              tf.losses.sigmoid_cross_entropy(onehot, logits, weights=tf.reshape(w_row, [12, 1]),
                                              label_smoothing=0.1, reduction=red),
              tf.losses.mean_squared_error(onehot, tf.nn.softmax(logits), weights=w_row[:, None], reduction=red),
              tf.losses.huber_loss(onehot, logits, weights=0.5, delta=0.7, reduction=red),
              tf.losses.absolute_difference(onehot, logits, weights=tf.zeros([12, 3]), reduction=red)]
        total = tf.add_n([tf.reduce_sum(loss) for loss in ls])
        fetches = [ls, tf.gradients(total, var_list)]
        if reduction != "NONE":  # (unreduced losses of different shapes do not add up)
            fetches.append(tf.losses.get_total_loss())
        return loop(tf, tf.no_op(), fetches, 1)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_sparse_softmax_with_int64_labels_trained(tf1):
    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.int64, [None])
        logits, var_list = mlp(tf, x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        feed = {x: X, y: Y.astype(np.int64)}
        return loop(tf, train, [loss, acc, tf.argmax(logits, 1)], 6, feed)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_multilabel_sigmoid_with_label_smoothing_trained(tf1):
    def prog(tf):
        logits, var_list = mlp(tf)
        labels = tf.constant((X[:, :3] > 0).astype(np.float32))
        loss = tf.losses.sigmoid_cross_entropy(labels, logits, label_smoothing=0.1)
        pred = tf.cast(tf.sigmoid(logits) > 0.5, tf.float32)
        acc = tf.reduce_mean(tf.cast(tf.equal(pred, labels), tf.float32))
        train = tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.01).minimize(loss)
        return loop(tf, train, [loss, acc], 6)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


# --- checkpoints mid-training ---------------------------------------------------------
def test_saver_mid_training_then_continue_in_a_new_graph(tf1):
    def build(tf):
        logits, var_list = mlp(tf)
        loss = xent(tf, logits)
        gs = tf.train.get_or_create_global_step()
        train = tf.train.AdamOptimizer(0.02).minimize(loss, global_step=gs)
        return loss, gs, train

    def prog(tf):
        ckdir = tempfile.mkdtemp()
        loss, gs, train = build(tf)
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(train)
                saver.save(s, os.path.join(ckdir, "model"), global_step=gs)
            straight = [s.run([train, loss])[1] for _ in range(3)]
        latest = tf.train.latest_checkpoint(ckdir)
        kept = sorted(os.path.basename(p) for p in tf.train.get_checkpoint_state(ckdir).all_model_checkpoint_paths)
        with tf.Graph().as_default():
            loss2, gs2, train2 = build(tf)
            saver2 = tf.train.Saver()
            with tf.Session() as s:
                saver2.restore(s, latest)
                at = s.run(gs2)
                resumed = [s.run([train2, loss2])[1] for _ in range(3)]
        return straight, resumed, at, os.path.basename(latest), kept

    same_results(tf1, prog, rtol=1e-6, atol=1e-7)


def test_checkpoint_bookkeeping_and_reader(tf1):
    # max_to_keep, last_checkpoints, checkpoint_exists, global_step(), restoring an older
    # checkpoint, and NewCheckpointReader (a scalar reads back as a NumPy scalar, as in TF)
    def prog(tf):
        ckdir = tempfile.mkdtemp()
        logits, var_list = mlp(tf)
        loss = xent(tf, logits)
        gs = tf.train.get_or_create_global_step()
        train = tf.train.RMSPropOptimizer(0.01).minimize(loss, global_step=gs)
        saver = tf.train.Saver(max_to_keep=2, keep_checkpoint_every_n_hours=10000)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            paths = []
            for _ in range(4):
                s.run(train)
                step = tf.train.global_step(s, gs)
                paths.append(os.path.basename(saver.save(s, os.path.join(ckdir, "ck"), global_step=step)))
            last = [os.path.basename(p) for p in saver.last_checkpoints]
            exists = [tf.train.checkpoint_exists(os.path.join(ckdir, p)) for p in paths]
            saver.restore(s, os.path.join(ckdir, paths[2]))
            at = s.run([gs, loss])
            reader = tf.train.NewCheckpointReader(os.path.join(ckdir, paths[3]))
            shapes = sorted(reader.get_variable_to_shape_map().items())
            return (paths, last, exists, at, shapes, reader.get_tensor("global_step"), reader.get_tensor("w1"),
                    int(tf.train.global_step(s, gs)))

    same_results(tf1, prog, rtol=1e-6, atol=1e-7)


def test_partial_restore_fine_tuning_a_new_head(tf1):
    def prog(tf):
        path = os.path.join(tempfile.mkdtemp(), "pre")
        with tf.Graph().as_default():
            logits, var_list = mlp(tf)
            train = tf.train.GradientDescentOptimizer(0.5).minimize(xent(tf, logits))
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                tf.train.Saver(var_list[:2]).save(s, path)
                pre = s.run(var_list[:2])
        logits, var_list = mlp(tf)
        head = tf.layers.dense(tf.nn.relu(logits), 2, kernel_initializer=tf.ones_initializer(), name="head")
        loss = tf.reduce_mean(tf.square(head - 1.0))
        head_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="head")
        train = tf.train.AdamOptimizer(0.1).minimize(loss, var_list=head_vars + var_list[2:])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver({"w1": var_list[0], "b1": var_list[1]}).restore(s, path)
            restored = s.run(var_list[:2])
            for _ in range(3):
                s.run(train)
            return pre, restored, s.run([loss] + var_list[:2]), [v.op.name for v in head_vars]

    same_results(tf_with_legacy_keras(tf1), prog, rtol=1e-6, atol=1e-7)
