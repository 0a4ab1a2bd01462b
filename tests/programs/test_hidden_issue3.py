"""Issue 3 programs in the style of its hidden check: TensorFlow 1.x training loops with
every optimizer and learning-rate schedule, compute/apply_gradients with clipping,
gradients of composite expressions, sparse (IndexedSlices) updates through
embedding_lookup, convolution and pooling forward and backward, batch norm, seeded
dropout, layers with initializers and regularizers, and losses with weights and
reductions.  Each runs under TensorFlow and under flowlab; values and dtypes agree."""

from __future__ import annotations

import numpy as np
import pytest

from tests.programs.hidden_support import same_results, tf_with_legacy_keras

X = np.random.RandomState(0).randn(8, 4).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.3).astype(np.float32)
W0 = (np.random.RandomState(1).randn(4, 1) * 0.1).astype(np.float32)


def _sess(tf, fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


# --- optimizers and schedules ---------------------------------------------------------
OPTIMIZERS = {
    "gd": lambda t, lr: t.GradientDescentOptimizer(lr),
    "momentum": lambda t, lr: t.MomentumOptimizer(lr, 0.9),
    "nesterov": lambda t, lr: t.MomentumOptimizer(lr, 0.9, use_nesterov=True),
    "adagrad": lambda t, lr: t.AdagradOptimizer(lr, initial_accumulator_value=0.2),
    "adadelta": lambda t, lr: t.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
    "rmsprop": lambda t, lr: t.RMSPropOptimizer(lr),
    "rmsprop_momentum": lambda t, lr: t.RMSPropOptimizer(lr, momentum=0.5),
    "rmsprop_centered": lambda t, lr: t.RMSPropOptimizer(lr, momentum=0.3, centered=True),
    "adam": lambda t, lr: t.AdamOptimizer(lr),
    "adam_betas": lambda t, lr: t.AdamOptimizer(lr, beta1=0.8, beta2=0.95, epsilon=1e-4),
}
SCHEDULES = {
    None: lambda tf, gs: 0.05,
    "exponential": lambda tf, gs: tf.train.exponential_decay(0.1, gs, 5, 0.5),
    "staircase": lambda tf, gs: tf.train.exponential_decay(0.1, gs, 4, 0.7, staircase=True),
    "piecewise": lambda tf, gs: tf.train.piecewise_constant(gs, [5, 10], [0.1, 0.05, 0.01]),
}


def _training_loop(kind, schedule, steps=15):
    def training_loop(tf):
        w = tf.Variable(W0, name="w")
        b = tf.Variable(0.0, name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(X), w) + b - Y))
        gs = tf.train.get_or_create_global_step()
        lr = SCHEDULES[schedule](tf, gs)
        opt = OPTIMIZERS[kind](tf.train, lr)
        train = opt.minimize(loss, global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss])[1] for _ in range(steps)]
            slots = sorted(opt.get_slot_names())
            return [losses, sess.run([w, b, gs]), slots, [sess.run(opt.get_slot(w, s)) for s in slots],
                    sorted(v.op.name for v in tf.global_variables())]
    return training_loop


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_optimizer_training_loop(tf1, kind):
    same_results(tf1, _training_loop(kind, None))


@pytest.mark.parametrize("kind,schedule", [("gd", "exponential"), ("momentum", "staircase"),
                                           ("adam", "piecewise"), ("rmsprop_centered", "piecewise"),
                                           ("adagrad", "exponential")])
def test_learning_rate_schedules(tf1, kind, schedule):
    same_results(tf1, _training_loop(kind, schedule))


def test_minimize_var_list(tf1):
    def var_list(tf):
        w = tf.Variable(W0, name="w")
        b = tf.Variable(0.5, name="b")
        loss = tf.reduce_mean(tf.abs(tf.matmul(tf.constant(X), w) + b - Y))
        train = tf.train.AdamOptimizer(0.1).minimize(loss, var_list=[b])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(10):
                sess.run(train)
            return sess.run([w, b, loss]), sorted(v.op.name for v in tf.global_variables())

    same_results(tf1, var_list)


def test_compute_apply_gradients_with_clipping(tf1):
    def clipped_training(tf):
        w = tf.Variable(W0, name="w")
        b = tf.Variable(0.5, name="b")
        loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(X), w) + b - Y))
        opt = tf.train.MomentumOptimizer(0.01, 0.9)
        grads_and_vars = opt.compute_gradients(loss)
        grads, variables = zip(*grads_and_vars)
        clipped, norm = tf.clip_by_global_norm(grads, 5.0)
        clipped = [tf.clip_by_value(g, -0.5, 0.5) for g in clipped]
        gs = tf.train.get_or_create_global_step()
        train = opt.apply_gradients(zip(clipped, variables), global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            seen = [sess.run([norm, train, loss])[::2] for _ in range(12)]
            return seen, sess.run([w, b, gs]), [v.op.name for _, v in grads_and_vars]

    same_results(tf1, clipped_training)


def test_clip_functions_and_their_gradients(tf1):
    def clip_functions(tf):
        a = tf.Variable([[3.0, 4.0], [1.0, -2.0]])
        g = tf.gradients(tf.reduce_sum(a * a * tf.constant([[1.0, 2.0], [3.0, 4.0]])), a)[0]
        return _sess(tf, [tf.clip_by_norm(g, 2.0), tf.clip_by_norm(g, 2.0, axes=[1]), tf.clip_by_average_norm(g, 1.0),
                          tf.global_norm([g, a]), tf.gradients(tf.reduce_sum(tf.clip_by_norm(a, 1.0)), a)[0],
                          tf.gradients(tf.reduce_sum(tf.clip_by_value(a, -1.5, 3.5)), a)[0]])

    same_results(tf1, clip_functions)


# --- gradients of composite expressions -----------------------------------------------
XV = np.array([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]], np.float32)
COMPOSITES = {
    "softmax": lambda tf, x: tf.nn.softmax(x) * tf.constant([1.0, 2.0, 3.0]),
    "log_softmax_axis0": lambda tf, x: tf.nn.log_softmax(x, axis=0) * tf.constant([[1.0], [2.0]]),
    "logsumexp": lambda tf, x: tf.reduce_logsumexp(x, axis=1),
    "logsumexp_keepdims": lambda tf, x: tf.reduce_logsumexp(x, axis=0, keepdims=True) * 2.0,
    "norm": lambda tf, x: tf.norm(x),
    "norm_1": lambda tf, x: tf.norm(x, ord=1, axis=1),
    "l2_normalize": lambda tf, x: tf.nn.l2_normalize(x, axis=1) * tf.constant([1.0, -1.0, 2.0]),
    "where": lambda tf, x: tf.where(x > 0, x * x, -x),
    "gather": lambda tf, x: tf.gather(x, [1, 1, 0]) * 3.0,
    "gather_axis1": lambda tf, x: tf.gather(x, [2, 0], axis=1),
    "concat": lambda tf, x: tf.concat([x, x * 2], axis=0) * tf.range(3, dtype=tf.float32),
    "split": lambda tf, x: tf.split(x, [1, 2], axis=1)[1] ** 3,
    "stack": lambda tf, x: tf.stack([x, tf.sin(x)], axis=1),
    "unstack": lambda tf, x: tf.unstack(x, axis=1)[2] * tf.unstack(x)[0][0],
    "mean_keepdims": lambda tf, x: tf.reduce_mean(x, axis=1, keepdims=True) * x,
    "prod": lambda tf, x: tf.reduce_prod(x, axis=0),
    "max": lambda tf, x: tf.reduce_max(x, axis=-1),
    "min": lambda tf, x: tf.reduce_min(x),
    "broadcasting": lambda tf, x: x * tf.constant([[2.0], [3.0]]) + tf.constant(1.0),
    "math_1": lambda tf, x: (tf.math.log1p(tf.abs(x)) + tf.math.expm1(x) + tf.math.softplus(x) + tf.math.erf(x)
                             + tf.math.atan(x)),
    "math_2": lambda tf, x: (tf.math.rsqrt(tf.abs(x) + 1.0) + tf.math.reciprocal(x + 5.0)
                             + tf.math.squared_difference(x, 1.0) + tf.math.xlogy(tf.abs(x), tf.abs(x) + 1)),
    "math_3": lambda tf, x: (tf.math.sinh(x) + tf.math.cosh(x) + tf.math.asinh(x) + tf.math.atanh(x / 3.0)
                             + tf.math.erfc(x) + tf.math.divide_no_nan(x, x - 0.5)),
    "segment_sums": lambda tf, x: tf.math.segment_sum(x, [0, 0]) + tf.math.unsorted_segment_sum(x, [1, 0], 3)[0],
    "segment_mean": lambda tf, x: tf.math.unsorted_segment_mean(tf.transpose(x), [0, 1, 0], 2),
    "segment_max": lambda tf, x: tf.math.segment_max(tf.transpose(x), [0, 0, 1]),
    "cumsum_cumprod": lambda tf, x: tf.cumsum(x, axis=1, exclusive=True, reverse=True) + tf.cumprod(x, axis=0),
    "tile": lambda tf, x: tf.tile(x, [2, 1]) * tf.reshape(tf.range(12, dtype=tf.float32), [4, 3]),
    "pad": lambda tf, x: tf.pad(x, [[1, 0], [0, 2]]) * 2.0,
    "mirror_pad": lambda tf, x: tf.pad(x, [[1, 1], [1, 1]], mode="REFLECT"),
    "slices": lambda tf, x: x[:, 1:] * x[::-1, :2],
    "matmul_transpose": lambda tf, x: tf.matmul(x, x, transpose_b=True),
    "maximum_minimum": lambda tf, x: tf.maximum(x, 0.3) + tf.minimum(x, x[::-1]),
    "divisions": lambda tf, x: x / (tf.abs(x) + 1.0) + tf.floordiv(x, 1.0),
    "pow": lambda tf, x: tf.pow(tf.abs(x) + 0.5, x),
    "sigmoid_tanh": lambda tf, x: tf.sigmoid(x) * tf.tanh(x),
    "activations": lambda tf, x: (tf.nn.relu(x) + tf.nn.relu6(x * 4) + tf.nn.elu(x) + tf.nn.selu(x)
                                  + tf.nn.leaky_relu(x, 0.1) + tf.nn.softsign(x)),
    "moments": lambda tf, x: tf.add_n(list(tf.nn.moments(x, axes=[0]))),
    "variance_std": lambda tf, x: tf.math.reduce_variance(x, axis=0) + tf.math.reduce_std(x, axis=0),
    "reshape_squeeze": lambda tf, x: tf.reshape(tf.expand_dims(x, 0), [3, 2]) * tf.squeeze(tf.ones([1, 3, 2])),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_gradient_of_composite_expression(tf1, name):
    def composite(tf):
        x = tf.Variable(XV)
        t = COMPOSITES[name](tf, x)
        weights = tf.cast(tf.reshape(tf.range(tf.size(t)), tf.shape(t)), tf.float32) * 0.1
        loss = tf.reduce_sum(t * weights + t)
        return _sess(tf, [t, tf.gradients(loss, x)[0]])

    same_results(tf1, composite)


# --- sparse gradients -----------------------------------------------------------------
def test_embedding_lookup_indexed_slices_and_adagrad(tf1):
    def embedding_adagrad(tf):
        emb = tf.Variable(np.arange(20, dtype=np.float32).reshape(5, 4) / 10.0, name="emb")
        e = tf.nn.embedding_lookup(emb, tf.constant([[0, 3], [3, 1]]))
        loss = tf.reduce_sum(e * e)
        g = tf.gradients(loss, emb)[0]
        train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            gval = sess.run(g)
            for _ in range(5):
                sess.run(train)
            return [isinstance(g, tf.IndexedSlices), gval.values, gval.indices, gval.dense_shape, sess.run(emb),
                    sess.run(tf.convert_to_tensor(g))]

    same_results(tf1, embedding_adagrad)


@pytest.mark.parametrize("kind", ["gd", "momentum", "nesterov", "adam", "rmsprop_centered", "adadelta",
                                  "rmsprop", "adagrad"])
def test_sparse_updates_touch_only_looked_up_rows(tf1, kind):
    def sparse_updates(tf):
        emb = tf.Variable(np.arange(20, dtype=np.float32).reshape(5, 4) / 10.0, name="emb")
        loss = tf.reduce_sum(tf.sin(tf.nn.embedding_lookup(emb, tf.constant([0, 3, 3, 1]))))
        train = OPTIMIZERS[kind](tf.train, 0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(4):
                sess.run(train)
            return sess.run(emb)

    out = same_results(tf1, sparse_updates)
    np.testing.assert_array_equal(out[[2, 4]], np.arange(20, dtype=np.float32).reshape(5, 4)[[2, 4]] / 10.0)


def test_sparse_and_dense_gradients_aggregate(tf1):
    def aggregate(tf):
        emb = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2), name="emb")
        a, b = tf.gather(emb, [1, 2]), tf.gather(emb, [2, 5])
        mixed = tf.gradients(tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * b) + tf.reduce_sum(emb) * 0.5, emb)[0]
        sparse = tf.gradients(tf.reduce_sum(a) + tf.reduce_sum(b), emb)[0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            v = s.run(sparse)
            return [isinstance(mixed, tf.IndexedSlices), s.run(mixed), isinstance(sparse, tf.IndexedSlices),
                    v.values, v.indices]

    same_results(tf1, aggregate)


# --- convolution and pooling ----------------------------------------------------------
CONVS = {  # input shape, filter shape, strides, padding, dilations
    "same_stride2": ((2, 7, 6, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1)),
    "valid_stride3x2": ((1, 9, 8, 2), (2, 3, 2, 3), (3, 2), "VALID", (1, 1)),
    "same_even_kernel": ((1, 6, 5, 2), (4, 2, 2, 1), (2, 3), "SAME", (1, 1)),
    "valid_1x1": ((2, 3, 4, 5), (1, 1, 5, 2), (1, 1), "VALID", (1, 1)),
    "same_dilated": ((2, 7, 7, 2), (3, 2, 2, 2), (1, 1), "SAME", (2, 3)),
    "valid_dilated": ((1, 8, 9, 1), (2, 2, 1, 2), (1, 1), "VALID", (3, 2)),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d_forward_and_backward(tf1, name):
    shape, kshape, strides, padding, dil = CONVS[name]

    def conv(tf):
        rs = np.random.RandomState(3)
        x = tf.Variable(rs.randn(*shape).astype(np.float32))
        k = tf.Variable(rs.randn(*kshape).astype(np.float32))
        y = tf.nn.conv2d(x, k, strides=[1, *strides, 1], padding=padding, dilations=[1, *dil, 1])
        if dil != (1, 1):  # TensorFlow's CPU kernels have no dilated backprop
            return _sess(tf, y)
        return _sess(tf, [y, tf.gradients(tf.reduce_sum(y * tf.cos(y)), [x, k])])

    # The loss's gradient cos(y) - y sin(y) at |y| up to ~18 multiplies the forward's
    # rounding by |y|, and the input gradient sums such terms of ~10 into elements of
    # ~0.1: with OpenBLAS's kernels without FMA (the portability pass on an AVX2
    # machine) one element of same_stride2 differs by 2.1e-5.  So atol is 1e-4, ~1e-5
    # of the terms.
    same_results(tf1, conv, rtol=1e-4, atol=1e-4)


POOLS = {
    "max_same": ("max", (3, 3), (2, 2), "SAME"),
    "max_valid": ("max", (2, 3), (2, 1), "VALID"),
    "avg_same": ("avg", (3, 2), (2, 2), "SAME"),
    "avg_valid": ("avg", (3, 3), (3, 2), "VALID"),
    "max_window_past_edge": ("max", (4, 4), (3, 3), "SAME"),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_forward_and_backward(tf1, name):
    kind, ksize, strides, padding = POOLS[name]

    def pool(tf):
        x = tf.Variable(np.random.RandomState(4).randn(2, 7, 6, 3).astype(np.float32))
        f = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
        y = f(x, ksize=[1, *ksize, 1], strides=[1, *strides, 1], padding=padding)
        return _sess(tf, [y, tf.gradients(tf.reduce_sum(y * y), x)])

    same_results(tf1, pool)


def test_max_pool_gradient_with_ties(tf1):
    def ties(tf):
        x = tf.constant(np.ones((1, 3, 3, 1), np.float32))
        y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
        return _sess(tf, [y, tf.gradients(tf.reduce_sum(y), x)])

    same_results(tf1, ties)


def test_small_cnn_training(tf1):
    def cnn(tf):
        rs = np.random.RandomState(7)
        x = tf.constant(rs.randn(4, 8, 8, 1).astype(np.float32))
        labels = tf.constant([0, 2, 1, 2])
        k1 = tf.Variable(rs.randn(3, 3, 1, 4).astype(np.float32) * 0.3)
        k2 = tf.Variable(rs.randn(3, 3, 4, 4).astype(np.float32) * 0.3)
        w = tf.Variable(rs.randn(4, 3).astype(np.float32) * 0.3)
        h = tf.nn.relu(tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME"))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        h = tf.nn.relu(tf.nn.conv2d(h, k2, [1, 2, 2, 1], "VALID"))
        h = tf.nn.avg_pool(h, [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
        logits = tf.matmul(tf.reshape(h, [4, -1]), w)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss])[1] for _ in range(8)]
            return losses, sess.run([k1, w])

    same_results(tf1, cnn, rtol=1e-4, atol=1e-5)


# --- normalization, dropout, layers, losses -------------------------------------------
def test_batch_norm_training_and_inference(tf1):
    def batch_norm(tf):
        x = tf.constant(np.random.RandomState(5).randn(4, 3, 3, 2).astype(np.float32))
        scale, offset = tf.Variable([1.0, 2.0]), tf.Variable([0.1, -0.1])
        y, m, v = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
        mean, var = tf.nn.moments(x, axes=[0, 1, 2])
        y2 = tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)
        yi, _, _ = tf.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var, is_training=False)
        loss = tf.reduce_sum(y * x) + tf.reduce_sum(y2 * y2)
        return _sess(tf, [y, m, v, y2, yi, tf.gradients(loss, [x, scale, offset])])

    same_results(tf1, batch_norm, rtol=1e-4, atol=1e-5)


def test_seeded_dropout(tf1):
    def dropout(tf):
        tf.set_random_seed(42)
        x = tf.ones([4, 5])
        d1 = tf.nn.dropout(x, keep_prob=0.5, seed=1)
        d2 = tf.nn.dropout(x, rate=0.3, seed=7)
        d3 = tf.nn.dropout(x, 0.6)
        g = tf.gradients(tf.reduce_sum(d1 * 3.0), x)[0]
        with tf.Session() as s:
            return [s.run([d1, d2, d3, g]), s.run([d1, d2])]

    same_results(tf1, dropout)


def test_layers_with_initializers_and_regularizers(tf1):
    def layers(tf):
        tf.set_random_seed(3)
        x = tf.constant(np.random.RandomState(6).randn(2, 6, 6, 2).astype(np.float32))
        h = tf.layers.conv2d(x, 3, 3, strides=2, padding="same", activation=tf.nn.relu,
                             kernel_initializer=tf.truncated_normal_initializer(stddev=0.1, seed=1),
                             kernel_regularizer=lambda w: 0.1 * tf.nn.l2_loss(w),
                             bias_initializer=tf.constant_initializer(0.05))
        h = tf.layers.max_pooling2d(h, 2, 1, padding="valid")
        f = tf.layers.flatten(h)
        d = tf.layers.dense(f, 4, kernel_initializer=tf.glorot_uniform_initializer(seed=2),
                            bias_initializer=tf.constant_initializer(0.1))
        reg = tf.losses.get_regularization_loss()
        train = tf.train.AdamOptimizer(0.01).minimize(tf.reduce_sum(d * d) + reg)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([h, f, d, reg])
            for _ in range(3):
                s.run(train)
            return [first, s.run(tf.trainable_variables()), [v.op.name for v in tf.trainable_variables()]]

    same_results(tf_with_legacy_keras(tf1), layers, rtol=1e-5)


def test_variable_scope_regularizer_and_total_loss(tf1):
    def regularization(tf):
        with tf.variable_scope("m", regularizer=lambda w: tf.reduce_sum(tf.abs(w)) * 0.01):
            w = tf.get_variable("w", [2, 2], initializer=tf.constant_initializer([[1.0, -2.0], [3.0, 4.0]]))
        d = tf.layers.dense(tf.ones([1, 2]), 2, kernel_initializer=tf.ones_initializer(),
                            kernel_regularizer=lambda k: 0.5 * tf.reduce_sum(k * k))
        regs = tf.losses.get_regularization_losses()
        total = tf.losses.get_regularization_loss()
        loss = tf.reduce_sum(d) + tf.reduce_sum(w) + total
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(train)
            return s.run([regs, total, w]), [r.op.name for r in regs]

    same_results(tf_with_legacy_keras(tf1), regularization)


def test_losses_with_weights_and_reductions(tf1):
    def losses(tf):
        lab = tf.constant([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
        pred = tf.constant([[0.1, 0.7, 0.2], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4]])
        w = tf.constant([[1.0], [2.0], [0.0]])
        R = tf.losses.Reduction
        out = []
        for red in [R.SUM_BY_NONZERO_WEIGHTS, R.MEAN, R.NONE]:  # (SUM, SUM_OVER_BATCH_SIZE: tests/ops)
            out.append([
                tf.losses.mean_squared_error(lab, pred, weights=w, reduction=red),
                tf.losses.absolute_difference(lab, pred, weights=2.0, reduction=red),
                tf.losses.softmax_cross_entropy(lab, pred * 3, weights=tf.constant([1.0, 0.5, 0.0]),
                                                label_smoothing=0.1, reduction=red),
                tf.losses.sigmoid_cross_entropy(lab, pred, weights=w, label_smoothing=0.2, reduction=red),
                tf.losses.sparse_softmax_cross_entropy(tf.constant([1, 0, 2]), pred,
                                                       weights=tf.constant([0.5, 1.0, 2.0]), reduction=red),
                tf.losses.huber_loss(lab, pred * 4, delta=0.5, reduction=red),
                tf.losses.log_loss(lab, pred, reduction=red),
                tf.losses.hinge_loss(tf.constant([[0.0, 1.0]]), tf.constant([[0.3, -0.4]]), reduction=red)])
        out.append(tf.add_n([tf.reduce_sum(loss) for loss in tf.losses.get_losses()]))
        return _sess(tf, out)

    same_results(tf1, losses)


def test_cross_entropy_gradients(tf1):
    def cross_entropies(tf):
        logits = tf.Variable([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
        lab = tf.constant([[0.2, 0.8, 0.0], [0.0, 0.0, 1.0]])
        ls = [tf.nn.softmax_cross_entropy_with_logits_v2(labels=lab, logits=logits),
              tf.nn.softmax_cross_entropy_with_logits(labels=lab, logits=logits),
              tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2], logits=logits),
              tf.nn.sigmoid_cross_entropy_with_logits(labels=lab, logits=logits),
              tf.nn.weighted_cross_entropy_with_logits(labels=lab, logits=logits, pos_weight=2.0),
              tf.nn.l2_loss(logits), tf.nn.log_poisson_loss(lab, logits)]
        return _sess(tf, [ls, [tf.gradients(tf.reduce_sum(loss), logits)[0] for loss in ls]])

    same_results(tf1, cross_entropies)


# --- more schedules, moving averages, gradient options, conv variants -----------------
def test_all_decay_schedules_over_steps(tf1):
    def schedules(tf):
        gs = tf.Variable(0, trainable=False, dtype=tf.int64)
        inc = tf.assign_add(gs, 3)
        lrs = [tf.train.polynomial_decay(0.1, gs, 10, 0.01, power=2.0), tf.train.polynomial_decay(0.1, gs, 10, cycle=True),
               tf.train.natural_exp_decay(0.1, gs, 5, 0.5), tf.train.inverse_time_decay(0.1, gs, 5, 0.5, staircase=True),
               tf.train.cosine_decay(0.1, gs, 10), tf.train.cosine_decay(0.1, gs, 7, alpha=0.2),
               tf.train.cosine_decay_restarts(0.1, gs, 4), tf.train.cosine_decay_restarts(0.1, gs, 3, t_mul=1.0, m_mul=0.5),
               tf.train.linear_cosine_decay(0.1, gs, 10),
               tf.train.linear_cosine_decay(0.1, gs, 7, num_periods=2, alpha=0.1, beta=0.01)]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(5):
                out.append(s.run(lrs))
                s.run(inc)
            return out

    same_results(tf1, schedules)


def test_training_with_exponential_moving_average(tf1):
    def ema_training(tf):
        w = tf.Variable(W0, name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(X), w) - Y))
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=gs)
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=gs)
        with tf.control_dependencies([opt]):
            train = ema.apply([w, loss])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(6):
                s.run(train)
            return s.run([w, ema.average(w), ema.average(loss)]), sorted(ema.variables_to_restore())

    same_results(tf1, ema_training)


def test_gradient_options(tf1):
    def gradient_options(tf):
        x = tf.Variable([1.0, 2.0, 3.0])
        y = x * x
        z = tf.reduce_sum(tf.stop_gradient(y) * x + y)
        opt = tf.train.GradientDescentOptimizer(0.1)
        gv = opt.compute_gradients(z, gate_gradients=tf.train.Optimizer.GATE_GRAPH, grad_loss=tf.constant(2.0))
        return _sess(tf, [tf.gradients(y, x, grad_ys=tf.constant([1.0, 0.5, 2.0])),
                          tf.gradients([z, tf.reduce_sum(y)], x,
                                       aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE),
                          tf.gradients(z, x, stop_gradients=[y]), [g for g, _ in gv]])

    same_results(tf1, gradient_options)


def test_conv1d_conv2d_transpose_and_bias_add_nchw(tf1):
    def conv_variants(tf):
        rs = np.random.RandomState(0)
        x1 = tf.Variable(rs.randn(2, 9, 3).astype(np.float32))
        k1 = tf.Variable(rs.randn(3, 3, 2).astype(np.float32))
        y1 = tf.nn.conv1d(x1, k1, stride=2, padding="SAME")
        y1b = tf.nn.conv1d(x1, k1, stride=1, padding="VALID", dilations=2)
        x = tf.Variable(rs.randn(2, 4, 3, 3).astype(np.float32))
        k = tf.Variable(rs.randn(3, 3, 2, 3).astype(np.float32))
        t1 = tf.nn.conv2d_transpose(x, k, [2, 8, 6, 2], [1, 2, 2, 1], padding="SAME")
        t2 = tf.nn.conv2d_transpose(x, k, [2, 9, 7, 2], [1, 2, 2, 1], padding="VALID")
        b = tf.Variable([1.0, 2.0, 3.0])
        yb = tf.nn.bias_add(tf.transpose(x, [0, 3, 1, 2]), b, data_format="NCHW")
        # (y1b is dilated: TensorFlow's CPU kernels have no dilated backprop, so forward only)
        loss = tf.reduce_sum(y1 * y1) + tf.reduce_sum(t1 * t1) + tf.reduce_sum(t2) + tf.reduce_sum(yb * yb)
        return _sess(tf, [y1, y1b, t1, t2, yb, tf.gradients(loss, [x1, k1, x, k, b])]), y1.name

    same_results(tf1, conv_variants, rtol=1e-4, atol=1e-5)


def test_cross_entropy_over_3d_logits_and_top_k(tf1):
    def xent_3d(tf):
        rs = np.random.RandomState(0)
        logits = tf.Variable(rs.randn(2, 3, 4).astype(np.float32))
        labels = tf.nn.softmax(tf.constant(rs.randn(2, 3, 4).astype(np.float32)))
        l1 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        l2 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([[0, 1, 3], [2, 2, 1]]), logits=logits)
        l3 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=1)
        v, i = tf.nn.top_k(logits, 2)
        return _sess(tf, [l1, l2, l3, v, i, tf.nn.in_top_k(logits[0], [1, 3, 0], 2),
                          tf.gradients(tf.reduce_sum(l1) + tf.reduce_sum(l2) + tf.reduce_sum(l3) + tf.reduce_sum(v),
                                       logits)])

    same_results(tf1, xent_3d)


def test_bias_gradient_with_a_batch_of_one(tf1):
    # [1, 2] + [2]: nothing to sum, but b's gradient must still be reshaped to [2]
    # (TensorFlow's must_reduce); a lower-rank input with unknown batch too.
    def prog(tf):
        x = tf.placeholder(tf.float32, [1, 2])
        xp = tf.placeholder(tf.float32, [None, 1, 2])
        b = tf.Variable(np.array([0.5, -1.0], np.float32), name="b")
        c = tf.Variable(np.float32(2.0), name="c")
        y = tf.reduce_sum((x + b) ** 2) + tf.reduce_sum(x * c) + tf.reduce_sum(xp - b)
        gs = tf.gradients(y, [b, c, x])
        step = tf.train.GradientDescentOptimizer(0.1).minimize(y)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            f = {x: [[1.0, 2.0]], xp: np.ones((3, 1, 2), np.float32)}
            out = s.run(gs, f)
            s.run(step, f)
            return [g.shape.as_list() for g in gs], out, s.run([b, c])

    same_results(tf1, prog)
