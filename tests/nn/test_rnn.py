"""static_rnn and dynamic_rnn: sequence lengths, states, time-major, variable names,
and an LSTM dynamic_rnn against TensorFlow with the same weights (outputs, final state,
gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.nn.test_rnn_cell import _assign_all, _flat, _tf_cells
from tests.ops.test_functional_ops import _WHY

RS = np.random.RandomState(0)
needs_loops = pytest.mark.skipif(_WHY is not None, reason=str(_WHY))


def _run(fetches, feed=None, init=True):
    with fl.Session() as sess:
        if init:
            sess.run(_assign_all(fl, fl.global_variables()))
        return sess.run(fetches, feed)


# --- static_rnn --------------------------------------------------------------------------
def test_static_rnn_sequence_length_zeros_outputs_and_carries_state():
    xs = [fl.constant(RS.randn(3, 2).astype(np.float32)) for _ in range(4)]
    cell = fl.nn.rnn_cell.GRUCell(3)
    outs, st = fl.nn.static_rnn(cell, xs, dtype=fl.float32, sequence_length=[0, 2, 4])
    full, full_st = fl.nn.static_rnn(cell, xs, dtype=fl.float32, scope="rnn")
    o, s, fo = _run([outs, st, full])
    assert np.all(o[0][0] == 0) and np.all(s[0] == 0)        # length 0: zero output, zero state
    assert np.all(o[2][1] == 0) and np.all(o[3][1] == 0)    # past length 2
    np.testing.assert_allclose(o[1][1], fo[1][1], rtol=1e-6)
    np.testing.assert_allclose(s[1], fo[1][1], rtol=1e-6)   # the state after step 2 carried through
    np.testing.assert_allclose(s[2], fo[3][2], rtol=1e-6)


def test_static_rnn_errors():
    cell = fl.nn.rnn_cell.BasicRNNCell(2)
    with pytest.raises(TypeError, match="inputs must be a sequence"):
        fl.nn.static_rnn(cell, fl.zeros([2, 3]), dtype=fl.float32)
    with pytest.raises(ValueError, match="must give a dtype|dtype must be specified"):
        fl.nn.static_rnn(cell, [fl.zeros([2, 3])])
    with pytest.raises(ValueError, match="sequence_length must be a vector"):
        fl.nn.static_rnn(cell, [fl.zeros([2, 3])], dtype=fl.float32, sequence_length=[[1, 2]])
    with pytest.raises(TypeError, match="not an RNNCell"):
        fl.nn.static_rnn(object(), [fl.zeros([2, 3])], dtype=fl.float32)


# --- dynamic_rnn -------------------------------------------------------------------------
@needs_loops
def test_dynamic_rnn_equals_static_rnn():
    x = RS.randn(3, 5, 2).astype(np.float32)
    cell = fl.nn.rnn_cell.BasicLSTMCell(4)
    d_out, d_st = fl.nn.dynamic_rnn(cell, fl.constant(x), sequence_length=[5, 2, 3], dtype=fl.float32)
    assert d_out.shape.as_list() == [3, 5, 4]
    assert [v.name for v in fl.global_variables()] == ["rnn/basic_lstm_cell/kernel:0",
                                                       "rnn/basic_lstm_cell/bias:0"]
    s_out, s_st = fl.nn.static_rnn(cell, [fl.constant(x[:, t]) for t in range(5)],
                                   sequence_length=[5, 2, 3], dtype=fl.float32, scope="rnn")
    assert len(fl.global_variables()) == 2
    do, ds, so, ss = _run([d_out, d_st, s_out, s_st])
    np.testing.assert_allclose(do, np.stack(so, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ds.c, ss.c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ds.h, ss.h, rtol=1e-5, atol=1e-6)
    assert np.all(do[1, 2:] == 0)


@needs_loops
def test_dynamic_rnn_time_major_initial_state_and_short_sequences():
    x = fl.placeholder(fl.float64, [None, None, 3])
    cell = fl.nn.rnn_cell.GRUCell(2)
    h0v = RS.randn(4, 2)
    h0 = fl.constant(h0v)
    out, st = fl.nn.dynamic_rnn(cell, x, initial_state=h0, time_major=True,
                                sequence_length=[1, 1, 2, 0])
    xv = RS.randn(6, 4, 3)
    o, s = _run([out, st], {x: xv})
    assert o.shape == (6, 4, 2) and o.dtype == np.float64
    assert np.all(o[2:] == 0)           # the loop stops after the longest sequence
    np.testing.assert_array_equal(s[3], h0v[3])  # length 0 keeps the initial state
    assert np.all(o[:, 3] == 0) and np.all(o[1:, :2] == 0)


@needs_loops
def test_dynamic_rnn_multi_cell_nested_state():
    cell = fl.nn.rnn_cell.MultiRNNCell([fl.nn.rnn_cell.LSTMCell(3, num_proj=2),
                                        fl.nn.rnn_cell.BasicRNNCell(2)])
    out, st = fl.nn.dynamic_rnn(cell, fl.ones([2, 4, 1]), dtype=fl.float32)
    assert isinstance(st, tuple) and isinstance(st[0], fl.nn.rnn_cell.LSTMStateTuple)
    o, s = _run([out, st])
    assert o.shape == (2, 4, 2)
    np.testing.assert_allclose(o[:, -1], s[1], rtol=1e-6)


@needs_loops
def test_dynamic_rnn_lstm_same_as_tensorflow(tf1):
    """The LSTM dynamic_rnn with sequence lengths: outputs, final state and gradients
    with respect to the inputs and both variables, from the same initial weights."""
    tf_cells = _tf_cells(tf1)
    xv = RS.randn(3, 6, 4).astype(np.float32)
    lengths = np.array([6, 2, 4], np.int32)
    results = []
    for mod, cells in ((tf1, tf_cells), (fl, fl.nn.rnn_cell)):
        g = mod.Graph()
        with g.as_default():
            x = mod.placeholder(mod.float32, [None, 6, 4])
            seq = mod.placeholder(mod.int32, [None])
            cell = cells.LSTMCell(5, use_peepholes=True)
            out, st = mod.nn.dynamic_rnn(cell, x, sequence_length=seq, dtype=mod.float32)
            variables = mod.global_variables()
            names = [v.name for v in variables]
            loss = mod.reduce_sum(out * out) + mod.reduce_sum(st.c) + mod.reduce_sum(st.h * 3.0)
            grads = mod.gradients(loss, [x, *variables])
            with mod.Session(graph=g) as sess:
                sess.run(_assign_all(mod, variables))
                results.append((names, sess.run([out, st, grads], {x: xv, seq: lengths})))
    (tf_names, tf_vals), (fl_names, fl_vals) = results
    assert fl_names == tf_names
    for a, b in zip(_flat(tf_vals), _flat(fl_vals)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


class _ConstCell(fl.nn.rnn_cell.RNNCell):
    """An RNN cell with constant weights (no variables), for finite differences."""

    def __init__(self):
        super().__init__()
        self._k = RS.randn(4, 2) * 0.5

    state_size = output_size = 2

    def _create_variables(self, depth, dtype):
        return []

    def call(self, inputs, state):
        h = fl.tanh(fl.matmul(fl.concat([inputs, state], 1), fl.constant(self._k)))
        return h, h


@needs_loops
def test_dynamic_rnn_gradient_finite_differences():
    from tests.ops.gradient_check import GradCase, check_case

    def build(tf, x):
        h0 = tf.constant([[0.1, -0.2], [0.3, 0.0]], tf.float64)
        out, st = tf.nn.dynamic_rnn(_ConstCell(), x, initial_state=h0, sequence_length=[3, 2])
        return out * tf.expand_dims(st, 1)

    check_case(GradCase("TensorArrayV3", build, [RS.randn(2, 3, 2)], where="dynamic_rnn"))


@needs_loops
def test_bidirectional_dynamic_rnn_same_as_tensorflow(tf1):
    tf_cells = _tf_cells(tf1)
    xv = RS.randn(2, 4, 3).astype(np.float32)
    results = []
    for mod, cells in ((tf1, tf_cells), (fl, fl.nn.rnn_cell)):
        g = mod.Graph()
        with g.as_default():
            x = mod.constant(xv)
            outs, states = mod.nn.bidirectional_dynamic_rnn(
                cells.GRUCell(3), cells.BasicLSTMCell(2), x, sequence_length=[4, 2],
                dtype=mod.float32)
            names = [v.name for v in mod.global_variables()]
            grads = mod.gradients(mod.reduce_sum(outs[1]) + mod.reduce_sum(outs[0] * 2.0),
                                  mod.global_variables())
            with mod.Session(graph=g) as sess:
                sess.run(_assign_all(mod, mod.global_variables()))
                results.append((names, sess.run([outs, states, grads])))
    assert results[0][0] == results[1][0]
    for a, b in zip(_flat(results[0][1]), _flat(results[1][1])):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_reverse_sequence_within_lengths():
    from flowlab.nn.rnn import _reverse_sequence

    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    r = _reverse_sequence(fl.constant(x), [3, 1], time_major=False)
    expected = x.copy()
    expected[0, :3] = x[0, 2::-1]
    np.testing.assert_array_equal(_run(r, init=False), expected)


@needs_loops
def test_dynamic_rnn_trains_with_minimize(tf1):
    """Three SGD steps through dynamic_rnn with the default gating: same losses as TF."""
    tf_cells = _tf_cells(tf1)
    xv = RS.randn(2, 3, 2).astype(np.float32)
    losses = []
    for mod, cells in ((tf1, tf_cells), (fl, fl.nn.rnn_cell)):
        g = mod.Graph()
        with g.as_default():
            out, _ = mod.nn.dynamic_rnn(cells.BasicLSTMCell(3), mod.constant(xv),
                                        sequence_length=[3, 1], dtype=mod.float32)
            loss = mod.reduce_sum(out * out)
            train = mod.train.GradientDescentOptimizer(0.5).minimize(loss)
            with mod.Session(graph=g) as sess:
                sess.run(_assign_all(mod, mod.global_variables()))
                losses.append([sess.run([train, loss])[1] for _ in range(3)])
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
