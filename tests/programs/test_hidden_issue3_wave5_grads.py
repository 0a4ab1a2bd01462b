"""Issue 3 programs, wave 5 (session 5, helper H2), part 2: gradients as papers use them
-- gradient penalties, Hessians and Newton steps, while_loop and cond inside losses,
target networks, straight-through estimators, custom and registered gradients, grad_ys,
embedding tables read twice -- strided/transposed/depthwise/separable convolutions and
overlapping pools with ties, and the TensorFlow kernel edge cases this wave found (masked
sqrt gradients, selu'(0), float16 average pooling, NaN in max pooling).  Each runs under
TensorFlow's tf.compat.v1 and under flowlab; values and dtypes agree."""

from __future__ import annotations

import numpy as np
import pytest

from tests.programs.hidden_support import same_results, tf_with_legacy_keras
from tests.programs.wave5_support import IMG, W1, W2, Y_REG, X, Y, loop, mlp, xent


# --- gradients: penalties, Hessians, loops, conds, estimators ---------------------------
def test_gradient_penalty_double_backprop(tf1):
    def prog(tf):
        x = tf.constant(X)
        logits, var_list = mlp(tf, x, act=tf.nn.softplus)
        critic = tf.reduce_sum(logits * tf.constant([1.0, -1.0, 0.5]), axis=1)
        gx = tf.gradients(critic, x)[0]
        penalty = tf.reduce_mean(tf.square(tf.sqrt(tf.reduce_sum(tf.square(gx), axis=1)) - 1.0))
        loss = -tf.reduce_mean(critic) + 10.0 * penalty
        train = tf.train.AdamOptimizer(1e-3, beta1=0.5, beta2=0.9).minimize(loss)
        return loop(tf, train, [loss, penalty, var_list[0]], 4)

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
        loss = xent(tf, tf.matmul(h, w2))
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

        logits, var_list = mlp(tf)
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
        logits, var_list = mlp(tf)
        p = tf.nn.softmax(logits)
        lp = tf.nn.log_softmax(logits)
        dy = [tf.constant(np.linspace(-1, 1, 36).reshape(12, 3).astype(np.float32)), tf.ones_like(lp) * 0.5]
        g = tf.gradients([p, lp], var_list, grad_ys=dy)
        g1 = tf.gradients(tf.reduce_logsumexp(logits, axis=1), var_list[2:], grad_ys=tf.range(12.0))
        return loop(tf, tf.no_op(), [g, g1], 1)

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
        return loop(tf, tf.no_op(), [loss, mean, tf.gradients(loss, q)], 1)

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


@pytest.mark.parametrize("name", sorted(CONV_GRADS))
def test_convolution_gradients_through_a_loss(tf1, name):
    def prog(tf):
        rs = np.random.RandomState(9)
        x = tf.Variable(IMG, name="x")
        y = CONV_GRADS[name](tf, x, rs)
        loss = tf.reduce_sum(tf.square(y)) * 0.5 + tf.reduce_sum(tf.sin(y))
        vs = tf.trainable_variables()
        return loop(tf, tf.no_op(), [y, loss, tf.gradients(loss, vs)], 1), y.shape.as_list()

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
        return loop(tf, tf.no_op(), [yb, tf.gradients(tf.reduce_sum(yb * yb), x)], 1)

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
        return loop(tf, tf.no_op(), [mp, mp2, ap, gx, ggx], 1)

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
        loss = xent(tf, logits, y)
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
        return loop(tf, tf.no_op(), [l1, l2, tf.gradients(l1 + l2, tf.trainable_variables())], 1)

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
        trace = loop(tf, train, [loss, w1], 3)
        return loop(tf, tf.no_op(), [h2, g], 1), trace

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
        return loop(tf, tf.no_op(), [a1, a2, m, [tf.gradients(t, x)[0] for t in terms]], 1)

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
        return loop(tf, tf.no_op(), [p1, p2, e, tf.gradients(loss, feats), tf.gradients(tf.reduce_sum(e), nan)], 1)

    same_results(tf1, prog)
