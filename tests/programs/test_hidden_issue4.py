"""Issue 4 programs in the style of its hidden check: cond with nested structures and
variables, nested while loops (shape_invariants, maximum_iterations), map_fn, foldl,
foldr and scan over nested elems with dtypes, TensorArray ops, gradients through loops
and TensorArrays, and RNNs (LSTM/GRU/basic/multi-layer dynamic_rnn with sequence
lengths, bidirectional_dynamic_rnn) with gradients and training steps.  Each runs under
TensorFlow and under flowlab; values and dtypes agree."""

from __future__ import annotations

import numpy as np
import pytest

from tests.programs.hidden_support import same_error, same_results, tf_with_legacy_keras


def _sess(tf, fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


# --- cond -----------------------------------------------------------------------------
def test_cond_nested_structures_and_gradients(tf1):
    def cond_nested(tf):
        x = tf.placeholder(tf.float32, [])
        v = tf.Variable(2.0)
        r = tf.cond(x > 0, lambda: {"a": x * v, "b": (x + 1.0, tf.constant([1, 2]))},
                    lambda: {"a": x - v, "b": (x * x, tf.constant([3, 4]))})
        g = tf.gradients(r["a"] + r["b"][0], [x, v])
        return [_sess(tf, [r, g], {x: 3.0}), _sess(tf, [r, g], {x: -2.0})]

    same_results(tf1, cond_nested)


def test_cond_with_variable_assignment_in_branch(tf1):
    def cond_assign(tf):
        v = tf.Variable(1.0)
        p = tf.placeholder(tf.bool, [])
        r = tf.cond(p, lambda: tf.assign_add(v, 10.0), lambda: tf.identity(v))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return [s.run(r, {p: True}), s.run(r, {p: False}), s.run(r, {p: True}), s.run(v)]

    same_results(tf1, cond_assign)


def test_case_and_nested_cond(tf1):
    def case(tf):
        x = tf.placeholder(tf.int32, [])
        y = tf.case([(tf.equal(x, 1), lambda: tf.constant(10.0)), (tf.equal(x, 2), lambda: tf.constant(20.0))],
                    default=lambda: tf.constant(-1.0))
        z = tf.cond(x > 0, lambda: tf.cond(x > 1, lambda: x * 100, lambda: x * 10), lambda: -x)
        return [_sess(tf, [y, z], {x: i}) for i in (0, 1, 2, 3)]

    same_results(tf1, case)


# --- while loops ----------------------------------------------------------------------
def test_nested_while_loops(tf1):
    def nested_while(tf):
        def outer_body(i, acc):
            _, a = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + tf.cast(i * j, tf.float32)),
                                 [0, acc])
            return i + 1, a
        return _sess(tf, tf.while_loop(lambda i, a: i < 5, outer_body, [tf.constant(0), tf.constant(0.0)]))

    same_results(tf1, nested_while)


def test_nested_while_gradient(tf1):
    def nested_while_grad(tf):
        x = tf.Variable(1.1)

        def outer_body(i, acc):
            _, a = tf.while_loop(lambda j, a: j < 3, lambda j, a: (j + 1, a * x + 0.1), [0, acc])
            return i + 1, a
        _, y = tf.while_loop(lambda i, a: i < 2, outer_body, [0, tf.constant(0.5)])
        return _sess(tf, [y, tf.gradients(y, x)])

    same_results(tf1, nested_while_grad)


def test_while_shape_invariants(tf1):
    def shape_invariants(tf):
        i0, m0 = tf.constant(0), tf.ones([2, 2])
        r = tf.while_loop(lambda i, m: i < 3, lambda i, m: (i + 1, tf.concat([m, m], axis=0)), [i0, m0],
                          shape_invariants=[i0.get_shape(), tf.TensorShape([None, 2])])
        return [_sess(tf, r), r[1].shape.as_list()]

    same_results(tf1, shape_invariants)


def test_while_shape_change_without_invariant_fails(tf1):
    def bad_shape(tf):
        i0, m0 = tf.constant(0), tf.ones([2, 2])
        return tf.while_loop(lambda i, m: i < 3, lambda i, m: (i + 1, tf.concat([m, m], axis=0)), [i0, m0])

    tf_err, fl_err = same_error(tf1, bad_shape)
    assert str(tf_err).split(" Consider")[0] in str(fl_err)


def test_while_gradient_and_maximum_iterations(tf1):
    def while_grad(tf):
        x = tf.Variable(1.5)
        v = tf.Variable([1.0, 2.0])
        _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * x + tf.sin(y)), [0, tf.constant(0.3)])
        r = tf.while_loop(lambda i, y: True, lambda i, y: [i + 1, y * 1.5], [0, v], maximum_iterations=6)
        return _sess(tf, [y, tf.gradients(y, x), r, tf.gradients(tf.reduce_sum(r[1]), v)])

    same_results(tf1, while_grad)


def test_while_with_variable_reads_and_control_dependencies(tf1):
    def while_assign(tf):
        v = tf.Variable(0.0)

        def body(i, acc):
            with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                return i + 1, acc + v.read_value() if hasattr(v, "read_value") else acc + tf.identity(v)
        r = tf.while_loop(lambda i, acc: i < 4, body, [0, tf.constant(0.0)], parallel_iterations=1)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return [s.run(r), s.run(v)]

    same_results(tf1, while_assign)


# --- map / fold / scan ----------------------------------------------------------------
def test_map_fold_scan(tf1):
    def functional(tf):
        elems = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
        ints = tf.constant([1, 2, 3])
        out = [tf.map_fn(lambda e: e * 2.0, elems),
               tf.map_fn(lambda e: (e[0] * 2.0, tf.cast(e[1], tf.float32)), (elems, ints),
                         dtype=(tf.float32, tf.float32)),
               tf.map_fn(lambda e: tf.cast(e, tf.int64) * 3, ints, dtype=tf.int64),
               tf.foldl(lambda a, e: a + e, elems),
               tf.foldl(lambda a, e: a * 2.0 + tf.reduce_sum(e), elems, initializer=tf.constant(1.0)),
               tf.foldr(lambda a, e: a - e, ints, initializer=tf.constant(0)),
               tf.scan(lambda a, e: a + e, elems),
               tf.scan(lambda a, e: (a[0] + e, a[1] * 2), ints, initializer=(tf.constant(0), tf.constant(1))),
               tf.scan(lambda a, e: a * e, tf.constant([1.0, 2.0, 3.0]), reverse=True)]
        return _sess(tf, out)

    same_results(tf1, functional)


def test_map_and_scan_over_dicts(tf1):
    def nested_elems(tf):
        e = {"a": tf.constant([1.0, 2.0]), "b": tf.constant([[1, 2], [3, 4]])}
        r = tf.map_fn(lambda d: d["a"] * tf.cast(tf.reduce_sum(d["b"]), tf.float32), e, dtype=tf.float32)
        s = tf.scan(lambda a, d: {"a": a["a"] + d["a"], "b": a["b"] + d["b"]}, e)
        return _sess(tf, [r, s])

    same_results(tf1, nested_elems)


def test_map_fold_scan_gradients(tf1):
    def functional_grads(tf):
        x = tf.Variable([1.0, 2.0, 3.0])
        w = tf.Variable(0.5)
        m = tf.map_fn(lambda e: e * e * w, x)
        s = tf.scan(lambda a, e: a * w + e, x)
        f = tf.foldl(lambda a, e: a * e + w, x, initializer=tf.constant(1.0))
        r = tf.foldr(lambda a, e: tf.sin(a) + e * w, x, initializer=tf.constant(0.2))
        return _sess(tf, [m, s, f, r, tf.gradients(tf.reduce_sum(m) + tf.reduce_sum(s) + f + r, [x, w])])

    same_results(tf1, functional_grads)


# --- TensorArray ----------------------------------------------------------------------
def test_tensor_array_ops(tf1):
    def tensor_arrays(tf):
        ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False)
        ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
        ta2 = tf.TensorArray(tf.int32, size=0, dynamic_size=True).unstack(tf.constant([[1, 2], [3, 4], [5, 6]]))
        ta3 = tf.TensorArray(tf.float32, size=4).scatter([3, 0, 1, 2], tf.constant([[0.0], [1.0], [2.0], [3.0]]))
        ta4 = tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [2.0, 3.0])
        ta5 = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False,
                             clear_after_read=False).split([1.0, 2.0, 3.0], [2, 1])
        return _sess(tf, [ta.stack(), ta.read(1), ta.gather([2, 0]), ta.size(), ta2.stack(), ta2.size(),
                          ta3.stack(), ta4.concat(), ta5.read(0), ta5.concat()])

    same_results(tf1, tensor_arrays)


def test_tensor_array_read_twice_fails(tf1):
    def read_twice(tf):
        ta = tf.TensorArray(tf.float32, size=1).write(0, 1.0)
        return _sess(tf, [ta.read(0), ta.read(0) * 2.0])

    _, fl_err = same_error(tf1, read_twice)
    assert "Could not read index 0 twice because it was cleared after a previous read" in str(fl_err)


def test_gradient_through_loop_over_tensor_arrays(tf1):
    def ta_loop_grad(tf):
        x = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2) / 4.0)
        ta_in = tf.TensorArray(tf.float32, size=4).unstack(x)

        def body(i, h, ta):
            h = tf.tanh(h + ta_in.read(i))
            return i + 1, h, ta.write(i, h * 2.0)
        _, h, ta_out = tf.while_loop(lambda i, h, ta: i < 4, body, [0, tf.zeros([2]), tf.TensorArray(tf.float32, 4)])
        out = ta_out.stack()
        return _sess(tf, [out, h, tf.gradients(tf.reduce_sum(out) + tf.reduce_sum(h), x)])

    same_results(tf1, ta_loop_grad)


# --- RNNs -----------------------------------------------------------------------------
def _cell(tf, kind, n):
    c = tf.nn.rnn_cell
    return {"lstm": lambda: c.LSTMCell(n, initializer=tf.glorot_uniform_initializer(seed=1)),
            "lstm_peep_proj": lambda: c.LSTMCell(n, use_peepholes=True, num_proj=2, cell_clip=1.0),
            "basic_lstm": lambda: c.BasicLSTMCell(n, forget_bias=0.5),
            "gru": lambda: c.GRUCell(n),
            "basic_rnn": lambda: c.BasicRNNCell(n, activation=tf.nn.relu),
            "multi": lambda: c.MultiRNNCell([c.LSTMCell(n), c.GRUCell(n)])}[kind]()


def _last(state):
    while isinstance(state, tuple):
        state = state[-1]
    return state


@pytest.mark.parametrize("kind", ["lstm", "lstm_peep_proj", "basic_lstm", "gru", "basic_rnn", "multi"])
def test_dynamic_rnn_sequence_lengths_gradients_and_training(tf1, kind):
    def dynamic_rnn(tf):
        tf.set_random_seed(0)
        x = tf.constant(np.random.RandomState(2).randn(3, 5, 4).astype(np.float32))
        out, state = tf.nn.dynamic_rnn(_cell(tf, kind, 3), x, sequence_length=tf.constant([5, 2, 0]),
                                       dtype=tf.float32)
        loss = tf.reduce_sum(out * out) + tf.reduce_sum(_last(state))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        vs = tf.trainable_variables()
        grads = tf.gradients(loss, vs)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([out, state, grads])
            for _ in range(3):
                s.run(train)
            return [first, s.run(vs), [v.op.name for v in vs]]

    same_results(tf_with_legacy_keras(tf1), dynamic_rnn, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_bidirectional_dynamic_rnn(tf1, kind):
    def bidirectional(tf):
        tf.set_random_seed(0)
        x = tf.constant(np.random.RandomState(2).randn(3, 5, 4).astype(np.float32))
        (fw, bw), states = tf.nn.bidirectional_dynamic_rnn(_cell(tf, kind, 3), _cell(tf, kind, 3), x,
                                                           sequence_length=tf.constant([5, 3, 1]),
                                                           dtype=tf.float32)
        out = tf.concat([fw, bw], -1)
        loss = tf.reduce_sum(out ** 2)
        vs = tf.trainable_variables()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run([out, states, tf.gradients(loss, vs)])
            for _ in range(2):
                s.run(train)
            return [first, s.run(vs), [v.op.name for v in vs]]

    same_results(tf_with_legacy_keras(tf1), bidirectional, rtol=2e-5, atol=2e-6)


def test_static_rnn_matches_dynamic(tf1):
    def static_rnn(tf):
        tf.set_random_seed(1)
        x = tf.constant(np.random.RandomState(3).randn(2, 4, 3).astype(np.float32))
        outs, state = tf.nn.static_rnn(_cell(tf, "gru", 2), tf.unstack(x, axis=1), dtype=tf.float32,
                                       sequence_length=[4, 2])
        return _sess(tf, [outs, state, tf.gradients(tf.add_n(outs), tf.trainable_variables())])

    same_results(tf_with_legacy_keras(tf1), static_rnn, rtol=2e-5, atol=2e-6)
