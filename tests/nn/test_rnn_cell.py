"""RNN cells: variable names and shapes as TensorFlow's, one step against a NumPy
reference, and `static_rnn` with every cell against TensorFlow with the same weights."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.nn import rnn_cell

RS = np.random.RandomState(0)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _tf_cells(tf1):
    """TensorFlow's legacy cells (tf.nn.rnn_cell needs Keras 2; the classes are here)."""
    try:
        from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl
    except ImportError:  # pragma: no cover - depends on the TensorFlow build
        pytest.skip("TensorFlow's legacy RNN cells are not importable")
    return rnn_cell_impl


def _assign_all(mod, variables):
    """Deterministic weights from NumPy, one RandomState per variable index."""
    return [v.assign(np.random.RandomState(i).uniform(-0.5, 0.5, v.shape.as_list()).astype(
        v.dtype.base_dtype.as_numpy_dtype)) for i, v in enumerate(variables)]


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [z for y in x for z in _flat(y)]
    return [x]


# --- one step against NumPy ----------------------------------------------------------------
def test_basic_lstm_cell_step_matches_numpy():
    x = RS.randn(2, 3).astype(np.float32)
    c0, h0 = RS.randn(2, 4).astype(np.float32), RS.randn(2, 4).astype(np.float32)
    cell = fl.nn.rnn_cell.BasicLSTMCell(4, forget_bias=0.5)
    with fl.variable_scope("rnn"):
        out, st = cell(fl.constant(x), fl.nn.rnn_cell.LSTMStateTuple(fl.constant(c0), fl.constant(h0)))
    assert isinstance(st, rnn_cell.LSTMStateTuple) and st.dtype == fl.float32
    assert [v.name for v in cell.variables] == ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        k, b = sess.run(cell.variables)
        o, (c, h) = sess.run([out, st])
    z = np.concatenate([x, h0], 1) @ k + b
    i, j, f, og = np.split(z, 4, axis=1)
    c_ref = c0 * _sigmoid(f + 0.5) + _sigmoid(i) * np.tanh(j)
    h_ref = np.tanh(c_ref) * _sigmoid(og)
    np.testing.assert_allclose(c, c_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o, h_ref, rtol=1e-5, atol=1e-6)
    assert o.dtype == np.float32


def test_gru_cell_step_matches_numpy_and_gate_bias_is_one():
    x, h0 = RS.randn(3, 2), RS.randn(3, 5)
    cell = fl.nn.rnn_cell.GRUCell(5)
    out, st = cell(fl.constant(x), fl.constant(h0))
    assert [v.name for v in cell.variables] == [
        "gru_cell/gates/kernel:0", "gru_cell/gates/bias:0", "gru_cell/candidate/kernel:0",
        "gru_cell/candidate/bias:0"]
    assert cell.variables[0].dtype.base_dtype == fl.float64
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        gk, gb, ck, cb = sess.run(cell.variables)
        o = sess.run(out)
    np.testing.assert_array_equal(gb, np.ones(10))
    r, u = np.split(_sigmoid(np.concatenate([x, h0], 1) @ gk + gb), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h0], 1) @ ck + cb)
    np.testing.assert_allclose(o, u * h0 + (1 - u) * c, rtol=1e-10)


def test_cell_reuses_its_variables_and_state_sizes():
    cell = fl.nn.rnn_cell.LSTMCell(4, num_proj=2)
    assert cell.state_size == (4, 2) and cell.output_size == 2
    x = fl.zeros([1, 3])
    s = cell.zero_state(1, fl.float32)
    assert [t.shape.as_list() for t in s] == [[1, 4], [1, 2]]
    cell(x, s)
    cell(x, s)
    assert len(fl.global_variables()) == 3
    multi = fl.nn.rnn_cell.MultiRNNCell([fl.nn.rnn_cell.BasicRNNCell(3), fl.nn.rnn_cell.BasicRNNCell(2)])
    assert multi.state_size == (3, 2) and multi.output_size == 2
    zs = multi.zero_state(fl.constant(5), fl.float64)
    assert zs[0].shape.as_list() == [5, 3] and zs[0].dtype == fl.float64


def test_state_not_tuple_concatenates():
    cell = fl.nn.rnn_cell.BasicLSTMCell(3, state_is_tuple=False)
    assert cell.state_size == 6
    out, st = cell(fl.ones([2, 4]), cell.zero_state(2, fl.float32))
    assert st.shape.as_list() == [2, 6] and out.shape.as_list() == [2, 3]


def test_unknown_input_depth_is_an_error():
    cell = fl.nn.rnn_cell.BasicRNNCell(3)
    with pytest.raises(ValueError, match="last dimension of the inputs"):
        cell(fl.placeholder(fl.float32, [2, None]), fl.zeros([2, 3]))


def test_multi_rnn_cell_needs_cells():
    with pytest.raises(ValueError, match="at least one cell"):
        fl.nn.rnn_cell.MultiRNNCell([])


# --- static_rnn against TensorFlow --------------------------------------------------------
_CELLS = {
    "basic_lstm": lambda m: m.BasicLSTMCell(4),
    "lstm_peep_proj_clip": lambda m: m.LSTMCell(4, use_peepholes=True, num_proj=3, cell_clip=0.5,
                                                proj_clip=0.4),
    "gru": lambda m: m.GRUCell(4),
    "basic_rnn": lambda m: m.BasicRNNCell(4),
    "multi": lambda m: m.MultiRNNCell([m.BasicLSTMCell(4), m.GRUCell(5)]),
    "lstm_not_tuple": lambda m: m.LSTMCell(3, state_is_tuple=False),
    "residual_gru": lambda m: m.ResidualWrapper(m.GRUCell(3)),
    "dropout_keep_all": lambda m: m.DropoutWrapper(m.BasicLSTMCell(4), output_keep_prob=1.0),
}


def test_static_rnn_same_as_tensorflow(tf1):
    """Every cell kind in one graph per side (one TensorFlow session: they are slow)."""
    tf_cells = _tf_cells(tf1)
    xs = [RS.randn(2, 3).astype(np.float32) for _ in range(2)]
    results = []
    for mod, cells in ((tf1, tf_cells), (fl, fl.nn.rnn_cell)):
        g = mod.Graph()
        with g.as_default():
            fetches = []
            for kind in sorted(_CELLS):
                cell = _CELLS[kind](cells)
                inputs = [mod.constant(x) for x in xs]
                outs, st = mod.nn.static_rnn(cell, inputs, dtype=mod.float32,
                                             sequence_length=[1, 2], scope=kind)
                variables = mod.global_variables(scope=kind)
                loss = mod.reduce_sum(outs[-1] * 2.0) + sum(mod.reduce_sum(s) for s in _flat(st))
                fetches.append([outs, st, mod.gradients(loss, variables)])
            names = [(v.name, v.shape.as_list()) for v in mod.global_variables()]
            with mod.Session(graph=g) as sess:
                sess.run(_assign_all(mod, mod.global_variables()))
                results.append((names, sess.run(fetches)))
    (tf_names, tf_vals), (fl_names, fl_vals) = results
    assert fl_names == tf_names
    for a, b in zip(_flat(tf_vals), _flat(fl_vals)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6)


def test_user_cell_with_build_and_add_variable(tf1):
    """A cell written as in TensorFlow 1.x: build(inputs_shape) + add_variable + call."""
    tf_cells = _tf_cells(tf1)
    xs = [RS.randn(2, 3).astype(np.float32) for _ in range(2)]

    def make(base):
        class MyCell(base):
            def __init__(self, n, name=None):
                super().__init__(name=name)
                self._n = n

            @property
            def state_size(self):
                return self._n

            @property
            def output_size(self):
                return self._n

            def build(self, inputs_shape):
                depth = inputs_shape[-1]
                depth = getattr(depth, "value", depth)
                self._k = self.add_variable("kernel", [depth + self._n, self._n])
                self.built = True

            def call(self, inputs, state):
                import flowlab
                mod = flowlab if isinstance(self, fl.nn.rnn_cell.RNNCell) else tf1
                h = mod.tanh(mod.matmul(mod.concat([inputs, state], 1), self._k))
                return h, h

        return MyCell(4)

    results = []
    for mod, base in ((tf1, tf_cells.RNNCell), (fl, fl.nn.rnn_cell.RNNCell)):
        g = mod.Graph()
        with g.as_default():
            outs, st = mod.nn.static_rnn(make(base), [mod.constant(x) for x in xs], dtype=mod.float32)
            names = [v.name for v in mod.global_variables()]
            with mod.Session(graph=g) as sess:
                sess.run(_assign_all(mod, mod.global_variables()))
                results.append((names, sess.run([outs, st])))
    assert results[0][0] == results[1][0] == ["rnn/my_cell/kernel:0"]
    for a, b in zip(_flat(results[0][1]), _flat(results[1][1])):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_dropout_wrapper_drops_with_its_keep_probability():
    cell = fl.nn.rnn_cell.DropoutWrapper(fl.nn.rnn_cell.BasicRNNCell(50), output_keep_prob=0.5, seed=3)
    out, _ = cell(fl.ones([20, 4]), fl.zeros([20, 50]))
    assert [v.name for v in cell.variables] == ["basic_rnn_cell/kernel:0", "basic_rnn_cell/bias:0"]
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        o = sess.run(out)
    zeros = np.mean(o == 0)
    assert 0.35 < zeros < 0.65
    with pytest.raises(ValueError, match="between 0 and 1"):
        fl.nn.rnn_cell.DropoutWrapper(cell, input_keep_prob=1.5)
