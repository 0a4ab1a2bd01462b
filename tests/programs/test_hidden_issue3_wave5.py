"""Issue 3 programs, wave 5 (session 5, helper H2): training scripts as a course or a
paper replication writes them -- optimizers per variable group, clipping before
apply_gradients, schedules inside the loop, hand-written batch norm with UPDATE_OPS,
moving averages restored for evaluation, seeded dropout in a trained net, gradient
penalties and Hessians, while_loop and cond inside losses, straight-through estimators,
embedding tables read twice, every loss Reduction, strided/transposed/depthwise
convolutions and overlapping pools with ties, checkpoints in the middle of training.
Each runs under TensorFlow's tf.compat.v1 and under flowlab; values and dtypes agree."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from tests.programs.hidden_support import same_results, tf_with_legacy_keras

RS = np.random.RandomState(2025)
X = RS.randn(12, 5).astype(np.float32)
W_TRUE = RS.randn(5, 3).astype(np.float32)
Y = (X @ W_TRUE).argmax(axis=1).astype(np.int32)
Y_REG = (X @ W_TRUE[:, :1] + 0.1 * RS.randn(12, 1)).astype(np.float32)
W1 = (RS.randn(5, 8) * 0.3).astype(np.float32)
W2 = (RS.randn(8, 3) * 0.3).astype(np.float32)
IMG = RS.randn(3, 9, 9, 2).astype(np.float32)


def _mlp(tf, x=None, act=None):
    """A 5-8-3 net from fixed initial values; returns (logits, [w1, b1, w2, b2])."""
    x = tf.constant(X) if x is None else x
    w1, b1 = tf.Variable(W1, name="w1"), tf.Variable(tf.zeros([8]), name="b1")
    w2, b2 = tf.Variable(W2, name="w2"), tf.Variable(tf.zeros([3]), name="b2")
    h = (act or tf.nn.relu)(tf.matmul(x, w1) + b1)
    return tf.matmul(h, w2) + b2, [w1, b1, w2, b2]


def _xent(tf, logits, labels=None):
    labels = tf.constant(Y) if labels is None else labels
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def _loop(tf, train, fetches, steps, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        trace = []
        for _ in range(steps):
            s.run(train, feed)
            trace.append(s.run(fetches, feed))
        return trace


# --- optimizers per variable group, clipping, schedules -------------------------------
def test_two_optimizers_on_two_variable_groups_alternating(tf1):
    def prog(tf):
        logits, (w1, b1, w2, b2) = _mlp(tf)
        loss = _xent(tf, logits)
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
        logits, var_list = _mlp(tf, act=tf.tanh)
        loss = _xent(tf, logits)
        grads = tf.gradients(loss, var_list)
        slow = tf.train.RMSPropOptimizer(0.001, decay=0.8, momentum=0.5)
        fast = tf.train.AdagradOptimizer(0.3)
        with tf.control_dependencies(grads):  # else w1's update may race the backward pass's read of w1
            train = tf.group(slow.apply_gradients(zip(grads[:2], var_list[:2])),
                             fast.apply_gradients(zip(grads[2:], var_list[2:])))
        return _loop(tf, train, [loss] + var_list, 6)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_clip_by_global_norm_with_an_unconnected_variable(tf1):
    def prog(tf):
        logits, var_list = _mlp(tf)
        unused = tf.Variable([1.0, 2.0], name="unused")
        loss = _xent(tf, logits) * 10.0
        opt = tf.train.AdamOptimizer(0.05)
        gv = opt.compute_gradients(loss, var_list=var_list + [unused])
        grads, variables = zip(*gv)
        clipped, norm = tf.clip_by_global_norm(grads, 1.0)
        gs = tf.train.get_or_create_global_step()
        train = opt.apply_gradients([(g, v) for g, v in zip(clipped, variables) if g is not None], global_step=gs)
        trace = _loop(tf, train, [loss, norm, tf.global_norm([g for g in clipped if g is not None])], 6)
        return trace, [g is None for g in clipped]

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_clip_by_value_and_by_norm_per_gradient_with_rmsprop(tf1):
    def prog(tf):
        logits, var_list = _mlp(tf)
        loss = _xent(tf, logits)
        opt = tf.train.RMSPropOptimizer(0.01, momentum=0.9, centered=True)
        gv = opt.compute_gradients(loss)
        capped = [(tf.clip_by_value(g, -0.05, 0.05) if v.shape.ndims == 2 else tf.clip_by_norm(g, 0.01), v)
                  for g, v in gv]
        gs = tf.Variable(0, trainable=False, name="step")
        train = opt.apply_gradients(capped, global_step=gs)
        return _loop(tf, train, [loss, gs, capped[1][0]], 7)

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
        logits, var_list = _mlp(tf)
        loss = _xent(tf, logits)
        gs = tf.train.get_or_create_global_step()
        lr, make = SCHEDULED[name](tf, gs)
        train = make(lr).minimize(loss, global_step=gs)
        return _loop(tf, train, [loss, lr, gs, var_list[3]], 8)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_gradient_accumulation_over_micro_batches(tf1):
    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.int32, [None])
        logits, var_list = _mlp(tf, x)
        loss = _xent(tf, logits, y)
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


# --- moving averages and batch norm ---------------------------------------------------
def test_ema_shadow_variables_restored_for_evaluation(tf1):
    def prog(tf):
        logits, var_list = _mlp(tf)
        loss = _xent(tf, logits)
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
        loss = _xent(tf, out, y)
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
        trace = _loop(tf, train, [loss, mov_mean, mov_var, scale], 4)
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
        loss = _xent(tf, tf.matmul(h, w2))
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
        data_loss = _xent(tf, d, tf.constant([0, 2, 1]))
        reg = tf.losses.get_regularization_loss()
        loss = data_loss + reg
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
        trace = _loop(tf, train, [data_loss, reg], 5)
        return trace, [r.op.name for r in tf.losses.get_regularization_losses()]

    same_results(tf_with_legacy_keras(tf1), prog, rtol=1e-4, atol=1e-5)


def test_weight_decay_over_trainable_variables(tf1):
    def prog(tf):
        logits, _ = _mlp(tf)
        l2 = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "b" not in v.op.name])
        loss = _xent(tf, logits) + 5e-3 * l2
        train = tf.train.AdamOptimizer(0.03, beta1=0.5).minimize(loss)
        return _loop(tf, train, [loss, l2], 6)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


# --- gradients: penalties, Hessians, loops, conds, estimators ---------------------------
def test_gradient_penalty_double_backprop(tf1):
    def prog(tf):
        x = tf.constant(X)
        logits, var_list = _mlp(tf, x, act=tf.nn.softplus)
        critic = tf.reduce_sum(logits * tf.constant([1.0, -1.0, 0.5]), axis=1)
        gx = tf.gradients(critic, x)[0]
        penalty = tf.reduce_mean(tf.square(tf.sqrt(tf.reduce_sum(tf.square(gx), axis=1)) - 1.0))
        loss = -tf.reduce_mean(critic) + 10.0 * penalty
        train = tf.train.AdamOptimizer(1e-3, beta1=0.5, beta2=0.9).minimize(loss)
        return _loop(tf, train, [loss, penalty, var_list[0]], 4)

    same_results(tf1, prog, rtol=1e-4, atol=1e-5)


def test_hessian_vector_product_and_newton_step(tf1):
    def prog(tf):
        w = tf.Variable([[0.5], [-0.3], [0.2], [0.1], [0.0]], name="w")
        p = tf.sigmoid(tf.matmul(tf.constant(X), w))
        yb = tf.constant((Y_REG > 0).astype(np.float32))
        loss = tf.reduce_mean(-yb * tf.log(p) - (1 - yb) * tf.log(1 - p)) + 0.01 * tf.reduce_sum(w * w)
        g = tf.gradients(loss, w)[0]
        v = tf.constant(np.ones((5, 1), np.float32))
        hv = tf.gradients(tf.reduce_sum(g * tf.stop_gradient(v)), w)[0]
        h = tf.stack([tf.gradients(g[i, 0], w)[0][:, 0] for i in range(5)])
        newton = tf.assign_sub(w, tf.matrix_solve(h, g))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([loss, g, hv, h])
            for _ in range(3):
                s.run(newton)
            return first, s.run([loss, w])

    same_results(tf1, prog, rtol=1e-4, atol=1e-5)


def test_while_loop_unrolled_recurrence_trained(tf1):
    def prog(tf):
        w = tf.Variable(0.5, name="w")
        u = tf.Variable([0.2, -0.1, 0.3], name="u")
        xs = tf.constant(np.linspace(-1, 1, 18).reshape(6, 3).astype(np.float32))

        def body(i, h, acc):
            h = tf.tanh(w * h + tf.reduce_sum(xs[i] * u))
            return i + 1, h, acc + h * h

        _, h, acc = tf.while_loop(lambda i, *_: i < 6, body, [tf.constant(0), tf.constant(0.1), tf.constant(0.0)])
        loss = tf.square(h - 0.5) + 0.1 * acc
        grads = tf.gradients(loss, [w, u])
        train = tf.train.MomentumOptimizer(0.2, 0.5).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([h, acc, grads])
            for _ in range(5):
                s.run(train)
            return first, s.run([loss, w, u])

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_cond_inside_a_robust_loss(tf1):
    def prog(tf):
        w = tf.Variable(np.zeros((5, 1), np.float32), name="w")
        r = tf.matmul(tf.constant(X), w) - tf.constant(Y_REG)
        mse = tf.reduce_mean(tf.square(r))
        use_huber = tf.placeholder(tf.bool, [])
        loss = tf.cond(use_huber, lambda: tf.losses.huber_loss(tf.constant(Y_REG), r + tf.constant(Y_REG), delta=0.3),
                       lambda: mse)
        g = tf.gradients(loss, w)[0]
        train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for i in range(6):
                f = {use_huber: i % 2 == 0}
                out.append(s.run([loss, g], f))
                s.run(train, f)
            return out, s.run(w)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_target_network_with_stop_gradient(tf1):
    def prog(tf):
        q_w = tf.Variable(W2, name="q")
        t_w = tf.Variable(W2, name="target", trainable=False)
        s_feat = tf.constant(np.abs(X[:, :4] @ np.ones((4, 8), np.float32) / 4).astype(np.float32))
        q = tf.matmul(s_feat, q_w)
        q_next = tf.stop_gradient(tf.reduce_max(tf.matmul(s_feat[::-1], q_w), axis=1))
        q_tgt = tf.reduce_max(tf.matmul(s_feat[::-1], t_w), axis=1)
        act = tf.constant(Y)
        q_sa = tf.reduce_sum(q * tf.one_hot(act, 3), axis=1)
        loss = tf.reduce_mean(tf.square(1.0 + 0.9 * (q_next + q_tgt) / 2 - q_sa))
        train = tf.train.RMSPropOptimizer(0.01).minimize(loss)
        sync = tf.assign(t_w, q_w)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for i in range(6):
                s.run(train)
                if i % 3 == 2:
                    s.run(sync)
                out.append(s.run([loss, t_w]))
            return out, [v.op.name for v in tf.trainable_variables()]

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_straight_through_estimator_by_gradient_override(tf1):
    def prog(tf):
        g = tf.get_default_graph()
        w = tf.Variable(W1, name="w")
        with g.gradient_override_map({"Sign": "Identity"}):
            wb = tf.sign(w)
        with g.gradient_override_map({"Round": "Identity"}):
            h = tf.round(tf.sigmoid(tf.matmul(tf.constant(X), wb) * 0.3) * 4.0) / 4.0
        w2 = tf.Variable(W2, name="w2")
        loss = _xent(tf, tf.matmul(h, w2))
        grads = tf.gradients(loss, [w, w2])
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([loss, grads])
            for _ in range(3):
                s.run(train)
            return first, s.run([loss, w2])

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_custom_gradient_clipping_layer_and_registered_gradient(tf1):
    def prog(tf):
        @tf.custom_gradient
        def clip_grad(x):
            return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.01, 0.01)

        @tf.RegisterGradient("H2ScaledTanh")
        def _scaled(op, grad):
            return grad * 0.5 * (1 - tf.square(op.outputs[0]))

        logits, var_list = _mlp(tf)
        with tf.get_default_graph().gradient_override_map({"Tanh": "H2ScaledTanh"}):
            squashed = tf.tanh(clip_grad(logits))
        loss = tf.reduce_mean(tf.square(squashed - tf.one_hot(tf.constant(Y), 3)))
        grads = tf.gradients(loss, var_list)
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([loss, grads])
            for _ in range(3):
                s.run(train)
            return first, s.run(var_list)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_grad_ys_over_several_outputs(tf1):
    def prog(tf):
        logits, var_list = _mlp(tf)
        p = tf.nn.softmax(logits)
        lp = tf.nn.log_softmax(logits)
        dy = [tf.constant(np.linspace(-1, 1, 36).reshape(12, 3).astype(np.float32)), tf.ones_like(lp) * 0.5]
        g = tf.gradients([p, lp], var_list, grad_ys=dy)
        g1 = tf.gradients(tf.reduce_logsumexp(logits, axis=1), var_list[2:], grad_ys=tf.range(12.0))
        return _loop(tf, tf.no_op(), [g, g1], 1)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_embedding_table_read_twice_sums_indexed_slices(tf1):
    def prog(tf):
        emb = tf.Variable(np.random.RandomState(2).randn(7, 4).astype(np.float32), name="emb")
        ctx_ids, tgt_ids = tf.constant([[0, 2, 2], [5, 1, 6]]), tf.constant([3, 2])
        ctx = tf.reduce_mean(tf.nn.embedding_lookup(emb, ctx_ids), axis=1)
        tgt = tf.nn.embedding_lookup(emb, tgt_ids)
        loss = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones([2]),
                                                                      logits=tf.reduce_sum(ctx * tgt, axis=1)))
        g = tf.gradients(loss, emb)[0]
        opt = tf.train.MomentumOptimizer(0.5, 0.9)
        gv = opt.compute_gradients(loss, [emb])
        train = opt.apply_gradients(gv)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            gval = s.run(g)
            for _ in range(4):
                s.run(train)
            return [type(g).__name__, g.op.type if hasattr(g, "op") else None, gval.indices, gval.values,
                    type(gv[0][0]).__name__, s.run([loss, emb])]

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_softmax_family_gradients_in_one_attention_loss(tf1):
    def prog(tf):
        rs = np.random.RandomState(3)
        q = tf.Variable(rs.randn(2, 4, 3).astype(np.float32), name="q")
        k = tf.constant(rs.randn(2, 5, 3).astype(np.float32))
        scores = tf.matmul(q, k, transpose_b=True) / np.sqrt(3.0).astype(np.float32)
        att = tf.nn.softmax(scores)
        lse = tf.reduce_logsumexp(scores, axis=-1)
        lsm = tf.nn.log_softmax(scores, axis=1)
        mean, var = tf.nn.moments(att, axes=[0, 2], keep_dims=True)
        loss = (tf.reduce_sum(att * tf.range(5.0)) + tf.reduce_sum(lse) * 0.1 + tf.reduce_mean(lsm)
                + tf.nn.l2_loss(q) * 0.01 + tf.norm(q, axis=-1)[0, 1] + tf.reduce_sum(var) - tf.reduce_sum(mean))
        return _loop(tf, tf.no_op(), [loss, mean, tf.gradients(loss, q)], 1)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


# --- losses ---------------------------------------------------------------------------
REDUCTIONS = ["NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_losses_and_their_gradients_under_each_reduction(tf1, reduction):
    def prog(tf):
        logits, var_list = _mlp(tf)
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
        return _loop(tf, tf.no_op(), fetches, 1)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_sparse_softmax_with_int64_labels_trained(tf1):
    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.int64, [None])
        logits, var_list = _mlp(tf, x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        feed = {x: X, y: Y.astype(np.int64)}
        return _loop(tf, train, [loss, acc, tf.argmax(logits, 1)], 6, feed)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


def test_multilabel_sigmoid_with_label_smoothing_trained(tf1):
    def prog(tf):
        logits, var_list = _mlp(tf)
        labels = tf.constant((X[:, :3] > 0).astype(np.float32))
        loss = tf.losses.sigmoid_cross_entropy(labels, logits, label_smoothing=0.1)
        pred = tf.cast(tf.sigmoid(logits) > 0.5, tf.float32)
        acc = tf.reduce_mean(tf.cast(tf.equal(pred, labels), tf.float32))
        train = tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.01).minimize(loss)
        return _loop(tf, train, [loss, acc], 6)

    same_results(tf1, prog, rtol=1e-5, atol=1e-6)


# --- convolutions and pooling -----------------------------------------------------------
CONV_GRADS = {
    "conv_s2_same_odd": lambda tf, x, rs: tf.nn.conv2d(x, tf.Variable(rs.randn(3, 3, 2, 3).astype(np.float32)),
                                                       [1, 2, 2, 1], "SAME"),
    "conv_s2_valid_even_kernel": lambda tf, x, rs: tf.nn.conv2d(x, tf.Variable(rs.randn(4, 2, 2, 3).astype(np.float32)),
                                                                [1, 2, 2, 1], "VALID"),
    "transpose_s2_valid": lambda tf, x, rs: tf.nn.conv2d_transpose(
        x, tf.Variable(rs.randn(3, 3, 4, 2).astype(np.float32)), [3, 19, 19, 4], [1, 2, 2, 1], "VALID"),
    "transpose_s2_same": lambda tf, x, rs: tf.nn.conv2d_transpose(
        x, tf.Variable(rs.randn(2, 2, 4, 2).astype(np.float32)), [3, 18, 18, 4], [1, 2, 2, 1], "SAME"),
    "depthwise_s2_same": lambda tf, x, rs: tf.nn.depthwise_conv2d(
        x, tf.Variable(rs.randn(3, 3, 2, 2).astype(np.float32)), [1, 2, 2, 1], "SAME"),
    "depthwise_dilated_valid": lambda tf, x, rs: tf.nn.depthwise_conv2d(
        x, tf.Variable(rs.randn(2, 2, 2, 1).astype(np.float32)), [1, 1, 1, 1], "VALID", rate=[2, 2]),
    "separable_s2_valid": lambda tf, x, rs: tf.nn.separable_conv2d(
        x, tf.Variable(rs.randn(3, 3, 2, 2).astype(np.float32)), tf.Variable(rs.randn(1, 1, 4, 3).astype(np.float32)),
        [1, 2, 2, 1], "VALID"),
    "layers_conv2d_transpose": lambda tf, x, rs: tf.layers.conv2d_transpose(
        x, 3, 3, strides=2, padding="same", kernel_initializer=tf.constant_initializer(rs.randn(3, 3, 3, 2) * 0.3)),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason="tf.layers.conv2d_transpose is missing (flowlab/layers/__init__.py: build it on "
    "nn.conv2d_transpose as layers.conv2d is built)")) if n == "layers_conv2d_transpose" else n
    for n in sorted(CONV_GRADS)])
def test_convolution_gradients_through_a_loss(tf1, name):
    def prog(tf):
        rs = np.random.RandomState(9)
        x = tf.Variable(IMG, name="x")
        y = CONV_GRADS[name](tf, x, rs)
        loss = tf.reduce_sum(tf.square(y)) * 0.5 + tf.reduce_sum(tf.sin(y))
        vs = tf.trainable_variables()
        return _loop(tf, tf.no_op(), [y, loss, tf.gradients(loss, vs)], 1), y.shape.as_list()

    shim = tf_with_legacy_keras(tf1)
    if name == "layers_conv2d_transpose":
        from tensorflow.python.keras.legacy_tf_layers import convolutional  # type: ignore[import-not-found]
        shim.layers.conv2d_transpose = convolutional.conv2d_transpose
    same_results(shim, prog, rtol=1e-4, atol=1e-4)


def test_nchw_bias_add_and_its_gradient(tf1):
    # (TensorFlow's CPU Conv2D refuses NCHW -- UnimplementedError -- where flowlab computes it
    # by transposing; kept, see docs/notes/hidden-checks.md, so only BiasAdd is compared here)
    def bias(tf):
        x = tf.constant(IMG.transpose(0, 3, 1, 2))
        yb = tf.nn.bias_add(x, tf.constant([1.0, -1.0]), data_format="NCHW")
        return _loop(tf, tf.no_op(), [yb, tf.gradients(tf.reduce_sum(yb * yb), x)], 1)

    same_results(tf1, bias)


def test_overlapping_pools_with_ties_gradients(tf1):
    def prog(tf):
        base = np.round(np.random.RandomState(4).randn(2, 7, 7, 2)).astype(np.float32)  # many ties
        x = tf.Variable(base, name="x")
        mp = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        mp2 = tf.nn.max_pool(x, [1, 3, 2, 1], [1, 1, 2, 1], "VALID")
        ap = tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        loss = tf.reduce_sum(mp * mp) + tf.reduce_sum(tf.exp(mp2 * 0.1)) + tf.reduce_sum(ap * tf.range(8.0)[:4, None])
        gx = tf.gradients(loss, x)[0]
        ggx = tf.gradients(tf.reduce_sum(tf.gradients(tf.reduce_sum(mp), x)[0] * x), x)[0]
        return _loop(tf, tf.no_op(), [mp, mp2, ap, gx, ggx], 1)

    same_results(tf1, prog)


def test_lenet_style_net_with_placeholders_and_minibatches(tf1):
    def prog(tf):
        data = np.random.RandomState(5).randn(8, 12, 12, 1).astype(np.float32)
        labels = np.array([0, 1, 2, 3, 0, 1, 2, 3], np.int32)
        x = tf.placeholder(tf.float32, [None, 12, 12, 1])
        y = tf.placeholder(tf.int32, [None])
        rs = np.random.RandomState(12)
        k1 = tf.Variable(rs.randn(5, 5, 1, 4).astype(np.float32) * 0.2)
        k2 = tf.Variable(rs.randn(3, 3, 4, 6).astype(np.float32) * 0.2)
        h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME")), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.nn.avg_pool(tf.nn.elu(tf.nn.conv2d(h, k2, [1, 1, 1, 1], "VALID")), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        flat = tf.reshape(h, [-1, 2 * 2 * 6])
        w = tf.Variable(rs.randn(24, 4).astype(np.float32) * 0.2)
        logits = tf.matmul(flat, w)
        loss = _xent(tf, logits, y)
        correct = tf.reduce_sum(tf.cast(tf.nn.in_top_k(logits, y, 1), tf.int32))
        gs = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.1, gs, 2, 0.8, staircase=True)
        train = tf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True).minimize(loss, global_step=gs)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _epoch in range(2):
                for b in range(2):
                    f = {x: data[4 * b:4 * b + 4], y: labels[4 * b:4 * b + 4]}
                    out.append(s.run([train, loss, gs], f)[1:])
                out.append(s.run([loss, correct], {x: data, y: labels}))
            return out, s.run([k1, w])

    same_results(tf1, prog, rtol=1e-4, atol=1e-5)


# --- checkpoints mid-training ---------------------------------------------------------
def test_saver_mid_training_then_continue_in_a_new_graph(tf1):
    def build(tf):
        logits, var_list = _mlp(tf)
        loss = _xent(tf, logits)
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


def test_partial_restore_fine_tuning_a_new_head(tf1):
    def prog(tf):
        path = os.path.join(tempfile.mkdtemp(), "pre")
        with tf.Graph().as_default():
            logits, var_list = _mlp(tf)
            train = tf.train.GradientDescentOptimizer(0.5).minimize(_xent(tf, logits))
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                tf.train.Saver(var_list[:2]).save(s, path)
                pre = s.run(var_list[:2])
        logits, var_list = _mlp(tf)
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


# --- second-order methods and hand-computed statistics (built this wave) ---------------
def test_newton_steps_with_tf_hessians(tf1):
    def prog(tf):
        w = tf.Variable(np.zeros((5, 1), np.float32), name="w")
        m = tf.Variable([[1.0, 0.2], [0.2, 2.0]], name="m")
        yb = tf.constant((Y_REG > 0).astype(np.float32))
        logits = tf.matmul(tf.constant(X), w)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=yb, logits=logits)) \
            + 0.05 * tf.nn.l2_loss(w) + tf.reduce_sum(tf.exp(m) * m)
        g_w, g_m = tf.gradients(loss, [w, m])
        h_w, h_m = tf.hessians(loss, [w, m])
        step = tf.assign_sub(w, tf.reshape(tf.matrix_solve(tf.reshape(h_w, [5, 5]), tf.reshape(g_w, [5, 1])), [5, 1]))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([h_w, h_m, g_m])
            trace = [s.run([step, loss])[1] for _ in range(3)]
            return first, trace, s.run(w), h_w.shape.as_list(), h_m.shape.as_list()

    same_results(tf1, prog, rtol=1e-4, atol=1e-5)


def test_weighted_moments_and_sufficient_statistics_in_a_loss(tf1):
    def prog(tf):
        x = tf.placeholder(tf.float32, [None, 5])
        w = tf.Variable(W1, name="w")
        z = tf.matmul(x, w)
        freq = tf.constant(np.array([1, 2, 0, 1, 3, 1, 1, 0, 2, 1, 1, 1], np.float32)[:, None])
        wm, wv = tf.nn.weighted_moments(z, [0], freq)
        wm_k, _ = tf.nn.weighted_moments(z, axes=[0, 1], frequency_weights=freq, keep_dims=True)
        counts, m_ss, v_ss, shift = tf.nn.sufficient_statistics(z, [0], shift=tf.constant(0.5))
        mean, var = tf.nn.normalize_moments(counts, m_ss, v_ss, shift)
        c2, m2, v2, _ = tf.nn.sufficient_statistics(x, [0, -1], keepdims=True)
        loss = tf.reduce_sum(tf.square(wm)) + tf.reduce_sum(wv) + tf.reduce_sum(var * mean)
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        feed = {x: X}
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([wm, wv, wm_k, counts, m_ss, v_ss, mean, var, c2, m2, v2], feed)
            trace = [s.run([train, loss], feed)[1] for _ in range(3)]
            return first, trace, counts.op.type, c2.op.type, mean.op.name

    same_results(tf1, prog, rtol=1e-5, atol=1e-5)


def test_metric_learning_losses(tf1):
    def prog(tf):
        a = tf.nn.l2_normalize(tf.Variable(X[:4, :3]), axis=1)
        b = tf.nn.l2_normalize(tf.constant(X[4:8, :3]), axis=1)
        l1 = tf.losses.cosine_distance(b, a, axis=1, weights=tf.constant([[1.0], [0.5], [0.0], [2.0]]))
        l2 = tf.losses.mean_pairwise_squared_error(b, a)
        return _loop(tf, tf.no_op(), [l1, l2, tf.gradients(l1 + l2, tf.trainable_variables())], 1)

    same_results(tf1, prog)


# --- findings of this wave: TensorFlow's kernels at exact zeros and in half precision ---
def test_pairwise_distances_masked_sqrt_gradients(tf1):
    # the classic NaN trap: sqrt of squared distances whose diagonal is exactly 0, masked
    # by tf.where; TensorFlow's SqrtGrad/RsqrtGrad/ReciprocalGrad give 0 where dy is 0
    def prog(tf):
        e = tf.Variable(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]], np.float32), name="e")
        sq = tf.reduce_sum(tf.square(e), 1)
        d2 = tf.maximum(sq[:, None] - 2.0 * tf.matmul(e, e, transpose_b=True) + sq[None, :], 0.0)
        mask = tf.cast(d2 > 0, tf.float32)
        dist = tf.sqrt(d2) * mask
        masked = tf.where(d2 > 0, tf.sqrt(d2), tf.zeros_like(d2))
        inv = tf.where(d2 > 0, tf.reciprocal(d2), tf.zeros_like(d2)) + tf.where(d2 > 0, tf.rsqrt(d2), tf.zeros_like(d2))
        same = tf.constant(np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]], np.float32))
        loss = tf.reduce_mean(same * tf.square(masked) + (1 - same) * tf.square(tf.nn.relu(1.0 - masked))) \
            + 0.01 * tf.reduce_mean(inv) + tf.norm(e[0] - e[2])
        g = tf.gradients([tf.reduce_sum(dist), loss], e)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([dist, masked, inv, g])
            for _ in range(3):
                s.run(train)
            return first, s.run([loss, e])

    same_results(tf1, prog)


def test_self_normalizing_net_with_exact_zeros(tf1):
    # selu'(0) is TensorFlow's scale (its SeluGrad tests outputs < 0); zero-padded rows hit it
    def prog(tf):
        x = tf.constant(np.vstack([X[:6], np.zeros((2, 5), np.float32)]))
        w1 = tf.Variable(W1, name="w1")
        h = tf.nn.selu(tf.matmul(x, w1))
        h2 = tf.nn.selu(tf.nn.relu(h - 0.5))  # relu makes exact zeros again
        out = tf.reduce_sum(h2 * tf.constant(np.linspace(-1, 1, 8).astype(np.float32)), 1)
        loss = tf.reduce_mean(tf.square(out - 0.3))
        g = tf.gradients(loss, [w1, x])
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        trace = _loop(tf, train, [loss, w1], 3)
        return _loop(tf, tf.no_op(), [h2, g], 1), trace

    same_results(tf1, prog)


def test_half_precision_cnn_pooling_bits(tf1):
    # TensorFlow's CPU AvgPool accumulates a window in float16, row-major, and its gradient
    # adds dy * half(1/count) in output order: compared bit for bit
    def prog(tf):
        x = tf.Variable(np.random.RandomState(8).randn(2, 7, 6, 3).astype(np.float16), name="x")
        a1 = tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        a2 = tf.nn.avg_pool(x, [1, 2, 3, 1], [1, 1, 2, 1], "VALID")
        m = tf.nn.max_pool(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")
        terms = [tf.reduce_sum(a1 * a1), tf.reduce_sum(a2 * tf.constant(0.3, tf.float16)), tf.reduce_sum(m)]
        # one gradient per term: Grappler reorders an AddN of them (its AddOpsRewrite), which
        # shows in float16's last bit
        return _loop(tf, tf.no_op(), [a1, a2, m, [tf.gradients(t, x)[0] for t in terms]], 1)

    same_results(tf1, prog, rtol=0, atol=0)


def test_masked_max_pooling_over_padded_sequences(tf1):
    # padding positions set to -inf (or NaN from a 0/0) before max-pooling over time:
    # TensorFlow's MaxPool skips NaNs and gives the lowest finite value for a window with
    # nothing else; EluGrad passes a NaN output's gradient through (its test is y < 0)
    def prog(tf):
        feats = tf.Variable(np.random.RandomState(10).randn(3, 6, 1, 4).astype(np.float32), name="feats")
        lengths = tf.constant([6, 2, 0])
        mask = tf.tile(tf.sequence_mask(lengths, 6, dtype=tf.float32)[:, :, None, None], [1, 1, 1, 4])
        neg = tf.where(mask > 0, feats, tf.fill(tf.shape(feats), -np.inf))
        nan = feats * mask / mask  # 0/0 at the padding
        p1 = tf.nn.max_pool(neg, [1, 3, 1, 1], [1, 3, 1, 1], "VALID")
        p2 = tf.nn.max_pool(nan, [1, 2, 1, 1], [1, 1, 1, 1], "SAME")
        e = tf.nn.elu(nan)
        loss = tf.reduce_sum(tf.where(p1 > -1e30, p1, tf.zeros_like(p1))) + tf.reduce_sum(e[:1])
        return _loop(tf, tf.no_op(), [p1, p2, e, tf.gradients(loss, feats), tf.gradients(tf.reduce_sum(e), nan)], 1)

    same_results(tf1, prog)
