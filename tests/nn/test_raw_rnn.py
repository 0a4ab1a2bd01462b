"""raw_rnn against TensorFlow: its own docstring example (an LSTM reading a
TensorArray until each sequence ends), and an explicit emit structure with a loop
state and an unknown batch size -- values, dtypes, variable names, gradients."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.nn.test_rnn_cell import _assign_all, _flat, _tf_cells
from tests.ops.test_functional_ops import _WHY

RS = np.random.RandomState(7)
needs_loops = pytest.mark.skipif(_WHY is not None, reason=str(_WHY))


def _both(tf1, build, feed_values):
    """`build(mod, cells)` -> (fetches, placeholders) under TensorFlow and flowlab, with
    the same weights; returns [(variable names, values)] for each."""
    results = []
    for mod, cells in ((tf1, _tf_cells(tf1)), (fl, fl.nn.rnn_cell)):
        g = mod.Graph()
        with g.as_default():
            fetches, placeholders = build(mod, cells)
            variables = mod.global_variables()
            with mod.Session(graph=g) as sess:
                sess.run(_assign_all(mod, variables))
                feed = dict(zip(placeholders, feed_values))
                results.append(([v.name for v in variables], sess.run(fetches, feed)))
    return results


def _assert_same(results, rtol=1e-5, atol=1e-6):
    (tf_names, tf_vals), (fl_names, fl_vals) = results
    assert fl_names == tf_names
    tf_flat, fl_flat = _flat(tf_vals), _flat(fl_vals)
    assert len(tf_flat) == len(fl_flat)
    for a, b in zip(tf_flat, fl_flat):
        if a is None:
            assert b is None
            continue
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


@needs_loops
def test_raw_rnn_docstring_example_same_as_tensorflow(tf1):
    max_time, batch_size, input_depth, num_units = 5, 3, 2, 4

    def build(tf, cells):
        inputs = tf.placeholder(shape=(max_time, batch_size, input_depth), dtype=tf.float32)
        sequence_length = tf.placeholder(shape=(batch_size,), dtype=tf.int32)
        inputs_ta = tf.TensorArray(dtype=tf.float32, size=max_time).unstack(inputs)
        cell = cells.LSTMCell(num_units)

        def loop_fn(time, cell_output, cell_state, loop_state):
            emit_output = cell_output  # None at time 0
            if cell_output is None:
                next_cell_state = cell.zero_state(batch_size, tf.float32)
            else:
                next_cell_state = cell_state
            elements_finished = time >= sequence_length
            finished = tf.reduce_all(elements_finished)
            next_input = tf.cond(finished,
                                 lambda: tf.zeros([batch_size, input_depth], dtype=tf.float32),
                                 lambda: inputs_ta.read(time))
            return elements_finished, next_input, next_cell_state, emit_output, None

        outputs_ta, final_state, final_loop_state = tf.nn.raw_rnn(cell, loop_fn)
        assert final_loop_state is None
        outputs = outputs_ta.stack()
        assert outputs.shape.as_list() == [None, batch_size, num_units]
        loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(final_state.c * 2.0)
        grads = tf.gradients(loss, [inputs, *tf.global_variables()])
        return [outputs, final_state, grads], [inputs, sequence_length]

    xv = RS.randn(5, 3, 2).astype(np.float32)
    results = _both(tf1, build, [xv, np.array([5, 2, 3], np.int32)])
    _assert_same(results)
    outputs = results[1][1][0]
    assert np.all(outputs[2:, 1] == 0) and np.all(outputs[3:, 2] == 0)  # past each length
    assert np.all(outputs[:2, 1] != 0)


@needs_loops
def test_raw_rnn_emit_structure_loop_state_unknown_batch_same_as_tensorflow(tf1):
    """emit_output given at time 0 (per-example shapes: a float vector and an int32
    scalar), a loop state summing the outputs, a GRU, an unknown batch size, and a loop
    that ends before the inputs do (every sequence finished)."""
    depth, units, steps = 3, 2, 6

    def build(tf, cells):
        x = tf.placeholder(tf.float64, [steps, None, depth])
        seq = tf.placeholder(tf.int32, [None])
        batch = tf.shape(x)[1]
        inputs_ta = tf.TensorArray(tf.float64, size=steps).unstack(x)
        cell = cells.GRUCell(units)

        def loop_fn(time, cell_output, cell_state, loop_state):
            if cell_output is None:
                state = cell.zero_state(batch, tf.float64)
                emit = (tf.zeros([units], tf.float64), tf.zeros([], tf.int32))
                next_loop_state = tf.constant(0.0, tf.float64)
            else:
                state = cell_state
                emit = (cell_output * 2.0, tf.argmax(cell_output, 1, output_type=tf.int32))
                next_loop_state = loop_state + tf.reduce_sum(cell_output)
            finished = time >= seq
            next_input = tf.cond(tf.reduce_all(finished),
                                 lambda: tf.zeros(tf.stack([batch, depth]), tf.float64),
                                 lambda: inputs_ta.read(time))
            return finished, next_input, state, emit, next_loop_state

        emit_ta, final_state, final_loop_state = tf.nn.raw_rnn(cell, loop_fn, scope="decoder")
        assert isinstance(emit_ta, tuple) and len(emit_ta) == 2
        outs, picks = emit_ta[0].stack(), emit_ta[1].stack()
        grads = tf.gradients(tf.reduce_sum(outs) + final_loop_state * 0.5
                             + tf.reduce_sum(final_state * final_state),
                             [x, *tf.global_variables()])
        return [outs, picks, final_state, final_loop_state, grads], [x, seq]

    xv = RS.randn(steps, 4, depth)
    results = _both(tf1, build, [xv, np.array([4, 1, 0, 2], np.int32)])
    _assert_same(results)
    outs, picks = results[1][1][:2]
    assert outs.shape == (4, 4, units) and picks.dtype == np.int32  # max length 4 < 6 steps
    assert np.all(outs[:, 2] == 0) and np.all(picks[1:, 1] == 0)


@needs_loops
def test_raw_rnn_default_emit_from_cell_output_size_and_errors():
    cell = fl.nn.rnn_cell.MultiRNNCell([fl.nn.rnn_cell.BasicRNNCell(3), fl.nn.rnn_cell.BasicRNNCell(2)])
    xv = RS.randn(2, 4).astype(np.float32)

    def loop_fn(time, cell_output, cell_state, loop_state):
        state = cell.zero_state(2, fl.float32) if cell_output is None else cell_state
        return time >= [1, 3], fl.constant(xv), state, cell_output, loop_state

    emit_ta, state, loop_state = fl.nn.raw_rnn(cell, loop_fn)
    assert loop_state is None and emit_ta.element_shape.as_list() == [2, 2]
    out = emit_ta.stack()
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        o, s = sess.run([out, state])
    assert o.shape == (3, 2, 2) and o.dtype == np.float32
    assert np.all(o[1:, 0] == 0) and np.all(o[:, 1] != 0)
    np.testing.assert_array_equal(s[1][0], o[0, 0])  # entry 0 keeps its state after step 1
    with pytest.raises(TypeError, match="`loop_fn` must be a callable"):
        fl.nn.raw_rnn(cell, None)
    with pytest.raises(TypeError, match="not an RNNCell"):
        fl.nn.raw_rnn(object(), loop_fn)


@needs_loops
def test_raw_rnn_greedy_decoder_with_tensor_array_loop_state_same_as_tensorflow(tf1):
    """A decoder: the next input is made from the cell's output, the loop state is a
    TensorArray of per-step sums, the loop ends at a fixed time (no sequence input)."""
    units, depth, batch, steps = 3, 2, 2, 4
    proj = np.random.RandomState(5).uniform(-1, 1, (units, depth)).astype(np.float32)

    def build(tf, cells):
        go = tf.placeholder(tf.float32, [batch, depth])
        cell = cells.BasicRNNCell(units)

        def loop_fn(time, cell_output, cell_state, loop_state):
            if cell_output is None:
                state = cell.zero_state(batch, tf.float32)
                next_input = go
                loop_state = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
            else:
                state = cell_state
                next_input = tf.tanh(tf.matmul(cell_output, tf.constant(proj)))
                loop_state = loop_state.write(time - 1, tf.reduce_sum(cell_output, 1))
            finished = tf.tile(tf.expand_dims(time >= steps, 0), [batch])
            return finished, next_input, state, cell_output, loop_state

        emit_ta, final_state, sums_ta = tf.nn.raw_rnn(cell, loop_fn)
        outputs, sums = emit_ta.stack(), sums_ta.stack()
        grads = tf.gradients(tf.reduce_sum(outputs) + tf.reduce_sum(sums * sums),
                             [go, *tf.global_variables()])
        return [outputs, final_state, sums, grads], [go]

    results = _both(tf1, build, [RS.randn(batch, depth).astype(np.float32)])
    _assert_same(results)
    assert results[1][1][0].shape == (steps, batch, units)
