"""Bidirectional and stacked bidirectional RNNs, composed from `static_rnn` and
`dynamic_rnn` (flowlab.nn.rnn) as TensorFlow composes them.

- `static_bidirectional_rnn` (`tf.nn.static_bidirectional_rnn`): a forward
  `static_rnn` in scope "fw" and a backward one in "bw" over the inputs reversed
  within each sequence's length; each step's two outputs are concatenated on axis 1.
- `stack_bidirectional_rnn` / `stack_bidirectional_dynamic_rnn`
  (`tf.contrib.rnn` in TensorFlow 1.15): one bidirectional layer per pair of cells,
  in scopes "cell_0", "cell_1", ..., each layer reading the previous one's
  concatenated outputs.

    outputs, state_fw, state_bw = tf.nn.static_bidirectional_rnn(fw, bw, steps, dtype=tf.float32)
"""

from __future__ import annotations

from typing import Any

from flowlab.nn.rnn import _check_cell, bidirectional_dynamic_rnn, static_rnn
from flowlab.nn.rnn_cell import _flat
from flowlab.ops import array_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.sequence_ops import reverse_sequence
from flowlab.ops.variable_scope import variable_scope

__all__ = ["static_bidirectional_rnn", "stack_bidirectional_rnn", "stack_bidirectional_dynamic_rnn"]


def _pack_like(structure: Any, flat: list[Any]) -> Any:
    it = iter(flat)

    def pack(s: Any) -> Any:
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[pack(x) for x in s])
        if isinstance(s, (list, tuple)):
            return type(s)(pack(x) for x in s)
        return next(it)

    return pack(structure)


def _reverse_seq(input_seq: list[Any], lengths: Any) -> list[Any]:
    """The steps in reverse order; with `lengths`, each sequence reversed within its
    own length (the padding after it stays in place)."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_steps = [_flat(x) for x in input_seq]
    flat_results: list[list[Any]] = [[] for _ in input_seq]
    for sequence in zip(*flat_steps):
        sequence = [convert_to_tensor(x) for x in sequence]
        shape = sequence[0].shape
        for x in sequence:
            shape = shape.merge_with(x.shape)
        joined = array_ops.stack(sequence)
        reversed_ = reverse_sequence(joined, lengths, seq_axis=0, batch_axis=1)
        for r, out in zip(array_ops.unstack(reversed_), flat_results):
            r.set_shape(shape)
            out.append(r)
    return [_pack_like(x, r) for x, r in zip(input_seq, flat_results)]


def static_bidirectional_rnn(cell_fw: Any, cell_bw: Any, inputs: Any, initial_state_fw: Any = None,
                             initial_state_bw: Any = None, dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> tuple[list[Any], Any, Any]:
    """Forward and backward `static_rnn`s over the list `inputs`.

    Returns:
      (outputs, output_state_fw, output_state_bw): `outputs[t]` is the forward and the
      backward output of step t concatenated ([batch, fw_size + bw_size]).
    """
    _check_cell(cell_fw)
    _check_cell(cell_bw)
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, sequence_length,
                                             scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(list(inputs), sequence_length)
            tmp, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length,
                                       scope=bw_scope)
    output_bw = _reverse_seq(tmp, sequence_length)
    flat = [array_ops.concat([fw, bw], 1) for fw, bw in zip(_flat(output_fw), _flat(output_bw))]
    return _pack_like(output_fw, flat), state_fw, state_bw


def _check_stack(cells_fw: Any, cells_bw: Any, initial_states_fw: Any, initial_states_bw: Any) -> None:
    if not cells_fw:
        raise ValueError("Must specify at least one fw cell for BidirectionalRNN.")
    if not cells_bw:
        raise ValueError("Must specify at least one bw cell for BidirectionalRNN.")
    if not isinstance(cells_fw, list):
        raise ValueError("cells_fw must be a list of RNNCells (one per layer).")
    if not isinstance(cells_bw, list):
        raise ValueError("cells_bw must be a list of RNNCells (one per layer).")
    if len(cells_fw) != len(cells_bw):
        raise ValueError("Forward and Backward cells must have the same depth.")
    for what, states in (("fw", initial_states_fw), ("bw", initial_states_bw)):
        if states is not None and (not isinstance(states, list) or len(states) != len(cells_fw)):
            raise ValueError(f"initial_states_{what} must be a list of state tensors (one per layer).")


def stack_bidirectional_rnn(cells_fw: Any, cells_bw: Any, inputs: Any, initial_states_fw: Any = None,
                            initial_states_bw: Any = None, dtype: Any = None, sequence_length: Any = None,
                            scope: Any = None) -> tuple[list[Any], tuple[Any, ...], tuple[Any, ...]]:
    """Layers of `static_bidirectional_rnn`, one per (fw, bw) cell pair.

    Returns:
      (outputs, output_states_fw, output_states_bw): the last layer's outputs and a
      tuple of each layer's final states.
    """
    _check_stack(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    prev_layer = inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            init_fw = initial_states_fw[i] if initial_states_fw else None
            init_bw = initial_states_bw[i] if initial_states_bw else None
            with variable_scope(f"cell_{i}") as cell_scope:
                prev_layer, state_fw, state_bw = static_bidirectional_rnn(
                    cell_fw, cell_bw, prev_layer, initial_state_fw=init_fw, initial_state_bw=init_bw,
                    sequence_length=sequence_length, dtype=dtype, scope=cell_scope)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return prev_layer, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(cells_fw: Any, cells_bw: Any, inputs: Any, initial_states_fw: Any = None,
                                    initial_states_bw: Any = None, dtype: Any = None,
                                    sequence_length: Any = None, parallel_iterations: int | None = None,
                                    time_major: bool = False, scope: Any = None,
                                    swap_memory: bool = False) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """Layers of `bidirectional_dynamic_rnn`; each layer's outputs are concatenated on
    axis 2 into the next layer's inputs.

    Returns:
      (outputs, output_states_fw, output_states_bw).
    """
    _check_stack(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    prev_layer = inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            init_fw = initial_states_fw[i] if initial_states_fw else None
            init_bw = initial_states_bw[i] if initial_states_bw else None
            with variable_scope(f"cell_{i}"):
                outputs, (state_fw, state_bw) = bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, prev_layer, initial_state_fw=init_fw, initial_state_bw=init_bw,
                    sequence_length=sequence_length, parallel_iterations=parallel_iterations, dtype=dtype,
                    swap_memory=swap_memory, time_major=time_major)
                prev_layer = array_ops.concat(outputs, 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return prev_layer, tuple(states_fw), tuple(states_bw)
