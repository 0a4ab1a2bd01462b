"""More hidden-check style programs for issue 3 (session 4, helper C1): small training
programs that mix the proximal optimizers (FTRL, proximal GD/Adagrad, Adagrad-DA)
with depthwise, separable and atrous convolutions, LRN, max_pool_with_argmax and
swish, run under TensorFlow's tf.compat.v1 and flowlab and compared number by number
(values, dtypes, names).  See docs/notes/hidden-checks.md."""

from __future__ import annotations

import os
import tempfile

import numpy as np

from tests.programs.hidden_support import same_results


def _data(rs, n=4, h=8, w=8, c=2):
    return rs.randn(n, h, w, c).astype(np.float32)


def test_separable_cnn_trained_by_ftrl(tf1):
    def prog(tf):
        rs = np.random.RandomState(1)
        x = tf.constant(_data(rs))
        labels = tf.constant([0, 1, 2, 1])
        dw = tf.Variable(rs.randn(3, 3, 2, 2).astype(np.float32) * 0.4, name="dw")
        pw = tf.Variable(rs.randn(1, 1, 4, 5).astype(np.float32) * 0.4, name="pw")
        w = tf.Variable(rs.randn(5, 3).astype(np.float32) * 0.3, name="w")
        h = tf.nn.relu(tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME"))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.reduce_mean(h, axis=[1, 2])
        logits = tf.matmul(h, w)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.FtrlOptimizer(0.3, l1_regularization_strength=0.001, l2_regularization_strength=0.01)
        train = opt.minimize(loss, global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss])[1] for _ in range(10)]
            return losses, sess.run([dw, pw, w, gs]), sorted(v.name for v in tf.global_variables())

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_depthwise_net_trained_by_proximal_adagrad(tf1):
    def prog(tf):
        rs = np.random.RandomState(2)
        x = tf.constant(_data(rs, c=3))
        target = tf.constant(rs.randn(4, 4, 4, 6).astype(np.float32))
        k = tf.Variable(rs.randn(3, 3, 3, 2).astype(np.float32) * 0.3, name="k")
        b = tf.Variable(np.zeros(6, np.float32), name="b")
        y = tf.nn.bias_add(tf.nn.depthwise_conv2d(x, k, [1, 2, 2, 1], "SAME"), b)
        y = tf.nn.swish(y)
        loss = tf.reduce_mean(tf.square(y - target))
        opt = tf.train.ProximalAdagradOptimizer(0.2, l1_regularization_strength=0.01,
                                                l2_regularization_strength=0.001)
        train = opt.minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss])[1] for _ in range(12)]
            return losses, sess.run([k, b] + opt.variables()), [v.name for v in opt.variables()]

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_atrous_lrn_argmax_net_trained_by_adagrad_da(tf1):
    def prog(tf):
        rs = np.random.RandomState(3)
        x = tf.constant(_data(rs, h=9, w=9))
        k = tf.Variable(rs.randn(3, 3, 2, 4).astype(np.float32) * 0.3, name="k")
        w = tf.Variable(rs.randn(4, 2).astype(np.float32) * 0.3, name="w")
        h = tf.nn.atrous_conv2d(x, k, 2, "SAME")
        h = tf.nn.lrn(h, depth_radius=1, bias=1.0, alpha=0.2, beta=0.75)
        h, argmax = tf.nn.max_pool_with_argmax(h, [1, 3, 3, 1], [1, 3, 3, 1], "VALID")
        logits = tf.matmul(tf.reduce_max(h, axis=[1, 2]), w)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=tf.constant(np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]), logits=logits))
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.AdagradDAOptimizer(0.5, gs, l1_regularization_strength=0.001, l2_regularization_strength=0.01)
        train = opt.minimize(loss, global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss])[1] for _ in range(10)]
            return losses, sess.run([k, w, gs, argmax]), opt.get_slot_names()

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)


def test_sparse_embeddings_with_proximal_gd_and_ftrl_shrinkage(tf1):
    def prog(tf):
        rs = np.random.RandomState(4)
        emb = tf.Variable(rs.randn(10, 3).astype(np.float32), name="emb")
        emb2 = tf.Variable(rs.randn(10, 3).astype(np.float32), name="emb2")
        ids = tf.constant([[1, 4, 4], [7, 1, 9]])
        v = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids), axis=1)
        v2 = tf.reduce_sum(tf.nn.embedding_lookup(emb2, ids), axis=1)
        loss = tf.reduce_sum(tf.square(v - 1.0)) + tf.reduce_sum(tf.abs(v2))
        t1 = tf.train.ProximalGradientDescentOptimizer(0.05, l1_regularization_strength=0.2).minimize(
            loss, var_list=[emb])
        t2 = tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.05,
                                    l2_shrinkage_regularization_strength=0.2).minimize(loss, var_list=[emb2])
        train = tf.group(t1, t2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(15):
                sess.run(train)
            e, e2 = sess.run([emb, emb2])
            return e, e2, int((e == 0).sum()), int((e2 == 0).sum())

    same_results(tf1, prog, rtol=2e-5, atol=2e-6)


def test_ftrl_checkpoint_round_trip(tf1):
    def prog(tf):
        rs = np.random.RandomState(5)
        w = tf.Variable(rs.randn(3, 2).astype(np.float32), name="w")
        loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(rs.randn(4, 3).astype(np.float32)), w) - 1.0))
        opt = tf.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin")
        train = opt.minimize(loss)
        saver = tf.train.Saver()
        path = os.path.join(tempfile.mkdtemp(), "model")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            saved = saver.save(sess, path)
            before = sess.run([w, opt.get_slot(w, "accum"), opt.get_slot(w, "linear")])
            sess.run(train)
            saver.restore(sess, saved)
            after = sess.run([w, opt.get_slot(w, "accum"), opt.get_slot(w, "linear")])
        listed = sorted(name for name, _ in tf.train.list_variables(saved))
        return before, after, listed, tf.train.load_variable(saved, "w/acc")

    same_results(tf1, prog, rtol=1e-6, atol=1e-7)


def test_conv3d_pool3d_net_trained_by_proximal_gd(tf1):
    def prog(tf):
        rs = np.random.RandomState(6)
        x = tf.constant(rs.randn(2, 5, 6, 6, 2).astype(np.float32))
        k = tf.Variable(rs.randn(3, 3, 3, 2, 4).astype(np.float32) * 0.2, name="k")
        w = tf.Variable(rs.randn(4, 1).astype(np.float32) * 0.3, name="w")
        h = tf.nn.relu(tf.nn.conv3d(x, k, [1, 1, 2, 2, 1], "SAME"))
        h = tf.nn.max_pool3d(h, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
        h = tf.nn.avg_pool3d(h, [1, 2, 1, 1, 1], [1, 1, 1, 1, 1], "VALID")
        y = tf.matmul(tf.reduce_mean(h, axis=[1, 2, 3]), w)
        loss = tf.reduce_mean(tf.square(y - tf.constant([[1.0], [-1.0]])))
        train = tf.train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss])[1] for _ in range(8)]
            return losses, sess.run([k, w])

    same_results(tf1, prog, rtol=2e-4, atol=2e-5)
