"""static_bidirectional_rnn against TensorFlow; tf.contrib.rnn's stacked bidirectional
RNNs against the same layers built from TensorFlow's own bidirectional RNNs (TensorFlow
2.21 has no contrib), with the variable names TensorFlow 1.15's contrib used."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import _compare
from tests.nn.test_rnn_cell import _assign_all, _tf_cells

RNG = np.random.RandomState(0)


def _cells(tf):
    """tf.nn.rnn_cell's classes (TensorFlow's legacy ones: its tf.nn.rnn_cell needs Keras 2)."""
    return fl.nn.rnn_cell if tf is fl else _tf_cells(tf)


def _same(tf1, build):
    """Build under each library, give every variable the same NumPy weights, compare."""
    results = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            fetches = build(tf)
            assigns = _assign_all(tf, sorted(tf.global_variables(), key=lambda v: v.op.name))
            with tf.Session() as sess:
                sess.run(assigns)
                results.append(sess.run(fetches))
    _compare(results[0], results[1], 1e-5, 1e-6, "result")
    return results[1]
X = RNG.randn(4, 3, 2).astype(np.float32)  # [time, batch, depth]
LENGTHS = np.array([4, 2, 3], np.int32)


@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("cell", ["BasicLSTMCell", "GRUCell", "BasicRNNCell"])
def test_static_bidirectional_rnn(tf1, with_lengths, cell):
    def build(tf):
        with tf.variable_scope("m"):
            fw = getattr(_cells(tf), cell)(3)
            bw = getattr(_cells(tf), cell)(2)
            steps = [tf.constant(X[t]) for t in range(4)]
            outs, sfw, sbw = tf.nn.static_bidirectional_rnn(
                fw, bw, steps, dtype=tf.float32, sequence_length=LENGTHS if with_lengths else None)
        names = sorted(v.op.name for v in tf.global_variables())
        return [outs, sfw, sbw, tf.constant(names)]

    _same(tf1, build)


def test_static_bidirectional_rnn_shapes_and_errors(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            c = _cells(tf)
            outs, _, _ = tf.nn.static_bidirectional_rnn(
                c.BasicLSTMCell(3), c.GRUCell(2),
                [tf.placeholder(tf.float32, [None, 2])] * 2, dtype=tf.float32)
            assert isinstance(outs, list) and [o.shape.as_list() for o in outs] == [[None, 5]] * 2
            with pytest.raises(TypeError, match=r"^Argument `inputs` must be a sequence. Received: Tensor\("):
                tf.nn.static_bidirectional_rnn(c.GRUCell(2), c.GRUCell(2), tf.zeros([2, 2]), dtype=tf.float32)
            with pytest.raises(ValueError, match=r"^Argument `inputs` must not be empty.$"):
                tf.nn.static_bidirectional_rnn(c.GRUCell(2), c.GRUCell(2), [], dtype=tf.float32)


def _stack_reference(tf, dynamic):
    """TensorFlow 1.15's contrib stack_bidirectional_(dynamic_)rnn, written with the
    library's own bidirectional RNN (its source, transcribed)."""
    cells_fw = [_cells(tf).GRUCell(3), _cells(tf).GRUCell(2)]
    cells_bw = [_cells(tf).GRUCell(2), _cells(tf).GRUCell(3)]
    states_fw, states_bw = [], []
    with tf.variable_scope("stack_bidirectional_rnn"):
        if dynamic:
            prev = tf.constant(np.transpose(X, [1, 0, 2]))
            for i, (f, b) in enumerate(zip(cells_fw, cells_bw)):
                with tf.variable_scope(f"cell_{i}"):
                    outs, (sf, sb) = tf.nn.bidirectional_dynamic_rnn(f, b, prev, sequence_length=LENGTHS,
                                                                     dtype=tf.float32)
                    prev = tf.concat(outs, 2)
                states_fw.append(sf)
                states_bw.append(sb)
        else:
            prev = [tf.constant(X[t]) for t in range(4)]
            for i, (f, b) in enumerate(zip(cells_fw, cells_bw)):
                with tf.variable_scope(f"cell_{i}") as sc:
                    prev, sf, sb = tf.nn.static_bidirectional_rnn(f, b, prev, sequence_length=LENGTHS,
                                                                  dtype=tf.float32, scope=sc)
                states_fw.append(sf)
                states_bw.append(sb)
    return prev, tuple(states_fw), tuple(states_bw)


@pytest.mark.parametrize("dynamic", [False, True])
def test_stack_bidirectional_rnn_as_contrib(tf1, dynamic):
    def build(tf):
        with tf.variable_scope("m"):
            if tf is fl:
                cells_fw = [fl.nn.rnn_cell.GRUCell(3), fl.nn.rnn_cell.GRUCell(2)]
                cells_bw = [fl.nn.rnn_cell.GRUCell(2), fl.nn.rnn_cell.GRUCell(3)]
                if dynamic:
                    out = fl.contrib.rnn.stack_bidirectional_dynamic_rnn(
                        cells_fw, cells_bw, fl.constant(np.transpose(X, [1, 0, 2])), sequence_length=LENGTHS,
                        dtype=fl.float32)
                else:
                    out = fl.contrib.rnn.stack_bidirectional_rnn(
                        cells_fw, cells_bw, [fl.constant(X[t]) for t in range(4)], sequence_length=LENGTHS,
                        dtype=fl.float32)
            else:
                out = _stack_reference(tf, dynamic)
        return [out, tf.constant(sorted(v.op.name for v in tf.global_variables()))]

    got = _same(tf1, build)
    layer = "cell_1/bidirectional_rnn" if dynamic else "cell_1"  # contrib passed the scope to the static one
    assert f"m/stack_bidirectional_rnn/{layer}/bw/gru_cell/gates/kernel" in [n.decode() for n in got[1]]


def test_stack_errors():
    cell = fl.nn.rnn_cell.GRUCell(2)
    for args, msg in [(([], [cell]), "at least one fw cell"), (([cell], []), "at least one bw cell"),
                      ((cell, [cell]), "cells_fw must be a list"), (([cell], [cell, cell]), "same depth")]:
        with pytest.raises(ValueError, match=msg):
            fl.contrib.rnn.stack_bidirectional_rnn(*args, [fl.zeros([1, 2])], dtype=fl.float32)
    with pytest.raises(ValueError, match="initial_states_fw must be a list"):
        fl.contrib.rnn.stack_bidirectional_rnn([cell], [cell], [fl.zeros([1, 2])], initial_states_fw=[],
                                               dtype=fl.float32)


def test_contrib_rnn_names_are_the_nn_ones():
    assert fl.contrib.rnn.BasicLSTMCell is fl.nn.rnn_cell.BasicLSTMCell
    assert fl.contrib.rnn.static_rnn is fl.nn.static_rnn
    assert fl.contrib.rnn.static_bidirectional_rnn is fl.nn.static_bidirectional_rnn
